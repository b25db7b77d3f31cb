"""Ceilings the driver enforces, for spawners that start servers on the hub's own machine (docs/hub.md, "Ceilings
the driver enforces").

From driver 615 (CUDA 13.4) NVML enforces a GPU memory limit per cgroup v2 directory
(``nvmlDeviceSetMemoryLimits_v1``: soft and hard, in bytes; root only; not on MIG). ``driver_ceilings`` makes the
two hooks that use it:

- ``pre_spawn_hook``: for LocalProcessSpawner (and its subclasses) it makes the directory
  ``<cgroup2 mount>/<parent>/jupyter-<user>[:<server>]``, sets the user's ceiling on it on every GPU not in MIG
  mode (hard: their groups' lowest ``max_limit`` / ``max_fraction`` of that GPU; soft: their ``limit=``, never
  above), and has the server's process join it before it runs anything: the spawner's ``make_preexec_fn`` is
  wrapped so that the child, forked from the hub and still root, writes its pid to the directory's
  ``cgroup.procs`` before it switches to the user. Every process the server starts (kernels, terminals) is
  then born in the directory. A prefix in the command (``sh -c 'echo $$ > .../cgroup.procs; exec "$@"'``)
  would not do: it runs as the user, who may not move a process into a directory root made.
  For SystemdSpawner (and its subclasses) systemd already gives each server a cgroup, its unit's
  (``/system.slice/jupyter-<user>-singleuser.service`` by default: ``systemd-run --unit`` in
  systemdspawner/systemd.py, the unit named by ``SystemdSpawner.unit_name_template``, put in
  ``SystemdSpawner.slice`` where one is set); the hook wraps ``start`` and sets the limit on that cgroup, as
  ``systemctl show --property=ControlGroup`` names it, once the unit runs.
- ``post_stop_hook``: waits (``drain_s``) for the directory to empty, clears the limit (soft 0, hard
  ``NVML_DEVICE_MEMORY_LIMIT_MAX``) and removes the directory. A directory that stays populated (a process the
  user left behind) keeps its limit, and the user's next server joins it.

Container spawners (DockerSpawner, KubeSpawner) are left to the container toolkit (``group_environment`` sets its
variables). Where a piece is missing (no cgroup v2, the hub not root, no NVML, a driver older than 615, a call
refused) the hook logs one warning naming it and the server spawns as it would without the hook; no NVML error
reaches the user.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Awaitable, Callable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from jupyter_gpumem.gpu import nvml
from jupyter_gpumem.gpu.cgroup import mount_point
from jupyter_gpumem.hub.groups import (
    CEILINGS,
    check_ceilings,
    gpu_size,
    is_container_spawner,
    user_ceiling,
)

PARENT = "jupyterhub-gpumem"
DRAIN_S = 10.0  # how long a stopped server's processes may take to leave its directory
SYSTEMCTL_TIMEOUT_S = 10.0

log = logging.getLogger("jupyter_gpumem.hub")

SpawnerKind = Literal["local", "systemd", "container", "other"]


def spawner_kind(spawner: Any) -> SpawnerKind:
    """How a spawner's servers get their cgroup: ``local`` (LocalProcessSpawner and subclasses: a directory made
    here), ``systemd`` (SystemdSpawner's unit), ``container`` (the container toolkit), ``other`` (not known)."""
    if is_container_spawner(spawner):
        return "container"
    classes = type(spawner).__mro__
    if any(getattr(cls, "__module__", "").partition(".")[0] == "systemdspawner" for cls in classes):
        return "systemd"
    if any(cls.__name__ == "LocalProcessSpawner" and cls.__module__ == "jupyterhub.spawner" for cls in classes):
        return "local"
    return "other"


def cgroup2_mount(mountinfo: Path = Path("/proc/self/mountinfo")) -> Path | None:
    """Where the cgroup2 file system is mounted (``/sys/fs/cgroup`` on pure v2 hosts, ``/sys/fs/cgroup/unified``
    on hybrid ones); None without one."""
    try:
        found = mount_point(mountinfo.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None
    return Path(found) if found else None


def directory_name(user: str, server: str = "") -> str:
    """A server's directory under the parent: ``jupyter-<user>`` or ``jupyter-<user>:<server>``, each name
    percent-quoted (no ``/``, no ``:`` of its own, never ``.`` or ``cgroup.*``)."""
    name = f"jupyter-{quote(user, safe='')}"
    return f"{name}:{quote(server, safe='')}" if server else name


def populated(directory: Path) -> bool:
    """Whether a process is in the cgroup or below it (``cgroup.events``' ``populated 1``)."""
    try:
        events = (directory / "cgroup.events").read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError):
        return False
    return "populated 1" in events.splitlines()


def join(procs: str) -> None:
    """Move the calling process into the cgroup whose ``cgroup.procs`` is ``procs``; run in the child between
    fork and exec, before it switches to the user. A failure is one line on the server's stderr: the server
    then starts outside the directory, unlimited, as it would without the hook."""
    try:
        with open(procs, "w", encoding="ascii") as file:
            file.write(str(os.getpid()))
    except OSError as error:
        line = f"jupyter-gpumem: the server could not join {procs} ({error}); the driver's limit does not bind it\n"
        os.write(2, line.encode("utf-8", "replace"))


class _JoinFirst:
    """A spawner's ``make_preexec_fn`` that has the child join ``procs`` first, then runs the spawner's own
    (which switches to the user)."""

    def __init__(self, original: Callable[[str], Callable[[], None]], procs: str) -> None:
        self.original = original
        self.procs = procs

    def __call__(self, name: str) -> Callable[[], None]:
        inner, procs = self.original(name), self.procs

        def preexec() -> None:
            join(procs)
            inner()

        return preexec


class _LimitAfterStart:
    """A SystemdSpawner's ``start`` that sets the driver's limit on its unit's cgroup once the unit runs."""

    def __init__(
        self, original: Callable[[], Awaitable[Any]], then: Callable[[Any], Awaitable[None]], spawner: Any
    ) -> None:
        self.original = original
        self.then = then
        self.spawner = spawner

    async def __call__(self) -> Any:
        started = await self.original()
        try:
            await self.then(self.spawner)
        except Exception:  # a server that started is never failed for its limit
            self.spawner.log.exception("jupyter-gpumem: the driver's limit was not set on %s", self.spawner.unit_name)
        return started


class DriverCeilings:
    """``pre_spawn_hook`` and ``post_stop_hook`` (both coroutines) that have the driver enforce each user's
    ceiling on their server's cgroup; see the module's text and ``driver_ceilings``."""

    def __init__(
        self,
        policies: Mapping[str, Mapping[str, str]],
        parent: str = PARENT,
        gpu_memory: str | int | None = None,
        *,
        drain_s: float = DRAIN_S,
        systemctl: str = "systemctl",
    ) -> None:
        check_ceilings(policies)
        self.policies = policies
        self.parent = parent.strip("/")
        self.gpu_memory = gpu_size(gpu_memory)
        self.drain_s = drain_s
        self.systemctl = systemctl
        self._driver = nvml.LimitSetter()
        self._lock = threading.Lock()  # one NVML sequence at a time
        self._warned: set[str] = set()
        self._units: dict[tuple[str, str], Path] = {}  # (user, server) -> the systemd unit's cgroup directory

    def __deepcopy__(self, memo: dict[int, Any]) -> DriverCeilings:
        """Itself: traitlets gives every spawner a deep copy of its configuration, and ``c.Spawner.post_stop_hook =
        ceilings.post_stop_hook`` is a bound method; one set of hooks for the whole hub keeps one NVML session, one
        warning per missing piece, and what a server's start found for its stop."""
        return self

    # The hooks.

    async def pre_spawn_hook(self, spawner: Any) -> None:
        kind = spawner_kind(spawner)
        current = getattr(spawner, "make_preexec_fn", None)
        if isinstance(current, _JoinFirst):  # last spawn's: this one decides again
            spawner.make_preexec_fn = current.original
        started = getattr(spawner, "start", None)
        if isinstance(started, _LimitAfterStart):
            spawner.start = started.original
        if kind == "container":
            return  # the container toolkit sets the limit from group_environment's variables
        if kind == "other":
            self._once(
                spawner,
                f"driver ceilings do not know where {type(spawner).__name__} puts its servers, which spawn without "
                "the driver enforcing their ceiling (it knows LocalProcessSpawner and SystemdSpawner; a container "
                "spawner gets group_environment's toolkit variables).",
            )
            return
        if not self._has_ceiling(spawner):
            return
        mount = self._where(spawner)
        if mount is None:
            return
        if kind == "local":
            directory = mount / self.parent / directory_name(spawner.user.name, spawner.name or "")
            if await asyncio.to_thread(self._place, spawner, directory):
                spawner.make_preexec_fn = _JoinFirst(spawner.make_preexec_fn, str(directory / "cgroup.procs"))
        else:
            spawner.start = _LimitAfterStart(spawner.start, self._limit_unit, spawner)

    async def post_stop_hook(self, spawner: Any) -> None:
        kind = spawner_kind(spawner)
        if kind == "systemd":
            directory = self._units.pop((spawner.user.name, spawner.name or ""), None)
            mount = cgroup2_mount()
            if directory is None and mount is not None and self._has_ceiling(spawner) and os.geteuid() == 0:
                directory = mount / unit_cgroup(spawner).lstrip("/")  # set before the hub restarted
            if directory is not None:
                await asyncio.to_thread(self._clear, spawner, directory)
            return
        if kind != "local":
            return
        mount = cgroup2_mount()
        if mount is None:
            return
        directory = mount / self.parent / directory_name(spawner.user.name, spawner.name or "")
        if not directory.is_dir():
            return
        deadline = asyncio.get_running_loop().time() + self.drain_s
        while populated(directory) and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.1)
        if populated(directory):
            spawner.log.warning(
                "jupyter-gpumem: %s still holds processes of %s after their server stopped; its GPU memory limit "
                "stays, and their next server joins it.",
                directory,
                spawner.user.name,
            )
            return
        await asyncio.to_thread(self._clear, spawner, directory)
        try:
            directory.rmdir()
        except OSError as error:
            spawner.log.warning("jupyter-gpumem: could not remove %s: %s", directory, error)

    # What they do.

    def _once(self, spawner: Any, message: str) -> None:
        """Log a warning once for the whole hub: every spawn would say the same."""
        if message not in self._warned:
            self._warned.add(message)
            getattr(spawner, "log", log).warning("jupyter-gpumem: %s", message)

    def _warn(self, spawner: Any, missing: str) -> None:
        """Say, once, what is missing for the driver to enforce the ceilings."""
        self._once(
            spawner,
            f"the driver does not enforce the groups' GPU memory ceilings: this needs {missing}. "
            "Servers spawn without it.",
        )

    def _groups(self, spawner: Any) -> list[str]:
        return [group.name for group in spawner.user.groups]

    def _has_ceiling(self, spawner: Any) -> bool:
        groups = self._groups(spawner)
        return any(name in self.policies[g] for g in groups if g in self.policies for name in CEILINGS)

    def _where(self, spawner: Any) -> Path | None:
        if os.geteuid() != 0:
            self._warn(spawner, "the hub to run as root (it makes cgroups and sets the driver's limits)")
            return None
        mount = cgroup2_mount()
        if mount is None:
            self._warn(spawner, "Linux with cgroup v2 (no cgroup2 file system in /proc/self/mountinfo)")
        return mount

    def _set(self, spawner: Any, directory: Path) -> bool:
        """Set the user's ceiling on ``directory`` on every GPU not in MIG mode; whether it holds on any."""
        with self._lock:
            missing = self._driver.start()
            if missing is not None:
                self._warn(spawner, missing)
                return False
            pynvml = self._driver.pynvml
            try:
                gpus = self._driver.gpus()
            except pynvml.NVMLError as error:
                self._warn(spawner, f"a driver that lists its GPUs (NVML said: {error})")
                return False
            groups, done = self._groups(spawner), 0
            for index, handle, total in gpus:
                ceiling = user_ceiling(groups, self.policies, self.gpu_memory or total)
                if ceiling is None:
                    self._warn(spawner, f"GPU {index}'s size for max_fraction (driver_ceilings(..., gpu_memory=))")
                    continue
                if ceiling.clamped_group is not None:
                    self._once(
                        spawner,
                        f"group {ceiling.clamped_group!r}'s limit= is above its members' ceiling; the driver's soft "
                        "limit is the ceiling.",
                    )
                try:
                    self._driver.set(handle, directory, ceiling.request_bytes, ceiling.limit_bytes)
                except pynvml.NVMLError as error:
                    self._warn(spawner, self._driver.missing(error))
                    continue
                done += 1
            if done:
                spawner.log.info(
                    "jupyter-gpumem: the driver holds %s to their ceiling on %s", spawner.user.name, directory
                )
            return done > 0

    def _clear(self, spawner: Any, directory: Path) -> None:
        with self._lock:
            if self._driver.start() is not None:
                return
            pynvml = self._driver.pynvml
            try:
                gpus = self._driver.gpus()
            except pynvml.NVMLError as error:
                spawner.log.warning("jupyter-gpumem: could not clear the limit on %s: %s", directory, error)
                return
            for index, handle, _ in gpus:
                try:
                    self._driver.clear(handle, directory)
                except pynvml.NVMLError_NotFound:
                    pass  # the cgroup is gone (systemd removed its unit's), and its limit with it
                except pynvml.NVMLError as error:
                    spawner.log.warning(
                        "jupyter-gpumem: could not clear GPU %d's limit on %s: %s", index, directory, error
                    )

    def _place(self, spawner: Any, directory: Path) -> bool:
        """Make the server's directory and set the limit on it; False (and nothing left behind) where it cannot."""
        made = not directory.exists()
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            self._warn(spawner, f"a cgroup directory the hub can make ({directory}: {error.strerror})")
            return False
        if self._set(spawner, directory):
            return True
        if made:
            with suppress(OSError):
                directory.rmdir()
        return False

    async def _limit_unit(self, spawner: Any) -> None:
        """SystemdSpawner: the limit on the running unit's cgroup."""
        mount = cgroup2_mount()
        if mount is None:
            return
        path = await self._control_group(f"{spawner.unit_name}.service") or unit_cgroup(spawner)
        directory = mount / path.lstrip("/")
        if not directory.is_dir():
            self._warn(spawner, f"the unit's cgroup directory ({directory} is not there)")
            return
        if await asyncio.to_thread(self._set, spawner, directory):
            self._units[(spawner.user.name, spawner.name or "")] = directory

    async def _control_group(self, unit: str) -> str | None:
        """The unit's cgroup as systemd names it (``/system.slice/<unit>``); None where systemctl does not say."""
        try:
            process = await asyncio.create_subprocess_exec(
                self.systemctl,
                "show",
                "--property=ControlGroup",
                "--value",
                unit,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
            )
            out, _ = await asyncio.wait_for(process.communicate(), SYSTEMCTL_TIMEOUT_S)
        except (OSError, asyncio.TimeoutError):
            return None
        path = out.decode("utf-8", "replace").strip()
        return path if process.returncode == 0 and path.startswith("/") else None


def unit_cgroup(spawner: Any) -> str:
    """A SystemdSpawner server's cgroup path as systemd makes it: ``<its slice>/<unit_name>.service``, the slice
    ``system.slice`` where ``SystemdSpawner.slice`` is not set (systemd-run's default for a system service)."""
    return f"{slice_path(getattr(spawner, 'slice', None) or 'system.slice')}/{spawner.unit_name}.service"


def slice_path(name: str) -> str:
    """A systemd slice's cgroup path: each dash a level, ``a-b.slice`` -> ``/a.slice/a-b.slice``."""
    stem = name.removesuffix(".slice")
    if not stem or stem == "-":
        return ""
    parts = stem.split("-")
    return "".join("/" + "-".join(parts[: n + 1]) + ".slice" for n in range(len(parts)))


def driver_ceilings(
    policies: Mapping[str, Mapping[str, str]],
    parent: str = PARENT,
    gpu_memory: str | int | None = None,
    *,
    drain_s: float = DRAIN_S,
) -> DriverCeilings:
    """The hooks that have the NVIDIA driver enforce each user's ceiling (``max_limit``, ``max_fraction``: the
    lowest of their groups', as ``group_environment`` sets them) on their server's cgroup:
    ``c.Spawner.pre_spawn_hook = ceilings.pre_spawn_hook`` and ``c.Spawner.post_stop_hook =
    ceilings.post_stop_hook``. ``parent``: the directory under the cgroup2 mount that holds the servers'
    directories; ``gpu_memory``: every GPU's size for ``max_fraction`` (default: each GPU's own, from NVML);
    ``drain_s``: how long a stopped server's processes may take to leave. A ceiling that is not one raises
    ``values.Refused`` here. With ``group_environment`` (docs/hub.md)::

        environment = group_environment(policies)
        ceilings = driver_ceilings(policies)

        async def pre_spawn_hook(spawner):
            environment(spawner)
            await ceilings.pre_spawn_hook(spawner)
    """
    return DriverCeilings(policies, parent, gpu_memory, drain_s=drain_s)
