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
from .state import State
from .units import format_bytes


@dataclass(frozen=True)
class Breakdown:
    budget_bytes: int | None
    in_force: bool  # the budget is in force in the framework on this GPU
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
    """One look at this kernel's GPU memory: NVML's snapshot, the State it is read against (policy,
    plan, frameworks, where it is in force), whether the framework has started, and the split per GPU."""

    snapshot: Snapshot
    state: State
    started: bool  # the framework's runtime has started (its settings are fixed)
    allocators: dict[str, Allocator]  # GPU uuid -> the framework's allocator there
    breakdowns: dict[str, Breakdown]  # GPU uuid -> the split, for every GPU when there is a plan

    @property
    def plan(self) -> Plan | None:
        return self.state.plan

    @property
    def framework(self) -> str | None:
        return self.state.framework


def breakdown(
    device: Device,
    gpu: GpuPlan | None,
    *,
    framework: str,
    strict: bool,
    in_force: bool,
    why_not: str | None,
    hidden: bool,
    pool: int | None,
    measured: Overhead | None,
) -> Breakdown:
    """``in_force``: the budget is in force on this GPU in ``framework``, else ``why_not`` (a phrase);
    ``pool``: bytes its allocator reported reserving here; ``measured``: this kernel's overhead here."""
    own = device.own_bytes
    budget = gpu.budget_bytes if gpu else None
    pool_bytes = pool if pool is not None else gpu.allocator_limit_bytes if gpu else None
    overhead = measured or (gpu.overhead if gpu else None)
    over = own is not None and budget is not None and own > budget
    reason = None
    if over and hidden:
        reason = "on a GPU its policy hides: CUDA started here before the policy"
    elif over and not in_force:
        reason = f"the policy is not in force: {why_not}"
    elif over:
        reason = _outside(own, pool_bytes, gpu, framework, strict)
    return Breakdown(budget, in_force and budget is not None, own, pool_bytes, pool is not None, overhead, reason)


def _outside(own: int | None, pool: int | None, gpu: GpuPlan | None, framework: str, strict: bool) -> str:
    """Why ``own``, with the budget in force, is over it, as a phrase: what lies outside the limit."""
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


def _why_not(state: State, started: bool) -> str:
    """Why a budget is not in force, as a phrase after "the policy is not in force: "."""
    framework = state.framework or "the framework"
    if state.no_gpu:
        return f"{framework} uses no GPU (see %gpumem status)"
    if started and not state.applied:
        return f"{framework} started before it"
    if not state.applied:
        return f"it applies when {framework} is imported"
    return f"{framework} has no limit on this GPU"


def reading(
    snapshot: Snapshot,
    state: State,
    *,
    started: bool,
    allocators: dict[str, Allocator],
    measured: Callable[[str | None], Overhead | None],
) -> Reading:
    """The Reading, with a Breakdown for every GPU when there is a plan. ``measured``: this kernel's
    overhead measurement on a GPU (by uuid), if any."""
    breakdowns = {}
    plan = state.plan
    if plan is not None:
        planned = {g.uuid: g for g in plan.gpus}
        hidden = {d.uuid for d in plan.hidden}
        in_force = state.in_force
        why_not = _why_not(state, started)
        for device in snapshot.devices:
            if device.uuid is None:
                continue
            allocator = allocators.get(device.uuid)
            breakdowns[device.uuid] = breakdown(
                device,
                planned.get(device.uuid),
                framework=state.framework or "the framework",
                strict=plan.policy.strict,
                in_force=device.uuid in in_force and not device.lost,
                why_not=why_not,
                hidden=device.uuid in hidden,
                pool=allocator.pool if allocator else None,
                measured=measured(device.uuid),
            )
    return Reading(snapshot, state, started, allocators, breakdowns)
