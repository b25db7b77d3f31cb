"""What a kernel shows of other users' GPU processes (docs/hub.md, "Privacy").

On a shared GPU NVML lists every process, whoever runs it. Under a hub (``JUPYTERHUB_USER`` set) a kernel
shows, by default, only its own user's processes one by one, and everybody else's as one aggregate per GPU:
"other users: 3 processes, 9.2 GiB". The administrator chooses (``JUPYTER_GPUMEM_PRIVACY`` or
``c.GpumemConfig.privacy``; the most private of every source holds):

- ``aggregate``: other users' processes as a count and their memory;
- ``names``: the same per Unix user;
- ``list``: every process (the default without a hub: a workstation's user sees their own machine).

Never a command line, at any level (the host's table is not asked for one). This limits what jupyter-gpumem
shows, not what a user can see: ``nvidia-smi`` in their own terminal lists every PID on the GPU.

The full snapshot stays as NVML read it (attribution, the unlisted figure and the advisor need every
process); only what is shown is split, by ``Rule.split``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, Protocol

from jupyter_gpumem.gpu.model import Device, GpuProcess

Level = Literal["aggregate", "names", "list"]
LEVELS: tuple[Level, ...] = ("aggregate", "names", "list")  # the most private first


class UserShare(NamedTuple):
    user: str | None  # None: the host does not tell whose it is
    processes: int
    used_bytes: int | None  # None: the driver cannot tell for one of them (N/A)


class Others(NamedTuple):
    """Other users' processes on one GPU, as one figure."""

    processes: int
    used_bytes: int | None  # None: the driver cannot tell for one of them (N/A), so the sum is unknown
    users: tuple[UserShare, ...] | None  # per user under "names"; None under "aggregate"


@dataclass(frozen=True)
class Rule:
    level: Level = "list"
    user: str | None = None  # this kernel's Unix user: their own processes are listed one by one

    def split(self, device: Device, keep: Collection[int] = ()) -> tuple[tuple[GpuProcess, ...], Others | None]:
        """The processes to list on ``device``, and the others' aggregate (None: every process is listed,
        or none is known). This kernel's own processes and those in ``keep`` (its matched PID in a container)
        are always listed; a process whose user the host does not tell is another user's."""
        if self.level == "list" or device.lost or not device.processes_known:
            return device.processes, None
        mine: list[GpuProcess] = []
        theirs: list[GpuProcess] = []
        for process in device.processes:
            own = process.is_self or process.pid in keep or (self.user is not None and process.user == self.user)
            (mine if own else theirs).append(process)
        users = by_user(theirs) if self.level == "names" else None
        return tuple(mine), Others(len(theirs), total(p.used_bytes for p in theirs), users)


class Held(Protocol):
    """A process as far as a per-user sum needs it (gpu.model.GpuProcess, server.figures.OtherProcess)."""

    @property
    def user(self) -> str | None: ...

    @property
    def used_bytes(self) -> int | None: ...


def by_user(processes: Iterable[Held]) -> tuple[UserShare, ...]:
    """Processes summed per Unix user, the user the host does not tell first, then by name: the one
    grouping the kernel's surfaces, the server's API and its metrics show."""
    groups: dict[str | None, list[Held]] = {}
    for process in processes:
        groups.setdefault(process.user, []).append(process)
    return tuple(
        UserShare(user, len(group), total(p.used_bytes for p in group))
        for user, group in sorted(groups.items(), key=lambda item: (item[0] is not None, item[0] or ""))
    )


def total(sizes: Iterable[int | None]) -> int | None:
    """The sum of memory figures; None when one of them is N/A (an unknown part makes the sum unknown)."""
    known = list(sizes)
    return None if None in known else sum(s or 0 for s in known)


def level_of(text: object) -> Level | None:
    """The level a configured value names ("Names " too); None: it names none."""
    if not isinstance(text, str):
        return None
    word = text.strip().lower()
    return next((level for level in LEVELS if level == word), None)


def most_private(levels: Collection[Level]) -> Level:
    """The most private of ``levels``; without any: ``aggregate`` under a hub, else ``list``."""
    if levels:
        return min(levels, key=LEVELS.index)
    return "aggregate" if os.environ.get("JUPYTERHUB_USER") else "list"


def this_user() -> str | None:
    """This process's Unix user as the host's process table names users (psutil: the name, else the UID as
    text); None where there are no Unix users."""
    try:
        import pwd
    except ImportError:
        return None
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def others_line(others: Others, size: Callable[[int | None], str]) -> str:
    """ "other users: 3 processes, 9.2 GiB", and per user under "names"; ``size`` writes a figure."""
    line = f"other users: {_processes(others.processes)}, {size(others.used_bytes)}"
    if others.users:
        each = "; ".join(
            f"{u.user or 'user unknown'}: {_processes(u.processes)}, {size(u.used_bytes)}" for u in others.users
        )
        line += f" ({each})"
    return line


def _processes(count: int) -> str:
    return f"{count} process" if count == 1 else f"{count} processes"


def from_sample(data: Any) -> Others | None:
    """The ``others`` of a protocol sample's GPU (docs/protocol.md), as written by ``encode``."""
    if not isinstance(data, dict):
        return None
    users = data.get("users")
    return Others(
        int(data["processes"]),
        data.get("used_bytes"),
        None
        if users is None
        else tuple(UserShare(u.get("user"), int(u["processes"]), u.get("used_bytes")) for u in users),
    )
