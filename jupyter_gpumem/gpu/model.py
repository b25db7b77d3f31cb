"""Plain immutable data passed between layers. No pynvml or framework object ever gets in here.

A figure the driver cannot tell is ``None`` ("N/A"), never 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

from jupyter_gpumem.words import Said

ProcessKind = Literal["compute", "graphics", "compute+graphics"]


class HostInfo(NamedTuple):
    """What the host's process table says about a PID (``None`` where it cannot be seen): GpuProcess's
    name, user, cpu_percent and local."""

    name: str | None = None
    user: str | None = None
    cpu_percent: float | None = None
    local: bool | None = None


class GpuProcess(NamedTuple):
    """One process on one GPU. A NamedTuple, not a frozen dataclass: a sample can hold hundreds of
    these and a frozen dataclass takes five times as long to build (benchmarks/sampler.py)."""

    pid: int
    gpu_uuid: str
    used_bytes: int | None  # None: the driver cannot tell (WDDM, some MIG setups)
    kind: ProcessKind
    name: str | None
    user: str | None
    cpu_percent: float | None
    is_self: bool
    # The PID is a process of this kernel's PID namespace running the program the driver names: True;
    # no such process here, or another program (the driver reports PIDs of another namespace): False;
    # None: not looked up, or it cannot be told (no driver name to compare, access denied).
    local: bool | None = None
    # On a GPU in MIG mode, the GPU instance (slice) the process runs on; None elsewhere or not told.
    gpu_instance_id: int | None = None


@dataclass(frozen=True, slots=True)
class MigDevice:
    """One MIG slice of a GPU: its own memory (per GPU instance) and its processes' instance id."""

    uuid: str | None
    total_bytes: int | None
    used_bytes: int | None
    name: str | None = None  # "NVIDIA A100-SXM4-40GB MIG 1g.5gb"
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None

    @property
    def profile(self) -> str | None:
        """The slice's profile, "1g.5gb", from the name the driver gives it."""
        if not self.name or " MIG " not in self.name:
            return None
        return self.name.rsplit(" MIG ", 1)[1].strip() or None


@dataclass(frozen=True, slots=True)
class DriverLimit:
    """The GPU memory limit the NVIDIA driver enforces on this process's cgroup (nvmlDeviceGetMemoryLimits_v1,
    drivers from 615): the lowest hard limit on the path from its cgroup to the root, and that cgroup's figures."""

    hard_bytes: int
    soft_bytes: int | None  # None: no soft limit there
    used_bytes: int | None  # what the driver counts against it
    cgroup: str  # the cgroup whose limit binds, as /proc/<pid>/cgroup names it ("/jupyterhub/alice")


@dataclass(frozen=True, slots=True)
class Device:
    index: int  # NVML index (PCI bus order); match devices by uuid, not index
    uuid: str | None
    name: str | None
    total_bytes: int | None = None
    used_bytes: int | None = None
    free_bytes: int | None = None
    utilization_percent: int | None = None
    compute_capability: tuple[int, int] | None = None  # CUDA's (major, minor): the GPU generation
    mig_enabled: bool | None = None  # None: MIG not supported on this GPU
    mig_devices: tuple[MigDevice, ...] = ()
    # A GPU with no memory of its own (GB10, NVML's memory info NOT_SUPPORTED and ATS/HMM addressing): its figures
    # are the host's memory, which it shares with the CPU (/proc/meminfo, under the cgroup's memory.max).
    memory_shared: bool = False
    driver_limit: DriverLimit | None = None
    processes: tuple[GpuProcess, ...] = ()
    processes_known: bool = True  # False when the driver refused the process query
    lost: bool = False  # NVML_ERROR_GPU_IS_LOST: fell off the bus, needs a reset

    @property
    def holds_self(self) -> bool:
        """This kernel's process is on this GPU."""
        return any(p.is_self for p in self.processes)

    @property
    def listed_own_bytes(self) -> int | None:
        """What NVML lists under this kernel's PID on this GPU: 0 when it lists none, None when the driver
        cannot tell (or the GPU is lost: then nothing about it can be read). In a container whose PIDs the
        driver does not translate, 0 here means nothing: every surface shows the Reading's attributed
        figure instead (attribution.py), which says exact, matched, estimated or unknown."""
        if self.lost:
            return None
        own = [p.used_bytes for p in self.processes if p.is_self]
        return None if None in own else sum(b or 0 for b in own)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One reading of every GPU and every process on it, as nvidia-smi would count them."""

    taken_at: float  # time.time(): when NVML answered, or (stalled_since set) when the figures were asked for
    own_pid: int
    devices: tuple[Device, ...] = ()
    driver_version: str | None = None
    problem: str | None = None  # a sentence when NVML cannot be read at all
    simulated_scenario: str | None = None  # set when the stand-in NVML answered, not a driver
    # This kernel shares the host's PID namespace (not in a container of its own, or --pid=host); None: not
    # known (a snapshot made by hand), read as True.
    host_pid_namespace: bool | None = None
    # The NVIDIA driver did not answer in time (reader.py): it has not answered since then, and the figures are
    # the last it gave, at that time (none when it never answered). None: these figures are the driver's answer.
    stalled_since: float | None = None
    # Why no driver-enforced limit could be read (a driver without the calls, no cgroup v2, a call refused); None:
    # they were read (a GPU without a limit then has driver_limit None), or there was nothing to read them on.
    driver_limits_unknown: Said | None = None

    @property
    def own_processes(self) -> tuple[GpuProcess, ...]:
        return tuple(p for d in self.devices for p in d.processes if p.is_self)
