"""Real cgroup v2 directories for the tests of driver-enforced GPU memory limits (nvmlDevice{Get,Set}MemoryLimits_v1
take a cgroup directory): made below the cgroup2 mount read from /proc/self/mountinfo (never assumed), named with the
test's pid, and removed after the test with every process moved out first. Making them needs root (CI runs as root)."""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

_numbers = itertools.count()


def cgroup2_mount() -> Path | None:
    """Where the cgroup v2 hierarchy is mounted, from /proc/self/mountinfo (its first ``cgroup2`` line)."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields, _, after = line.partition(" - ")
        if after.split()[:1] == ["cgroup2"]:
            return Path(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields.split()[4]))
    return None


def own_cgroup(pid: int | str = "self") -> str:
    """A process's cgroup v2 path, as the 0:: line of /proc/<pid>/cgroup shows it."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        if line.startswith("0::"):
            return line[3:]
    raise AssertionError(f"no cgroup v2 line for {pid}")


@pytest.fixture
def mount() -> Path:
    found = cgroup2_mount()
    if found is None:
        pytest.skip("this host has no cgroup v2 hierarchy")
    return found


class Cgroups:
    """Real cgroup v2 directories below the cgroup2 mount, named with this test's pid; ``relative`` gives the path
    a scenario's ``limit cgroup=`` and /proc/<pid>/cgroup use."""

    def __init__(self, mount: Path):
        self.mount = mount
        self.top = mount / f"gpumem-{os.getpid()}-{next(_numbers)}"
        self.made: list[Path] = []

    def make(self, relative: str = "") -> Path:
        path = self.top / relative if relative else self.top
        for directory in [*reversed(path.relative_to(self.top).parents), path.relative_to(self.top)]:
            full = self.top / directory
            if not full.exists():
                full.mkdir()
                self.made.append(full)
        return path

    def relative(self, path: Path) -> str:
        return "/" + str(path.relative_to(self.mount))

    @staticmethod
    def move(pid: int, path: Path) -> None:
        (path / "cgroup.procs").write_text(str(pid))

    def remove(self) -> None:
        for path in reversed(self.made):
            for _ in range(50):
                try:
                    for pid in (path / "cgroup.procs").read_text().split():  # leave no process behind
                        with contextlib.suppress(OSError):
                            self.move(int(pid), self.mount)
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)


@pytest.fixture
def cgroups(mount: Path) -> Iterator[Cgroups]:
    """Make cgroup directories (as root); they are removed after the test, whatever it did."""
    if os.geteuid() != 0:
        pytest.skip("making cgroups needs root")
    made = Cgroups(mount)
    try:
        made.make()
    except OSError as error:
        pytest.skip(f"cannot make a cgroup below {mount}: {error}")
    try:
        yield made
    finally:
        made.remove()
        assert not made.top.exists()
