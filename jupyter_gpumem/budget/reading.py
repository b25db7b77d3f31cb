"""This kernel's memory on one GPU against its budget, split the way the user needs to see it: the
framework's allocator pool, the overhead outside it (CUDA context, modules, cuDNN/cuBLAS), the total
as nvidia-smi counts it, and when the total is over the budget, why. The status table, `%gpumem
explain` and the sidebar all show this one split."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from jupyter_gpumem.budget.attribution import Match, Own, PidStance, attribute, pid_stance
from jupyter_gpumem.budget.framework_interface import Allocator
from jupyter_gpumem.budget.limits import Limits
from jupyter_gpumem.budget.limits import read as read_limits
from jupyter_gpumem.budget.overhead import Overhead, estimate
from jupyter_gpumem.budget.plan import GpuPlan, Plan
from jupyter_gpumem.budget.privacy import Others, Rule
from jupyter_gpumem.budget.state import State
from jupyter_gpumem.gpu.model import Device, GpuProcess, Snapshot
from jupyter_gpumem.words import Said


@dataclass(frozen=True)
class Breakdown:
    budget_bytes: int | None
    in_force: bool  # the budget is in force in the framework on this GPU
    own_bytes: int | None  # as nvidia-smi counts it, or as attributed (Reading.own says how); None: unknown, never 0
    pool_bytes: int | None  # the allocator's pool: what it reserved if known, else its planned limit
    pool_known: bool  # the framework reported the pool (else it is the plan's limit)
    overhead: Overhead | None  # measured now if possible, else what the plan set aside
    reason: Said | None  # a phrase, when own_bytes is over budget_bytes

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
    owns: dict[str, Own] = field(default_factory=dict)  # GPU uuid -> this kernel's memory there, attributed
    limits: Limits = field(default_factory=Limits)  # which limit holds on each GPU, hard or cooperative
    privacy: Rule = field(default_factory=Rule)  # what is shown of other users' processes

    @property
    def plan(self) -> Plan | None:
        return self.state.plan

    @cached_property
    def stance(self) -> PidStance | None:
        """Where this kernel stands towards NVML's PIDs (attribution.pid_stance)."""
        return pid_stance(self.snapshot)

    def own(self, device: Device) -> Own:
        """This kernel's memory on ``device``, as every surface shows it."""
        known = self.owns.get(device.uuid or "")
        if known is not None:
            return known
        return attribute(
            device,
            self.stance,
            None,
            started=self.started,
            allocator=self.allocators.get(device.uuid or ""),
            framework=self.framework,
            overhead=lambda: estimate(device, self.framework or Said("the_framework"), 0),
        )

    @property
    def framework(self) -> str | None:
        return self.state.framework

    def shown(self, device: Device) -> tuple[tuple[GpuProcess, ...], Others | None]:
        """The processes every surface lists on ``device`` (this kernel's always), and other users' aggregate
        where privacy hides them one by one (privacy.py)."""
        own = self.own(device).pid
        return self.privacy.split(device, () if own is None else (own,))


def breakdown(
    device: Device,
    gpu: GpuPlan | None,
    *,
    framework: str,
    strict: bool,
    in_force: bool,
    why_not: Said | None,
    hidden: bool,
    pool: int | None,
    measured: Overhead | None,
    own: Own | None = None,
) -> Breakdown:
    """``in_force``: the budget is in force on this GPU in ``framework``, else ``why_not`` (a phrase);
    ``pool``: bytes its allocator reported reserving here; ``measured``: this kernel's overhead here;
    ``own``: this kernel's memory here as attributed (else what NVML lists under its PID)."""
    own_bytes = own.bytes if own else device.listed_own_bytes
    budget = gpu.budget_bytes if gpu else None
    pool_bytes = pool if pool is not None else gpu.allocator_limit_bytes if gpu else None
    overhead = measured or (gpu.overhead if gpu else None)
    over = own_bytes is not None and budget is not None and own_bytes > budget
    reason = None
    if over and hidden:
        reason = Said("over_hidden_gpu")
    elif over and not in_force:
        reason = Said("over_not_in_force", why=why_not or "")
    elif over:
        reason = _outside(own_bytes, pool_bytes, gpu, framework, strict)
    return Breakdown(budget, in_force and budget is not None, own_bytes, pool_bytes, pool is not None, overhead, reason)


def _outside(own: int | None, pool: int | None, gpu: GpuPlan | None, framework: str, strict: bool) -> Said:
    """Why ``own``, with the budget in force, is over it, as a phrase: what lies outside the limit."""
    if pool is None or own is None:
        return Said("no_limit_here", framework=framework)
    outside = own - pool
    if not strict:
        return Said("over_outside_not_strict", outside_bytes=outside, framework=framework)
    if gpu is not None and outside > gpu.overhead_bytes:
        aside = gpu.overhead_bytes
        return Said(
            "over_outside_beyond_aside",
            outside_bytes=outside,
            framework=framework,
            more_bytes=outside - aside,
            aside_bytes=aside,
        )
    return Said("over_outside", outside_bytes=outside, framework=framework)


def _why_not(state: State, started: bool) -> Said:
    """Why a budget is not in force, as a phrase after "the policy is not in force: "."""
    framework = state.framework or Said("the_framework")
    if state.no_gpu:
        return Said("not_in_force_no_gpu", framework=framework)
    if started and not state.applied:
        return Said("not_in_force_started", framework=framework)
    if not state.applied:
        return Said("not_in_force_yet", framework=framework)
    return Said("no_limit_here", framework=framework)


def reading(
    snapshot: Snapshot,
    state: State,
    *,
    started: bool,
    allocators: dict[str, Allocator],
    measured: Callable[[str | None], Overhead | None],
    matches: dict[str, Match] | None = None,
    overhead: Callable[[Device], Overhead] | None = None,
    limits: Limits | None = None,
    privacy: Rule | None = None,
) -> Reading:
    """The Reading, with this kernel's memory attributed on every GPU and a Breakdown for every GPU when
    there is a plan. ``measured``: this kernel's overhead measurement on a GPU (by uuid), if any;
    ``matches``: what the Matcher found per GPU; ``overhead(device)``: what lies outside the framework's
    pool there, for an estimate (by default: measured, else what the plan set aside, else estimated per
    GPU generation); ``limits``: which limit holds on each GPU (by default MIG and the budgets, without
    looking at MPS); ``privacy``: what is shown of other users' processes (by default every process)."""
    plan = state.plan
    planned = {g.uuid: g for g in plan.gpus} if plan else {}
    framework = state.framework

    def outside(device: Device) -> Overhead:
        if overhead is not None:
            return overhead(device)
        gpu = planned.get(device.uuid or "")
        if gpu is None:
            return measured(device.uuid) or estimate(device, framework or Said("the_framework"), 0)
        return measured(device.uuid) or gpu.overhead

    stance = pid_stance(snapshot)
    owns = {
        device.uuid: attribute(
            device,
            stance,
            (matches or {}).get(device.uuid),
            started=started,
            allocator=allocators.get(device.uuid),
            framework=framework,
            overhead=lambda device=device: outside(device),  # type: ignore[misc]
        )
        for device in snapshot.devices
        if device.uuid is not None
    }
    breakdowns = {}
    if plan is not None:
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
                framework=state.framework or Said("the_framework"),
                strict=plan.policy.strict,
                in_force=device.uuid in in_force and not device.lost,
                why_not=why_not,
                hidden=device.uuid in hidden,
                pool=allocator.pool if allocator else None,
                measured=_outside_measured(owns[device.uuid], measured(device.uuid), outside, device),
                own=owns[device.uuid],
            )
    if limits is None:
        limits = read_limits(snapshot, None, {g.uuid: g.budget_bytes for g in planned.values()})
    return Reading(snapshot, state, started, allocators, breakdowns, owns, limits, privacy or Rule())


def _outside_measured(
    own: Own, measured: Overhead | None, outside: Callable[[Device], Overhead], device: Device
) -> Overhead | None:
    """The overhead the split shows: with an estimated figure, the one the estimate used."""
    return outside(device) if own.source == "estimated" else measured
