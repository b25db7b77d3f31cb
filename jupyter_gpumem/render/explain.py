"""`%gpumem explain`: why this kernel's GPU memory differs from its budget right now, in its own
numbers (story S1), and what to change."""

from __future__ import annotations

from jupyter_gpumem.budget.attribution import UNLISTED, UNTRANSLATED
from jupyter_gpumem.budget.plan import GpuPlan, Plan
from jupyter_gpumem.budget.reading import Reading
from jupyter_gpumem.budget.state import State
from jupyter_gpumem.gpu.model import Device
from jupyter_gpumem.gpu.reader import stalled
from jupyter_gpumem.units import format_mib, format_percent


def explain(reading: Reading) -> list[str]:
    """Lines for the user, from one Reading: its State says what the policy is for and where it holds."""
    silent = stalled(reading.snapshot)
    return [silent, *_explain(reading)] if silent else _explain(reading)


def _explain(reading: Reading) -> list[str]:
    snapshot, state = reading.snapshot, reading.state
    plan, framework = state.plan, state.frameworks
    if snapshot.problem:
        return [snapshot.problem]
    if plan is None or (plan.policy.is_empty and not any(g.budget_bytes for g in plan.gpus)):
        return [
            f"No budget is set, so {state.takes}. To share the GPU: restart the kernel, then run for example "
            f"%gpumem fraction=0.4 (or growth=on) before any {framework} code.",
            *_per_gpu_usage(reading),
        ]
    budgets = {g.uuid: g for g in plan.gpus}
    hidden = {d.uuid for d in plan.hidden}
    lines = [f"Policy {plan.policy.describe()}: {_state(state, reading.started)}"]
    owns = {d.index: reading.own(d) for d in snapshot.devices}
    own_gpus = [d for d in snapshot.devices if owns[d.index].holds or owns[d.index].pid is not None]
    unknown = [d for d in snapshot.devices if d not in own_gpus and owns[d.index].bytes is None and not d.lost]
    if reading.stance in ("untranslated", "unlisted"):
        lines.append(
            f"{_capital(UNTRANSLATED if reading.stance == 'untranslated' else UNLISTED)}, so this kernel's own "
            "memory is matched where one listed process follows its framework's pool, estimated from the pool "
            "where the framework tells it, and unknown otherwise, never 0 (docs/containers.md)."
        )
    elif not own_gpus:
        lines.append(
            "This kernel holds no GPU memory that the driver reports"
            + (
                " yet."
                if snapshot.devices and all(d.processes_known for d in snapshot.devices)
                else " (or the driver does not list processes here)."
            )
        )
    for device in unknown:
        if budgets.get(device.uuid or "") is not None:
            lines.append(
                f"GPU {device.index} {device.name or ''}: this kernel's memory is unknown, not 0 "
                f"({owns[device.index].because}), so whether it keeps to its budget there cannot be told."
            )
    for device in own_gpus:
        gpu = budgets.get(device.uuid or "")
        lines.extend(_explain_gpu(device, gpu, device.uuid in hidden, plan, framework, reading))
    using = [d for d in own_gpus if d.uuid not in hidden]
    if plan.policy.gpus is None and len(using) > 1:
        placing = " or ".join(a.placing for a in state.adapters)
        lines.append(
            f"The budget applies to every GPU this kernel can see, and {framework} takes memory on each of them: "
            f"{placing} places operations but does not stop memory being taken on the other GPUs. "
            f"To use one GPU only: restart the kernel, then %gpumem {plan.policy.describe()} gpus=<index> first."
        )
    return lines


def _state(state: State, started: bool) -> str:
    if state.applied and state.no_gpu:
        return f"applied to {state.frameworks}, but NOT in force on any GPU: {state.no_gpu}"
    if state.applied:
        return f"in force in {state.frameworks}."
    if started:
        return (
            f"NOT in force: {state.frameworks} started before it could be applied. "
            "Restart the kernel and run %gpumem first."
        )
    return f"recorded; it applies when {state.frameworks} is imported."


def _explain_gpu(
    device: Device, gpu: GpuPlan | None, hidden: bool, plan: Plan, framework: str, reading: Reading
) -> list[str]:
    lines = _explain_figures(device, gpu, hidden, plan, framework, reading)
    own = reading.own(device)
    if own.source in ("matched", "estimated"):
        lines.insert(1, f"  This kernel's figure is {own.describe()}.")
    return lines


def _explain_figures(
    device: Device, gpu: GpuPlan | None, hidden: bool, plan: Plan, framework: str, reading: Reading
) -> list[str]:
    own = reading.own(device)
    used = own.bytes
    head = f"GPU {device.index} {device.name or ''}:"
    if used is None:
        return [
            f"{head} this kernel's memory is N/A: the driver cannot tell per-process memory on this GPU "
            "(Windows WDDM, some MIG setups); it is unknown, not zero. The device as a whole shows "
            f"{format_mib(device.used_bytes)} used of {format_mib(device.total_bytes)}."
        ]
    if hidden:
        return [
            f"{head} this kernel holds {format_mib(used)} on a GPU its policy hides: CUDA had already started "
            "here before the policy, and CUDA_VISIBLE_DEVICES is read only when CUDA starts. Restart the kernel "
            "and run %gpumem first."
        ]
    if gpu is None or gpu.budget_bytes is None:
        return [f"{head} this kernel uses {format_mib(used)}; no budget on this GPU."]
    split = reading.breakdowns.get(device.uuid or "")
    if reading.state.applied and split is not None and not split.in_force:
        return [
            f"{head} this kernel uses {format_mib(used)}; the {format_mib(gpu.budget_bytes)} budget is not in "
            f"force on this GPU, so nothing holds it there."
        ]
    budget, limit = gpu.budget_bytes, gpu.allocator_limit_bytes or gpu.budget_bytes
    share = format_percent(budget, gpu.total_bytes)
    if used <= budget:
        return [
            f"{head} this kernel uses {format_mib(used)} of its {format_mib(budget)} budget "
            f"({format_percent(used, budget)}); {share} of {format_mib(gpu.total_bytes)} holds."
        ]
    over = used - budget
    lines = [
        f"{head} this kernel uses {format_mib(used)}; its budget is {format_mib(budget)} ({share} of "
        f"{format_mib(gpu.total_bytes)}): {format_mib(over)} over."
    ]
    pool = split.pool_bytes if split and split.pool_bytes is not None else limit
    outside = used - pool
    measured = split.overhead if split and split.overhead and split.overhead.source == "measured" else None
    if own.source == "estimated":
        measured = None  # the figure is the pool plus that overhead: nothing was measured against it now
    if measured:
        lines.append(
            f"  Measured: {framework}'s pool holds {format_mib(pool)}; NVML counts {format_mib(outside)} more "
            "for this process."
        )
    aside = gpu.overhead
    if not plan.policy.strict:
        lines.append(
            f"  strict=off caps only {framework}'s allocator pool at {format_mib(limit)}. The CUDA context, the "
            f"loaded modules and the cuDNN/cuBLAS handles and workspaces ({format_mib(outside)} here) live outside "
            f"that limit, so nvidia-smi shows more. Without strict=off, %gpumem gives the allocator the budget "
            f"minus about {format_mib(aside.bytes)} for them ({aside.describe()})."
        )
    else:
        lines.append(
            f"  {framework}'s allocator is capped at {format_mib(limit)}; the other {format_mib(outside)} are the "
            f"CUDA context, loaded modules and cuDNN/cuBLAS handles, outside its limit. That is "
            f"{format_mib(outside - aside.bytes)} more than the {format_mib(aside.bytes)} set aside for them "
            f"({aside.describe()}). Ask for a little less, or restart with CUDA_MODULE_LOADING=LAZY (set by "
            "%gpumem) if something set it to EAGER."
        )
    if measured:
        lines.append(
            f"  The next kernel with {framework} on this GPU model and driver sets aside the measured "
            f"{format_mib(measured.bytes)} by itself (remembered in the overhead cache)."
        )
    return lines


def _per_gpu_usage(reading: Reading) -> list[str]:
    lines = []
    for device in reading.snapshot.devices:
        own = reading.own(device)
        if own.holds:
            label = "" if own.source == "exact" else f" ({own.describe()})"
            lines.append(
                f"  GPU {device.index} {device.name or ''}: this kernel uses {format_mib(own.bytes)} of "
                f"{format_mib(device.total_bytes)}{label}."
            )
        elif own.bytes is None and own.pid is None and not device.lost:
            lines.append(
                f"  GPU {device.index} {device.name or ''}: this kernel's memory is unknown, not 0: {own.reason}."
            )
    return lines


def _capital(phrase: str) -> str:
    return phrase[:1].upper() + phrase[1:]
