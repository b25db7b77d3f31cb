"""Policies made concrete on the stand-in's GPUs (S1: 11422 MiB GPU-A, 8192 MiB GPU-B)."""

from __future__ import annotations

import os

import pytest

from jupyter_gpumem import nvml
from jupyter_gpumem.host import HostProcesses
from jupyter_gpumem.overhead import Overhead
from jupyter_gpumem.plan import Ceiling, make_plan
from jupyter_gpumem.policy import PolicyError, parse
from jupyter_gpumem.units import MiB

OVERHEAD = Overhead(450 * MiB, "estimated", "a test figure")
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
