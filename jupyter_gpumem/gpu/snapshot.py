"""Taking a snapshot: NVML for the GPUs, the host's process table for names, users and CPU%, read by this
process's one NVML reader (reader.py), so no caller waits on the driver longer than its deadline."""

from __future__ import annotations

import os

from jupyter_gpumem.gpu import nvml
from jupyter_gpumem.gpu.host import HostProcesses
from jupyter_gpumem.gpu.model import Snapshot
from jupyter_gpumem.gpu.reader import DEADLINE_S, Reader

_host = HostProcesses()


def _read(cpu_window_s: float) -> Snapshot:
    return nvml.read(
        own_pid=os.getpid(),
        host=lambda pids, name: _host.lookup(pids, name, cpu_window_s=cpu_window_s),
    )


reader = Reader(_read, own_pid=os.getpid())


def take_snapshot(cpu_window_s: float = 0.0, deadline_s: float = DEADLINE_S) -> Snapshot:
    """Every GPU and every process on it, with this kernel's own process marked.

    Never raises for driver trouble: without a GPU or driver, ``problem`` holds the sentence to show. Never
    waits on the driver longer than ``deadline_s``: past it, the figures are the last the driver gave and
    ``stalled_since`` says since when it has not answered. ``cpu_window_s`` measures CPU% of processes seen
    for the first time over that window (a one-off status call) instead of leaving it unknown until the
    next refresh.
    """
    return reader.fresh(deadline_s, cpu_window_s)
