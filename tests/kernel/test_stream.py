"""The live stream from a real kernel (jupyter_client) over the stand-in NVML: comm_open, then samples."""

from __future__ import annotations

import itertools
import json
import threading
import time

import pytest

from jupyter_gpumem import standin
from jupyter_gpumem.kernel.sampler import Sampler
from jupyter_gpumem.units import MiB
from jupyter_gpumem.wire.comm import PROTOCOL, TARGET
from jupyter_gpumem.wire.report import report_path

pytestmark = pytest.mark.kernel

CONNECT = "import jupyter_gpumem; jupyter_gpumem._connect_sidebar(interval_s=0.2, history_s=60)"


def connect(kernel):
    reply = kernel.run(CONNECT)
    assert reply.status == "ok", reply.error
    opened = kernel.comm_message("comm_open", target_name=TARGET)
    return opened["comm_id"], opened["data"]


def next_sample(kernel, comm_id, timeout=10):
    data = kernel.comm_message("comm_msg", comm_id=comm_id, timeout=timeout)["data"]
    assert data["protocol"] == PROTOCOL and data["type"] == "sample"
    return data["sample"]


def sample_where(kernel, comm_id, condition, timeout=15):
    for _ in range(int(timeout / 0.2) + 5):
        sample = next_sample(kernel, comm_id)
        if condition(sample):
            return sample
    raise AssertionError("no sample met the condition")


def test_samples_carry_the_scenarios_figures_and_mark_this_kernel(kernel_with):
    kernel = kernel_with("own_process")
    pid = int(kernel.run("import os; print(os.getpid())").stdout)
    comm_id, hello = connect(kernel)
    assert hello["protocol"] == PROTOCOL and hello["type"] == "hello"
    assert hello["interval_s"] == 0.2 and hello["history_s"] == 60

    sample = next_sample(kernel, comm_id)
    assert sample["simulated"] and sample["problem"] is None
    assert sample["policy"] is None and sample["framework"] is None
    (gpu,) = sample["gpus"]
    assert gpu["uuid"] == "GPU-0a0a0a0a-0000-4000-8000-000000000008"
    assert (gpu["total_bytes"], gpu["used_bytes"], gpu["own_bytes"]) == (16376 * MiB, 3500 * MiB, 3100 * MiB)
    assert gpu["budget_bytes"] is None and gpu["framework_bytes"] is None and not gpu["lost"]
    rows = {p["pid"]: p for p in gpu["processes"]}
    assert rows[pid]["self"] and rows[pid]["used_bytes"] == 3100 * MiB
    assert rows[6200] == {
        "pid": 6200,
        "name": "<img src=x onerror=alert(1)>",
        "user": None,  # no such process on this host
        "used_bytes": 380 * MiB,
        "cpu_percent": None,
        "self": False,
        "local": False,  # no process has this PID here
        "cpu_pending": False,  # nothing to measure: it is not here
    }


def test_the_budget_follows_gpumem_and_a_reconnect_replays_the_history(kernel_with):
    kernel = kernel_with("s1_two_gpus")
    comm_id, _ = connect(kernel)
    assert kernel.run("%gpumem fraction=0.5 gpus=1").status == "ok"
    sample = sample_where(kernel, comm_id, lambda s: s["policy"] is not None)
    assert sample["policy"] == "fraction=0.5 gpus=1"
    # Every framework is installed and none is imported: the policy goes to whichever is.
    assert sample["framework"] is None and sample["framework_started"] is False
    assert [g["budget_bytes"] for g in sample["gpus"]] == [None, 4096 * MiB]
    assert [p["used_bytes"] for p in sample["gpus"][1]["processes"]] == [None, None]  # N/A stays N/A
    streamed = [sample, next_sample(kernel, comm_id), next_sample(kernel, comm_id)]

    new_id, hello = connect(kernel)
    assert new_id != comm_id
    kernel.comm_message("comm_close", comm_id=comm_id)  # the old comm is closed, not left dangling
    history = hello["history"]
    # What the old comm was sent is replayed (waited for, not assumed: on a loaded machine the kernel had taken
    # fewer than three samples when the policy's first arrived).
    assert {s["t"] for s in streamed} <= {s["t"] for s in history}
    assert all("processes" not in g for s in history for g in s["gpus"])
    assert [s["t"] for s in history] == sorted(s["t"] for s in history)
    assert history[-1]["gpus"][1]["budget_bytes"] == 4096 * MiB
    assert next_sample(kernel, new_id)["gpus"][1]["processes"]


def test_a_scenario_change_and_a_lost_gpu_mid_stream_show_in_the_next_samples(kernel_with):
    kernel = kernel_with("gpu_lost")
    text = kernel.scenario.read_text()
    standin.write_scenario(kernel.scenario, text.replace(" lost=1", ""))
    comm_id, _ = connect(kernel)
    sample = sample_where(kernel, comm_id, lambda s: not s["gpus"][1]["lost"])
    assert sample["gpus"][1]["used_bytes"] == 9000 * MiB

    standin.write_scenario(kernel.scenario, text.replace(" lost=1", "").replace("used=1200MiB", "used=7000MiB"))
    sample = sample_where(kernel, comm_id, lambda s: s["gpus"][0]["used_bytes"] == 7000 * MiB)
    assert sample["gpus"][1]["used_bytes"] == 9000 * MiB

    standin.write_scenario(kernel.scenario, text)
    sample = sample_where(kernel, comm_id, lambda s: s["gpus"][1]["lost"])
    lost = sample["gpus"][1]
    assert lost["used_bytes"] is None and lost["processes"] == []
    assert sample["gpus"][0]["used_bytes"] == 1200 * MiB and sample["gpus"][0]["processes"]


def test_no_driver_streams_the_sentence_and_the_kernel_keeps_working(kernel_with):
    kernel = kernel_with("no_driver")
    comm_id, _ = connect(kernel)
    sample = next_sample(kernel, comm_id)
    assert sample["gpus"] == [] and "driver" in sample["problem"]
    assert kernel.run("print(6 * 7)").stdout == "42\n"


def test_connecting_again_or_loading_the_extension_again_never_adds_a_thread(kernel_with):
    kernel = kernel_with("own_process")
    for _ in range(3):
        connect(kernel)
        kernel.run("%load_ext jupyter_gpumem")
        kernel.run("%reload_ext jupyter_gpumem")
    reply = kernel.run(
        "import threading; print(sum(t.name == 'jupyter-gpumem-sampler' for t in threading.enumerate()))"
    )
    assert reply.stdout == "1\n"


def test_configure_changes_the_interval_and_malformed_messages_are_dropped_with_one_warning_each(kernel_with, capfd):
    kernel = kernel_with("own_process")
    comm_id, _ = connect(kernel)
    for bad in (
        "not an object",
        {"protocol": 99, "type": "configure"},
        {"protocol": 1, "type": "explode"},
        {"protocol": 1, "type": "configure", "interval_s": 0.05, "history_s": 60},
    ):
        kernel.send_comm(comm_id, bad)
    kernel.send_comm(comm_id, {"protocol": 1, "type": "configure", "interval_s": 2.0, "history_s": 120})
    log, deadline = "", time.monotonic() + 20
    while log.count("dropped a message from the sidebar") < 4 and time.monotonic() < deadline:
        time.sleep(0.2)
        log += capfd.readouterr().err  # the kernel's own stderr: the server's log, not the notebook
    # What the schema (wire/schemas/comm.v1.json, $defs/configure) finds wrong first in each.
    assert "sidebar: message must be object" in log
    assert log.count("sidebar: message must contain ['history_s', 'interval_s'] properties") == 1
    assert "sidebar: message.protocol is 99: the sidebar speaks protocol 99;" in log  # a newer release's sidebar
    assert "sidebar: message.interval_s must be bigger than or equal to 0.2" in log
    reply = kernel.run("import jupyter_gpumem.kernel.runtime as r; print(r.runtime().stream.sampler.interval_s)")
    assert reply.stdout == "2.0\n"
    assert next_sample(kernel, comm_id, timeout=5)["gpus"]


def test_a_failing_sample_is_logged_once_and_sampling_goes_on(caplog):
    results = iter([ValueError("boom"), ValueError("boom again"), {"n": 1}])

    def take():
        item = next(results, {"n": 2})
        if isinstance(item, Exception):
            raise item
        return item

    sent = []
    sampler = Sampler(take, sent.append, keep=dict, interval_s=0.2, history_s=10)
    with caplog.at_level("WARNING", logger="jupyter_gpumem"):
        sampler.start()
        deadline = time.monotonic() + 10
        while len(sent) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        sampler.stop()
    assert sent[:2] == [{"n": 1}, {"n": 2}] and not sampler.running
    assert [r.getMessage() for r in caplog.records].count(
        "jupyter-gpumem: taking or sending a sample failed; sampling goes on"
    ) == 1
    assert sampler.history()[:2] == [{"n": 1}, {"n": 2}]


def test_a_replay_and_the_samples_after_it_meet_with_no_gap_and_no_overlap():
    """The soak's lost sample (issue 45): the sidebar connects, and its hello replays the history, while the
    sampler keeps its next sample. connect() used to read the history and then open the new comm; a sample kept in
    between was in neither the hello nor the new comm's stream. Sampler.replay cuts the stream between two samples."""
    numbers = itertools.count(1)
    taking_second, first_sent, second_sent, third_sent = (threading.Event() for _ in range(4))
    receiver = "old comm"
    got: dict[str, list[int]] = {"old comm": [], "new comm": []}

    def take() -> dict[str, int]:
        n = next(numbers)
        if n == 2:
            taking_second.wait(10)  # the driver answers while the frontend is being switched
        return {"n": n}

    def send(sample: dict[str, int]) -> None:
        got[receiver].append(sample["n"])
        [first_sent, second_sent, third_sent][min(sample["n"], 3) - 1].set()

    def switch(history: list[dict[str, int]]) -> None:
        nonlocal receiver
        replayed.extend(s["n"] for s in history)
        taking_second.set()
        # Nothing may deliver sample 2 before the new comm is in place; without the cut it is sent now.
        assert not second_sent.wait(0.5), "sample 2 was sent to the old comm while the new one was being opened"
        receiver = "new comm"

    replayed: list[int] = []
    sampler = Sampler(take, send, keep=dict, interval_s=0.01, history_s=60)
    sampler.start()
    try:
        assert first_sent.wait(10)
        sampler.replay(switch)
        assert third_sent.wait(10)
    finally:
        sampler.stop()
    assert replayed == [1] and got["old comm"] == [1] and got["new comm"][:2] == [2, 3]


def test_the_sampler_never_starts_tensorflow_and_reports_it_once_started(kernel_with):
    kernel = kernel_with("own_process")
    assert kernel.run("import tensorflow as tf").status == "ok"
    comm_id, _ = connect(kernel)
    for _ in range(3):  # several samples while TensorFlow is imported but not started
        sample = next_sample(kernel, comm_id)
        assert sample["framework"] == "TensorFlow" and sample["framework_started"] is False
    reply = kernel.run("from tensorflow.python.eager import context; print(context.context()._context_handle is None)")
    assert reply.stdout == "True\n"  # sampling did not start it, so %gpumem can still apply
    assert "applied fraction=0.5" in kernel.run("%gpumem fraction=0.5").stdout

    kernel.run("tf.constant(1.0) + 1")
    sample = sample_where(kernel, comm_id, lambda s: s["framework_started"])
    (gpu,) = sample["gpus"]
    # tensorflow-cpu has no GPU device, so it has no allocator figures for this GPU; null, not 0.
    assert gpu["framework_bytes"] is None and gpu["budget_bytes"] is not None


def test_a_kernel_streaming_shuts_down_cleanly(kernel_with):
    kernel = kernel_with("own_process")
    next_sample(kernel, connect(kernel)[0])
    kernel.client.stop_channels()
    start = time.monotonic()
    kernel.manager.shutdown_kernel(now=False)  # a shutdown_request, as JupyterLab sends
    # jupyter_client waits 5 s for the kernel to exit by itself before it kills it.
    assert time.monotonic() - start < kernel.manager.shutdown_wait_time


def test_a_kernel_reports_to_its_server_beside_its_connection_file(kernel_with):
    kernel = kernel_with("own_process")
    kernel.run("%load_ext jupyter_gpumem")
    kernel.run("%gpumem limit=3400MiB")
    report = report_path(kernel.manager.connection_file)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        data = json.loads(report.read_text()) if report.exists() else {}
        if data.get("sample", {}).get("policy") == "limit=3400MiB":
            break
        time.sleep(0.2)
    pid = int(kernel.run("import os; print(os.getpid())").stdout)
    assert (data["protocol"], data["type"], data["pid"], data["oom_errors_total"]) == (1, "report", pid, 0)
    (gpu,) = data["sample"]["gpus"]
    assert (gpu["own_bytes"], gpu["budget_bytes"], gpu["in_force"]) == (3100 * MiB, 3400 * MiB, False)
    assert "processes" not in gpu  # figures only: other users' process names stay in the kernel
    assert oct(report.parent.stat().st_mode & 0o777) == "0o700"
    kernel.manager.shutdown_kernel(now=False)  # as the server shuts a kernel down: it may tidy up
    assert not report.exists()
