"""Name, user and CPU% of the processes NVML reports, from the host's process table (psutil).

Looking processes up costs more than reading NVML, so it happens at a slower cadence
(``refresh_s``) and is cached per PID. The command line is never read: on a shared machine
another user's arguments are theirs.

Inside a container NVML may report host PIDs, which can name an unrelated process in the container's
own PID namespace. Where the driver names the process and the names disagree, the host figures are
not used: an honest "not visible" beats another process's CPU%. Each PID is marked ``local`` or not:
a process of this PID namespace running the program the driver names (attribution.py reads from
these marks whether the driver's PIDs are this kernel's at all; docs/containers.md).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

import psutil

from jupyter_gpumem.gpu.model import HostInfo


@dataclass
class _Entry:
    process: psutil.Process | None
    info: HostInfo
    refreshed_at: float


def _same_program(driver_name: str, host_name: str) -> bool:
    # The driver gives a path or a name; the host's comm is cut to 15 characters.
    base = os.path.basename(driver_name)
    return base.startswith(host_name) or host_name.startswith(base[:15])


class HostProcesses:
    def __init__(self, refresh_s: float = 5.0, clock: Callable[[], float] = time.monotonic):
        self.refresh_s = refresh_s
        self._clock = clock
        self._entries: dict[int, _Entry] = {}
        self._infos: dict[int, HostInfo] = {}  # what lookup returns; kept in step with _entries

    def lookup(
        self,
        pids: Collection[int],
        nvml_name: Callable[[int], str | None],
        cpu_window_s: float = 0.0,
    ) -> Mapping[int, HostInfo]:
        """Host info per PID. With ``cpu_window_s``, PIDs seen for the first time get a CPU%
        measured over that window instead of waiting for the next refresh."""
        now = self._clock()
        for gone in self._entries.keys() - (pids if isinstance(pids, (set, frozenset)) else set(pids)):
            del self._entries[gone]
            del self._infos[gone]
        fresh = []
        for pid in pids:
            entry = self._entries.get(pid)
            if entry is None:
                entry = self._entries[pid] = self._open(pid, nvml_name(pid), now)
                self._infos[pid] = entry.info
                fresh.append((pid, entry))
            elif now - entry.refreshed_at >= self.refresh_s:
                self._infos[pid] = self._refresh(entry, now)
        if cpu_window_s > 0 and any(entry.process for _, entry in fresh):
            time.sleep(cpu_window_s)
            for pid, entry in fresh:
                self._infos[pid] = self._refresh(entry, self._clock())
        return self._infos

    def _open(self, pid: int, driver_name: str | None, now: float) -> _Entry:
        try:
            process = psutil.Process(pid)
            with process.oneshot():
                host_name = process.name()
                user = _username(process)
                process.cpu_percent(None)  # primes the counter; the first reading is meaningless
        except psutil.NoSuchProcess:
            return _Entry(None, HostInfo(name=driver_name, local=False), now)
        except (psutil.AccessDenied, psutil.ZombieProcess):  # it is here, but which program it runs is not told
            return _Entry(None, HostInfo(name=driver_name), now)
        if driver_name and not _same_program(driver_name, host_name):
            return _Entry(None, HostInfo(name=driver_name, local=False), now)
        # Without the driver's name there is nothing to compare: it may be another namespace's PID.
        local = True if driver_name else None
        return _Entry(process, HostInfo(name=driver_name or host_name, user=user, local=local), now)

    def _refresh(self, entry: _Entry, now: float) -> HostInfo:
        entry.refreshed_at = now
        if entry.process is None:
            return entry.info
        try:
            cpu = entry.process.cpu_percent(None)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            entry.process = None
            entry.info = HostInfo(name=entry.info.name, local=entry.info.local)  # where it was seen stays true
            return entry.info
        entry.info = entry.info._replace(cpu_percent=cpu)
        return entry.info


def _username(process: psutil.Process) -> str | None:
    try:
        return process.username()
    except (KeyError, psutil.AccessDenied):  # a UID with no passwd entry (common in containers)
        return None


_host_namespace: bool | None = None


def in_host_pid_namespace() -> bool:
    """This process shares the host's PID namespace. Only there does ``/proc`` show the kernel's own
    threads, and PID 2 is always ``kthreadd`` (parent 0); in a container of its own (Docker, Kubernetes
    without hostPID, ``unshare --pid --mount-proc``) PID 2 is another process or none. Read once: a
    process does not change PID namespace. Where there is no ``/proc`` (not Linux) there are no PID
    namespaces to tell apart: True."""
    global _host_namespace
    if _host_namespace is None:
        _host_namespace = _reads_as_host(Path("/proc"))
    return _host_namespace


def _reads_as_host(proc: Path) -> bool:
    if not (proc / "self").exists():
        return True
    try:
        stat = (proc / "2" / "stat").read_text()
    except OSError:
        return False
    # "2 (kthreadd) S 0 ...": the name in brackets, then the state, then the parent's PID.
    name, _, rest = stat.partition(" (")[2].rpartition(") ")
    return name == "kthreadd" and rest.split()[1:2] == ["0"]
