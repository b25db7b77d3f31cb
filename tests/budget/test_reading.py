"""The split every surface shows (status, explain, the warnings, the sidebar): this kernel's memory on each
GPU against its budget, and when it is over, why — read against the State, never decided again."""

from __future__ import annotations

from jupyter_gpumem.budget.attribution import Match
from jupyter_gpumem.budget.framework_interface import Allocator
from jupyter_gpumem.budget.overhead import Overhead
from jupyter_gpumem.budget.plan import make_plan
from jupyter_gpumem.budget.policy import parse
from jupyter_gpumem.budget.privacy import Others, Rule
from jupyter_gpumem.budget.reading import Breakdown, breakdown, reading
from jupyter_gpumem.budget.state import State
from jupyter_gpumem.gpu.model import Device, GpuProcess, Snapshot
from jupyter_gpumem.units import MiB

GPU_0 = "GPU-0a0a0a0a-0000-4000-8000-000000000000"
GPU_1 = "GPU-0a0a0a0a-0000-4000-8000-000000000001"
ASIDE = Overhead(400 * MiB, "estimated", "a test figure")


def t4(index, uuid, own_mib=None):
    """A 15360 MiB T4 on which this kernel holds ``own_mib`` (None: holds nothing)."""
    held = () if own_mib is None else (GpuProcess(1, uuid or "", own_mib * MiB, "compute", "python", None, None, True),)
    return Device(index, uuid, "NVIDIA T4", total_bytes=15360 * MiB, processes=held)


def state_for(line, *devices, applied=True, framework="TensorFlow", no_gpu=None):
    snapshot = Snapshot(taken_at=0.0, own_pid=1, devices=devices)
    plan = make_plan(parse(line.split()), snapshot, lambda device: ASIDE)
    return State(plan.policy, plan, (), True, framework, applied_at=1.0 if applied else None, no_gpu=no_gpu)


def read(state, *devices, started=True, pools=None, measured=None, **options):
    """``measured``: GPU uuid -> this kernel's overhead measured there."""
    snapshot = Snapshot(taken_at=0.0, own_pid=1, devices=devices, host_pid_namespace=options.pop("host", None))
    allocators = {uuid: Allocator(0, 0, pool) for uuid, pool in (pools or {}).items()}
    known = measured or {}
    return reading(snapshot, state, started=started, allocators=allocators, measured=known.get, **options)


def in_a_container(index, uuid, *pids, compute=(7, 5)):
    """A T4 as NVML reports it to a kernel in a container whose PIDs the driver does not translate: each
    process listed under a host PID of another namespace, 3000 MiB."""
    listed = tuple(GpuProcess(pid, uuid, 3000 * MiB, "compute", "python", "bob", None, False, False) for pid in pids)
    return Device(index, uuid, "NVIDIA T4", 15360 * MiB, compute_capability=compute, processes=listed)


def split(own_mib, *, pool_mib=None, hidden=False, in_force=True):
    """Over a 2048 MiB budget (limit 1648 MiB + 400 MiB set aside) on one GPU."""
    device = t4(0, GPU_0, own_mib)
    (gpu,) = state_for("limit=2048MiB", device).plan.gpus
    return breakdown(
        device,
        gpu,
        framework="TensorFlow",
        strict=True,
        in_force=in_force,
        why_not="TensorFlow started before it",
        hidden=hidden,
        pool=None if pool_mib is None else pool_mib * MiB,
        measured=None,
    )


def test_nothing_is_over_when_the_memory_or_the_budget_is_not_known():
    assert Breakdown(None, False, 5000 * MiB, None, False, None, None).over_bytes == 0
    assert Breakdown(2048 * MiB, True, None, None, False, None, None).over_bytes == 0
    assert Breakdown(2048 * MiB, True, 2100 * MiB, None, False, None, None).over_bytes == 52 * MiB


def test_exactly_at_the_budget_is_not_over_it():
    at = split(2048)
    assert (at.over_bytes, at.reason) == (0, None)
    assert split(2049).reason is not None


def test_memory_on_a_gpu_the_policy_hides_is_explained_by_cuda_starting_there_first():
    assert split(3000, hidden=True).reason == "on a GPU its policy hides: CUDA started here before the policy"


def test_a_pool_over_its_limit_is_the_reason_when_the_overhead_stays_within_what_was_set_aside():
    # The framework reserved 1700 MiB (its limit is 1648): 2100 MiB held, 400 of them outside the pool.
    within = split(2100, pool_mib=1700)
    assert within.reason == "CUDA context + cuDNN/cuBLAS: 400 MiB outside TensorFlow's limit"
    beyond = split(2100, pool_mib=1699)
    assert beyond.reason == (
        "CUDA context + cuDNN/cuBLAS: 401 MiB outside TensorFlow's limit, 1 MiB more than the 400 MiB set aside"
    )


def test_why_a_budget_is_not_in_force_follows_the_state():
    device = t4(0, GPU_0, 3000)

    def reason(**state):
        started = state.pop("started", True)
        return read(state_for("limit=2048MiB", device, **state), device, started=started).breakdowns[GPU_0].reason

    assert reason(applied=False, started=False) == "the policy is not in force: it applies when TensorFlow is imported"
    assert reason(applied=False) == "the policy is not in force: TensorFlow started before it"
    assert (
        reason(no_gpu="its build has no CUDA")
        == "the policy is not in force: TensorFlow uses no GPU (see %gpumem status)"
    )
    assert reason(applied=False, started=False, framework=None) == (
        "the policy is not in force: it applies when the framework is imported"
    )


def test_a_gpu_outside_the_plan_is_not_in_force_there():
    plan_gpu, other = t4(0, GPU_0), t4(1, GPU_1, 3000)
    state = state_for("limit=2048MiB gpus=0", plan_gpu)  # planned on a machine that had GPU 0 only
    split_there = read(state, plan_gpu, other).breakdowns[GPU_1]
    assert split_there.budget_bytes is None and split_there.reason is None


def test_without_a_named_framework_the_reason_says_the_framework():
    device = t4(0, GPU_0, 3000)
    state = state_for("limit=2048MiB", device, framework=None)
    assert read(state, device, pools={GPU_0: 1648 * MiB}).breakdowns[GPU_0].reason == (
        "CUDA context + cuDNN/cuBLAS: 1352 MiB outside the framework's limit, 952 MiB more than the 400 MiB set aside"
    )


def test_a_gpu_that_does_not_report_its_uuid_gets_no_split_and_the_others_still_do():
    nameless, known = t4(0, None), t4(1, GPU_1, 1000)
    state = state_for("limit=2048MiB gpus=1", t4(0, GPU_0), known)
    assert list(read(state, nameless, known).breakdowns) == [GPU_1]


def test_in_a_container_this_kernels_memory_is_its_pool_plus_what_the_plan_set_aside():
    device = in_a_container(0, GPU_0, 777)
    own = read(state_for("limit=4GiB", device), device, pools={GPU_0: 1000 * MiB}, host=False).owns[GPU_0]
    assert (own.source, own.bytes) == ("estimated", 1400 * MiB)
    assert "TensorFlow's pool 1000 MiB + 400 MiB outside it" in own.reason


def test_in_a_container_an_overhead_measured_here_beats_what_the_plan_set_aside():
    device = in_a_container(0, GPU_0, 777)
    state = state_for("limit=4GiB", device)
    measured = {GPU_0: Overhead(250 * MiB, "measured", "measured in this kernel")}
    reading_ = read(state, device, pools={GPU_0: 1000 * MiB}, measured=measured, host=False)
    assert reading_.owns[GPU_0].bytes == 1250 * MiB
    assert reading_.breakdowns[GPU_0].overhead == measured[GPU_0]  # the split shows the figure the estimate used


def test_in_a_container_a_gpu_outside_the_plan_is_estimated_from_its_generation():
    planned, other = in_a_container(0, GPU_0, 777), in_a_container(1, GPU_1, 778)
    state = state_for("limit=4GiB gpus=0", planned, other)
    own = read(state, planned, other, pools={GPU_1: 1000 * MiB}, host=False).owns[GPU_1]
    assert own.bytes == 1300 * MiB  # a Turing's CUDA context, 300 MiB; no libraries counted
    assert "(estimated: TensorFlow on Volta/Turing (compute 7.5))" in own.reason
    unnamed = state_for("limit=4GiB gpus=0", planned, other, framework=None)
    assert (
        "the framework on Volta/Turing"
        in read(unnamed, planned, other, pools={GPU_1: 1 * MiB}, host=False).own(other).reason
    )


def test_a_gpu_that_does_not_report_its_uuid_is_still_explained_in_a_container():
    nameless, known = in_a_container(0, None, 777), in_a_container(1, GPU_1, 778)
    state = state_for("limit=4GiB gpus=1", t4(0, GPU_0), known)
    own = read(state, nameless, known, host=False).own(nameless)
    assert (own.bytes, own.source) == (None, "unknown")  # never 0
    assert own.reason.endswith("and TensorFlow tells nothing about this GPU")
    assert (
        read(state, nameless, known, started=False, host=False)
        .own(nameless)
        .reason.endswith("and TensorFlow has not started, so there is nothing to estimate")
    )


def test_with_privacy_the_process_matched_as_this_kernels_stays_listed_and_the_others_are_summed():
    device = in_a_container(0, GPU_0, 777, 778)
    state = state_for("limit=8GiB", device)
    matched = read(state, device, host=False, matches={GPU_0: Match(777, 1)}, privacy=Rule("users"))
    listed, others = matched.shown(device)
    assert [p.pid for p in listed] == [777]
    assert others == Others(1, 3000 * MiB, None)
    unmatched = read(state, device, host=False, privacy=Rule("users"))
    assert unmatched.shown(device) == ((), Others(2, 6000 * MiB, None))
