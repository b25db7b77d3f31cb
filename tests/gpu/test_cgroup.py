"""This process's cgroup v2 directories and the host's memory (gpu/cgroup.py): read from /proc's text, the mount
point never assumed; and what the NVML reader makes of the driver's limits along them (the stand-in, real cgroups)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cgroup_fixtures import own_cgroup

from jupyter_gpumem.gpu import cgroup, nvml
from jupyter_gpumem.gpu.host import HostProcesses
from jupyter_gpumem.gpu.model import DriverLimit
from jupyter_gpumem.units import MiB

HYBRID = (
    "25 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw\n"
    "42 31 0:39 / /sys/fs/cgroup/memory rw,relatime shared:11 - cgroup cgroup rw,memory\n"
)
PURE = "30 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
ESCAPED = "30 25 0:26 / /mnt/my\\040cgroups rw,relatime - cgroup2 none rw\n"


def test_the_cgroup2_mount_comes_from_mountinfo_on_hybrid_pure_and_odd_hosts():
    assert cgroup.mount_point(HYBRID) == "/sys/fs/cgroup/unified"
    assert cgroup.mount_point(PURE) == "/sys/fs/cgroup"
    assert cgroup.mount_point(ESCAPED) == "/mnt/my cgroups"
    assert cgroup.mount_point(HYBRID.splitlines()[0] + "\n" + HYBRID.splitlines()[2]) is None  # v1 only


def test_the_own_path_is_the_0_line_and_its_ancestors_run_up_to_the_root():
    assert cgroup.own_path("4:memory:/a\n0::/jupyterhub/alice\n") == "/jupyterhub/alice"
    assert cgroup.own_path("4:memory:/a\n") is None
    assert cgroup.ancestors("/jupyterhub/alice") == ("/jupyterhub/alice", "/jupyterhub", "/")
    assert cgroup.ancestors("/") == ("/",)  # in a container with a cgroup namespace
    chain = cgroup.Chain("/sys/fs/cgroup", cgroup.ancestors("/a/b"))
    assert [chain.directory(p) for p in chain.paths] == ["/sys/fs/cgroup/a/b", "/sys/fs/cgroup/a", "/sys/fs/cgroup"]


def test_without_cgroup_v2_the_chain_is_why_not(tmp_path, monkeypatch):
    (tmp_path / "self").mkdir()
    (tmp_path / "self" / "mountinfo").write_text(HYBRID.splitlines()[0] + "\n")
    (tmp_path / "self" / "cgroup").write_text("4:memory:/a\n")
    monkeypatch.setattr(cgroup, "PROC", tmp_path)  # our own module's /proc, not the driver's binding
    assert cgroup.chain().code == "no_cgroup_v2"
    (tmp_path / "self" / "mountinfo").unlink()
    assert cgroup.chain().code == "cgroup_unreadable"


def test_the_hosts_memory_is_capped_by_the_lowest_memory_max_and_counts_the_cgroups_use(tmp_path, monkeypatch):
    (tmp_path / "meminfo").write_text("MemTotal:       16384000 kB\nMemFree: 1 kB\nMemAvailable:   12288000 kB\n")
    monkeypatch.setattr(cgroup, "PROC", tmp_path)
    whole = cgroup.host_memory(None)
    assert whole == cgroup.HostMemory(16384000 * 1024, 4096000 * 1024, 12288000 * 1024)
    top = tmp_path / "cg"
    (top / "hub" / "alice").mkdir(parents=True)
    (top / "hub" / "memory.max").write_text(f"{8 * 1024 * MiB}\n")
    (top / "hub" / "alice" / "memory.max").write_text("max\n")
    (top / "hub" / "alice" / "memory.current").write_text(f"{1024 * MiB}\n")
    found = cgroup.Chain(str(top), cgroup.ancestors("/hub/alice"))
    assert cgroup.memory_max(found) == 8 * 1024 * MiB
    assert cgroup.host_memory(found) == cgroup.HostMemory(8192 * MiB, 1024 * MiB, 7168 * MiB)


@pytest.mark.parametrize(
    ("fail", "code"), [("no_permission", "driver_limits_refused"), ("function_not_found", "driver_limits_no_calls")]
)
def test_a_refused_or_missing_limit_call_is_said_once_and_the_gpu_reads_as_before(scenario, fail, code):
    text = (Path(__file__).parents[1] / "fixtures/scenarios/driver_limit.scenario").read_text()
    scenario(text.replace(" cc=8.0", f" cc=8.0 fail=limits:{fail}"))
    snapshot = nvml.read(os.getpid(), HostProcesses().lookup)
    assert snapshot.driver_limits_unknown is not None and snapshot.driver_limits_unknown.code == code
    (device,) = snapshot.devices
    assert device.driver_limit is None and device.total_bytes == 40960 * MiB and not device.memory_shared


def test_the_lowest_hard_limit_on_the_path_binds_with_that_cgroups_figures(scenario, cgroups):
    parent, child = cgroups.make("hub"), cgroups.make("hub/alice")
    before = cgroups.mount / own_cgroup().lstrip("/")
    cgroups.move(os.getpid(), child)
    try:
        text = (Path(__file__).parents[1] / "fixtures/scenarios/driver_limit.scenario").read_text()
        scenario(
            text
            + f"limit gpu=0 cgroup={cgroups.relative(parent)} soft=2GiB hard=6GiB used=1GiB\n"
            + f"limit gpu=0 cgroup={cgroups.relative(child)} soft=0 hard=8GiB\n"
        )
        snapshot = nvml.read(os.getpid(), HostProcesses().lookup)
    finally:
        cgroups.move(os.getpid(), before)
    (device,) = snapshot.devices
    assert snapshot.driver_limits_unknown is None
    assert device.driver_limit == DriverLimit(6144 * MiB, 2048 * MiB, 1024 * MiB, cgroups.relative(parent))
