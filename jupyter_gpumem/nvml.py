"""The only module that imports pynvml (package ``nvidia-ml-py``).

Every NVML quirk lives here: the library or driver missing, NOT_SUPPORTED on any single call, a GPU
lost mid-run, drivers without the ``_v3`` process queries, N/A memory, bytes-vs-str strings and MIG.
What leaves this module is a :class:`~jupyter_gpumem.model.Snapshot`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from typing import Any, TypeVar

import pynvml

from .model import Device, GpuProcess, HostInfo, MigDevice, ProcessKind, Snapshot

T = TypeVar("T")

NO_DRIVER = (
    "No NVIDIA driver found (libnvidia-ml.so.1 could not be loaded), so there is no GPU to show. "
    "The kernel works as usual; on a GPU machine, install the NVIDIA driver."
)
DRIVER_NOT_LOADED = (
    "The NVIDIA driver is installed but not loaded (NVML: Driver Not Loaded), so there is no GPU to "
    "show. The kernel works as usual; `nvidia-smi` in a terminal tells the same story."
)


# Given the PIDs NVML reported and the driver's name for a PID, what the host knows of them.
HostLookup = Callable[[Collection[int], Callable[[int], str | None]], Mapping[int, HostInfo]]


class _Lost(Exception):
    """NVML_ERROR_GPU_IS_LOST: this GPU is gone until it is reset; the others still read."""


_UNSEEN = HostInfo()
_lock = threading.Lock()
_initialised = False
_standin_marker: Any = None  # the stand-in's scenario function; None with a real driver
_processes_v2_only = False  # set once a driver turns out to lack the _v3 process queries


def _text(value: str | bytes) -> str:
    # nvidia-ml-py returns str; older releases returned bytes.
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _optional(call: Callable[..., T], *args: Any) -> T | None:
    """A per-call query: None where the driver says not supported, not permitted or not found."""
    try:
        return call(*args)
    except pynvml.NVMLError_GpuIsLost as error:
        raise _Lost from error
    except pynvml.NVMLError:
        return None


def _init() -> str | None:
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
        return f"NVML could not start ({error}), so there is no GPU to show. The kernel works as usual."
    _initialised = True
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


def _process_table(handle: Any) -> tuple[dict[int, tuple[int | None, ProcessKind]], bool]:
    """pid -> (used bytes or None, kind), and whether the driver answered at all."""
    table: dict[int, tuple[int | None, ProcessKind]] = {}
    answered = False
    for kind, label in (("GetCompute", "compute"), ("GetGraphics", "graphics")):
        procs = _optional(_running_processes, handle, kind)
        if procs is None:
            continue
        answered = True
        for proc in procs:
            used = proc.usedGpuMemory  # None: N/A (pynvml maps NVML_VALUE_NOT_AVAILABLE)
            if proc.pid in table:
                known, _ = table[proc.pid]
                both = None if known is None and used is None else (known or 0) + (used or 0)
                table[proc.pid] = (both, "compute+graphics")
            else:
                table[proc.pid] = (used, label)  # type: ignore[assignment]
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
        found.append(
            MigDevice(
                uuid=_text(uuid) if uuid is not None else None,
                total_bytes=memory.total if memory else None,
                used_bytes=memory.used if memory else None,
            )
        )
    return tuple(found)


def _read_device(index: int) -> tuple[Device, dict[int, tuple[int | None, ProcessKind]]]:
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    except pynvml.NVMLError_GpuIsLost:
        return Device(index=index, uuid=None, name=None, lost=True), {}
    except pynvml.NVMLError:
        return Device(index=index, uuid=None, name=None), {}
    uuid = name = None
    try:
        uuid = _optional(pynvml.nvmlDeviceGetUUID, handle)
        name = _optional(pynvml.nvmlDeviceGetName, handle)
        memory = _optional(pynvml.nvmlDeviceGetMemoryInfo, handle)
        util = _optional(pynvml.nvmlDeviceGetUtilizationRates, handle)
        capability = _optional(pynvml.nvmlDeviceGetCudaComputeCapability, handle)
        mig_mode = _optional(pynvml.nvmlDeviceGetMigMode, handle)
        mig_enabled = None if mig_mode is None else mig_mode[0] == pynvml.NVML_DEVICE_MIG_ENABLE
        procs, answered = _process_table(handle)
        migs = _mig_devices(handle) if mig_enabled else ()
    except _Lost:
        lost = Device(
            index=index,
            uuid=_text(uuid) if uuid is not None else None,
            name=_text(name) if name is not None else None,
            lost=True,
        )
        return lost, {}
    device = Device(
        index=index,
        uuid=_text(uuid) if uuid is not None else None,
        name=_text(name) if name is not None else None,
        total_bytes=memory.total if memory else None,
        used_bytes=memory.used if memory else None,
        free_bytes=memory.free if memory else None,
        utilization_percent=util.gpu if util else None,
        compute_capability=(capability[0], capability[1]) if capability else None,
        mig_enabled=mig_enabled,
        mig_devices=migs,
        processes_known=answered,
    )
    return device, procs


def process_name(pid: int) -> str | None:
    """The driver's name for a process; works where the host process table cannot see the PID."""
    try:
        return _text(pynvml.nvmlSystemGetProcessName(pid)) or None
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
            driver = _optional(pynvml.nvmlSystemGetDriverVersion)
        except pynvml.NVMLError_DriverNotLoaded:
            _initialised = False  # the driver went away; try to start again next time
            return Snapshot(taken_at=now, own_pid=own_pid, problem=DRIVER_NOT_LOADED)
        except pynvml.NVMLError as error:
            return Snapshot(
                taken_at=now,
                own_pid=own_pid,
                problem=f"NVML could not list the GPUs ({error}). The kernel works as usual.",
            )
        readings = [_read_device(index) for index in range(count)]
        pids = {pid for _, procs in readings for pid in procs}
        info = host(pids, process_name) if pids else {}
        devices = []
        for device, procs in readings:
            if procs and device.uuid is not None:
                uuid = device.uuid
                rows = tuple(
                    GpuProcess(pid, uuid, used, kind, *info.get(pid, _UNSEEN), pid == own_pid)
                    for pid, (used, kind) in procs.items()
                )
                device = replace(device, processes=rows)
            devices.append(device)
        return Snapshot(
            taken_at=now,
            own_pid=own_pid,
            devices=tuple(devices),
            driver_version=_text(driver) if driver is not None else None,
            simulated_scenario=_simulated_scenario(),
        )
