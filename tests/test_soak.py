"""The soak's short version (benchmarks/soak.py): one cycle of every fault in a real JupyterLab with the sidebar open in
chromium, about a minute. The driver stalls and answers again, slows down, loses its GPU and gets it back;
the kernel restarts through the server, then the server itself and the page. Each test is one of the soak's criteria,
judged on that one run; the bounds are the benchmark's own."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))

import soak

pytestmark = [pytest.mark.browser, pytest.mark.timeout(420)]


class Run:
    def __init__(self, result: soak.Result, lines: list[str]):
        self.result = result
        self.lines = lines

    def check(self, criterion: str) -> None:
        ok, detail = self.result.criteria[criterion]
        assert ok, f"{criterion}: {detail}\n" + "\n".join(self.lines)


@pytest.fixture(scope="module")
def run() -> Iterator[Run]:
    lines: list[str] = []
    settings = soak.Settings(scale=0.6)
    result = soak.run(cycles=1, settings=settings, kernel_every=1, server_every=1, log=lines.append)
    lines += soak.summary(result, settings)
    print("\n".join(lines))  # the soak's report: shown with -s, and with a failing test's output
    yield Run(result, lines)


def test_no_cell_waits_longer_than_the_nvml_deadline_through_stalls_a_slow_driver_a_lost_gpu_and_restarts(
    run: Run,
) -> None:
    run.check("no cell blocked")
    stalled = [p for p in run.result.phases if p.fault == "stall"]
    assert stalled and all(p.status_s for p in stalled), "%gpumem status was not timed during the stall"


def test_the_kernel_and_the_server_start_no_thread_that_stays(run: Run) -> None:
    run.check("no thread growth")


def test_the_kernel_the_server_and_the_page_do_not_grow_in_memory(run: Run) -> None:
    run.check("no memory growth")


def test_every_reading_the_driver_gave_reaches_the_sampler(run: Run) -> None:
    run.check("no reading lost")


def test_every_sample_the_kernel_took_reaches_the_sidebar(run: Run) -> None:
    run.check("every sample reached the sidebar")


def test_the_sidebar_the_status_cell_and_the_server_say_when_the_driver_stalled_and_stop_after(run: Run) -> None:
    run.check("every surface said when the driver stalled")


def test_a_kernel_or_server_restart_leaves_no_kernel_running(run: Run) -> None:
    run.check("no kernel left behind")
