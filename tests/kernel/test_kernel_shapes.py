"""Shapes of shared GPUs, in a real kernel (jupyter_client) on the stand-in NVML (issue 44): a MIG slice, a GPU memory
limit the driver enforces on the kernel's cgroup (real cgroup v2 directories; CI runs as root) and a GPU that shares
the host's memory. Each plans `%gpumem fraction=` against what the kernel can really have, and says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_stream import connect, sample_where

from jupyter_gpumem import standin
from jupyter_gpumem.units import MiB

pytestmark = pytest.mark.kernel

FIRST_SLICE = "MIG-1d7f3b29-6a4e-5c81-9f02-b8e45a7c3d16"
THIRD_SLICE = "MIG-3f9b5d4c-8c6a-5ea3-b124-daa67c9e5f38"
A100_40GB = "GPU-5c0e7a3d-9b41-4f86-a2d7-3e8c1b6f0a94"


def budget_of(kernel, comm_id: str) -> int:
    sample = sample_where(kernel, comm_id, lambda s: s["policy"] is not None and s["gpus"][0]["budget_bytes"])
    return int(sample["gpus"][0]["budget_bytes"])


@pytest.mark.parametrize(
    ("visible", "profile_total"),
    [
        ({"CUDA_VISIBLE_DEVICES": FIRST_SLICE}, 4864),
        (
            {"CUDA_VISIBLE_DEVICES": f"MIG-{A100_40GB}/7/0"},
            4864,
        ),  # the older form: the GPU, its GPU and compute instance
        ({}, 4864),  # not named: the slice its own process is on (gi 7)
    ],
    ids=["MIG-uuid", "MIG-GPU-uuid/gi/ci", "its-process"],
)
def test_on_a_1g5gb_slice_half_is_half_of_the_slice_not_of_the_card(kernel_with, visible, profile_total):
    kernel = kernel_with("mig_1g5gb", env=visible)
    comm_id, _ = connect(kernel)
    said = kernel.run("%gpumem fraction=0.5")
    assert said.status == "ok", said.error
    assert budget_of(kernel, comm_id) == profile_total * MiB // 2 == 2432 * MiB  # not 20480 MiB, half the card
    status = kernel.run("%gpumem status").stdout
    assert "this kernel's MIG slice: 1g.5gb, 4864 MiB" in status
    assert "hard: a MIG partition of 4864 MiB" in status
    sample = sample_where(kernel, comm_id, lambda s: bool(s["gpus"]))
    gpu = sample["gpus"][0]
    assert (gpu["slice"]["profile"], gpu["slice"]["gpu_instance_id"]) == ("1g.5gb", 7)
    # The sidebar's GPU is the slice: its memory, and only the processes on it.
    assert (gpu["total_bytes"], gpu["used_bytes"]) == (4864 * MiB, 1536 * MiB)
    assert [p["gpu_instance_id"] for p in gpu["processes"]] == [7]


def test_a_slice_named_elsewhere_plans_there_and_a_limit_beyond_the_slice_is_refused(kernel_with):
    kernel = kernel_with("mig_1g5gb", env={"CUDA_VISIBLE_DEVICES": THIRD_SLICE})
    comm_id, _ = connect(kernel)
    assert kernel.run("%gpumem fraction=0.25").status == "ok"
    assert budget_of(kernel, comm_id) == 1216 * MiB
    too_much = kernel.run("%gpumem limit=6GiB")
    assert "more than GPU 0's 4864 MiB" in too_much.stdout + too_much.stderr + str(too_much.error)
    # gpus= names the slice CUDA must see, never the whole GPU: the budget lands on this slice.
    assert kernel.run("%gpumem reset").status == "ok"
    assert kernel.run("%gpumem fraction=0.5 gpus=0").status == "ok"
    env = kernel.run("import os; print(os.environ['CUDA_VISIBLE_DEVICES'])").stdout.strip()
    assert env == THIRD_SLICE


def limit_line(gpu: int, cgroup: str, hard_mib: int) -> str:
    return f"limit gpu={gpu} cgroup={cgroup} soft=0 hard={hard_mib}MiB\n"


def kernel_in_child_of(kernel_with, cgroups, scenario: str, hard_mib: int | None):
    """A kernel moved into a cgroup whose parent has the driver's hard limit of ``hard_mib`` (None: none)."""
    parent, child = cgroups.make("hub"), cgroups.make("hub/alice")
    kernel = kernel_with(scenario)
    pid = int(kernel.run("import os; print(os.getpid())").stdout)
    cgroups.move(pid, child)
    if hard_mib is not None:
        text = Path(kernel.scenario).read_text() + limit_line(0, cgroups.relative(parent), hard_mib)
        standin.write_scenario(Path(kernel.scenario), text)
    return kernel, cgroups.relative(parent)


def test_a_hard_limit_on_the_parent_cgroup_bounds_the_plan_and_shows_as_hard(kernel_with, cgroups):
    kernel, parent = kernel_in_child_of(kernel_with, cgroups, "driver_limit", 6144)
    comm_id, _ = connect(kernel)
    said = kernel.run("%gpumem fraction=0.5")
    assert said.status == "ok", said.error
    assert (
        f"fraction=0.5 is 20480 MiB on GPU 0, above the 6144 MiB that the NVIDIA driver enforces on this kernel "
        f"(cgroup {parent}): planned at 6144 MiB." in said.stdout
    )
    assert budget_of(kernel, comm_id) == 6144 * MiB
    sample = sample_where(kernel, comm_id, lambda s: bool(s["gpus"]) and s["gpus"][0].get("driver_limit"))
    assert sample["gpus"][0]["driver_limit"] == {
        "hard_bytes": 6144 * MiB,
        "soft_bytes": None,
        "used_bytes": 1536 * MiB,  # the kernel's process, in the cgroup below it
        "cgroup": parent,
    }
    assert "driver_limits_unknown" not in sample
    status = kernel.run("%gpumem status").stdout
    assert f"GPU 0: hard: the NVIDIA driver's limit of 6144 MiB on cgroup {parent}, 1536 MiB counted against it" in (
        status
    )


def test_a_limit_below_the_drivers_is_planned_as_asked(kernel_with, cgroups):
    kernel, _ = kernel_in_child_of(kernel_with, cgroups, "driver_limit", 6144)
    comm_id, _ = connect(kernel)
    said = kernel.run("%gpumem limit=4GiB")
    assert said.status == "ok" and "planned at" not in said.stdout
    assert budget_of(kernel, comm_id) == 4096 * MiB


def test_without_the_drivers_calls_half_is_half_of_the_card_and_status_says_why_once(kernel_with, cgroups):
    kernel, _ = kernel_in_child_of(kernel_with, cgroups, "driver_limit_old", 6144)
    comm_id, _ = connect(kernel)
    said = kernel.run("%gpumem fraction=0.5")
    assert said.status == "ok" and not said.stderr
    assert budget_of(kernel, comm_id) == 20480 * MiB
    status = kernel.run("%gpumem status").stdout
    assert status.count("this driver has no nvmlDeviceGetMemoryLimits_v1") == 1
    sample = sample_where(kernel, comm_id, lambda s: bool(s["gpus"]))
    assert sample["driver_limits_unknown"]["code"] == "driver_limits_no_calls"
    assert sample["gpus"][0].get("driver_limit") is None


def host_memory_bytes() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no MemTotal")


def test_a_gpu_sharing_the_hosts_memory_plans_against_the_hosts_memory(kernel_with):
    kernel = kernel_with("unified_gb10")
    comm_id, _ = connect(kernel)
    said = kernel.run("%gpumem fraction=0.4")
    assert said.status == "ok", said.error
    assert budget_of(kernel, comm_id) == int(0.4 * host_memory_bytes())
    sample = sample_where(kernel, comm_id, lambda s: bool(s["gpus"]))
    gpu = sample["gpus"][0]
    assert gpu["memory_shared"] is True and gpu["total_bytes"] == host_memory_bytes()
    assert "shared with the CPU: the host's memory" in kernel.run("%gpumem status").stdout
