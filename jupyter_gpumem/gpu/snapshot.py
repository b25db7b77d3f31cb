"""Taking a snapshot: NVML for the GPUs, the host's process table for names, users and CPU%."""

from __future__ import annotations

import os

from jupyter_gpumem.gpu import nvml
from jupyter_gpumem.gpu.host import HostProcesses
from jupyter_gpumem.gpu.model import Snapshot

_host = HostProcesses()


def take_snapshot(cpu_window_s: float = 0.0) -> Snapshot:
    """Every GPU and every process on it, with this kernel's own process marked.

    Never raises for driver trouble: without a GPU or driver, ``problem`` holds the sentence to show.
    ``cpu_window_s`` measures CPU% of processes seen for the first time over that window (a
    one-off status call) instead of leaving it unknown until the next refresh.
    """
    return nvml.read(
        own_pid=os.getpid(),
        host=lambda pids, name: _host.lookup(pids, name, cpu_window_s=cpu_window_s),
    )
