"""A kernel's execution state and idle time on the server's /metrics (issue 47): ``jupyter_gpumem_kernel_busy`` and
``jupyter_gpumem_kernel_idle_seconds``, what the report rules (hub/prometheus/report-rules.yml) need to tell memory
held while idle. Figures made here as the server's thread makes them (make_figures), rendered through the
collector, checked with promtool, and against the idle time the hub's service gives the same kernel."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from jupyter_gpumem.gpu.model import Device, GpuProcess, Snapshot
from jupyter_gpumem.hub.rows import rows_of_server
from jupyter_gpumem.server.figures import Figures, KernelSource, make_figures
from jupyter_gpumem.server.handlers import encode
from jupyter_gpumem.server.metrics import FAMILIES, GpumemCollector, rows
from jupyter_gpumem.units import GiB

GPU0 = "GPU-5e5e5e5e-0000-4000-8000-000000000000"
T = 1_763_740_800.0  # the server's reading
Samples = dict[tuple[str, str], float]  # (family, kernel_id) -> value


def figures(*kernels: KernelSource, t: float = T) -> Figures:
    """One GPU; each kernel's process (its pid) holds 1 GiB on it."""
    processes = tuple(GpuProcess(k.pid or 0, GPU0, GiB, "compute", "python", None, None, False) for k in kernels)
    device = Device(index=0, uuid=GPU0, name="NVIDIA A100-SXM4-40GB", total_bytes=40 * GiB, used_bytes=9 * GiB)
    snapshot = Snapshot(taken_at=t, own_pid=1, devices=(replace(device, processes=processes),))
    return make_figures(snapshot, list(kernels), now=t, stale_after_s=30)


def source(kernel_id: str, position: int, state: str | None, last: float | None) -> KernelSource:
    return KernelSource(kernel_id, 1000 + position, None, execution_state=state, last_activity=last)


def exposition(view: Figures) -> str:
    registry = CollectorRegistry()
    registry.register(GpumemCollector(lambda: rows(view)))
    return generate_latest(registry).decode()


def samples(text: str, *names: str) -> Samples:
    return {
        (s.name, s.labels["kernel_id"]): s.value
        for family in text_string_to_metric_families(text)
        if family.name in names
        for s in family.samples
    }


def check_metrics(text: str) -> None:
    promtool = shutil.which("promtool")
    assert promtool, "Debian's prometheus package provides promtool: apt-get install prometheus (.ci/setup does)"
    checked = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr


BUSY, IDLE = "jupyter_gpumem_kernel_busy", "jupyter_gpumem_kernel_idle_seconds"
KERNELS = (
    source("idle", 0, "idle", T - 125.5),  # idle for 125.5 s
    source("busy", 1, "busy", T - 3.0),  # running code: not idle, however long since it started
    source("starting", 2, "starting", None),  # neither busy nor idle: no sample of either
    source("unknown", 3, None, T - 50.0),  # the kernel manager does not say: no sample of either
    source("idle-since-unknown", 4, "idle", None),  # idle, since when not known: busy 0, no idle time
    source("ahead", 5, "idle", T + 4.0),  # a last activity ahead of the reading: idle 0 s, never negative
)


def test_a_kernels_state_and_idle_time_are_exact_samples_promtool_accepts() -> None:
    text = exposition(figures(*KERNELS))
    check_metrics(text)
    assert samples(text, BUSY, IDLE) == {
        (BUSY, "idle"): 0.0,
        (IDLE, "idle"): 125.5,
        (BUSY, "busy"): 1.0,
        (BUSY, "idle-since-unknown"): 0.0,
        (BUSY, "ahead"): 0.0,
        (IDLE, "ahead"): 0.0,
    }
    for family in text_string_to_metric_families(text):
        if family.name in (BUSY, IDLE):
            assert family.type == "gauge"
            assert all(set(s.labels) == {"kernel_id"} for s in family.samples)


def test_the_idle_time_is_counted_at_the_reading_and_follows_the_kernels_last_activity() -> None:
    kernel = source("k1", 0, "idle", T - 10.0)
    assert samples(exposition(figures(kernel, t=T + 60)), IDLE) == {(IDLE, "k1"): 70.0}
    kernel = source("k1", 0, "idle", T + 30.0)  # it ran a cell since, and went idle again
    assert samples(exposition(figures(kernel, t=T + 60)), IDLE) == {(IDLE, "k1"): 30.0}
    kernel = source("k1", 0, "busy", T + 30.0)
    assert samples(exposition(figures(kernel, t=T + 60)), BUSY, IDLE) == {(BUSY, "k1"): 1.0}


def test_the_servers_idle_time_is_the_one_the_hubs_service_gives_the_same_kernel() -> None:
    view = figures(*KERNELS)
    hub = {r.kernel_id: r.idle_s for r in rows_of_server("alice", "", _body(view), now=T)}
    served = samples(exposition(view), IDLE)
    assert {k: v for (_, k), v in served.items()} == {k: v for k, v in hub.items() if v is not None}
    assert len(hub) == len(KERNELS)


def test_before_the_first_reading_no_kernel_has_an_idle_time() -> None:
    view = replace(figures(*KERNELS), t=None)
    states = {"idle": 0.0, "busy": 1.0}
    expected = {(BUSY, k.id): states[k.execution_state] for k in KERNELS if k.execution_state in states}
    assert samples(exposition(view), BUSY, IDLE) == expected


def test_the_new_families_come_after_the_existing_ones_which_are_unchanged() -> None:
    names = [f.name for f in FAMILIES]
    assert names[-2:] == [BUSY, IDLE]
    assert len(names) == len(set(names))
    assert "jupyter_gpumem_kernel_memory_used_bytes" in names[:-2]


def _body(view: Figures) -> object:
    """The server's /api/gpumem/v1 body of the Figures, as the hub's service reads it."""
    return json.loads(encode(view, 1.0))
