"""Ceilings the driver enforces (jupyter_gpumem/hub/cgroups.py): real cgroup v2 directories under this host's cgroup2
mount, the stand-in NVML of a driver 615 (its nvmlDeviceSetMemoryLimits_v1 writes a `limit` line into the scenario,
which every process reading it then sees) and of a driver 580 (no such call).

First the hooks in this process with stand-in spawners (LocalProcessSpawner's and SystemdSpawner's classes by
module, as cgroups.spawner_kind tells them); then a real JupyterHub (tests/hub_fixtures.py) with LocalProcessSpawner
and a real Unix user made by useradd for this module, whose server must be born in its directory with the limit
set, and leave both cleared and gone when it stops. Every directory this module makes is under a parent of this
pytest run's own, removed at the end, also when a test fails. Runs as root, as CI does.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import os
import pwd
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psutil
import pytest
from hub_fixtures import (
    ADMIN_TOKEN,
    PROXY,
    Hub,
    _ready,
    hub_config,
    run_user,
    shared_directory,
    unix_users,
    write_scenario,
)
from server_fixtures import clean_environment, free_port, http, stop, wait_for

from jupyter_gpumem import standin
from jupyter_gpumem.gpu.cgroup import own_path
from jupyter_gpumem.hub import cgroups
from jupyter_gpumem.hub.cgroups import (
    DriverCeilings,
    cgroup2_mount,
    directory_name,
    driver_ceilings,
    slice_path,
    unit_cgroup,
)
from jupyter_gpumem.units import GiB

MOUNT = cgroup2_mount()
PARENT = f"gpumem-test-{os.getpid()}"  # this run's own: two suites side by side never touch each other's
MAX = 2**64 - 1  # NVML_DEVICE_MEMORY_LIMIT_MAX: no hard limit

pytestmark = pytest.mark.skipif(
    MOUNT is None or os.geteuid() != 0, reason="needs root and a cgroup v2 hierarchy (/proc/self/mountinfo)"
)

GPU0 = "GPU-0ce11000-0000-4000-8000-000000000000"
GPU1 = "GPU-0ce11000-0000-4000-8000-000000000001"
GPU2 = "GPU-0ce11000-0000-4000-8000-000000000002"


def machine(driver: str) -> str:
    """Two GPUs of their own sizes and one in MIG mode (no limits there: its slices are the limit)."""
    return f"""driver version={driver} cuda=13040
gpu name="NVIDIA A100-SXM4-40GB" uuid={GPU0} total=40GiB used=1GiB cc=8.0 mig=off
gpu name="NVIDIA A100-SXM4-80GB" uuid={GPU1} total=80GiB used=1GiB cc=8.0 mig=off
gpu name="NVIDIA A100-SXM4-40GB" uuid={GPU2} total=40GiB used=0 cc=8.0 mig=on
mig parent=2 uuid=MIG-0ce11000-0000-4000-8000-000000000003 total=20GiB used=0
"""


DRIVER_615, DRIVER_580 = "615.20.01", "580.65.06"


def limit_lines(path: Path) -> dict[tuple[int, str], tuple[int, int]]:
    """The scenario's `limit` lines: (gpu, cgroup) -> (soft, hard)."""
    found = {}
    for line in path.read_text().splitlines():
        words = line.split()
        if words[:1] != ["limit"]:
            continue
        fields = dict(word.split("=", 1) for word in words[1:])
        sizes = [MAX if fields[k] == "max" else int(fields[k]) for k in ("soft", "hard")]
        found[(int(fields["gpu"]), fields["cgroup"].strip('"'))] = (sizes[0], sizes[1])
    return found


def remove_tree(top: Path) -> None:
    """Remove a cgroup directory and those below it, moving any process left in them to the root first."""
    if not top.is_dir():
        return
    below = sorted((d for d in top.rglob("*") if d.is_dir()), key=lambda d: -len(d.parts))
    for directory in [*below, top]:
        with suppress(OSError):
            for pid in (directory / "cgroup.procs").read_text().split():
                with suppress(OSError):
                    (MOUNT / "cgroup.procs").write_text(pid)  # type: ignore[operator]
        with suppress(OSError):
            directory.rmdir()


@pytest.fixture(scope="module")
def parent() -> Iterator[Path]:
    assert MOUNT is not None
    top = MOUNT / PARENT
    try:
        yield top
    finally:
        remove_tree(top)


# Pure parts.


def test_the_cgroup2_mount_is_read_from_mountinfo_never_assumed(tmp_path: Path) -> None:
    hybrid = """31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
    pure = "30 23 0:27 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n"
    v1 = "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    for text, expected in ((hybrid, Path("/sys/fs/cgroup/unified")), (pure, Path("/sys/fs/cgroup")), (v1, None)):
        (tmp_path / "mountinfo").write_text(text)
        assert cgroup2_mount(tmp_path / "mountinfo") == expected
    assert cgroup2_mount(tmp_path / "absent") is None


def test_a_servers_directory_name_cannot_escape_or_collide() -> None:
    assert directory_name("alice") == "jupyter-alice"
    assert directory_name("alice", "gpu") == "jupyter-alice:gpu"
    assert directory_name("../x", "a:b") == "jupyter-..%2Fx:a%3Ab"
    assert directory_name("a:b") != directory_name("a", "b")


def test_a_systemd_slices_cgroup_nests_at_each_dash() -> None:
    unit = "jupyter-alice-singleuser"
    assert unit_cgroup(SimpleNamespace(unit_name=unit, slice=None)) == f"/system.slice/{unit}.service"
    assert unit_cgroup(SimpleNamespace(unit_name=unit, slice="jupyter-users.slice")) == (
        f"/jupyter.slice/jupyter-users.slice/{unit}.service"
    )
    assert slice_path("system.slice") == "/system.slice"
    assert slice_path("jupyterhub-users.slice") == "/jupyterhub.slice/jupyterhub-users.slice"
    assert slice_path("-.slice") == ""


# The hooks in this process, with stand-in spawners.


def _spawner_class(module: str, name: str) -> type:
    return type(name, (), {"__module__": module})


class Fake:
    """What the hooks read of a spawner."""

    def __init__(self, user: str, *groups: str, server: str = "") -> None:
        self.user = SimpleNamespace(name=user, groups=[SimpleNamespace(name=g) for g in groups])
        self.name = server
        self.log = logging.getLogger("test-hub")
        self.environment: dict[str, str] = {}

    def make_preexec_fn(self, name: str) -> Callable[[], None]:
        def preexec() -> None:
            os.environ["MADE_FOR"] = name  # in the child only: its own copy

        return preexec


class LocalProcessSpawner(Fake):
    pass


LocalProcessSpawner.__module__ = "jupyterhub.spawner"


class SystemdSpawner(Fake):
    """Starts its 'unit' by making the unit's cgroup directory, as systemd would."""

    def __init__(self, user: str, *groups: str, top: Path) -> None:
        super().__init__(user, *groups)
        self.unit_name = f"jupyter-{user}-singleuser"
        self.top = top
        self.slice = None

    async def start(self) -> tuple[str, int]:
        (self.top / f"{self.unit_name}.service").mkdir(parents=True, exist_ok=True)
        return ("127.0.0.1", 8888)


SystemdSpawner.__module__ = "systemdspawner.systemdspawner"

POLICIES = {
    "students": {"limit": "2GiB", "max_limit": "6GiB"},
    "fractions": {"max_fraction": "0.25"},
    "staff": {"limit": "8GiB"},  # no ceiling
}


def child_cgroup(spawner: Any) -> str | None:
    """The cgroup a process started with the spawner's preexec_fn is born in."""
    out = subprocess.run(
        [sys.executable, "-c", "print(open('/proc/self/cgroup').read())"],
        preexec_fn=spawner.make_preexec_fn("alice"),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return own_path(out)


def test_a_local_server_is_born_in_its_directory_with_the_ceiling_on_every_gpu_not_in_mig_mode(
    parent: Path, scenario: Callable[[str], Path]
) -> None:
    path = scenario(machine(DRIVER_615))
    ceilings = driver_ceilings(POLICIES, parent=PARENT, drain_s=5)
    spawner = LocalProcessSpawner("alice", "students")
    asyncio.run(ceilings.pre_spawn_hook(spawner))
    directory = parent / "jupyter-alice"
    rel = f"/{PARENT}/jupyter-alice"
    assert directory.is_dir()
    assert limit_lines(path) == {(0, rel): (2 * GiB, 6 * GiB), (1, rel): (2 * GiB, 6 * GiB)}
    assert child_cgroup(spawner) == rel
    # A second spawn of the same server wraps the spawner's own function once, not twice.
    asyncio.run(ceilings.pre_spawn_hook(spawner))
    assert spawner.make_preexec_fn.original == Fake.make_preexec_fn.__get__(spawner)  # type: ignore[attr-defined]
    asyncio.run(ceilings.post_stop_hook(spawner))
    assert limit_lines(path) == {}
    assert not directory.exists()


def test_the_hooks_survive_the_deep_copy_traitlets_gives_each_spawner_as_the_same_hooks() -> None:
    ceilings = driver_ceilings(POLICIES, parent=PARENT)
    for hook in (ceilings.pre_spawn_hook, ceilings.post_stop_hook):
        assert copy.deepcopy(hook).__self__ is ceilings
    assert copy.deepcopy({"hook": ceilings.post_stop_hook}) == {"hook": ceilings.post_stop_hook}


def test_a_fraction_is_of_each_gpus_own_memory_and_the_lower_bound_holds(
    parent: Path, scenario: Callable[[str], Path]
) -> None:
    path = scenario(machine(DRIVER_615))
    ceilings = driver_ceilings(POLICIES, parent=PARENT, drain_s=5)
    spawner = LocalProcessSpawner("bob", "fractions", "students", server="big one")
    asyncio.run(ceilings.pre_spawn_hook(spawner))
    rel = f"/{PARENT}/jupyter-bob:big%20one"
    assert limit_lines(path) == {(0, rel): (2 * GiB, 6 * GiB), (1, rel): (2 * GiB, 6 * GiB)}
    asyncio.run(ceilings.post_stop_hook(spawner))
    only = LocalProcessSpawner("carol", "fractions")
    asyncio.run(ceilings.pre_spawn_hook(only))
    rel = f"/{PARENT}/jupyter-carol"
    assert limit_lines(path) == {(0, rel): (10 * GiB, 10 * GiB), (1, rel): (20 * GiB, 20 * GiB)}
    asyncio.run(ceilings.post_stop_hook(only))
    sized = driver_ceilings(POLICIES, parent=PARENT, gpu_memory="16GiB")
    asyncio.run(sized.pre_spawn_hook(only))
    assert limit_lines(path) == {(0, rel): (4 * GiB, 4 * GiB), (1, rel): (4 * GiB, 4 * GiB)}
    asyncio.run(sized.post_stop_hook(only))
    assert limit_lines(path) == {}


def test_a_user_without_a_ceiling_and_a_container_spawner_are_left_alone(
    parent: Path, scenario: Callable[[str], Path]
) -> None:
    path = scenario(machine(DRIVER_615))
    ceilings = driver_ceilings(POLICIES, parent=PARENT)
    staff = LocalProcessSpawner("dave", "staff")
    asyncio.run(ceilings.pre_spawn_hook(staff))
    docker = _spawner_class("dockerspawner.dockerspawner", "DockerSpawner")
    container = type("Mine", (docker, Fake), {})("erin", "students")
    asyncio.run(ceilings.pre_spawn_hook(container))
    assert limit_lines(path) == {}
    assert not (parent / "jupyter-dave").exists() and not (parent / "jupyter-erin").exists()
    assert not isinstance(staff.make_preexec_fn, cgroups._JoinFirst)


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


NEEDS = (
    "jupyter-gpumem: the driver does not enforce the groups' GPU memory ceilings: this needs {}. "
    "Servers spawn without it."
)


def test_a_driver_before_615_is_one_warning_and_servers_spawn_as_without_the_hook(
    parent: Path, scenario: Callable[[str], Path], caplog: pytest.LogCaptureFixture
) -> None:
    path = scenario(machine(DRIVER_580))
    ceilings = driver_ceilings(POLICIES, parent=PARENT)
    with caplog.at_level(logging.INFO, "test-hub"):
        for user in ("frank", "grace"):
            spawner = LocalProcessSpawner(user, "students")
            asyncio.run(ceilings.pre_spawn_hook(spawner))
            assert not isinstance(spawner.make_preexec_fn, cgroups._JoinFirst)
            assert not (parent / f"jupyter-{user}").exists()  # made, then removed: nothing to join
            asyncio.run(ceilings.post_stop_hook(spawner))
    assert messages(caplog) == [
        NEEDS.format("an NVIDIA driver from 615 (CUDA 13.4): this driver has no nvmlDeviceSetMemoryLimits_v1")
    ]
    assert limit_lines(path) == {}


def test_not_root_or_no_cgroup_v2_is_one_warning_each(
    scenario: Callable[[str], Path], caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = scenario(machine(DRIVER_615))
    ceilings = driver_ceilings(POLICIES, parent=PARENT)
    with caplog.at_level(logging.INFO, "test-hub"):
        with monkeypatch.context() as patch:
            patch.setattr(cgroups.os, "geteuid", lambda: 1000)
            for _ in range(2):
                asyncio.run(ceilings.pre_spawn_hook(LocalProcessSpawner("heidi", "students")))
        with monkeypatch.context() as patch:
            patch.setattr(cgroups, "cgroup2_mount", lambda: None)
            for _ in range(2):
                asyncio.run(ceilings.pre_spawn_hook(LocalProcessSpawner("heidi", "students")))
        for _ in range(2):
            asyncio.run(ceilings.pre_spawn_hook(type("BatchSpawner", (Fake,), {})("heidi", "students")))
    assert messages(caplog) == [
        NEEDS.format("the hub to run as root (it makes cgroups and sets the driver's limits)"),
        NEEDS.format("Linux with cgroup v2 (no cgroup2 file system in /proc/self/mountinfo)"),
        "jupyter-gpumem: driver ceilings do not know where BatchSpawner puts its servers, which spawn without the "
        "driver enforcing their ceiling (it knows LocalProcessSpawner and SystemdSpawner; a container spawner gets "
        "group_environment's toolkit variables).",
    ]
    assert limit_lines(path) == {}


def test_processes_left_behind_keep_the_limit_and_the_next_server_joins_them(
    parent: Path, scenario: Callable[[str], Path], caplog: pytest.LogCaptureFixture
) -> None:
    path = scenario(machine(DRIVER_615))
    ceilings = DriverCeilings(POLICIES, parent=PARENT, drain_s=0.3)
    spawner = LocalProcessSpawner("ivan", "students")
    asyncio.run(ceilings.pre_spawn_hook(spawner))
    rel = f"/{PARENT}/jupyter-ivan"
    left = subprocess.Popen(["sleep", "60"], preexec_fn=spawner.make_preexec_fn("ivan"))
    try:
        wait_for(lambda: own_path(Path(f"/proc/{left.pid}/cgroup").read_text()) == rel, 10, "the process to join")
        with caplog.at_level(logging.INFO, "test-hub"):
            asyncio.run(ceilings.post_stop_hook(spawner))
        assert (parent / "jupyter-ivan").is_dir()
        assert limit_lines(path)[(0, rel)] == (2 * GiB, 6 * GiB)
        assert any("still holds processes of ivan" in m for m in messages(caplog))
    finally:
        left.kill()
        left.wait()
    asyncio.run(ceilings.post_stop_hook(spawner))
    assert limit_lines(path) == {}
    assert not (parent / "jupyter-ivan").exists()


def test_systemd_the_limit_is_set_on_the_units_cgroup_once_it_runs_and_cleared_after(
    parent: Path, scenario: Callable[[str], Path], tmp_path: Path
) -> None:
    path = scenario(machine(DRIVER_615))
    top = parent / "system.slice"
    systemctl = tmp_path / "systemctl"
    # What `systemctl show --property=ControlGroup --value <unit>` prints: the unit's cgroup path.
    systemctl.write_text(f'#!/bin/sh\nfor last; do :; done\necho "/{PARENT}/system.slice/$last"\n')
    systemctl.chmod(0o755)
    ceilings = DriverCeilings(POLICIES, parent=PARENT)
    ceilings.systemctl = str(systemctl)
    spawner = SystemdSpawner("judy", "students", top=top)
    asyncio.run(ceilings.pre_spawn_hook(spawner))
    rel = f"/{PARENT}/system.slice/jupyter-judy-singleuser.service"
    assert limit_lines(path) == {}  # the unit does not run yet
    assert asyncio.run(spawner.start()) == ("127.0.0.1", 8888)
    assert limit_lines(path) == {(0, rel): (2 * GiB, 6 * GiB), (1, rel): (2 * GiB, 6 * GiB)}
    asyncio.run(ceilings.post_stop_hook(spawner))
    assert limit_lines(path) == {}
    assert (top / "jupyter-judy-singleuser.service").is_dir()  # systemd's own: it removes it with the unit


# A real JupyterHub: LocalProcessSpawner, a real Unix user, the stand-in NVML in the hub and in the server.

USER = run_user("gpumemceiling")  # in group students: budget 2 GiB, ceiling 6 GiB
HUB_POLICIES = {"students": {"limit": "2GiB", "max_limit": "6GiB"}}


@contextmanager
def ceilings_hub(base: Path, shared: Path) -> Iterator[tuple[Hub, Path]]:
    """hub_fixtures' hub, its pre_spawn_hook group_environment then driver_ceilings as docs/hub.md composes them, its
    post_stop_hook driver_ceilings', and no service; the hub itself loads the stand-in NVML and its scenario. Yields
    the hub and its log."""
    scenario_path = shared / "scenario" / "active.scenario"
    write_scenario(scenario_path, machine(DRIVER_615))
    ports = [free_port() for _ in range(4)]
    config = hub_config(base, shared, *ports, {"students": [USER]}, HUB_POLICIES)
    config += f"""
from jupyter_gpumem.hub import driver_ceilings
_environment = group_environment({HUB_POLICIES!r})
_ceilings = driver_ceilings({HUB_POLICIES!r}, parent={PARENT!r}, drain_s=30)

async def _pre_spawn_hook(spawner):
    _environment(spawner)
    await _ceilings.pre_spawn_hook(spawner)

c.Spawner.pre_spawn_hook = _pre_spawn_hook
c.Spawner.post_stop_hook = _ceilings.post_stop_hook
c.JupyterHub.services = [s for s in c.JupyterHub.services if s["name"] == "test-admin"]
c.JupyterHub.load_roles = [r for r in c.JupyterHub.load_roles if r["name"] == "test-admin"]
"""
    (base / "jupyterhub_config.py").write_text(config)
    env = standin.environment(shared / "nvml", scenario_path, base=clean_environment())
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
    log_path = base / "hub.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(base / "jupyterhub_config.py")],
            cwd=base,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        hub = Hub(f"http://127.0.0.1:{ports[0]}", base, scenario_path)
        if not _ready(hub, process, 90):
            raise RuntimeError(f"jupyterhub did not start:\n{log_path.read_text()[-5000:]}")
        yield hub, log_path
    finally:
        stop(process, 60)


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory, standin_dir: Path, parent: Path) -> Iterator[tuple[Hub, Path]]:
    if not PROXY.exists():
        pytest.fail("configurable-http-proxy is needed: run `jlpm install` (package.json lists it).")
    base = tmp_path_factory.mktemp("ceilings")
    with unix_users([USER]), shared_directory(standin_dir, "") as shared, ceilings_hub(base, shared) as running:
        yield running


def server_processes(user: str) -> list[psutil.Process]:
    uid = pwd.getpwnam(user).pw_uid
    return [p for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real == uid]


def with_kernel(user: str) -> list[psutil.Process] | None:
    """The user's processes once one of them is an IPython kernel."""
    found = server_processes(user)
    for process in found:
        with suppress(psutil.Error):
            if "ipykernel" in " ".join(process.cmdline()):
                return found
    return None


def read_limits(hub: Hub, directory: Path) -> list[tuple[int, int]] | str:
    """(soft, hard) of every GPU not in MIG mode as nvmlDeviceGetMemoryLimits_v1 answers another process, or the
    error it raises."""
    code = f"""
import json, pynvml
pynvml.nvmlInit()
found = []
try:
    for index in range(2):
        limits = pynvml.c_nvmlGetMemoryLimits_v1_t()
        limits.nameSpace = {str(directory)!r}.encode()
        pynvml.nvmlDeviceGetMemoryLimits_v1(pynvml.nvmlDeviceGetHandleByIndex(index), limits)
        found.append([limits.softLimit, limits.hardLimit])
except pynvml.NVMLError as error:
    found = type(error).__name__
print(json.dumps(found))
"""
    env = {**os.environ, standin.SCENARIO_VARIABLE: str(hub.scenario)}  # this process's LD_LIBRARY_PATH: the stand-in
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    return found if isinstance(found, str) else [(soft, hard) for soft, hard in found]


def stop_server(hub: Hub, user: str) -> None:
    status, body = hub.api(f"/users/{user}/server", "DELETE")
    assert status in (202, 204), (status, body)
    wait_for(lambda: not hub.api(f"/users/{user}")[1]["servers"], 90, f"{user}'s server to stop")


@pytest.mark.server
def test_a_users_server_runs_in_its_cgroup_under_the_ceiling_the_driver_enforces(hub: tuple[Hub, Path]) -> None:
    running, log_path = hub
    assert MOUNT is not None
    directory = MOUNT / PARENT / f"jupyter-{USER}"
    rel = f"/{PARENT}/jupyter-{USER}"
    running.start_server(USER)
    running.wait_for_server(USER)
    # A kernel the server starts is born in the server's directory too.
    status, body = http(f"{running.url}/user/{USER}/api/kernels", ADMIN_TOKEN, "POST", {"name": "python3"})
    assert status == 201, (status, body)
    processes = wait_for(lambda: with_kernel(USER), 60, "the user's kernel")
    for process in processes:
        assert own_path(Path(f"/proc/{process.pid}/cgroup").read_text()) == rel, process.cmdline()
    listed = {int(pid) for pid in (directory / "cgroup.procs").read_text().split()}
    # Each of them still running after that read was running during it (a short-lived child may have exited since
    # the processes were found: CI saw one), so the directory lists it.
    assert listed >= {p.pid for p in processes if p.is_running()}
    assert limit_lines(running.scenario) == {(0, rel): (2 * GiB, 6 * GiB), (1, rel): (2 * GiB, 6 * GiB)}
    assert read_limits(running, directory) == [(2 * GiB, 6 * GiB)] * 2
    stop_server(running, USER)
    wait_for(lambda: not directory.exists(), 60, "the server's cgroup to be removed")
    assert limit_lines(running.scenario) == {}  # cleared: the stand-in's record of the driver's limits
    assert read_limits(running, directory) == "NVMLError_NotFound"  # and the directory is gone
    assert_no_hook_failed(log_path)


def assert_no_hook_failed(log_path: Path) -> None:
    log = log_path.read_text()
    for failed in ("pre_spawn_hook", "post_stop_hook failed", "Error in Spawner.post_stop_hook", "cgroups.py"):
        assert failed not in log, log[-3000:]


@pytest.mark.server
def test_with_a_driver_before_615_the_hub_warns_once_and_the_server_spawns_without_a_limit(
    hub: tuple[Hub, Path],
) -> None:
    running, log_path = hub
    assert MOUNT is not None
    running.set_scenario(machine(DRIVER_580))
    try:
        running.start_server(USER)
        running.wait_for_server(USER)
        processes = server_processes(USER)
        assert processes
        for process in processes:
            assert own_path(Path(f"/proc/{process.pid}/cgroup").read_text()) != f"/{PARENT}/jupyter-{USER}"
        assert not (MOUNT / PARENT / f"jupyter-{USER}").exists()
        assert limit_lines(running.scenario) == {}
        log = log_path.read_text()
        warning = "this needs an NVIDIA driver from 615 (CUDA 13.4): this driver has no nvmlDeviceSetMemoryLimits_v1"
        assert log.count(warning) == 1, log[-3000:]
        stop_server(running, USER)
        assert_no_hook_failed(log_path)  # the post_stop_hook had nothing to do, and did not fail either
    finally:
        running.set_scenario(machine(DRIVER_615))
