"""The opt-in idle culler (jupyter_gpumem.server.culler): idle kernels holding GPU memory are warned in their
notebook, then shut down; busy kernels, and idle ones holding nothing, are left alone.

The decision is tested on Views made here. Then a real `jupyter server` with the extension, on the stand-in
NVML and with timeouts of seconds, culls a real kernel: the notice file, the shutdown, the log.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from server_fixtures import Server, running_server, wait_for

from jupyter_gpumem.server import GpumemServer
from jupyter_gpumem.server.culler import GRACE_S, Action, Episode, Settings, decide, held_bytes, notice
from jupyter_gpumem.server.figures import Figures, Kernel, KernelGpuFigures
from jupyter_gpumem.units import GiB, MiB
from jupyter_gpumem.wire.report import notice_path
from jupyter_gpumem.words import word_wire

pytestmark = pytest.mark.server

GPU0 = "GPU-5e5e5e5e-0000-4000-8000-000000000000"
GPU1 = "GPU-5e5e5e5e-0000-4000-8000-000000000001"
T0 = 1_763_740_800.0  # when the kernels last did something
WARN_AND_SHUT = Settings(warn_s=30 * 60, shutdown_s=60 * 60)


def gpu(uuid: str = GPU0, used: int | None = 3 * GiB, own: int | None = None) -> KernelGpuFigures:
    return KernelGpuFigures(
        index=int(uuid[-1]), uuid=uuid, used_bytes=used, budget_bytes=None, in_force=False, over_budget=None,
        pool_bytes=None, pool_known=False, overhead_bytes=None, overhead_source=None, framework_bytes=None,
        framework_peak_bytes=None, own_bytes=own, own_source=None if own is None else "matched", limit_kind=None,
        limit_hard=False,
    )  # fmt: skip


def kernel(
    id: str = "k1", state: str | None = "idle", last: float | None = T0, gpus: tuple[KernelGpuFigures, ...] = (gpu(),)
):
    return Kernel(
        id=id, pid=4242, status="reporting", report_age_s=0.5, package_version="0.1.0", policy=None,
        policy_state=None, policy_note=None, framework=None, framework_started=False, oom_errors_total=0,
        gpus=gpus, execution_state=state, last_activity=last,
    )  # fmt: skip


def view(*kernels: Kernel, problem: str | None = None) -> Figures:
    return Figures(t=T0, problem=problem, driver_version="550.54.15", simulated=None, gpus=(), kernels=kernels)


def run(
    settings: Settings, minutes: list[float], *kernels: Kernel, episodes: dict[str, Episode] | None = None
) -> tuple[dict[str, Episode], list[tuple[float, str, str]]]:
    """The readings at each of ``minutes`` after T0 with the same kernels: the episodes after the last, and
    every action as (minute, kind, kernel id)."""
    found: list[tuple[float, str, str]] = []
    state = dict(episodes or {})
    for minute in minutes:
        state, actions = decide(view(*kernels), settings, state, T0 + minute * 60)
        found += [(minute, a.kind, a.kernel_id) for a in actions]
    return state, found


def test_an_idle_kernel_holding_memory_is_warned_once_then_told_then_shut_down_after_the_grace() -> None:
    grace = GRACE_S / 60
    _, actions = run(WARN_AND_SHUT, [29.9, 30, 31, 59.9, 60, 60 + grace / 2, 60 + grace, 61, 62], kernel())
    assert actions == [(30, "warn", "k1"), (60, "shutdown_notice", "k1"), (60 + grace, "shutdown", "k1")]


def test_the_warning_says_when_and_the_notice_files_content_is_exactly_the_protocols() -> None:
    state, actions = decide(view(kernel()), WARN_AND_SHUT, {}, T0 + 30 * 60)
    (warn,) = actions
    assert warn == Action("warn", "k1", 3 * GiB, 30 * 60, T0 + 60 * 60)
    assert state == {"k1": Episode(T0, warned_at=T0 + 30 * 60, shutdown_at=T0 + 60 * 60)}
    content = notice(warn, T0 + 30 * 60)
    assert set(content) == {"protocol", "type", "t", "kind", "text", "text_said", "shutdown_at"}
    assert content["text_said"] == {
        "code": "idle_warning_shutdown",
        "values": {"held_bytes": 3 * GiB, "idle_s": 30 * 60, "shutdown_at": T0 + 60 * 60, "now": T0 + 30 * 60,
                   "then_s": 60 * 60},
    }  # fmt: skip
    assert (content["protocol"], content["type"], content["kind"]) == (1, "notice", "idle_warning")
    assert (content["t"], content["shutdown_at"]) == (T0 + 30 * 60, T0 + 60 * 60)
    clock = time.strftime("%H:%M", time.localtime(T0 + 60 * 60))
    assert content["text"] == (
        f"This kernel has held 3.0 GiB of GPU memory while idle for 30 min; it will be shut down at {clock} (after "
        "60 min idle) unless it runs something. Save your work; restart it when you need the GPU again."
    )
    _, actions = decide(view(kernel()), WARN_AND_SHUT, state, T0 + 60 * 60)
    (told,) = actions
    assert told == Action("shutdown_notice", "k1", 3 * GiB, 60 * 60, T0 + 60 * 60 + GRACE_S)
    content = notice(told, T0 + 60 * 60)
    assert (content["kind"], content["shutdown_at"]) == ("idle_shutdown", T0 + 60 * 60 + GRACE_S)
    assert str(content["text"]).startswith("This kernel is being shut down: it has held 3.0 GiB of GPU memory while")


def test_busy_starting_unknown_and_memoryless_kernels_are_left_alone() -> None:
    kernels = (
        kernel("busy", state="busy"),
        kernel("starting", state="starting"),
        kernel("no-state", state=None),
        kernel("no-activity", last=None),
        kernel("on-no-gpu", gpus=()),
        kernel("holds-0", gpus=(gpu(used=0), gpu(GPU1, used=0))),
        kernel("not-known", gpus=(gpu(used=None),)),  # N/A, and the kernel says nothing: never culled on a guess
    )
    state, actions = run(WARN_AND_SHUT, [0, 30, 60, 61, 24 * 60], *kernels)
    assert (state, actions) == ({}, [])


def test_memory_is_nvmls_figure_for_the_kernels_own_processes_never_its_reports_word() -> None:
    assert held_bytes(kernel(gpus=(gpu(used=GiB), gpu(GPU1, used=2 * GiB)))) == 3 * GiB
    assert held_bytes(kernel(gpus=(gpu(used=GiB, own=5 * GiB),))) == GiB  # the driver's figure alone
    # NVML lists none of its processes (a container), or cannot tell: the kernel's own figure is its report's word,
    # which any process of the user can write (docs/hub.md, "Trust model"), so it holds nothing the culler acts on.
    assert held_bytes(kernel(gpus=(gpu(used=None, own=512 * MiB),))) == 0
    assert run(WARN_AND_SHUT, [30, 60, 61], kernel(gpus=(gpu(used=None, own=512 * MiB),))) == ({}, [])


def test_activity_ends_the_episode_withdraws_the_notice_and_starts_the_clock_again() -> None:
    state, actions = run(WARN_AND_SHUT, [30], kernel())
    assert actions == [(30, "warn", "k1")]
    # It ran a cell between two readings (last activity moved): the warning goes, a new episode starts.
    later = T0 + 40 * 60
    state, actions = decide(view(kernel(last=later)), WARN_AND_SHUT, state, T0 + 41 * 60)
    assert [a.kind for a in actions] == ["withdraw"] and state == {"k1": Episode(later)}
    _, actions = run(WARN_AND_SHUT, [60, 69.9, 70, 100], kernel(last=later), episodes=state)
    assert actions == [(70, "warn", "k1"), (100, "shutdown_notice", "k1")]


@pytest.mark.parametrize(
    "after",
    [kernel(state="busy"), kernel(gpus=(gpu(used=0),))],
    ids=["busy-again", "gave-the-memory-back"],
)
def test_busy_again_or_holding_nothing_withdraws_the_warning_and_the_shutdown(after: Kernel) -> None:
    state, actions = run(WARN_AND_SHUT, [30, 60], kernel())
    assert [kind for _, kind, _ in actions] == ["warn", "shutdown_notice"]
    state, actions = run(WARN_AND_SHUT, [60 + GRACE_S / 60], after, episodes=state)
    assert (state, actions) == ({}, [(60 + GRACE_S / 60, "withdraw", "k1")])


def test_a_kernel_that_starts_holding_memory_long_idle_still_gets_the_whole_notice_period() -> None:
    state, actions = run(WARN_AND_SHUT, [0, 90], kernel(gpus=()))
    assert actions == []
    state, found = decide(view(kernel()), WARN_AND_SHUT, state, T0 + 100 * 60)
    assert found == [Action("warn", "k1", 3 * GiB, 100 * 60, T0 + 130 * 60)]  # 60 - 30 min after the warning
    _, actions = run(WARN_AND_SHUT, [129.9, 130], kernel(), episodes=state)
    assert actions == [(130, "shutdown_notice", "k1")]


def test_warning_only_shutdown_only_and_a_warning_not_before_the_shutdown() -> None:
    _, actions = run(Settings(warn_s=30 * 60), [30, 60, 600], kernel())
    assert actions == [(30, "warn", "k1")]
    state, _ = decide(view(kernel()), Settings(warn_s=30 * 60), {}, T0 + 30 * 60)
    assert state["k1"].shutdown_at is None
    grace = GRACE_S / 60
    for settings in (Settings(shutdown_s=60 * 60), Settings(warn_s=60 * 60, shutdown_s=60 * 60)):
        _, actions = run(settings, [30, 59, 60, 60 + grace], kernel())
        assert actions == [(60, "shutdown_notice", "k1"), (60 + grace, "shutdown", "k1")], settings
    assert run(Settings(), [0, 30, 6000], kernel()) == ({}, [])


def test_the_shutdown_is_asked_for_once_and_a_kernel_no_longer_listed_loses_its_notice() -> None:
    grace = GRACE_S / 60
    state, actions = run(WARN_AND_SHUT, [30, 60, 60 + grace, 61, 62], kernel(), kernel("k2", state="busy"))
    assert [(kind, k) for _, kind, k in actions] == [("warn", "k1"), ("shutdown_notice", "k1"), ("shutdown", "k1")]
    state, actions = decide(view(kernel("k2", state="busy")), WARN_AND_SHUT, state, T0 + 63 * 60)
    assert (state, [(a.kind, a.kernel_id) for a in actions]) == ({}, [("gone", "k1")])


def test_a_failed_nvml_reading_decides_nothing() -> None:
    state, _ = run(WARN_AND_SHUT, [30], kernel())
    after, actions = decide(view(kernel(gpus=()), problem="NVML: driver not loaded"), WARN_AND_SHUT, state, T0 + 99)
    assert (after, actions) == (state, [])


def test_the_settings_come_from_the_environment_a_spawner_sets_and_a_bad_value_is_off(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("JUPYTER_GPUMEM_IDLE_WARN_MINUTES", raising=False)
    monkeypatch.delenv("JUPYTER_GPUMEM_IDLE_SHUTDOWN_MINUTES", raising=False)
    assert (GpumemServer().idle_warn_minutes, GpumemServer().idle_shutdown_minutes) == (0, 0)
    assert not GpumemServer().idle().on  # off by default
    monkeypatch.setenv("JUPYTER_GPUMEM_IDLE_WARN_MINUTES", "30")
    monkeypatch.setenv("JUPYTER_GPUMEM_IDLE_SHUTDOWN_MINUTES", " 0.5 ")
    assert GpumemServer().idle() == Settings(warn_s=1800, shutdown_s=30)
    for bad in ("half an hour", "-5", "nan", "inf"):
        monkeypatch.setenv("JUPYTER_GPUMEM_IDLE_SHUTDOWN_MINUTES", bad)
        caplog.clear()
        with caplog.at_level("WARNING"):
            assert GpumemServer().idle_shutdown_minutes == 0
        assert [r.getMessage() for r in caplog.records] == [
            f"jupyter-gpumem: JUPYTER_GPUMEM_IDLE_SHUTDOWN_MINUTES={bad!r} is not a number of minutes; it is off"
        ]


def test_a_group_sets_the_idle_settings_through_the_spawner_environment() -> None:
    from jupyter_gpumem.hub import group_settings

    policies = {"students": {"idle_warn_minutes": "30", "idle_shutdown_minutes": "60"}}
    assert group_settings(["students"], policies) == {
        "JUPYTER_GPUMEM_IDLE_WARN_MINUTES": "30",
        "JUPYTER_GPUMEM_IDLE_SHUTDOWN_MINUTES": "60",
    }


# A real server. Kernel A holds memory and idles: warned, told, shut down. B idles holding nothing (NVML
# lists its process at 0 MiB); C holds memory but is busy in a cell; D is warned, then runs a cell.

WARN_S, SHUTDOWN_S = 2.0, 5.0
KERNEL_CONFIG = 'c.InteractiveShellApp.extensions = ["jupyter_gpumem"]\n'


def scenario(pids: dict[str, int], holding: str = "") -> str:
    """The kernels named in ``holding`` hold 1.5 GiB on GPU 0; the others' processes are listed with 0."""
    procs = "".join(
        f"proc gpu=0 pid={pid} used={1536 if name in holding else 0}MiB name=python\n" for name, pid in pids.items()
    )
    return f"""driver version=550.54.15 cuda=12040
gpu name="NVIDIA A100-SXM4-40GB" uuid={GPU0} total=40960MiB used=9000MiB util=0 cc=8.0
{procs}"""


def notice_of(server: Server, kernel_id: str) -> dict[str, Any] | None:
    try:
        return dict(json.loads(notice_path(server.runtime / f"kernel-{kernel_id}.json").read_bytes()))
    except FileNotFoundError:
        return None


def kernels(server: Server) -> dict[str, str]:
    """The server's kernels and their execution states."""
    status, body = server.get("/api/kernels")
    assert status == 200, (status, body)
    return {k["id"]: k["execution_state"] for k in json.loads(body)}


@pytest.fixture
def server(tmp_path: Path, standin_dir: Path) -> Iterator[Server]:
    with running_server(
        tmp_path,
        standin_dir,
        scenario({}),
        KERNEL_CONFIG,
        arguments=("--GpumemServer.interval_s=0.2", f"--GpumemServer.idle_shutdown_minutes={SHUTDOWN_S / 60!r}"),
        env={"JUPYTER_GPUMEM_IDLE_WARN_MINUTES": repr(WARN_S / 60)},  # as a spawner sets it
    ) as server:
        yield server


@pytest.mark.kernel
def test_a_real_server_warns_then_shuts_down_an_idle_kernel_holding_memory_and_leaves_the_others(
    server: Server, tmp_path: Path
) -> None:
    ids = dict(zip("abcd", [server.start_kernel() for _ in range(4)], strict=True))
    a, b, c, d = ids.values()
    pids = {name: int(server.execute(k, "import os; print(os.getpid())")[0].split()[-1]) for name, k in ids.items()}

    def busy() -> None:
        with contextlib.suppress(Exception):  # the server stops the kernel at the end of the test
            server.execute(c, "import time; time.sleep(40)", timeout=60)

    threading.Thread(target=busy, daemon=True).start()
    wait_for(lambda: kernels(server)[c] == "busy", 30, "kernel C to run its cell")

    # D holds memory, idle: warned. It runs a cell: the warning is withdrawn (a new one comes only after
    # another WARN_S of idleness).
    server.set_scenario(scenario(pids, holding="cd"))
    warned = wait_for(lambda: notice_of(server, d), 30, "kernel D's warning")
    assert warned["kind"] == "idle_warning", warned
    ran = time.time()
    server.execute(d, "1")
    wait_for(
        lambda: (n := notice_of(server, d)) is None or (n["kind"] == "idle_warning" and n["t"] > ran),
        10,
        "D's warning to be withdrawn",
    )

    # A streams to a sidebar, as JupyterLab's status bar makes every Python notebook's kernel do: its comm
    # messages are activity to jupyter_server, but not a cell the user ran (the kernel's report says when).
    server.execute(a, "import jupyter_gpumem; jupyter_gpumem._connect_sidebar(interval_s=0.2)")
    server.set_scenario(scenario(pids, holding="acd"))
    warned = wait_for(lambda: notice_of(server, a), 30, "kernel A's warning")
    assert warned["kind"] == "idle_warning", warned
    assert set(warned) == {"protocol", "type", "t", "kind", "text", "text_said", "shutdown_at"}
    assert (warned["protocol"], warned["type"]) == (1, "notice")
    assert "This kernel has held 1.5 GiB of GPU memory while idle for" in warned["text"]
    assert word_wire(warned["text_said"]) == warned["text"]
    assert warned["shutdown_at"] >= warned["t"] + (SHUTDOWN_S - WARN_S) - 0.01

    told = wait_for(lambda: (n := notice_of(server, a)) and n["kind"] == "idle_shutdown" and n, 30, "A's notice")
    assert told["shutdown_at"] == pytest.approx(told["t"] + GRACE_S)
    assert told["t"] >= warned["shutdown_at"] - 0.01
    wait_for(lambda: a not in kernels(server), 30, "kernel A to be shut down")
    assert time.time() >= told["t"] + GRACE_S - 0.5  # the grace: the kernel had time to show why
    server.kernels.remove(a)
    wait_for(lambda: notice_of(server, a) is None, 10, "A's notice to be removed after its shutdown")

    running = kernels(server)
    assert running[b] == "idle" and running[c] == "busy", running  # left alone
    assert notice_of(server, b) is None and notice_of(server, c) is None
    log = "".join(p.read_text() for p in sorted(tmp_path.glob("server-*.log")))
    assert f"jupyter-gpumem: kernel {a} has held 1.5 GiB of GPU memory while idle for" in log
    assert "(GpumemServer.idle_warn_minutes=0.0333333): warned in its notebook, to be shut down at" in log
    assert f"jupyter-gpumem: shutting down kernel {a}: it has held 1.5 GiB of GPU memory while idle for" in log
    assert "(GpumemServer.idle_shutdown_minutes=0.0833333)" in log
    assert f"jupyter-gpumem: kernel {d} ran something, or holds no GPU memory now: its idle notice is withdrawn" in log
    ours = [line for line in log.splitlines() if "jupyter-gpumem" in line]
    assert [line for line in ours if b in line or c in line] == []


def test_a_kernel_holding_less_than_a_gib_is_told_its_memory_in_mib_as_the_sidebar_says_it() -> None:
    _, actions = decide(view(kernel(gpus=(gpu(used=512 * MiB),))), WARN_AND_SHUT, {}, T0 + 30 * 60)
    (warn,) = actions
    assert str(notice(warn, T0 + 30 * 60)["text"]).startswith("This kernel has held 512 MiB of GPU memory while idle")
