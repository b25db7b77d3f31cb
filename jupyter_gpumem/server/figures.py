"""What the server knows of its GPUs and kernels at one moment: immutable Figures, made anew each interval.

Three sources, each for what it knows best. The server's own NVML reading says how much memory each
process holds, as nvidia-smi counts it. The kernel manager says which processes are which kernels: its pid
for each, and the processes the watcher found under that pid in the process table (``KernelSource.processes``).
Each kernel's report (publish.py) says its budget, policy, framework and allocator figures; the PID it claims
is never taken for the kernel's (any process of the user can write a report). The
metrics and the JSON API only render a Figures; they never read or decide anything themselves. Each class holds every
field of its shape in the API's body (the types generated from wire/schemas/api.v1.json: ServerBody, ServerGpu,
ServerKernel, KernelGpu), by the same name and of the generated type, and what the metrics need besides; the API's
encoder (server.handlers) takes each field from it and raises on one it lacks, and tests/wire/test_server_body.py
holds every class to its shape, so a field added to the schema fails there until a figure computes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from jupyter_gpumem.budget.plan import Ceiling
from jupyter_gpumem.budget.privacy import LEVELS, Level, UserShare, by_user, total
from jupyter_gpumem.gpu.model import Device, Snapshot
from jupyter_gpumem.wire.api import KernelStatus
from jupyter_gpumem.wire.comm import LimitKind, OverheadSource, OwnSource, PolicyState, Said, SampleGpu
from jupyter_gpumem.wire.report import Report
from jupyter_gpumem.words import wire

Privacy = Level  # the kernel's levels, the same words (privacy.py)
PRIVACY = LEVELS


class OtherProcess(NamedTuple):
    """A process of none of this server's kernels, shown only where the administrator chose ``names`` or
    ``list`` (``GpumemServer.privacy``): never its command line."""

    pid: int
    user: str | None  # its Unix user, where the host's process table shows it
    used_bytes: int | None


@dataclass(frozen=True, slots=True)
class GpuFigures:
    index: int
    uuid: str | None
    name: str | None
    lost: bool
    total_bytes: int | None
    used_bytes: int | None
    utilization_percent: int | None
    processes_known: bool  # False: the driver refused the process query, so nothing per process is known
    other_processes: int | None  # processes of none of this server's kernels
    other_bytes: int | None  # their memory; None when the driver cannot tell for one of them (N/A)
    # Per Unix user where the privacy setting shows users (names, list); None otherwise or when nothing is known.
    other_users: tuple[UserShare, ...] | None = None
    other_process_list: tuple[OtherProcess, ...] | None = None  # each of them, under privacy list only


@dataclass(frozen=True, slots=True)
class KernelGpuFigures:
    """One kernel on one GPU: NVML's figure for its processes, and what its report says."""

    index: int
    uuid: str
    used_bytes: int | None  # its processes as nvidia-smi counts them; None: none listed, or N/A
    budget_bytes: int | None
    in_force: bool
    over_budget: bool | None  # used_bytes > budget_bytes; None unless both are known
    pool_bytes: int | None
    pool_known: bool
    overhead_bytes: int | None
    overhead_source: OverheadSource
    framework_bytes: int | None
    framework_peak_bytes: int | None
    own_bytes: int | None  # the kernel's own figure, as it attributes it (docs/containers.md)
    own_source: OwnSource
    limit_kind: LimitKind
    limit_hard: bool
    driver_limit_bytes: int | None = None  # the hard limit the NVIDIA driver enforces on the kernel's cgroup
    slice: str | None = None  # the profile of the MIG slice the kernel runs on ("1g.5gb")
    slice_bytes: int | None = None  # that slice's memory: the GPU's memory as the kernel sees it
    memory_shared: bool = False  # the GPU's memory is the host's (unified memory)


@dataclass(frozen=True, slots=True)
class Kernel:
    id: str
    pid: int | None  # the kernel manager's
    status: KernelStatus  # reporting: its report is fresh; stale: too old to use; not_reporting: none (or unreadable)
    report_age_s: float | None
    package_version: str | None
    policy: str | None
    policy_state: PolicyState
    policy_note: str | None
    framework: str | None
    framework_started: bool
    oom_errors_total: int | None
    gpus: tuple[KernelGpuFigures, ...]
    ceiling: Ceiling = field(default_factory=Ceiling)  # as its report says; none known without one
    policy_note_said: Said | None = None  # the policy note's code and values, where the kernel sends them
    execution_state: str | None = None  # the server's kernel manager: idle, busy, starting, ...
    # When it last ran code (time.time()): its report's idle_since (publish.py), the kernel's own word, where
    # it reports; else its last message on any channel as the server saw it, which the sidebar's samples move.
    last_activity: float | None = None


@dataclass(frozen=True, slots=True)
class Figures:
    t: float | None  # when the server read NVML (time.time()); None before its first reading
    problem: str | None  # NVML could not be read at all: the sentence why
    driver_version: str | None
    simulated: str | None  # the stand-in NVML's scenario, never a real driver
    gpus: tuple[GpuFigures, ...]
    kernels: tuple[Kernel, ...]
    privacy: Privacy = "aggregate"  # what is shown of other processes: GpumemServer.privacy
    # The driver did not answer the server's last reading in time: it has not answered since then, and the figures
    # are the last it gave (reader.py). None: the figures are its answer.
    stalled_since: float | None = None
    problem_said: Said | None = None  # the problem's code and values


EMPTY = Figures(t=None, problem=None, driver_version=None, simulated=None, gpus=(), kernels=())


@dataclass(frozen=True, slots=True)
class KernelSource:
    """What the server's thread found for one kernel before it makes the Figures."""

    id: str
    pid: int | None  # from the kernel manager
    report: Report | None  # its report file, valid (watcher.py); None when there is none or it is not valid
    execution_state: str | None = None
    last_activity: float | None = None
    # Processes NVML lists that are the kernel's own besides ``pid``: descendants of it in the process table (a
    # wrapper's child, a DataLoader worker), as the watcher found them (watcher._own_processes).
    processes: frozenset[int] = frozenset()


def make_figures(
    snapshot: Snapshot,
    kernels: Sequence[KernelSource],
    now: float,
    stale_after_s: float,
    privacy: Privacy = "aggregate",
) -> Figures:
    """The Figures of one NVML snapshot and the kernels' reports read just after it."""
    reports = {k.id: _judge(k.report, now, stale_after_s) for k in kernels}
    owner: dict[int, str] = {}  # pid -> kernel id
    for kernel in kernels:
        # The manager's pid, and its descendants; not the pid the report claims, which anything can write.
        for pid in (kernel.pid, *sorted(kernel.processes)):
            if pid is not None:
                owner.setdefault(pid, kernel.id)
    held = [_held(device, owner) for device in snapshot.devices]
    return Figures(
        t=snapshot.taken_at,
        problem=snapshot.problem,
        problem_said=wire(snapshot.problem),
        stalled_since=snapshot.stalled_since,
        driver_version=snapshot.driver_version,
        simulated=snapshot.simulated_scenario,
        gpus=tuple(_gpu(device, by, owner, privacy) for device, by in zip(snapshot.devices, held, strict=True)),
        kernels=tuple(
            _kernel(kernel, reports[kernel.id], snapshot.devices, held, now)
            for kernel in sorted(kernels, key=lambda k: k.id)
        ),
        privacy=privacy,
    )


def _held(device: Device, owner: Mapping[int, str]) -> dict[str | None, list[int | None]]:
    """The memory of the GPU's processes by kernel id; None: those of no kernel of this server."""
    held: dict[str | None, list[int | None]] = {}
    for process in device.processes:
        held.setdefault(owner.get(process.pid), []).append(process.used_bytes)
    return held


def _judge(report: Report | None, now: float, stale_after_s: float) -> tuple[KernelStatus, Report | None]:
    """Whether a kernel's report can be used, and the report."""
    if report is None:
        return "not_reporting", None
    # A time ahead of the server's clock by more than the stale age is no report's (the kernel runs on this machine):
    # it would otherwise stay fresh until then.
    fresh = -stale_after_s <= now - report["t"] <= stale_after_s
    return ("reporting" if fresh else "stale"), report


def _gpu(
    device: Device, held: Mapping[str | None, list[int | None]], owner: Mapping[int, str], privacy: Privacy
) -> GpuFigures:
    others = held.get(None, [])
    known = device.processes_known and not device.lost
    shown = known and privacy != "aggregate"
    listed = tuple(OtherProcess(p.pid, p.user, p.used_bytes) for p in device.processes if p.pid not in owner)
    return GpuFigures(
        index=device.index,
        uuid=device.uuid,
        name=device.name,
        lost=device.lost,
        total_bytes=device.total_bytes,
        used_bytes=device.used_bytes,
        utilization_percent=device.utilization_percent,
        processes_known=known,
        other_processes=len(others) if known else None,
        other_bytes=total(others) if known else None,
        other_users=by_user(listed) if shown else None,
        other_process_list=listed if shown and privacy == "list" else None,
    )


def _kernel(
    source: KernelSource,
    judged: tuple[KernelStatus, Report | None],
    devices: Sequence[Device],
    held: Sequence[Mapping[str | None, list[int | None]]],
    now: float,
) -> Kernel:
    status, report = judged
    fresh = report if status == "reporting" else None  # a stale report's figures are not shown as current
    sample = fresh["sample"] if fresh is not None else None
    said = {g["uuid"]: g for g in sample["gpus"] if g["uuid"] is not None} if sample is not None else {}
    return Kernel(
        id=source.id,
        pid=source.pid,
        status=status,
        report_age_s=None if report is None else round(max(0.0, now - report["t"]), 3),
        package_version=fresh["package_version"] if fresh else None,
        policy=sample["policy"] if sample else None,
        policy_state=sample.get("policy_state") if sample else None,
        policy_note=sample.get("policy_note") if sample else None,
        policy_note_said=sample.get("policy_note_said") if sample else None,
        framework=sample["framework"] if sample else None,
        framework_started=sample["framework_started"] if sample else False,
        oom_errors_total=fresh["oom_errors_total"] if fresh else None,
        ceiling=Ceiling(fresh["ceiling"]["max_fraction"], fresh["ceiling"]["max_limit_bytes"]) if fresh else Ceiling(),
        gpus=tuple(
            row
            for device, by in zip(devices, held, strict=True)
            if (row := _kernel_gpu(device, by.get(source.id, []), said.get(device.uuid or ""))) is not None
        ),
        execution_state=source.execution_state,
        last_activity=fresh["idle_since"] if fresh and "idle_since" in fresh else source.last_activity,
    )


def _kernel_gpu(device: Device, own: list[int | None], said: SampleGpu | None) -> KernelGpuFigures | None:
    """The kernel's row on a GPU where it is: NVML lists a process of it there, or its framework reports
    allocator figures for it. None elsewhere, even with a budget there: a row where it holds nothing tells
    nothing, and every row costs the server's event loop at each scrape (metrics.py). ``own``: the memory
    of its processes there; ``said``: what its report says of that GPU."""
    if device.lost or device.uuid is None:
        return None
    pool_known = bool(said and said["pool_known"])
    framework = said["framework_bytes"] if said else None
    own_source = said.get("own_source") if said else None
    attributed = own_source in ("matched", "estimated")  # in a container: the kernel knows better
    if not own and framework is None and not pool_known and not attributed:
        return None
    budget = said["budget_bytes"] if said else None
    # No process listed is not 0: NVML lists none where the kernel holds nothing, and also where its PID is
    # not the one the driver sees (a container without the host's PID namespace).
    used = total(own) if own else None
    driver, piece = (said.get("driver_limit"), said.get("slice")) if said else (None, None)
    return KernelGpuFigures(
        index=device.index,
        uuid=device.uuid,
        used_bytes=used,
        budget_bytes=budget,
        in_force=bool(said and said.get("in_force")),
        over_budget=None if used is None or budget is None else used > budget,
        pool_bytes=said["pool_bytes"] if said else None,
        pool_known=pool_known,
        overhead_bytes=said["overhead_bytes"] if said else None,
        overhead_source=said["overhead_source"] if said else None,
        framework_bytes=framework,
        framework_peak_bytes=said["framework_peak_bytes"] if said else None,
        own_bytes=said["own_bytes"] if said else None,
        own_source=own_source,
        limit_kind=said.get("limit_kind") if said else None,
        limit_hard=bool(said and said.get("limit_hard")),
        driver_limit_bytes=driver["hard_bytes"] if driver else None,
        slice=piece["profile"] if piece else None,
        slice_bytes=piece["total_bytes"] if piece else None,
        memory_shared=bool(said and said.get("memory_shared")),
    )
