"""This process's cgroup v2 directories and the host's memory: where the NVIDIA driver's memory limits are set
(nvmlDeviceGetMemoryLimits_v1 takes a cgroup directory), and what a GPU that shares the host's memory can take.

A process's cgroup is the ``0::<path>`` line of ``/proc/<pid>/cgroup``, under the cgroup2 mount point read from
``/proc/self/mountinfo`` (``/sys/fs/cgroup`` on pure v2 hosts, ``/sys/fs/cgroup/unified`` on hybrid ones; never
assumed). Limits nest: an ancestor's bounds its children, so a reader looks at every directory from the process's
own up to the root. Inside a container with a cgroup namespace the path reads ``/``: the container's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from jupyter_gpumem.words import Said

PROC = Path("/proc")


@dataclass(frozen=True)
class Chain:
    """A process's cgroup v2 directories, its own first and the root last: (path as /proc names it, directory)."""

    mount: str
    paths: tuple[str, ...]

    def directory(self, path: str) -> str:
        return self.mount if path == "/" else self.mount.rstrip("/") + path


def _unescape(field: str) -> str:
    """mountinfo writes a space, tab, newline and backslash in a path as an octal escape (``\\040``)."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def mount_point(mountinfo: str) -> str | None:
    """The cgroup2 file system's mount point in ``/proc/self/mountinfo``'s text; None without one."""
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        if "-" not in fields:
            continue
        after = fields[fields.index("-") + 1 :]
        if len(fields) > 4 and after and after[0] == "cgroup2":
            return _unescape(fields[4])
    return None


def own_path(cgroup: str) -> str | None:
    """The cgroup v2 path in ``/proc/<pid>/cgroup``'s text (its ``0::`` line); None on a v1-only host."""
    for line in cgroup.splitlines():
        if line.startswith("0::"):
            path = line[3:].strip()
            return path if path.startswith("/") else None
    return None


def ancestors(path: str) -> tuple[str, ...]:
    """``/a/b`` -> (``/a/b``, ``/a``, ``/``)."""
    parts = [part for part in path.split("/") if part]
    return (*("/" + "/".join(parts[:n]) for n in range(len(parts), 0, -1)), "/")


def chain(pid: int | str = "self") -> Chain | Said:
    """Process ``pid``'s cgroup v2 directories, or why there are none to read (a sentence)."""
    try:
        mount = mount_point((PROC / "self" / "mountinfo").read_text(encoding="utf-8", errors="replace"))
        path = own_path((PROC / str(pid) / "cgroup").read_text(encoding="utf-8", errors="replace"))
    except OSError as error:
        return Said("cgroup_unreadable", error=str(error))
    if mount is None or path is None:
        return Said("no_cgroup_v2")
    return Chain(mount, ancestors(path))


def memory_max(found: Chain) -> int | None:
    """The lowest ``memory.max`` from the process's cgroup up to the root: what it may take of the host's memory;
    None where none is set ("max") or it cannot be read."""
    lowest = None
    for path in found.paths:
        try:
            text = Path(found.directory(path), "memory.max").read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if text.isdigit() and (lowest is None or int(text) < lowest):
            lowest = int(text)
    return lowest


@dataclass(frozen=True)
class HostMemory:
    total_bytes: int
    used_bytes: int
    free_bytes: int


def host_memory(found: Chain | None) -> HostMemory | None:
    """The host's memory as a GPU that shares it can take it: /proc/meminfo's MemTotal and MemAvailable, the total
    lowered to the cgroup's memory.max where one is set. None where /proc/meminfo cannot be read."""
    try:
        fields = {
            name: int(rest.split()[0]) * 1024
            for name, _, rest in (
                line.partition(":") for line in (PROC / "meminfo").read_text(encoding="ascii").splitlines()
            )
            if rest.split() and rest.split()[0].isdigit()
        }
        total, available = fields["MemTotal"], fields["MemAvailable"]
    except (OSError, UnicodeDecodeError, KeyError):
        return None
    cap = memory_max(found) if found is not None else None
    if found is None or cap is None or cap >= total:
        return HostMemory(total, total - available, available)
    try:  # under a memory.max, what counts against it is the cgroup's own use
        used = int(Path(found.directory(found.paths[0]), "memory.current").read_text(encoding="ascii"))
    except (OSError, UnicodeDecodeError, ValueError):
        used = total - min(available, total)
    used = min(used, cap)
    return HostMemory(cap, used, cap - used)
