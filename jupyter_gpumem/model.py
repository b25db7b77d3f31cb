"""Plain immutable data passed between layers. No pynvml or framework object ever gets in here.

A figure the driver cannot tell is ``None`` ("N/A"), never 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

ProcessKind = Literal["compute", "graphics", "compute+graphics"]


class HostInfo(NamedTuple):
    """What the host's process table says about a PID (``None`` where it cannot be seen).
    Its fields are GpuProcess's name, user and cpu_percent, in that order."""

    name: str | None = None
    user: str | None = None
    cpu_percent: float | None = None


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


@dataclass(frozen=True, slots=True)
class MigDevice:
    uuid: str | None
    total_bytes: int | None
    used_bytes: int | None


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
    processes: tuple[GpuProcess, ...] = ()
    processes_known: bool = True  # False when the driver refused the process query
    lost: bool = False  # NVML_ERROR_GPU_IS_LOST: fell off the bus, needs a reset

    @property
    def holds_self(self) -> bool:
        """This kernel's process is on this GPU."""
        return any(p.is_self for p in self.processes)

    @property
    def own_bytes(self) -> int | None:
        """This kernel's memory on this GPU: 0 when it holds none, None when the driver cannot tell
        (or the GPU is lost: then nothing about it can be read)."""
        if self.lost:
            return None
        own = [p.used_bytes for p in self.processes if p.is_self]
        return None if None in own else sum(b or 0 for b in own)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One reading of every GPU and every process on it, as nvidia-smi would count them."""

    taken_at: float  # time.time()
    own_pid: int
    devices: tuple[Device, ...] = ()
    driver_version: str | None = None
    problem: str | None = None  # a sentence when NVML cannot be read at all
    simulated_scenario: str | None = None  # set when the stand-in NVML answered, not a driver

    @property
    def own_processes(self) -> tuple[GpuProcess, ...]:
        return tuple(p for d in self.devices for p in d.processes if p.is_self)
