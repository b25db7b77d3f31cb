"""The Figures as Prometheus metrics, on jupyter_server's own /metrics (so its authentication applies).

jupyter_server serves /metrics from prometheus_client's default registry, on its event loop. The
extension's thread turns each reading into rows: (family, label values, value), tuples of strings and
numbers. ``collect()`` only wraps the latest rows in prometheus_client's families. Rows, not families,
are what stays alive between readings because Python's garbage collector stops tracking tuples of
strings and numbers: kept families (a dict per sample) would be promoted to the oldest generation
every few readings and bring on full collections, each of which holds the GIL, and so the event loop,
for tens of milliseconds in a Jupyter server's heap (benchmarks/metrics.py).

Names follow Prometheus' conventions: base units (bytes, ratios), ``_total`` for the counter, ``_info``
for the labels-only series. Labels are bounded: a GPU's UUID and index, a kernel's id, and another
process's Unix user only where the administrator chose to show it (``GpumemServer.privacy``); never a
process name or a PID. A figure that is not known has no sample (never 0).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import NamedTuple

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from jupyter_gpumem._version import __version__
from jupyter_gpumem.server.figures import Figures

Row = tuple[str, tuple[str, ...], float]  # family name, label values, value


class Family(NamedTuple):
    name: str
    help: str
    labels: tuple[str, ...] = ()
    counter: bool = False


GPU = ("gpu_uuid", "gpu_index")
KERNEL = ("kernel_id",)
KERNEL_GPU = (*KERNEL, *GPU)

INFO = Family(
    "jupyter_gpumem_info",
    "jupyter-gpumem in this Jupyter server, and the NVIDIA driver it reads.",
    ("version", "driver_version", "simulated"),
)
NVML_UP = Family("jupyter_gpumem_nvml_up", "1 when the server could read NVML at its last reading.")
READ_AT = Family("jupyter_gpumem_read_timestamp_seconds", "When the server last read NVML and the kernels' reports.")
DRIVER_ANSWERING = Family(
    "jupyter_gpumem_driver_answering",
    "1 when the NVIDIA driver answered the server's last reading within its interval, 0 when it did not (a stalled "
    "driver: the GPU figures are the last it gave).",
)
READING_AGE = Family(
    "jupyter_gpumem_reading_age_seconds",
    "How old the GPU figures were at the server's last reading: 0 while the driver answers, else the time since its "
    "last answer.",
)
GPU_INFO = Family("jupyter_gpumem_gpu_info", "Each GPU NVML reports.", (*GPU, "name"))
GPU_LOST = Family("jupyter_gpumem_gpu_lost", "1 when the GPU has fallen off the bus.", GPU)
GPU_TOTAL = Family("jupyter_gpumem_gpu_memory_total_bytes", "GPU memory, as nvidia-smi counts it.", GPU)
GPU_USED = Family("jupyter_gpumem_gpu_memory_used_bytes", "GPU memory in use, as nvidia-smi counts it.", GPU)
GPU_UTILIZATION = Family(
    "jupyter_gpumem_gpu_utilization_ratio", "GPU utilisation over NVML's last sample period, 0 to 1.", GPU
)
OTHERS = Family(
    "jupyter_gpumem_gpu_other_processes", "Processes on the GPU that are none of this server's kernels.", GPU
)
OTHERS_USED = Family(
    "jupyter_gpumem_gpu_other_processes_memory_used_bytes",
    "GPU memory held by processes that are none of this server's kernels (no sample where the driver cannot tell).",
    GPU,
)
REPORTING = Family(
    "jupyter_gpumem_kernel_reporting",
    "1 when the kernel reports its budget and framework figures (jupyter_gpumem loaded, report fresh).",
    KERNEL,
)
OOM_ERRORS = Family(
    "jupyter_gpumem_kernel_oom_errors",
    "GPU out-of-memory errors in the kernel's cells since it started.",
    KERNEL,
    counter=True,
)
CEILING_RATIO = Family(
    "jupyter_gpumem_kernel_ceiling_ratio", "The administrator's ceiling for the kernel, as a share of each GPU.", KERNEL
)
CEILING_BYTES = Family(
    "jupyter_gpumem_kernel_ceiling_bytes", "The administrator's ceiling for the kernel, as bytes of each GPU.", KERNEL
)
KERNEL_USED = Family(
    "jupyter_gpumem_kernel_memory_used_bytes",
    "GPU memory held by the kernel's processes, as nvidia-smi counts it "
    "(no sample where NVML lists none of them, or cannot tell their memory).",
    KERNEL_GPU,
)
BUDGET = Family(
    "jupyter_gpumem_kernel_budget_bytes",
    "The kernel's GPU memory budget as nvidia-smi counts it (cooperative: %gpumem or the administrator's defaults).",
    KERNEL_GPU,
)
OVER_BUDGET = Family(
    "jupyter_gpumem_kernel_over_budget", "1 when the kernel's GPU memory is over its budget, 0 when not.", KERNEL_GPU
)
ALLOCATOR_USED = Family(
    "jupyter_gpumem_kernel_allocator_used_bytes",
    "Bytes the framework's allocator has in use (tensors), once the framework's runtime has started.",
    KERNEL_GPU,
)
ALLOCATOR_POOL = Family(
    "jupyter_gpumem_kernel_allocator_pool_bytes",
    "Bytes the framework's allocator has reserved from the GPU, where the framework tells it.",
    KERNEL_GPU,
)
KERNEL_OWN = Family(
    "jupyter_gpumem_kernel_own_memory_bytes",
    "GPU memory of the kernel as the kernel attributes it: exact (its PID in NVML's list), matched (the one "
    "process that appeared with its CUDA context and follows its pool) or estimated (its pool plus the "
    "overhead); no sample when unknown (docs/containers.md).",
    (*KERNEL_GPU, "source"),
)
LIMIT = Family(
    "jupyter_gpumem_kernel_limit_info",
    "Which kind of limit holds the kernel on the GPU: mig or mps (hard=true) or cooperative (%gpumem).",
    (*KERNEL_GPU, "kind", "hard"),
)
DRIVER_LIMIT = Family(
    "jupyter_gpumem_kernel_driver_limit_bytes",
    "The GPU memory limit (hard) the NVIDIA driver enforces on the kernel's cgroup, as the kernel read it "
    "(drivers from 615); no sample where none is set or it cannot be read.",
    KERNEL_GPU,
)
SLICE = Family(
    "jupyter_gpumem_kernel_mig_slice_info",
    "The MIG slice the kernel runs on, by its profile (1g.5gb); no sample outside MIG mode.",
    (*KERNEL_GPU, "profile"),
)
OTHER_USER = Family(
    "jupyter_gpumem_gpu_other_user_processes",
    "Processes of another Unix user on the GPU (only where GpumemServer.privacy is names or list).",
    (*GPU, "user"),
)
OTHER_USER_USED = Family(
    "jupyter_gpumem_gpu_other_user_memory_used_bytes",
    "GPU memory of another Unix user's processes (only where GpumemServer.privacy is names or list).",
    (*GPU, "user"),
)
# The kernel's execution state as the server's kernel manager says it, and its idle time as the hub's service counts
# it (hub/rows.py): what the report rules (hub/prometheus/report-rules.yml) need to tell memory held while idle.
BUSY = Family(
    "jupyter_gpumem_kernel_busy",
    "1 while the kernel runs code (execution state busy), 0 while it is idle; no sample in any other state "
    "(starting, restarting, dead) or where the server does not know it.",
    KERNEL,
)
IDLE = Family(
    "jupyter_gpumem_kernel_idle_seconds",
    "Seconds since the kernel's last activity, at the server's last reading, while it is idle; no sample while it "
    "is in any other state or where its last activity is not known.",
    KERNEL,
)
FAMILIES = (INFO, NVML_UP, READ_AT, DRIVER_ANSWERING, READING_AGE, GPU_INFO, GPU_LOST, GPU_TOTAL, GPU_USED,
            GPU_UTILIZATION, OTHERS, OTHERS_USED, OTHER_USER, OTHER_USER_USED, REPORTING, OOM_ERRORS,
            CEILING_RATIO, CEILING_BYTES, KERNEL_USED, BUDGET, OVER_BUDGET, ALLOCATOR_USED, ALLOCATOR_POOL,
            KERNEL_OWN, LIMIT, DRIVER_LIMIT, SLICE, BUSY, IDLE)  # fmt: skip
STATES = {"busy": 1, "idle": 0}  # jupyter_gpumem_kernel_busy's value per execution state; none for the others


def rows(figures: Figures) -> tuple[Row, ...]:
    """Every figure the Figures knows, as a row; a figure it does not know has none."""
    found: list[Row] = []

    def add(family: Family, labels: tuple[str, ...], value: float | bool | None) -> None:
        if value is not None:
            found.append((family.name, labels, float(value)))

    add(INFO, (__version__, figures.driver_version or "", "true" if figures.simulated else "false"), 1)
    if figures.t is not None:
        add(NVML_UP, (), figures.problem is None)
        add(READ_AT, (), figures.t)
        add(DRIVER_ANSWERING, (), figures.stalled_since is None)
        add(READING_AGE, (), 0.0 if figures.stalled_since is None else max(0.0, figures.t - figures.stalled_since))
    for gpu in figures.gpus:
        labels = (gpu.uuid or "", str(gpu.index))
        add(GPU_INFO, (*labels, gpu.name or ""), 1)
        add(GPU_LOST, labels, gpu.lost)
        add(GPU_TOTAL, labels, gpu.total_bytes)
        add(GPU_USED, labels, gpu.used_bytes)
        add(GPU_UTILIZATION, labels, None if gpu.utilization_percent is None else gpu.utilization_percent / 100)
        add(OTHERS, labels, gpu.other_processes)
        add(OTHERS_USED, labels, gpu.other_bytes)
        for share in gpu.other_users or ():
            add(OTHER_USER, (*labels, share.user or ""), share.processes)
            add(OTHER_USER_USED, (*labels, share.user or ""), share.used_bytes)
    for kernel in figures.kernels:
        add(REPORTING, (kernel.id,), kernel.status == "reporting")
        add(OOM_ERRORS, (kernel.id,), kernel.oom_errors_total)
        add(CEILING_RATIO, (kernel.id,), kernel.ceiling.max_fraction)
        add(CEILING_BYTES, (kernel.id,), kernel.ceiling.max_limit_bytes)
        add(BUSY, (kernel.id,), STATES.get(kernel.execution_state or ""))
        add(IDLE, (kernel.id,), _idle_s(kernel.execution_state, kernel.last_activity, figures.t))
        for row in kernel.gpus:
            on = (kernel.id, row.uuid, str(row.index))
            add(KERNEL_USED, on, row.used_bytes)
            add(BUDGET, on, row.budget_bytes)
            add(OVER_BUDGET, on, row.over_budget)
            add(ALLOCATOR_USED, on, row.framework_bytes)
            add(ALLOCATOR_POOL, on, row.pool_bytes if row.pool_known else None)
            if row.own_source in ("exact", "matched", "estimated"):
                add(KERNEL_OWN, (*on, row.own_source), row.own_bytes)
            if row.limit_kind:
                add(LIMIT, (*on, row.limit_kind, "true" if row.limit_hard else "false"), 1)
            add(DRIVER_LIMIT, on, row.driver_limit_bytes)
            if row.slice:
                add(SLICE, (*on, row.slice), 1)
    return tuple(found)


def _idle_s(state: str | None, last_activity: float | None, t: float | None) -> float | None:
    """Seconds since the kernel's last activity at the reading ``t``, while it is idle; None otherwise (the hub's
    rule for ``idle_s``, hub/rows.py: a last activity ahead of the reading is 0, not a negative time)."""
    if state != "idle" or last_activity is None or t is None:
        return None
    return max(0.0, t - last_activity)


def families(found: tuple[Row, ...]) -> list[Metric]:
    """prometheus_client's families for the rows: every family, with a sample per row."""
    built: dict[str, GaugeMetricFamily | CounterMetricFamily] = {
        f.name: (CounterMetricFamily if f.counter else GaugeMetricFamily)(f.name, f.help, labels=f.labels)
        for f in FAMILIES
    }
    for name, labels, value in found:
        built[name].add_metric(labels, value)
    return list(built.values())


class GpumemCollector(Collector):
    """Registered in prometheus_client's default registry: the latest rows, as families; reads nothing."""

    def __init__(self, latest: Callable[[], tuple[Row, ...]]):
        self._latest = latest

    def collect(self) -> Iterator[Metric]:
        return iter(families(self._latest()))

    def describe(self) -> Iterator[Metric]:
        return iter(families(()))
