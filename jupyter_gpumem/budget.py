"""This kernel's memory on one GPU against its budget, split the way the user needs to see it: the
framework's allocator pool, the overhead outside it (CUDA context, modules, cuDNN/cuBLAS), the total
as nvidia-smi counts it, and when the total is over the budget, why. The status table, `%gpumem
explain` and the sidebar all show this one split."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .frameworks.base import Allocator
from .model import Device, Snapshot
from .overhead import Overhead
from .plan import GpuPlan, Plan
from .units import format_bytes


@dataclass(frozen=True)
class Breakdown:
    budget_bytes: int | None
    own_bytes: int | None  # as nvidia-smi counts it; None: N/A
    pool_bytes: int | None  # the allocator's pool: what it reserved if known, else its planned limit
    pool_known: bool  # the framework reported the pool (else it is the plan's limit)
    overhead: Overhead | None  # measured now if possible, else what the plan set aside
    reason: str | None  # a phrase, when own_bytes is over budget_bytes

    @property
    def over_bytes(self) -> int:
        if self.own_bytes is None or self.budget_bytes is None:
            return 0
        return max(0, self.own_bytes - self.budget_bytes)


@dataclass(frozen=True)
class Reading:
    """One look at this kernel's GPU memory: NVML's snapshot, the plan (in force, or the one the
    recorded policy would make), the framework's state and the split per GPU."""

    snapshot: Snapshot
    plan: Plan | None
    framework: str | None  # None: no framework imported and no policy to apply to one
    started: bool  # the framework's runtime has started (its settings are fixed)
    in_force: bool  # the plan is applied to the framework
    allocators: dict[str, Allocator]  # GPU uuid -> the framework's allocator there
    breakdowns: dict[str, Breakdown]  # GPU uuid -> the split, for every GPU when there is a plan


def breakdown(
    device: Device,
    gpu: GpuPlan | None,
    *,
    framework: str,
    strict: bool,
    in_force: bool,
    started: bool,
    hidden: bool,
    pool: int | None,
    measured: Overhead | None,
) -> Breakdown:
    """``in_force``: the plan is applied to ``framework``; ``started``: its runtime has started;
    ``pool``: bytes its allocator reported reserving here; ``measured``: this kernel's overhead here."""
    own = device.own_bytes
    budget = gpu.budget_bytes if gpu else None
    pool_bytes = pool if pool is not None else gpu.allocator_limit_bytes if gpu else None
    overhead = measured or (gpu.overhead if gpu else None)
    over = own is not None and budget is not None and own > budget
    reason = _reason(own, pool_bytes, gpu, framework, strict, in_force, started, hidden) if over else None
    return Breakdown(budget, own, pool_bytes, pool is not None, overhead, reason)


def _reason(
    own: int | None,
    pool: int | None,
    gpu: GpuPlan | None,
    framework: str,
    strict: bool,
    in_force: bool,
    started: bool,
    hidden: bool,
) -> str:
    """Why ``own`` is over the budget, as a phrase."""
    if hidden:
        return "on a GPU its policy hides: CUDA started here before the policy"
    if started and not in_force:
        return f"the policy is not in force: {framework} started before it"
    if pool is None or own is None:
        return f"{framework} has no limit on this GPU"
    outside = own - pool
    reason = f"CUDA context + cuDNN/cuBLAS: {format_bytes(outside)} outside {framework}'s limit"
    if not strict:
        return reason + " (strict=off sets nothing aside for them)"
    if gpu is not None and outside > gpu.overhead_bytes:
        aside = gpu.overhead_bytes
        reason += f", {format_bytes(outside - aside)} more than the {format_bytes(aside)} set aside"
    return reason


def reading(
    snapshot: Snapshot,
    plan: Plan | None,
    framework: str | None,
    *,
    started: bool,
    in_force: bool,
    allocators: dict[str, Allocator],
    measured: Callable[[str | None], Overhead | None],
) -> Reading:
    """The Reading, with a Breakdown for every GPU when there is a plan. ``measured``: this kernel's
    overhead measurement on a GPU (by uuid), if any."""
    breakdowns = {}
    if plan is not None:
        planned = {g.uuid: g for g in plan.gpus}
        hidden = {d.uuid for d in plan.hidden}
        for device in snapshot.devices:
            if device.uuid is None:
                continue
            allocator = allocators.get(device.uuid)
            breakdowns[device.uuid] = breakdown(
                device,
                planned.get(device.uuid),
                framework=framework or "the framework",
                strict=plan.policy.strict,
                in_force=in_force,
                started=started,
                hidden=device.uuid in hidden,
                pool=allocator.pool if allocator else None,
                measured=measured(device.uuid),
            )
    return Reading(snapshot, plan, framework, started, in_force, allocators, breakdowns)
