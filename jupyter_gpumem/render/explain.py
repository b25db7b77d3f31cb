"""`%gpumem explain`: why this kernel's GPU memory differs from its budget right now, in its own
numbers (story S1), and what to change."""

from __future__ import annotations

from jupyter_gpumem.budget.attribution import UNLISTED, UNTRANSLATED
from jupyter_gpumem.budget.plan import GpuPlan, Plan
from jupyter_gpumem.budget.reading import Reading
from jupyter_gpumem.budget.state import State
from jupyter_gpumem.gpu.model import Device
from jupyter_gpumem.gpu.reader import stalled
from jupyter_gpumem.i18n import gettext as _
from jupyter_gpumem.render import framework_names, words
from jupyter_gpumem.units import format_mib, format_percent
from jupyter_gpumem.words import catalogue


def explain(reading: Reading) -> list[str]:
    """Lines for the user, from one Reading: its State says what the policy is for and where it holds."""
    silent = stalled(reading.snapshot)
    return [silent.words(), *_explain(reading)] if silent else _explain(reading)


def _explain(reading: Reading) -> list[str]:
    snapshot, state = reading.snapshot, reading.state
    plan, framework = state.plan, framework_names(state.adapters, state.together)
    if snapshot.problem:
        return [words(snapshot.problem)]
    if plan is None or (plan.policy.is_empty and not any(g.budget_bytes for g in plan.gpus)):
        return [
            _(
                "No budget is set, so {framework_takes}. To share the GPU: restart the kernel, then run for example "
                "%gpumem fraction=0.4 (or growth=on) before any {framework} code."
            ).format(framework_takes=state.takes.words(), framework=framework),
            *_per_gpu_usage(reading),
        ]
    budgets = {g.uuid: g for g in plan.gpus}
    hidden = {d.uuid for d in plan.hidden}
    lines = [_("Policy {policy}: {state}").format(policy=plan.policy.describe(), state=_state(state, reading.started))]
    owns = {d.index: reading.own(d) for d in snapshot.devices}
    own_gpus = [d for d in snapshot.devices if owns[d.index].holds or owns[d.index].pid is not None]
    unknown = [d for d in snapshot.devices if d not in own_gpus and owns[d.index].bytes is None and not d.lost]
    if reading.stance in ("untranslated", "unlisted"):
        where = UNTRANSLATED if reading.stance == "untranslated" else UNLISTED
        lines.append(
            _(
                "{where}, so this kernel's own memory is matched where one listed process follows its framework's "
                "pool, estimated from the pool where the framework tells it, and unknown otherwise, never 0 "
                "(docs/containers.md)."
            ).format(where=_capital(where.words()))
        )
    elif not own_gpus:
        if snapshot.devices and all(d.processes_known for d in snapshot.devices):
            lines.append(_("This kernel holds no GPU memory that the driver reports yet."))
        else:
            lines.append(
                _(
                    "This kernel holds no GPU memory that the driver reports (or the driver does not list processes "
                    "here)."
                )
            )
    for device in unknown:
        if budgets.get(device.uuid or "") is not None:
            lines.append(
                f"GPU {device.index} {device.name or ''}: "
                + _(
                    "this kernel's memory is unknown, not 0 ({why}), so whether it keeps to its budget there cannot "
                    "be told."
                ).format(why=owns[device.index].because)
            )
    for device in own_gpus:
        gpu = budgets.get(device.uuid or "")
        lines.extend(_explain_gpu(device, gpu, device.uuid in hidden, plan, framework, reading))
    using = [d for d in own_gpus if d.uuid not in hidden]
    if plan.policy.gpus is None and len(using) > 1:
        placing = catalogue()["join_or"].join(a.placing for a in state.adapters)
        lines.append(
            _(
                "The budget applies to every GPU this kernel can see, and {framework} takes memory on each of them: "
                "{placing} places operations but does not stop memory being taken on the other GPUs. To use one GPU "
                "only: restart the kernel, then %gpumem {policy} gpus=<index> first."
            ).format(framework=framework, placing=placing, policy=plan.policy.describe())
        )
    return lines


def _state(state: State, started: bool) -> str:
    frameworks = framework_names(state.adapters, state.together)
    if state.applied and state.no_gpu:
        return _("applied to {frameworks}, but NOT in force on any GPU: {why}").format(
            frameworks=frameworks, why=words(state.no_gpu)
        )
    if state.applied:
        return _("in force in {frameworks}.").format(frameworks=frameworks)
    if started:
        return _(
            "NOT in force: {frameworks} started before it could be applied. Restart the kernel and run %gpumem first."
        ).format(frameworks=frameworks)
    return _("recorded; it applies when {frameworks} is imported.").format(frameworks=frameworks)


def _explain_gpu(
    device: Device, gpu: GpuPlan | None, hidden: bool, plan: Plan, framework: str, reading: Reading
) -> list[str]:
    lines = _explain_figures(device, gpu, hidden, plan, framework, reading)
    own = reading.own(device)
    if own.source in ("matched", "estimated"):
        lines.insert(1, "  " + _("This kernel's figure is {source}.").format(source=own.describe()))
    return lines


def _explain_figures(
    device: Device, gpu: GpuPlan | None, hidden: bool, plan: Plan, framework: str, reading: Reading
) -> list[str]:
    own = reading.own(device)
    used = own.bytes
    head = f"GPU {device.index} {device.name or ''}:"
    if used is None:
        return [
            f"{head} "
            + _(
                "this kernel's memory is N/A: the driver cannot tell per-process memory on this GPU (Windows WDDM, "
                "some MIG setups); it is unknown, not zero. The device as a whole shows {used} used of {total}."
            ).format(used=format_mib(device.used_bytes), total=format_mib(device.total_bytes))
        ]
    if hidden:
        return [
            f"{head} "
            + _(
                "this kernel holds {used} on a GPU its policy hides: CUDA had already started here before the "
                "policy, and CUDA_VISIBLE_DEVICES is read only when CUDA starts. Restart the kernel and run %gpumem "
                "first."
            ).format(used=format_mib(used))
        ]
    if gpu is None or gpu.budget_bytes is None:
        return [f"{head} " + _("this kernel uses {used}; no budget on this GPU.").format(used=format_mib(used))]
    split = reading.breakdowns.get(device.uuid or "")
    if reading.state.applied and split is not None and not split.in_force:
        return [
            f"{head} "
            + _(
                "this kernel uses {used}; the {budget} budget is not in force on this GPU, so nothing holds it there."
            ).format(used=format_mib(used), budget=format_mib(gpu.budget_bytes))
        ]
    budget, limit = gpu.budget_bytes, gpu.allocator_limit_bytes or gpu.budget_bytes
    share = format_percent(budget, gpu.total_bytes)
    if used <= budget:
        return [
            f"{head} "
            + _("this kernel uses {used} of its {budget} budget ({percent}); {share} of {total} holds.").format(
                used=format_mib(used),
                budget=format_mib(budget),
                percent=format_percent(used, budget),
                share=share,
                total=format_mib(gpu.total_bytes),
            )
        ]
    over = used - budget
    lines = [
        f"{head} "
        + _("this kernel uses {used}; its budget is {budget} ({share} of {total}): {over} over.").format(
            used=format_mib(used),
            budget=format_mib(budget),
            share=share,
            total=format_mib(gpu.total_bytes),
            over=format_mib(over),
        )
    ]
    pool = split.pool_bytes if split and split.pool_bytes is not None else limit
    outside = used - pool
    measured = split.overhead if split and split.overhead and split.overhead.source == "measured" else None
    if own.source == "estimated":
        measured = None  # the figure is the pool plus that overhead: nothing was measured against it now
    if measured:
        lines.append(
            "  "
            + _("Measured: {framework}'s pool holds {pool}; NVML counts {outside} more for this process.").format(
                framework=framework, pool=format_mib(pool), outside=format_mib(outside)
            )
        )
    aside = gpu.overhead
    if not plan.policy.strict:
        lines.append(
            "  "
            + _(
                "strict=off caps only {framework}'s allocator pool at {limit}. The CUDA context, the loaded modules "
                "and the cuDNN/cuBLAS handles and workspaces ({outside} here) live outside that limit, so nvidia-smi "
                "shows more. Without strict=off, %gpumem gives the allocator the budget minus about {aside} for them "
                "({basis})."
            ).format(
                framework=framework,
                limit=format_mib(limit),
                outside=format_mib(outside),
                aside=format_mib(aside.bytes),
                basis=aside.describe().words(),
            )
        )
    else:
        lines.append(
            "  "
            + _(
                "{framework}'s allocator is capped at {limit}; the other {outside} are the CUDA context, loaded "
                "modules and cuDNN/cuBLAS handles, outside its limit. That is {more} more than the {aside} set aside "
                "for them ({basis}). Ask for a little less, or restart with CUDA_MODULE_LOADING=LAZY (set by "
                "%gpumem) if something set it to EAGER."
            ).format(
                framework=framework,
                limit=format_mib(limit),
                outside=format_mib(outside),
                more=format_mib(outside - aside.bytes),
                aside=format_mib(aside.bytes),
                basis=aside.describe().words(),
            )
        )
    if measured:
        lines.append(
            "  "
            + _(
                "The next kernel with {framework} on this GPU model and driver sets aside the measured {measured} by "
                "itself (remembered in the overhead cache)."
            ).format(framework=framework, measured=format_mib(measured.bytes))
        )
    return lines


def _per_gpu_usage(reading: Reading) -> list[str]:
    lines = []
    for device in reading.snapshot.devices:
        own = reading.own(device)
        head = f"  GPU {device.index} {device.name or ''}: "
        if own.holds and own.source == "exact":
            lines.append(
                head
                + _("this kernel uses {used} of {total}.").format(
                    used=format_mib(own.bytes), total=format_mib(device.total_bytes)
                )
            )
        elif own.holds:
            lines.append(
                head
                + _("this kernel uses {used} of {total} ({source}).").format(
                    used=format_mib(own.bytes), total=format_mib(device.total_bytes), source=own.describe()
                )
            )
        elif own.bytes is None and own.pid is None and not device.lost:
            lines.append(
                head + _("this kernel's memory is unknown, not 0: {reason}.").format(reason=own.reason.words())
            )
    return lines


def _capital(phrase: str) -> str:
    return phrase[:1].upper() + phrase[1:]
