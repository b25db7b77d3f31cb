"""Name, user and CPU% from the real host process table (psutil), joined to what NVML reports."""

from __future__ import annotations

import getpass
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from jupyter_gpumem.gpu.host import HostProcesses

BUSY = "while True: pass"


@pytest.fixture
def busy_process() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen([sys.executable, "-c", BUSY])
    yield process
    process.kill()
    process.wait()


def python_name(pid: int) -> str:
    with open(f"/proc/{pid}/comm") as comm:
        return comm.read().strip()


def test_a_visible_process_gets_its_name_user_and_cpu_percent(busy_process):
    name = python_name(busy_process.pid)
    info = HostProcesses().lookup([busy_process.pid], lambda pid: None, cpu_window_s=0.3)
    seen = info[busy_process.pid]
    assert seen.name == name
    assert seen.user == getpass.getuser()
    assert seen.cpu_percent is not None and seen.cpu_percent > 20  # a busy loop, measured over 0.3 s


def test_cpu_percent_is_unknown_until_measured_then_refreshed_at_its_cadence(busy_process):
    clock = [100.0]
    host = HostProcesses(refresh_s=5.0, clock=lambda: clock[0])
    first = host.lookup([busy_process.pid], lambda pid: None)[busy_process.pid]
    assert first.cpu_percent is None  # one reading cannot give a rate: unknown, not 0
    clock[0] += 1.0
    assert host.lookup([busy_process.pid], lambda pid: None)[busy_process.pid].cpu_percent is None
    clock[0] += 5.0
    time.sleep(0.3)  # psutil measures CPU time over the real time since the previous reading
    later = host.lookup([busy_process.pid], lambda pid: None)[busy_process.pid]
    assert later.cpu_percent is not None and later.cpu_percent > 0


def test_a_pid_the_driver_names_differently_is_another_process_and_is_not_used(busy_process):
    # Inside a container NVML's host PIDs can land on an unrelated local process.
    info = HostProcesses().lookup([busy_process.pid], lambda pid: "/usr/bin/Xorg", cpu_window_s=0.1)
    seen = info[busy_process.pid]
    assert (seen.name, seen.user, seen.cpu_percent) == ("/usr/bin/Xorg", None, None)


def test_the_driver_name_is_kept_when_it_agrees_with_the_host(busy_process):
    driver_name = "/usr/local/bin/" + python_name(busy_process.pid)
    seen = HostProcesses().lookup([busy_process.pid], lambda pid: driver_name)[busy_process.pid]
    assert seen.name == driver_name and seen.user == getpass.getuser()


def test_a_process_that_exits_loses_its_host_figures_but_keeps_its_name(busy_process):
    clock = [0.0]
    host = HostProcesses(refresh_s=1.0, clock=lambda: clock[0])
    host.lookup([busy_process.pid], lambda pid: "python3")
    busy_process.kill()
    busy_process.wait()
    clock[0] += 2.0
    seen = host.lookup([busy_process.pid], lambda pid: "python3")[busy_process.pid]
    assert (seen.name, seen.user, seen.cpu_percent) == ("python3", None, None)


def test_pids_that_leave_the_gpu_are_forgotten():
    host = HostProcesses()
    host.lookup([2_000_001, 2_000_002], lambda pid: f"job{pid}")
    assert set(host.lookup([2_000_002], lambda pid: f"job{pid}")) == {2_000_002}
