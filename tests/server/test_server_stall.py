"""The server extension in a real `jupyter server`, with a real kernel, on a stand-in driver that stalls
(``driver stall=1``: every NVML call waits until the scenario no longer says so): /api/gpumem/v1 and /metrics keep
answering at once with the last figures, say since when the driver has not answered, the kernel's reports still
come in, and the driver coming back is picked up by itself."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from server_fixtures import Server, eventually, running_server, wait_for

from jupyter_gpumem.units import GiB, MiB

pytestmark = [pytest.mark.server, pytest.mark.kernel]

GPU0 = "GPU-5a5a5a5a-0000-4000-8000-000000000000"
INTERVAL_S = 0.25
FAST_S = 0.5  # an answer from the latest reading, never from the driver
KERNEL_CONFIG = 'c.InteractiveShellApp.extensions = ["jupyter_gpumem"]\n'


def scenario(pid: int, used_mib: int, stall: bool = False) -> str:
    """One GPU; the kernel (``pid``) holds 3000 MiB of it. ``used_mib`` tells one scenario's readings from another's."""
    return (
        "driver version=550.54.15 cuda=12040" + (" stall=1" if stall else "") + "\n"
        f'gpu name="NVIDIA A100-SXM4-40GB" uuid={GPU0} total=40960MiB used={used_mib}MiB util=42 cc=8.0\n'
        f"proc gpu=0 pid={pid} used=3000MiB name=python\n"
    )


def driver_gauges(server: Server) -> tuple[float, float]:
    """jupyter_gpumem_driver_answering and jupyter_gpumem_reading_age_seconds, from /metrics."""
    found = {
        s.name: s.value
        for family in text_string_to_metric_families(server.metrics())
        for s in family.samples
        if s.name in ("jupyter_gpumem_driver_answering", "jupyter_gpumem_reading_age_seconds")
    }
    return found["jupyter_gpumem_driver_answering"], found["jupyter_gpumem_reading_age_seconds"]


def gauges_become(server: Server, expected: tuple[float, float], timeout: float = 30) -> None:
    def check() -> None:
        assert driver_gauges(server) == expected

    eventually(check, timeout)


def timed(call: Any) -> tuple[float, Any]:
    start = time.monotonic()
    result = call()
    return time.monotonic() - start, result


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, standin_dir: Path) -> Iterator[tuple[Server, str, int]]:
    """The server, its kernel's id and PID, on a driver that answers."""
    base = tmp_path_factory.mktemp("server-stall")
    with running_server(
        base, standin_dir, scenario(1001, 9000), KERNEL_CONFIG, arguments=(f"--GpumemServer.interval_s={INTERVAL_S}",)
    ) as server:
        kernel = server.start_kernel()
        pid = int(server.execute(kernel, "import os; print(os.getpid())")[0].split()[-1])
        yield server, kernel, pid


@contextmanager
def stalled_driver(server: Server, pid: int, used_mib: int) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """The driver answers with ``used_mib`` used, then stalls (saying ``used_mib`` + 500 should it answer): the
    API's body before and once the server says it stalled. Afterwards the driver answers again."""
    server.set_scenario(scenario(pid, used_mib))
    answered = wait_for(
        lambda: (v := server.api())["gpus"] and v["gpus"][0]["used_bytes"] == used_mib * MiB and v, 30, "the scenario"
    )
    assert "stalled_since" not in answered  # absent while the driver answers (an optional field)
    gauges_become(server, (1, 0))
    server.set_scenario(scenario(pid, used_mib + 500, stall=True))
    try:
        yield answered, wait_for(lambda: (v := server.api()).get("stalled_since") and v, 30, "the server to say so")
    finally:
        server.set_scenario(scenario(pid, used_mib + 500))


def test_a_stalled_driver_leaves_the_api_and_metrics_answering_at_once_with_the_last_figures_and_since_when(server):
    server, _, pid = server
    with stalled_driver(server, pid, 9000) as (answered, stalled):
        took = [timed(server.api)[0] for _ in range(10)] + [timed(server.metrics)[0] for _ in range(10)]
        print(f"/api/gpumem/v1 and /metrics while the driver is stalled: at most {max(took):.3f} s")
        assert max(took) < FAST_S

        assert answered["t"] <= stalled["stalled_since"] < stalled["t"]
        assert stalled["gpus"][0]["used_bytes"] == 9000 * MiB  # the last figures the driver gave, not the new ones
        answering, age = driver_gauges(server)
        time.sleep(1.0)
        later = server.api()
        answering_later, age_later = driver_gauges(server)
        assert (answering, answering_later) == (0, 0)
        assert 0 < age < age_later and age_later - age > 0.5  # growing while it does not answer
        assert later["stalled_since"] == stalled["stalled_since"] and later["t"] > stalled["t"]  # the server reads on
        assert later["gpus"][0]["used_bytes"] == 9000 * MiB


def test_the_kernels_reports_still_come_in_while_the_driver_is_stalled(server):
    server, kernel, pid = server
    with stalled_driver(server, pid, 10000) as (answered, stalled):
        (before,) = [k for k in answered["kernels"] if k["id"] == kernel]
        assert before["status"] == "reporting" and before["policy"] is None
        # The kernel's own NVML reader stalls too: the policy is taken from the last figures, and reported.
        assert server.execute(kernel, "%gpumem limit=1GiB")[1] is None
        reported = wait_for(
            lambda: (v := server.api()) and next(k for k in v["kernels"] if k["id"] == kernel)["policy"] and v,
            15,
            "the kernel's report with its new policy",
        )
        (row,) = [k for k in reported["kernels"] if k["id"] == kernel]
        assert reported["stalled_since"] == stalled["stalled_since"]  # it came in during the stall
        assert (row["policy"], row["status"]) == ("limit=1GiB", "reporting") and row["report_age_s"] < 5
        assert [(g["uuid"], g["used_bytes"], g["budget_bytes"]) for g in row["gpus"]] == [(GPU0, 3000 * MiB, GiB)]


def test_the_driver_coming_back_is_picked_up_by_itself(server):
    server, _, pid = server
    with stalled_driver(server, pid, 11000):
        pass
    start = time.monotonic()
    back = wait_for(lambda: (v := server.api())["gpus"][0]["used_bytes"] == 11500 * MiB and v, 10, "fresh figures")
    print(f"fresh figures {time.monotonic() - start:.2f} s after the driver answered again")
    assert "stalled_since" not in back
    gauges_become(server, (1, 0), timeout=10)
