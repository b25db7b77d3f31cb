"""The overhead outside the allocator: estimated per GPU generation, measured once the pool is known,
remembered in the user's cache for the next kernel; the split and the over-budget reason built on it."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import pytest

from jupyter_gpumem.budget.overhead import Calibration, Overhead, cache_dir, cache_key, estimate
from jupyter_gpumem.budget.plan import make_plan
from jupyter_gpumem.budget.policy import parse
from jupyter_gpumem.budget.reading import breakdown
from jupyter_gpumem.gpu import nvml
from jupyter_gpumem.gpu.host import HostProcesses
from jupyter_gpumem.gpu.model import Device, GpuProcess, Snapshot
from jupyter_gpumem.units import MiB

GPU = "GPU-a1a1a1a1-0000-4000-8000-000000000001"
TF_LIBRARIES = 150 * MiB


def gpu(capability=None, own_mib=None):
    processes = () if own_mib is None else (GpuProcess(1, GPU, own_mib * MiB, "compute", "python", None, None, True),)
    return Device(
        index=0,
        uuid=GPU,
        name="NVIDIA GeForce GTX 1080 Ti",
        total_bytes=11422 * MiB,
        compute_capability=capability,
        processes=processes,
    )


def snapshot(own_mib, driver="537.58"):
    return Snapshot(taken_at=0.0, own_pid=1, devices=(gpu((6, 1), own_mib),), driver_version=driver)


# ---------------------------------------------------------------------- estimates


def test_the_stand_in_reports_the_compute_capability_through_nvml(scenario):
    scenario("s1_two_gpus")
    devices = nvml.read(os.getpid(), HostProcesses().lookup).devices
    assert [d.compute_capability for d in devices] == [(6, 1), (6, 1)]
    scenario("own_process")  # no cc= in the scenario: NVML_ERROR_NOT_SUPPORTED
    assert nvml.read(os.getpid(), HostProcesses().lookup).devices[0].compute_capability is None


@pytest.mark.parametrize(
    ("capability", "context_mib", "words"),
    [
        ((3, 5), 200, "TensorFlow on Kepler (compute 3.5)"),
        ((5, 2), 200, "TensorFlow on Maxwell (compute 5.2)"),
        ((6, 1), 250, "TensorFlow on Pascal (compute 6.1)"),
        ((7, 5), 300, "TensorFlow on Volta/Turing (compute 7.5)"),
        ((8, 0), 350, "TensorFlow on Ampere/Ada (compute 8.0)"),
        ((9, 0), 450, "TensorFlow on Hopper (compute 9.0)"),
        ((10, 0), 500, "TensorFlow on Blackwell (compute 10.0)"),
        ((12, 0), 500, "TensorFlow on Blackwell (compute 12.0)"),
        ((13, 0), 500, "TensorFlow on a GPU (compute 13.0)"),  # newer than the table: its latest figure
        ((2, 1), 200, "TensorFlow on a GPU (compute 2.1)"),  # older than the table: its oldest figure
        (None, 300, "TensorFlow, GPU generation unknown"),
    ],
)
def test_the_estimate_is_the_context_for_the_generation_plus_the_libraries(capability, context_mib, words):
    assert estimate(gpu(capability), "TensorFlow", TF_LIBRARIES) == Overhead(
        context_mib * MiB + TF_LIBRARIES, "estimated", words
    )


# ---------------------------------------------------------------------- calibration


def test_a_measurement_is_remembered_for_the_same_gpu_model_driver_and_framework(tmp_path):
    path = tmp_path / "overhead.json"
    first = Calibration(path)
    # TensorFlow's pool is 5311 MiB; NVML counts 5927 MiB for this process: 616 MiB outside it.
    (measured,) = first.observe(snapshot(5927), {GPU: 5311 * MiB}, "TensorFlow", "2.16.1")
    assert measured == Overhead(616 * MiB, "measured", "NVML's figure minus TensorFlow's pool")
    assert first.measured(GPU) == measured

    later = Calibration(path)
    remembered = later.planned(gpu(), "537.58", "TensorFlow", "2.16.1")
    assert remembered is not None and remembered.bytes == 616 * MiB and remembered.source == "remembered"
    assert later.planned(gpu(), "550.54.15", "TensorFlow", "2.16.1") is None  # another driver
    assert later.planned(gpu(), "537.58", "TensorFlow", "2.17.0") is None  # another TensorFlow
    assert later.problem is None


def test_the_largest_measurement_is_kept(tmp_path):
    path = tmp_path / "overhead.json"
    calibration = Calibration(path)
    calibration.observe(snapshot(5927), {GPU: 5311 * MiB}, "TensorFlow", "2.16.1")
    assert calibration.observe(snapshot(5800), {GPU: 5311 * MiB}, "TensorFlow", "2.16.1") == []
    assert Calibration(path).planned(gpu(), "537.58", "TensorFlow", "2.16.1").bytes == 616 * MiB


def test_nothing_is_measured_without_a_pool_or_an_nvml_figure(tmp_path):
    calibration = Calibration(tmp_path / "overhead.json")
    assert calibration.observe(snapshot(5927), {}, "TensorFlow", "2.16.1") == []
    na = Snapshot(taken_at=0.0, own_pid=1, devices=(Device(0, GPU, "x", processes=()),))
    assert calibration.observe(na, {GPU: 100 * MiB}, "TensorFlow", "2.16.1") == []
    assert not (tmp_path / "overhead.json").exists()


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("{not json", "not valid JSON"),
        ('{"format": 2, "overhead_bytes": {}}', "not a format 1 cache"),
        ('{"format": 1, "overhead_bytes": {"x": -5}}', "not a format 1 cache"),
        ('{"format": 1, "overhead_bytes": {"x": 0}}', "not a format 1 cache"),
        ('{"format": 1, "overhead_bytes": {"x": 1099511627776}}', "not a format 1 cache"),  # 1 TiB
        ('{"format": 1, "overhead_bytes": {"x": 600, "y": true}}', "not a format 1 cache"),
        ('{"format": 1, "overhead_bytes": {"x": "600MiB"}}', "not a format 1 cache"),
        ("[]", "not a format 1 cache"),
    ],
)
def test_a_corrupt_cache_is_ignored_with_one_sentence_and_rewritten(tmp_path, content, why):
    path = tmp_path / "overhead.json"
    path.write_text(content)
    calibration = Calibration(path)
    assert calibration.planned(gpu(), "537.58", "TensorFlow", "2.16.1") is None
    assert calibration.problem is not None and str(path) in calibration.problem
    assert "\n" not in calibration.problem
    if why == "not valid JSON":
        assert "Expecting property name" in calibration.problem
    else:
        assert why in calibration.problem
    calibration.observe(snapshot(5927), {GPU: 5311 * MiB}, "TensorFlow", "2.16.1")
    data = json.loads(path.read_text())
    key = cache_key(gpu(), "537.58", "TensorFlow", "2.16.1")
    assert data["format"] == 1 and data["overhead_bytes"] == {key: 616 * MiB}


def test_an_unreadable_cache_is_ignored_and_measuring_still_works(tmp_path):
    path = tmp_path / "overhead.json"
    path.mkdir()  # a directory where the file should be: reading and replacing both fail
    calibration = Calibration(path)
    assert calibration.planned(gpu(), "537.58", "TensorFlow", "2.16.1") is None
    assert "ignored its overhead cache" in calibration.problem
    (measured,) = calibration.observe(snapshot(5927), {GPU: 5311 * MiB}, "TensorFlow", "2.16.1")
    assert calibration.measured(GPU) == measured


def two_gpus(own_mib):
    second = "GPU-a1a1a1a1-0000-4000-8000-000000000002"
    held = (GpuProcess(1, second, own_mib * MiB, "compute", "python", None, None, True),)
    other = Device(1, second, "NVIDIA GeForce GTX 1080 Ti", total_bytes=11422 * MiB, processes=held)
    return Snapshot(taken_at=0.0, own_pid=1, devices=(gpu((6, 1), 5927), other), driver_version="537.58"), second


def test_each_gpu_is_measured_on_its_own(tmp_path):
    calibration = Calibration(tmp_path / "overhead.json")
    both, second = two_gpus(3000)
    (only,) = calibration.observe(both, {second: 2500 * MiB}, "TensorFlow", "2.16.1")  # no pool on GPU 0
    assert only.bytes == 500 * MiB and calibration.measured(GPU) is None
    calibration.observe(both, {GPU: 5311 * MiB}, "TensorFlow", "2.16.1")
    more, _ = two_gpus(3100)
    (grown,) = calibration.observe(more, {GPU: 5311 * MiB, second: 2500 * MiB}, "TensorFlow", "2.16.1")
    assert grown.bytes == 600 * MiB  # GPU 0 unchanged, GPU 1 grew
    assert calibration.measured(GPU).bytes == 616 * MiB


def test_nothing_is_measured_when_nvml_counts_no_more_than_the_pool(tmp_path):
    calibration = Calibration(tmp_path / "overhead.json")
    assert calibration.observe(snapshot(5311), {GPU: 5311 * MiB}, "TensorFlow", "2.16.1") == []
    assert calibration.measured(GPU) is None


def test_the_same_measurement_again_is_not_new(tmp_path):
    calibration = Calibration(tmp_path / "overhead.json")
    assert len(calibration.observe(snapshot(5927), {GPU: 5311 * MiB}, "TensorFlow", "2.16.1")) == 1
    assert calibration.observe(snapshot(5927), {GPU: 5311 * MiB}, "TensorFlow", "2.16.1") == []


def test_a_kernel_that_measures_what_an_earlier_one_remembered_leaves_the_file_alone(tmp_path):
    path = tmp_path / "overhead.json"
    Calibration(path).observe(snapshot(5927), {GPU: 5311 * MiB}, "TensorFlow", "2.16.1")
    written = path.read_text()
    Calibration(path).observe(snapshot(5927), {GPU: 5311 * MiB}, "TensorFlow", "2.16.1")
    assert path.read_text() == written


def test_the_cache_directory_is_made_when_missing(tmp_path):
    path = tmp_path / "cache" / "jupyter-gpumem" / "overhead.json"
    calibration = Calibration(path)
    calibration.observe(snapshot(5927), {GPU: 5311 * MiB}, "TensorFlow", "2.16.1")
    assert calibration.problem is None and path.exists()


@pytest.mark.parametrize(
    ("platform", "variables", "expected"),
    [
        ("linux", {"XDG_CACHE_HOME": "{tmp}/xdg"}, "{tmp}/xdg/jupyter-gpumem"),
        ("linux", {}, "{tmp}/home/.cache/jupyter-gpumem"),
        ("darwin", {"XDG_CACHE_HOME": "{tmp}/xdg"}, "{tmp}/home/Library/Caches/jupyter-gpumem"),
        ("win32", {"LOCALAPPDATA": "{tmp}/local"}, "{tmp}/local/jupyter-gpumem"),
        ("win32", {}, "{tmp}/home/AppData/Local/jupyter-gpumem"),
    ],
)
def test_the_cache_file_is_where_the_documentation_says(monkeypatch, tmp_path, platform, variables, expected):
    monkeypatch.setattr(sys, "platform", platform)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("XDG_CACHE_HOME", "LOCALAPPDATA"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value.format(tmp=tmp_path))
    assert cache_dir() == Path(expected.format(tmp=tmp_path))
    assert Calibration().path == Path(expected.format(tmp=tmp_path)) / "overhead.json"


def test_what_is_not_known_is_remembered_as_unknown(tmp_path):
    nameless = Device(0, GPU, None, total_bytes=11422 * MiB)
    assert cache_key(nameless, None, "TensorFlow", None) == "unknown GPU | driver unknown | TensorFlow unknown"


def test_a_bad_entry_costs_the_sentence_that_says_the_estimates_are_used(tmp_path):
    path = tmp_path / "overhead.json"
    path.write_text('{"format": 1, "overhead_bytes": {"x": -5}}')
    calibration = Calibration(path)
    calibration.planned(gpu(), "537.58", "TensorFlow", "2.16.1")
    assert calibration.problem == (
        f"jupyter-gpumem ignored its overhead cache {path} (not a format 1 cache); it plans with estimates and "
        "rewrites the file at the next measurement."
    )


def test_overheads_from_one_byte_to_just_under_a_tebibyte_are_remembered(tmp_path):
    path = tmp_path / "overhead.json"
    key = cache_key(gpu(), "537.58", "TensorFlow", "2.16.1")
    for amount in (1, (1 << 40) - 1):
        path.write_text(json.dumps({"format": 1, "overhead_bytes": {key: amount}}))
        assert Calibration(path).planned(gpu(), "537.58", "TensorFlow", "2.16.1").bytes == amount


def test_a_writer_waits_while_another_kernel_holds_the_documented_lock(tmp_path):
    fcntl = pytest.importorskip("fcntl")
    path = tmp_path / "overhead.json"
    calibration = Calibration(path)
    writer = threading.Thread(
        target=calibration.observe, args=(snapshot(5927), {GPU: 5311 * MiB}, "TensorFlow", "2.16.1")
    )
    with open(tmp_path / "overhead.json.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        writer.start()
        writer.join(0.3)
        assert writer.is_alive() and not path.exists()
    writer.join(10)
    assert not writer.is_alive() and path.exists()


def test_a_cache_that_cannot_be_written_says_so_and_this_kernel_keeps_every_figure(tmp_path):
    path = tmp_path / "overhead.json"
    earlier = cache_key(gpu(), "550.54.15", "TensorFlow", "2.16.1")
    path.write_text(json.dumps({"format": 1, "overhead_bytes": {earlier: 700 * MiB}}))
    (tmp_path / "overhead.json.lock").mkdir()  # the lock cannot be taken: saving fails
    calibration = Calibration(path)
    calibration.observe(snapshot(5927), {GPU: 5311 * MiB}, "TensorFlow", "2.16.1")
    assert calibration.problem.startswith(f"jupyter-gpumem could not save its overhead cache {path} (")
    assert "Is a directory" in calibration.problem and calibration.problem.endswith(").")
    assert calibration.planned(gpu(), "537.58", "TensorFlow", "2.16.1").bytes == 616 * MiB
    assert calibration.planned(gpu(), "550.54.15", "TensorFlow", "2.16.1").bytes == 700 * MiB


# ---------------------------------------------------------------------- the split and the reason


def plan_for(line, aside_mib):
    return make_plan(parse(line.split()), snapshot(5927), lambda d: Overhead(aside_mib * MiB, "estimated", "test"))


def split(line, aside_mib=400, **state):
    plan = plan_for(line, aside_mib)
    options = {"framework": "TensorFlow", "in_force": True, "why_not": None, "hidden": False, "pool": None}
    options.update(state)
    return breakdown(
        gpu((6, 1), 5927),
        plan.gpus[0] if plan.gpus else None,
        strict=plan.policy.strict,
        measured=None,
        **options,
    )


def test_strict_over_budget_names_what_lies_outside_the_limit_and_the_excess():
    result = split("fraction=0.5")  # budget 5711 MiB = limit 5311 + 400 set aside; 5927 held
    assert (result.budget_bytes, result.pool_bytes, result.pool_known) == (5711 * MiB, 5311 * MiB, False)
    assert result.over_bytes == 216 * MiB
    assert result.reason == (
        "CUDA context + cuDNN/cuBLAS: 616 MiB outside TensorFlow's limit, 216 MiB more than the 400 MiB set aside"
    )


def test_strict_off_over_budget_says_nothing_was_set_aside():
    result = split("fraction=0.5 strict=off")
    assert result.reason == (
        "CUDA context + cuDNN/cuBLAS: 216 MiB outside TensorFlow's limit (strict=off sets nothing aside for them)"
    )


def test_the_reported_pool_is_used_over_the_planned_limit():
    result = split("fraction=0.5", pool=5000 * MiB)
    assert result.pool_known and result.reason.startswith("CUDA context + cuDNN/cuBLAS: 927 MiB outside")


def test_a_policy_that_is_not_in_force_is_the_reason():
    late = split("fraction=0.5", in_force=False, why_not="TensorFlow started before it")
    assert late.reason == "the policy is not in force: TensorFlow started before it"
    assert not late.in_force


def test_within_budget_there_is_no_reason():
    result = split("limit=8GiB")
    assert result.reason is None and result.over_bytes == 0


# ---------------------------------------------------------------------- across real kernels

# TensorFlow on a CPU-only machine has no GPU pool to report, so these kernels hand their calibration
# the pool that TensorFlow with growth off reports once it has started (its memory_limit; see
# test_tensorflow_adapter.py). Everything else is real: NVML through the stand-in, the magic, the
# file under XDG_CACHE_HOME (one per test, shared by its kernels) and the next kernel's plan.
MEASURE = """
from jupyter_gpumem.kernel.runtime import runtime
from jupyter_gpumem.gpu.snapshot import take_snapshot
from jupyter_gpumem.units import MiB
c = runtime().control
pool = c.state.plan.gpus[0].allocator_limit_bytes
print([m.bytes // MiB for m in c.calibration.observe(take_snapshot(), {{"{uuid}": pool}}, "TensorFlow", {version!r})])
"""


@pytest.mark.kernel
def test_the_next_kernel_plans_with_the_overhead_the_first_one_measured(kernel_with):
    first = kernel_with("s1_this_kernel")
    first.run("%load_ext jupyter_gpumem")
    planned = first.run("%gpumem fraction=0.5 gpus=0").stdout
    assert "allocator limit 5311 MiB + about 400 MiB CUDA context and libraries (estimated" in planned
    version = first.run(
        "print(__import__('jupyter_gpumem.kernel.runtime').kernel.runtime.runtime().control.state.adapters[0].version())"
    )
    measured = first.run(MEASURE.format(uuid=GPU, version=version.stdout.strip()))
    assert measured.stdout == "[616]\n", measured.stderr  # 5927 MiB held - 5311 MiB pool
    status = first.run("%gpumem status").stdout
    assert "Now on GPU 0: 5927 MiB as nvidia-smi counts it, 104% of the 5711 MiB budget; 216 MiB over:" in status
    first.stop()

    second = kernel_with("s1_this_kernel")
    second.run("%load_ext jupyter_gpumem")
    replanned = second.run("%gpumem fraction=0.5 gpus=0")
    assert replanned.stderr == ""
    # Same budget; now 616 MiB are set aside, so the allocator gets 5711 - 616 = 5095 MiB.
    assert (
        "budget 5711 MiB (50% of 11422 MiB) as nvidia-smi counts it = allocator limit 5095 MiB + about 616 MiB "
        "CUDA context and libraries (remembered: measured by an earlier kernel (NVIDIA GeForce GTX 1080 Ti | "
        "driver 537.58 | TensorFlow" in replanned.stdout
    )


@pytest.mark.kernel
def test_a_corrupt_cache_costs_one_warning_line_and_the_estimate_is_used(kernel_with, tmp_path):
    cache = tmp_path / "cache" / "jupyter-gpumem" / "overhead.json"
    cache.parent.mkdir(parents=True)
    cache.write_text('{"format": 1, "overhead_bytes": {"half a wr')
    kernel = kernel_with("s1_this_kernel")
    kernel.run("%load_ext jupyter_gpumem")
    out = kernel.run("%gpumem fraction=0.5 gpus=0").stdout
    warnings = [line for line in out.splitlines() if "overhead cache" in line]
    assert warnings == [
        f"jupyter-gpumem ignored its overhead cache {cache} (Unterminated string starting at: line 1 column 34 "
        "(char 33)); it plans with estimates and rewrites the file at the next measurement."
    ]
    assert "about 400 MiB CUDA context and libraries (estimated" in out
    assert "overhead cache" not in kernel.run("%gpumem status").stdout + kernel.run("%gpumem fraction=0.4").stdout


@pytest.mark.kernel
def test_two_kernels_writing_at_once_lose_nothing_and_leave_valid_json(kernel_with, tmp_path):
    kernels = [kernel_with("own_process"), kernel_with("own_process")]
    write = """
from jupyter_gpumem.budget.overhead import Calibration
from jupyter_gpumem.gpu.snapshot import take_snapshot
from jupyter_gpumem.units import MiB
snapshot = take_snapshot()
for i in range(150):
    Calibration().observe(snapshot, {{"GPU-0a0a0a0a-0000-4000-8000-000000000008": 1000 * MiB}}, "K{k}", str(i))
"""
    sent = [k.client.execute(write.format(k=n)) for n, k in enumerate(kernels)]  # both run at the same time
    for kernel, msg_id in zip(kernels, sent, strict=True):
        while True:
            reply = kernel.client.get_shell_msg(timeout=120)
            if reply["parent_header"].get("msg_id") == msg_id:
                assert reply["content"]["status"] == "ok", reply["content"]
                break
    data = json.loads((tmp_path / "cache" / "jupyter-gpumem" / "overhead.json").read_text())
    entries = data["overhead_bytes"]
    assert len(entries) == 300  # 150 from each: no write lost another's entries
    assert set(entries.values()) == {2100 * MiB}  # 3100 MiB held - 1000 MiB pool
    assert not list((tmp_path / "cache" / "jupyter-gpumem").glob("*.tmp"))
