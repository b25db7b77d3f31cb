"""Budget and GPU-full warnings: once per episode, not once per sample."""

from __future__ import annotations

import time

import pytest
from conftest import held_cell

from jupyter_gpumem import standin
from jupyter_gpumem.budget.policy import Policy
from jupyter_gpumem.budget.reading import Breakdown, Reading
from jupyter_gpumem.budget.state import State
from jupyter_gpumem.gpu.model import Device, GpuProcess, Snapshot
from jupyter_gpumem.kernel.alerts import Alerts
from jupyter_gpumem.units import MiB


def sample(own_mib, budget_mib=1000, used_mib=None, total_mib=10000):
    """A Reading of one T4 on which this kernel holds ``own_mib`` (None: N/A) against ``budget_mib``."""
    own = None if own_mib is None else own_mib * MiB
    process = GpuProcess(1, "GPU-0", own, "compute", "python", "alice", 0.0, True)
    used = (used_mib if used_mib is not None else (own_mib or 0)) * MiB
    device = Device(0, "GPU-0", "NVIDIA T4", total_bytes=total_mib * MiB, used_bytes=used, processes=(process,))
    budget = None if budget_mib is None else budget_mib * MiB
    split = Breakdown(budget, budget is not None, own, None, False, None, None)
    state = State(Policy(), None, (), True, None)
    return Reading(Snapshot(0.0, 1, (device,)), state, False, {}, {"GPU-0": split})


def test_budget_warnings_fire_once_per_episode():
    alerts = Alerts()
    fired = [alerts.check(sample(own)) for own in (500, 910, 950, 920, 1020, 1050, 970, 800, 930)]
    kinds = [("over" if "over its" in w[0] else "near") if w else None for w in fired]
    assert kinds == [None, "near", None, None, "over", None, None, None, "near"]
    assert fired[1] == ["jupyter-gpumem: this kernel uses 910 MiB on GPU 0 NVIDIA T4, 91% of its 1000 MiB budget."]
    assert fired[4] == [
        "jupyter-gpumem: this kernel uses 1020 MiB on GPU 0 NVIDIA T4, 20 MiB over its 1000 MiB budget. "
        "Run %gpumem explain to see why."
    ]


def test_no_budget_or_na_memory_gives_no_budget_warning():
    alerts = Alerts()
    assert alerts.check(sample(5000, budget_mib=None)) == []
    assert alerts.check(sample(None)) == []


def test_a_gpu_filled_by_others_warns_once_until_it_empties():
    alerts = Alerts()
    used = (5000, 9600, 9800, 9200, 8500, 9700)
    fired = [alerts.check(sample(500, budget_mib=2000, used_mib=u)) for u in used]
    assert [bool(w) for w in fired] == [False, True, False, False, False, True]
    assert fired[1] == [
        "jupyter-gpumem: GPU 0 NVIDIA T4 is 96% full (9600 MiB of 10000 MiB); other processes hold 9100 MiB, "
        "so this kernel may run out of memory before its budget."
    ]
    # A GPU this kernel fills by itself is the budget warnings' business.
    assert Alerts().check(sample(9700, budget_mib=None, used_mib=9700)) == []


@pytest.mark.kernel
def test_a_running_cell_shows_each_warning_once(kernel_with):
    kernel = kernel_with("own_process")
    text = kernel.scenario.read_text()
    standin.write_scenario(kernel.scenario, text.replace("used=3100MiB", "used=2000MiB"))  # 59%
    assert kernel.run("import jupyter_gpumem; jupyter_gpumem._connect_sidebar(0.2, 60)").status == "ok"
    assert kernel.run("%gpumem limit=3400MiB").stderr == ""
    # The warnings appear in this cell, which runs until the test lets it go (never a fixed time: a loaded
    # machine may take a reading late).
    go = kernel.scenario.with_name("go")
    msg_id = kernel.client.execute(held_cell(go))
    seen = {"stderr": "", "samples": 0, "idle": False}

    def read_until(condition, timeout=60.0):
        """Read iopub until ``condition()``: this cell's stderr, and the samples the sidebar's comm carries."""
        deadline = time.monotonic() + timeout
        while not condition():
            msg = kernel.client.get_iopub_msg(timeout=max(0.01, deadline - time.monotonic()))
            content = msg["content"]
            if msg["msg_type"] == "comm_msg" and content["data"].get("type") == "sample":
                seen["samples"] += 1
            elif msg["parent_header"].get("msg_id") != msg_id:
                continue
            elif msg["msg_type"] == "stream" and content["name"] == "stderr":
                seen["stderr"] += content["text"]
            elif msg["msg_type"] == "status" and content["execution_state"] == "idle":
                seen["idle"] = True

    def readings_more(count):  # that many more readings, each of which could have warned again
        target = seen["samples"] + count
        return lambda: seen["samples"] >= target

    standin.write_scenario(kernel.scenario, text)  # 3100 MiB: 91%
    read_until(lambda: "91% of its 3400 MiB budget" in seen["stderr"])
    read_until(readings_more(5))
    standin.write_scenario(kernel.scenario, text.replace("used=3100MiB", "used=3600MiB"))  # over
    read_until(lambda: "200 MiB over its 3400 MiB budget" in seen["stderr"])
    read_until(readings_more(5))
    go.touch()
    read_until(lambda: seen["idle"])
    stderr = seen["stderr"]
    assert stderr.count("91% of its 3400 MiB budget") == 1
    assert stderr.count("200 MiB over its 3400 MiB budget") == 1
