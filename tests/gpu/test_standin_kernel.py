"""The stand-in's `pid=kernel`: one process for every reader of a scenario, the oldest IPython kernel reading it.

The "kernels" here are real processes whose command line is a kernel's (`python ... ipykernel_launcher`), each
waiting on its stdin; a real JupyterLab with real kernels is tests/ui/test_demo_story.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from jupyter_gpumem import standin
from jupyter_gpumem.gpu import nvml
from jupyter_gpumem.gpu.host import HostProcesses
from jupyter_gpumem.units import MiB

SCENARIO = """driver version=550.54.15 cuda=12040
gpu name="NVIDIA A100-SXM4-40GB" uuid=GPU-5e5e5e5e-0000-4000-8000-000000000000 total=40960MiB used=9000MiB
proc gpu=0 pid=kernel used=1536MiB name=python
proc gpu=0 pid=41337 used=5000MiB name=python3
"""
READ = """import json, os
from jupyter_gpumem.gpu import nvml
from jupyter_gpumem.gpu.host import HostProcesses
snapshot = nvml.read(os.getpid(), HostProcesses().lookup)
print(json.dumps([[p.pid, p.used_bytes, p.name, p.is_self] for p in snapshot.devices[0].processes]))
"""


@pytest.fixture
def start_kernel() -> Iterator[Callable[[Path], subprocess.Popen[bytes]]]:
    """Starts a process that looks like a kernel started for a scenario file; all end with the test."""
    started: list[subprocess.Popen[bytes]] = []

    def start(scenario: Path) -> subprocess.Popen[bytes]:
        env = {**os.environ, standin.SCENARIO_VARIABLE: str(scenario)}
        argv = [sys.executable, "-c", "import sys; sys.stdin.read()", "ipykernel_launcher"]
        started.append(subprocess.Popen(argv, stdin=subprocess.PIPE, env=env))
        time.sleep(0.05)  # /proc tells start times apart by clock ticks (10 ms)
        return started[-1]

    yield start
    for process in started:
        end(process)


def end(process: subprocess.Popen[bytes]) -> None:
    assert process.stdin is not None
    if not process.stdin.closed:
        process.stdin.close()
    process.wait(10)


def listed() -> list[tuple[int, int | None, str | None]]:
    """GPU 0's processes as this process reads them: pid, bytes, name, in pid order (a kernel's pid may be above
    or below the scenario's 41337)."""
    (device,) = nvml.read(os.getpid(), HostProcesses().lookup).devices
    return sorted((p.pid, p.used_bytes, p.name) for p in device.processes)


def test_pid_kernel_lists_nothing_while_no_kernel_reads_the_scenario(scenario):
    scenario(SCENARIO)
    assert listed() == [(41337, 5000 * MiB, "python3")]


def test_every_reader_kernels_included_finds_the_oldest_kernel_of_this_scenario(scenario, start_kernel, tmp_path):
    path = scenario(SCENARIO)
    other = tmp_path / "other.scenario"
    standin.write_scenario(other, SCENARIO)
    start_kernel(other)  # the oldest kernel, but of another scenario: another Jupyter server's
    first = start_kernel(path).pid
    start_kernel(path)
    assert listed() == sorted([(first, 1536 * MiB, "python"), (41337, 5000 * MiB, "python3")])
    # A younger kernel reading the scenario finds the first one holding the memory, not itself.
    reader = [sys.executable, "-c", READ, "ipykernel_launcher"]
    out = subprocess.run(reader, capture_output=True, text=True, check=True).stdout
    assert sorted(json.loads(out)) == sorted(
        [[first, 1536 * MiB, "python", False], [41337, 5000 * MiB, "python3", False]]
    )


def test_when_the_oldest_kernel_ends_the_next_one_holds_the_memory(scenario, start_kernel):
    path = scenario(SCENARIO)
    first, second = start_kernel(path), start_kernel(path)
    assert (first.pid, 1536 * MiB, "python") in listed()
    end(first)
    assert (second.pid, 1536 * MiB, "python") in listed()
    assert first.pid not in [pid for pid, _, _ in listed()]
    end(second)
    assert listed() == [(41337, 5000 * MiB, "python3")]
