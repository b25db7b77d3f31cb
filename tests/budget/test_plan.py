"""Policies made concrete on the stand-in's GPUs (S1: 11422 MiB GPU-A, 8192 MiB GPU-B)."""

from __future__ import annotations

import os

import pytest

from jupyter_gpumem.budget.overhead import Overhead
from jupyter_gpumem.budget.plan import Ceiling, make_plan
from jupyter_gpumem.budget.policy import PolicyError, parse
from jupyter_gpumem.gpu import nvml
from jupyter_gpumem.gpu.host import HostProcesses
from jupyter_gpumem.gpu.model import Device, Snapshot
from jupyter_gpumem.units import MiB

OVERHEAD = Overhead(450 * MiB, "estimated", "a test figure")
GPU_A = "GPU-a1a1a1a1-0000-4000-8000-000000000001"
GPU_B = "GPU-b2b2b2b2-0000-4000-8000-000000000002"


def plan_for(line: str, ceiling: Ceiling | None = None):
    snapshot = nvml.read(os.getpid(), HostProcesses().lookup)
    return make_plan(parse(line.split()), snapshot, lambda device: OVERHEAD, ceiling or Ceiling())


def test_s1_half_of_gpu_1_and_nothing_of_gpu_0(scenario):
    scenario("s1_two_gpus")
    plan = plan_for("fraction=0.5 gpus=1")
    (gpu,) = plan.gpus
    assert (gpu.index, gpu.uuid, gpu.total_bytes) == (1, GPU_B, 8192 * MiB)
    assert gpu.budget_bytes == 4096 * MiB
    assert gpu.allocator_limit_bytes == 4096 * MiB - OVERHEAD.bytes
    assert [d.index for d in plan.hidden] == [0]
    assert plan.cuda_visible_devices == GPU_B


def test_a_fraction_applies_to_every_visible_gpu(scenario):
    scenario("s1_two_gpus")
    plan = plan_for("fraction=0.5")
    assert [(g.index, g.budget_bytes) for g in plan.gpus] == [(0, 5711 * MiB), (1, 4096 * MiB)]
    assert plan.cuda_visible_devices is None  # no gpus= given: CUDA_VISIBLE_DEVICES is left alone


def test_gpus_by_uuid_and_none(scenario):
    scenario("s1_two_gpus")
    assert [g.index for g in plan_for(f"gpus={GPU_B}").gpus] == [1]
    hidden_all = plan_for("gpus=none")
    assert hidden_all.gpus == () and hidden_all.cuda_visible_devices == "-1"


def test_strict_off_is_the_allocator_pool_alone(scenario):
    scenario("s1_two_gpus")
    (gpu,) = plan_for("fraction=0.5 gpus=1 strict=off").gpus
    assert gpu.allocator_limit_bytes == gpu.budget_bytes == 4096 * MiB


@pytest.mark.parametrize(
    ("line", "names"),
    [
        ("gpus=3", "there is no GPU 3 here (GPUs on this machine: 0, 1"),
        ("gpus=GPU-ffff", "there is no GPU GPU-ffff here"),
        ("limit=9GiB gpus=1", "limit=9GiB is more than GPU 1's 8192 MiB"),  # echoed as typed
        ("limit=300MiB", "leaves nothing for tensors after about 450 MiB of CUDA context"),
    ],
)
def test_policies_that_cannot_hold_here_are_refused(scenario, line, names):
    scenario("s1_two_gpus")
    with pytest.raises(PolicyError, match=names.replace("(", r"\(")):
        plan_for(line)


def test_a_lost_gpu_cannot_be_chosen(scenario):
    scenario("gpu_lost")
    with pytest.raises(PolicyError, match="GPU 1 is lost"):
        plan_for("gpus=1")


def test_the_ceiling_refuses_more_and_becomes_the_default_budget(scenario):
    scenario("s1_two_gpus")
    ceiling = Ceiling(max_fraction=0.5)
    with pytest.raises(PolicyError, match=r"fraction=0.8 is above this server's ceiling of 0.5 of each GPU"):
        plan_for("fraction=0.8", ceiling)
    with pytest.raises(PolicyError, match="ceiling"):
        plan_for("limit=10GiB gpus=0", ceiling)
    assert [g.budget_bytes for g in plan_for("threads=2", ceiling).gpus] == [5711 * MiB, 4096 * MiB]


def test_without_a_driver_the_plan_says_why_and_keeps_the_threads(scenario):
    scenario("no_driver")
    plan = plan_for("fraction=0.5 threads=1")
    assert plan.gpus == () and plan.no_gpu == nvml.DRIVER_NOT_LOADED
    assert plan.policy.intra_threads == 1


def test_without_a_driver_no_gpu_is_hidden_or_lost(scenario):
    scenario("no_driver")
    plan = plan_for("fraction=0.5")
    assert (plan.hidden, plan.lost) == ((), ())


# ---------------------------------------------------------------------- machines made up for the case

A10 = 23028 * MiB


def a10(index, **changes):
    return Device(index, f"GPU-e5e5e5e5-0000-4000-8000-00000000000{index}", "NVIDIA A10", total_bytes=A10, **changes)


def plan_on(line, *devices, ceiling=None):
    snapshot = Snapshot(taken_at=0.0, own_pid=1, devices=devices)
    return make_plan(parse(line.split()), snapshot, lambda device: OVERHEAD, ceiling or Ceiling())


def test_two_chosen_gpus_are_made_visible_by_uuid_in_pci_order(scenario):
    scenario("s1_two_gpus")
    plan = plan_for("gpus=1,0")
    assert [g.index for g in plan.gpus] == [0, 1]
    assert plan.cuda_visible_devices == f"{GPU_A},{GPU_B}"


def test_frameworks_sharing_a_budget_each_get_an_equal_whole_share_of_the_limit(scenario):
    scenario("s1_two_gpus")
    plan = plan_for("fraction=0.5 gpus=1")
    limit = plan.gpus[0].allocator_limit_bytes  # 4096 - 450 MiB
    assert plan.shared(1) == plan
    assert plan.shared(2).gpus[0].allocator_limit_bytes == limit // 2
    third = plan.shared(3).gpus[0].allocator_limit_bytes
    assert third == limit // 3 and isinstance(third, int)
    assert plan.shared(3).gpus[0].budget_bytes == 4096 * MiB  # the budget itself is not split


@pytest.mark.parametrize(
    ("scenario_name", "line", "sentence"),
    [
        (
            "s1_two_gpus",
            "gpus=0,3",
            "gpus=0,3: there is no GPU 3 here (GPUs on this machine: 0, 1; see %gpumem status).",
        ),
        ("gpu_lost", "gpus=0,1", "gpus=0,1: GPU 1 is lost (fell off the bus); pick another."),
    ],
)
def test_a_refused_gpu_list_is_echoed_as_typed(scenario, scenario_name, line, sentence):
    scenario(scenario_name)
    with pytest.raises(PolicyError) as refused:
        plan_for(line)
    assert str(refused.value) == sentence


def test_on_a_machine_with_no_gpu_a_budget_has_nowhere_to_go():
    with pytest.raises(PolicyError) as refused:
        plan_on("gpus=0")
    assert "there is no GPU 0 here (GPUs on this machine: none; see %gpumem status)." in str(refused.value)
    plan = plan_on("fraction=0.5")
    assert plan.gpus == () and plan.no_gpu == "The NVIDIA driver reports no GPUs."
    assert plan_on("fraction=0.5", a10(0)).no_gpu is None


def test_a_limit_of_the_whole_gpu_is_accepted(scenario):
    scenario("s1_two_gpus")
    (gpu,) = plan_for("limit=8192MiB gpus=1").gpus
    assert gpu.budget_bytes == 8192 * MiB


def test_a_lost_gpu_gets_no_budget_and_the_gpus_after_it_still_do():
    plan = plan_on("fraction=0.5", a10(0, lost=True), a10(1))
    assert [g.index for g in plan.gpus] == [1]
    assert [d.index for d in plan.lost] == [0]


@pytest.mark.parametrize(
    ("device", "missing"),
    [
        (Device(0, None, "NVIDIA A10", total_bytes=A10), "UUID"),
        (Device(0, "GPU-e5e5e5e5-0000-4000-8000-000000000000", "NVIDIA A10"), "memory"),
    ],
)
def test_a_gpu_that_does_not_report_its_uuid_or_memory_is_refused_with_the_way_out(device, missing):
    with pytest.raises(PolicyError) as refused:
        plan_on("fraction=0.5", device)
    assert str(refused.value) == (
        f"GPU 0 does not report its {missing}, so no budget can be planned for it; leave it out with gpus=."
    )


def test_at_least_64_mib_must_be_left_for_tensors_after_the_overhead():
    (gpu,) = plan_on("limit=514MiB", a10(0)).gpus  # 450 MiB set aside
    assert gpu.allocator_limit_bytes == 64 * MiB
    with pytest.raises(PolicyError, match="leaves nothing for tensors after about 450 MiB"):
        plan_on("limit=513MiB", a10(0))


def test_strict_off_under_a_ceiling_lowers_the_pool_only_where_it_would_go_over():
    ceiling = Ceiling(max_limit_bytes=2048 * MiB)
    (fits,) = plan_on("limit=1598MiB strict=off", a10(0), ceiling=ceiling).gpus  # 1598 + 450 = 2048 MiB
    assert (fits.allocator_limit_bytes, fits.ceiling_bytes) == (1598 * MiB, None)
    (lowered,) = plan_on("limit=1599MiB strict=off", a10(0), ceiling=ceiling).gpus
    assert (lowered.allocator_limit_bytes, lowered.ceiling_bytes) == (1598 * MiB, 2048 * MiB)


def test_strict_off_under_a_ceiling_still_leaves_at_least_64_mib_for_tensors():
    (gpu,) = plan_on("limit=500MiB strict=off", a10(0), ceiling=Ceiling(max_limit_bytes=514 * MiB)).gpus
    assert gpu.allocator_limit_bytes == 64 * MiB
    with pytest.raises(PolicyError, match="leaves nothing for tensors after about 450 MiB"):
        plan_on("limit=500MiB strict=off", a10(0), ceiling=Ceiling(max_limit_bytes=513 * MiB))


def test_a_ceiling_of_unknown_origin_is_said_to_be_the_administrators():
    with pytest.raises(PolicyError) as refused:
        plan_on("fraction=0.8", a10(0), ceiling=Ceiling(max_fraction=0.5))
    assert str(refused.value).endswith("(11514 MiB on GPU 0), set by the administrator; ask for less.")


def test_a_gpu_without_a_name_is_planned_as_an_unknown_gpu():
    (gpu,) = plan_on("fraction=0.5", Device(0, "GPU-e5e5e5e5-0000-4000-8000-000000000000", None, total_bytes=A10)).gpus
    assert gpu.name == "unknown GPU"
