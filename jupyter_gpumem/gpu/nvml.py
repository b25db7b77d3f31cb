"""The only module that imports pynvml (package ``nvidia-ml-py``).

Every NVML quirk lives here: the library or driver missing, NOT_SUPPORTED on any single call, a GPU
lost mid-run, drivers without the ``_v3`` process queries, N/A memory, bytes-vs-str strings and MIG.
A function the driver lacks (a binding newer than the driver) is logged once, not silently N/A; what
a loaded driver cannot change is read once per GPU (``_Static``). What leaves this module is a
:class:`~jupyter_gpumem.gpu.model.Snapshot`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import pynvml

from jupyter_gpumem.gpu import cgroup
from jupyter_gpumem.gpu.host import in_host_pid_namespace
from jupyter_gpumem.gpu.model import Device, DriverLimit, GpuProcess, HostInfo, MigDevice, ProcessKind, Snapshot
from jupyter_gpumem.words import Said

T = TypeVar("T")

log = logging.getLogger("jupyter_gpumem")

NO_DRIVER = Said("no_driver")
DRIVER_NOT_LOADED = Said("driver_not_loaded")


# Given the PIDs NVML reported and the driver's name for a PID, what the host knows of them.
HostLookup = Callable[[Collection[int], Callable[[int], str | None]], Mapping[int, HostInfo]]


class _Lost(Exception):
    """NVML_ERROR_GPU_IS_LOST: this GPU is gone until it is reset; the others still read."""


class _NoLimits(Exception):
    """The driver-enforced limits cannot be read (args[0]: why, a Said)."""


NO_INSTANCE = 0xFFFFFFFF  # a process's gpuInstanceId outside MIG mode
Table = dict[int, tuple[int | None, ProcessKind, int | None]]  # pid -> used bytes, kind, GPU instance id


class _Facts(NamedTuple):
    """What cannot change about a GPU while the driver is loaded."""

    uuid: str | None  # what they were read with
    name: str | None
    compute_capability: tuple[int, int] | None


@dataclass
class _Static:
    """Facts read once instead of every snapshot: on a one-GPU machine they were 3 of its 11 NVML
    calls, a fixed cost paid again every interval. MIG mode is not among them: it changes while the
    driver stays loaded.

    A GPU's entry is used only while the GPU at its index still reports the UUID it was read with.
    The UUID is read every snapshot for that: one cheap call, and it keys the cache by the GPU's
    identity rather than its position, so no event we did not foresee (a GPU swapped at the same
    count, as the stand-in does when its scenario is rewritten) can put one GPU's name on another's
    figures. A handle would tell no more: a driver keeps it for its whole session, and the stand-in
    keeps it across scenario reloads. Everything is forgotten when NVML starts (again, after the
    driver went away), when the GPU count changes, when the stand-in is pointed at another scenario
    file and when any UUID changes (the machine changed under us, so the driver version may have
    too); a GPU's entry when it is lost or its handle refused. A fact the driver refused is not
    kept: it is asked for again next time.
    """

    machine: tuple[int, str | None] | None = None  # the GPU count, and the stand-in's scenario file
    devices: dict[int, _Facts] = field(default_factory=dict)  # by NVML index
    driver_version: str | None = None
    limit_calls: bool = True  # False once the driver turned out to lack nvmlDeviceGetMemoryLimits_v1

    def forget(self) -> None:
        self.devices.clear()
        self.driver_version = None
        self.limit_calls = True


_UNSEEN = HostInfo()
_lock = threading.Lock()
_initialised = False
_standin_marker: Any = None  # the stand-in's scenario function; None with a real driver
_processes_v2_only = False  # set once a driver turns out to lack the _v3 process queries
_static = _Static()
_missing_functions: set[str] = set()  # NVML functions this driver lacks, each logged once


def _text(value: str | bytes) -> str:
    # nvidia-ml-py returns str; older releases returned bytes.
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _missing(function: str) -> None:
    """Say once per function that the driver lacks it: N/A alone would hide a fixable mismatch."""
    if function in _missing_functions:
        return
    _missing_functions.add(function)
    log.warning(
        "jupyter-gpumem: the NVIDIA driver has no %s, so what it reads shows as N/A. The nvidia-ml-py "
        "binding may be newer than the driver: update the driver, or install an nvidia-ml-py as old as it.",
        function,
    )


def _optional(call: Callable[..., T], *args: Any, function: str | None = None) -> T | None:
    """A per-call query: None where the driver says not supported, not permitted or not found.
    ``function`` names the NVML function in the warning when ``call`` is not the binding's own."""
    try:
        return call(*args)
    except pynvml.NVMLError_GpuIsLost as error:
        raise _Lost from error
    except pynvml.NVMLError_FunctionNotFound:
        _missing(function or call.__name__)
        return None
    except pynvml.NVMLError:
        return None


def _init() -> Said | None:
    """Start NVML once per process; returns a sentence when there is no driver to talk to."""
    global _initialised
    if _initialised:
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError_LibraryNotFound:
        return NO_DRIVER
    except pynvml.NVMLError_DriverNotLoaded:
        return DRIVER_NOT_LOADED
    except pynvml.NVMLError as error:
        return Said("nvml_not_started", error=str(error))
    _initialised = True
    _static.forget()  # a driver that went away may come back with other GPUs, or as another version
    _find_standin_marker()
    return None


def _find_standin_marker() -> None:
    """Remember whether the stand-in libnvidia-ml.so.1 is loaded: no real driver has this symbol."""
    global _standin_marker
    try:
        _standin_marker = pynvml.nvmlLib.jupyterGpumemStandinScenario
    except AttributeError:
        _standin_marker = None
        return
    _standin_marker.restype = pynvml.c_char_p


def _simulated_scenario() -> str | None:
    """The stand-in's current scenario path (it follows the environment), or None with a real driver."""
    if _standin_marker is None:
        return None
    return _text(_standin_marker() or b"") or "unknown scenario"


def _running_processes(handle: Any, kind: str) -> list[Any]:
    global _processes_v2_only
    if not _processes_v2_only:
        query = getattr(pynvml, f"nvmlDevice{kind}RunningProcesses")
        try:
            return list(query(handle))
        except (pynvml.NVMLLibraryMismatchError, pynvml.NVMLError_FunctionNotFound):
            _processes_v2_only = True  # driver older than the binding: the _v2 struct is the same size
    return list(getattr(pynvml, f"nvmlDevice{kind}RunningProcesses_v2")(handle))


def _process_table(handle: Any) -> tuple[Table, bool]:
    """pid -> (used bytes or None, kind, GPU instance), and whether the driver answered at all."""
    table: Table = {}
    answered = False
    for kind, label in (("GetCompute", "compute"), ("GetGraphics", "graphics")):
        procs = _optional(_running_processes, handle, kind, function=f"nvmlDevice{kind}RunningProcesses")
        if procs is None:
            continue
        answered = True
        for proc in procs:
            used = proc.usedGpuMemory  # None: N/A (pynvml maps NVML_VALUE_NOT_AVAILABLE)
            instance = getattr(proc, "gpuInstanceId", NO_INSTANCE)
            instance = None if instance in (None, NO_INSTANCE) else int(instance)
            if proc.pid in table:
                known, _, _ = table[proc.pid]
                both = None if known is None and used is None else (known or 0) + (used or 0)
                table[proc.pid] = (both, "compute+graphics", instance)
            else:
                table[proc.pid] = (used, label, instance)  # type: ignore[assignment]
    return table, answered


def _mig_devices(handle: Any) -> tuple[MigDevice, ...]:
    count = _optional(pynvml.nvmlDeviceGetMaxMigDeviceCount, handle) or 0
    found = []
    for slot in range(count):
        mig = _optional(pynvml.nvmlDeviceGetMigDeviceHandleByIndex, handle, slot)
        if mig is None:
            continue  # NVML_ERROR_NOT_FOUND: an empty slot
        uuid = _optional(pynvml.nvmlDeviceGetUUID, mig)
        memory = _optional(pynvml.nvmlDeviceGetMemoryInfo, mig)
        name = _optional(pynvml.nvmlDeviceGetName, mig)
        found.append(
            MigDevice(
                uuid=_text(uuid) if uuid is not None else None,
                total_bytes=memory.total if memory else None,
                used_bytes=memory.used if memory else None,
                name=_text(name) if name is not None else None,
                gpu_instance_id=_optional(pynvml.nvmlDeviceGetGpuInstanceId, mig),
                compute_instance_id=_optional(pynvml.nvmlDeviceGetComputeInstanceId, mig),
            )
        )
    return tuple(found)


def _static_facts(index: int, handle: Any, uuid: str | None) -> _Facts:
    """The GPU's name and compute capability: from the cache while it reports the same UUID."""
    known = _static.devices.get(index)
    if known is not None and known.uuid != uuid:
        _static.forget()  # another GPU at this index: the machine changed under us
    elif known is not None and known.name is not None and known.compute_capability is not None:
        return known
    # What the driver did not tell is asked again each time: the refusal may have been a passing one.
    name = _optional(pynvml.nvmlDeviceGetName, handle)
    capability = _optional(pynvml.nvmlDeviceGetCudaComputeCapability, handle)
    facts = _Facts(
        uuid=uuid,
        name=_text(name) if name is not None else None,
        compute_capability=(capability[0], capability[1]) if capability else None,
    )
    if uuid is not None:  # without a UUID there is no telling it is the same GPU next time
        _static.devices[index] = facts
    return facts


def _shares_host_memory(handle: Any) -> bool:
    """The GPU addresses the host's memory (ATS: GB10, Grace Hopper; HMM): where it reports no memory of its own,
    the host's is its pool. False where the driver or the binding lacks nvmlDeviceGetAddressingMode."""
    get = getattr(pynvml, "nvmlDeviceGetAddressingMode", None)
    mode = _optional(get, handle, function="nvmlDeviceGetAddressingMode") if get is not None else None
    return mode in (pynvml.NVML_DEVICE_ADDRESSING_MODE_ATS, pynvml.NVML_DEVICE_ADDRESSING_MODE_HMM)


def _driver_limit(handle: Any, found: cgroup.Chain) -> DriverLimit | None:
    """The lowest hard limit the driver enforces from this process's cgroup up to the root, with the figures of
    the cgroup it is set on; None where none is set. Raises _NoLimits (why) where they cannot be read."""
    get = getattr(pynvml, "nvmlDeviceGetMemoryLimits_v1", None)
    if get is None or not _static.limit_calls:
        raise _NoLimits(Said("driver_limits_no_calls"))
    binding = None
    for path in found.paths:
        limits = pynvml.c_nvmlGetMemoryLimits_v1_t()
        limits.nameSpace = found.directory(path).encode()
        try:
            get(handle, limits)
        except pynvml.NVMLError_GpuIsLost as error:
            raise _Lost from error
        except pynvml.NVMLError_FunctionNotFound:
            _static.limit_calls = False  # a driver older than 615: asked again only when NVML starts again
            raise _NoLimits(Said("driver_limits_no_calls")) from None
        except pynvml.NVMLError as error:
            raise _NoLimits(Said("driver_limits_refused", error=str(error))) from None
        hard = int(limits.hardLimit)
        if hard < pynvml.NVML_DEVICE_MEMORY_LIMIT_MAX and (binding is None or hard < binding.hard_bytes):
            binding = DriverLimit(hard, int(limits.softLimit) or None, int(limits.currentUsed), path)
    return binding


class _Read(NamedTuple):
    device: Device
    processes: Table
    limits_unknown: Said | None = None  # why its driver-enforced limits could not be read


def _read_device(index: int, found: cgroup.Chain | Said) -> _Read:
    """GPU ``index``; ``found``: this process's cgroups (for the driver's limits and a shared memory's cap), or why
    there are none."""
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    except pynvml.NVMLError_GpuIsLost:
        _static.devices.pop(index, None)
        return _Read(Device(index=index, uuid=None, name=None, lost=True), {})
    except pynvml.NVMLError:
        _static.devices.pop(index, None)
        return _Read(Device(index=index, uuid=None, name=None), {})
    uuid = facts = None
    chain = found if isinstance(found, cgroup.Chain) else None
    unknown = found if isinstance(found, Said) else None
    limit = None
    try:
        raw_uuid = _optional(pynvml.nvmlDeviceGetUUID, handle)
        uuid = _text(raw_uuid) if raw_uuid is not None else None
        facts = _static_facts(index, handle, uuid)
        memory = _optional(pynvml.nvmlDeviceGetMemoryInfo, handle)
        shared = cgroup.host_memory(chain) if memory is None and _shares_host_memory(handle) else None
        util = _optional(pynvml.nvmlDeviceGetUtilizationRates, handle)
        mig_mode = _optional(pynvml.nvmlDeviceGetMigMode, handle)
        mig_enabled = None if mig_mode is None else mig_mode[0] == pynvml.NVML_DEVICE_MIG_ENABLE
        procs, answered = _process_table(handle)
        migs = _mig_devices(handle) if mig_enabled else ()
        if chain is not None and not mig_enabled:  # MIG handles have no driver limits
            try:
                limit = _driver_limit(handle, chain)
            except _NoLimits as why:
                unknown = why.args[0]
    except _Lost:
        # Only what was read before the loss; the GPU is read afresh when it is back (after a reset).
        _static.devices.pop(index, None)
        return _Read(Device(index=index, uuid=uuid, name=facts.name if facts else None, lost=True), {})
    total = used = free = None
    if memory is not None:
        total, used, free = memory.total, memory.used, memory.free
    elif shared is not None:
        total, used, free = shared.total_bytes, shared.used_bytes, shared.free_bytes
    device = Device(
        index=index,
        uuid=uuid,
        name=facts.name,
        total_bytes=total,
        used_bytes=used,
        free_bytes=free,
        utilization_percent=util.gpu if util else None,
        compute_capability=facts.compute_capability,
        mig_enabled=mig_enabled,
        mig_devices=migs,
        memory_shared=shared is not None,
        driver_limit=limit,
        processes_known=answered,
    )
    return _Read(device, procs, unknown)


def process_name(pid: int) -> str | None:
    """The driver's name for a process; works where the host process table cannot see the PID."""
    try:
        return _text(pynvml.nvmlSystemGetProcessName(pid)) or None
    except pynvml.NVMLError_FunctionNotFound:
        _missing("nvmlSystemGetProcessName")
        return None
    except pynvml.NVMLError:
        return None


def read(own_pid: int, host: HostLookup) -> Snapshot:
    """Read every GPU and its processes. Never raises for driver trouble: see ``Snapshot.problem``."""
    global _initialised
    with _lock:
        now = time.time()
        problem = _init()
        if problem:
            return Snapshot(taken_at=now, own_pid=own_pid, problem=problem)
        try:
            count = pynvml.nvmlDeviceGetCount()
        except pynvml.NVMLError_DriverNotLoaded:
            _initialised = False  # the driver went away; try to start again next time
            return Snapshot(taken_at=now, own_pid=own_pid, problem=DRIVER_NOT_LOADED)
        except pynvml.NVMLError as error:
            return Snapshot(
                taken_at=now,
                own_pid=own_pid,
                problem=Said("nvml_not_listing", error=str(error)),
            )
        simulated = _simulated_scenario()
        if (count, simulated) != _static.machine:
            _static.forget()
            _static.machine = (count, simulated)
        found = cgroup.chain()
        readings = [_read_device(index, found) for index in range(count)]
        if _static.driver_version is None:  # after the GPUs: a UUID that changed forgets it too
            driver = _optional(pynvml.nvmlSystemGetDriverVersion)
            _static.driver_version = _text(driver) if driver is not None else None
        pids = {pid for _, procs, _ in readings for pid in procs}
        info = host(pids, process_name) if pids else {}
        devices = []
        for device, procs, _ in readings:
            if procs and device.uuid is not None:
                uuid = device.uuid
                rows = tuple(
                    _row(pid, uuid, used, kind, instance, info.get(pid, _UNSEEN), own_pid)
                    for pid, (used, kind, instance) in procs.items()
                )
                device = replace(device, processes=rows)
            devices.append(device)
        unknown = next((why for _, _, why in readings if why is not None), None)
        return Snapshot(
            taken_at=now,
            own_pid=own_pid,
            devices=tuple(devices),
            driver_version=_static.driver_version,
            simulated_scenario=simulated,
            host_pid_namespace=in_host_pid_namespace(),
            driver_limits_unknown=unknown,
        )


def _row(
    pid: int, uuid: str, used: int | None, kind: ProcessKind, instance: int | None, host: HostInfo, own_pid: int
) -> GpuProcess:
    own = pid == own_pid
    local = True if own else host.local
    return GpuProcess(pid, uuid, used, kind, host.name, host.user, host.cpu_percent, own, local, instance)


LIMITS_DRIVER = "an NVIDIA driver from 615 (CUDA 13.4)"


class LimitSetter:
    """The driver-enforced memory limits, set (nvmlDeviceSetMemoryLimits_v1, drivers from 615; root): the hub's one
    writer to NVML (hub/cgroups.py), started on the first server that needs it. Every NVML error is caught by the
    caller through ``missing``, said as a phrase naming what is missing; none reaches a spawn."""

    def __init__(self) -> None:
        self.pynvml: Any = None  # the module, once NVML started

    def start(self) -> str | None:
        """None when NVML answers and has the calls; else what is missing."""
        if self.pynvml is not None:
            return None
        if not hasattr(pynvml, "nvmlDeviceSetMemoryLimits_v1"):
            return "nvidia-ml-py 13.615.71 or later in the hub's environment (it has no nvmlDeviceSetMemoryLimits_v1)"
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as error:
            return f"an NVIDIA driver the hub can reach (NVML did not start: {error})"
        self.pynvml = pynvml
        return None

    def missing(self, error: Exception) -> str:
        """An NVML error from a limit call as what is missing."""
        pynvml = self.pynvml
        if isinstance(error, pynvml.NVMLError_FunctionNotFound):
            return f"{LIMITS_DRIVER}: this driver has no nvmlDeviceSetMemoryLimits_v1"
        if isinstance(error, pynvml.NVMLError_NoPermission):
            return "permission to set the driver's memory limits (NVML said: not permitted; the hub must be root)"
        if isinstance(error, pynvml.NVMLError_NotSupported):
            return f"a GPU that supports memory limits (NVML said: not supported; {LIMITS_DRIVER}, not MIG)"
        return f"a driver that accepts the limit (NVML said: {error})"

    def gpus(self) -> list[tuple[int, Any, int | None]]:
        """(index, handle, memory in bytes or None) of every GPU not in MIG mode. Raises pynvml.NVMLError."""
        pynvml = self.pynvml
        found = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            try:
                if pynvml.nvmlDeviceGetMigMode(handle)[0] == pynvml.NVML_DEVICE_MIG_ENABLE:
                    continue  # MIG handles have no memory limits; the slices are the limit there
            except pynvml.NVMLError:
                pass  # not supported: no MIG on this GPU
            try:
                total: int | None = int(pynvml.nvmlDeviceGetMemoryInfo(handle).total)
            except pynvml.NVMLError:
                total = None
            found.append((index, handle, total))
        return found

    def set(self, handle: Any, directory: Path, soft: int, hard: int) -> None:
        pynvml = self.pynvml
        limits = pynvml.c_nvmlSetMemoryLimits_v1_t()
        limits.nameSpace = str(directory).encode()
        limits.softLimit = soft
        limits.hardLimit = hard
        pynvml.nvmlDeviceSetMemoryLimits_v1(handle, limits)

    def clear(self, handle: Any, directory: Path) -> None:
        self.set(handle, directory, 0, self.pynvml.NVML_DEVICE_MEMORY_LIMIT_MAX)
