"""The sentences `%gpumem` prints about the policy: recorded, applied, too late, forgotten, and the
policy part of `%gpumem status`. Each reads a State (and a Reading for figures now); none decides
anything (control.py does)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from jupyter_gpumem.budget.framework_interface import Framework, label
from jupyter_gpumem.budget.limits import PINNED
from jupyter_gpumem.budget.plan import Ceiling, Plan
from jupyter_gpumem.budget.policy import Policy
from jupyter_gpumem.budget.reading import Reading
from jupyter_gpumem.budget.state import State
from jupyter_gpumem.gpu.model import Snapshot
from jupyter_gpumem.gpu.reader import stalled
from jupyter_gpumem.units import format_mib, format_percent
from jupyter_gpumem.words import Said


def plan_lines(plan: Plan) -> list[str]:
    """Per GPU: the budget as nvidia-smi counts it and its split; hidden and lost GPUs; threads."""
    policy = plan.policy
    lines = []
    if plan.no_gpu:
        lines.append(f"  No GPU: {plan.no_gpu} Thread settings still apply.")
    for gpu in plan.gpus:
        head = f"  GPU {gpu.index} {gpu.name}:"
        if gpu.budget_bytes is None:
            grows = "grows on demand" if policy.growth else "no budget set: the framework takes nearly all of it"
            lines.append(f"{head} {grows}")
        elif policy.strict:
            lines.append(
                f"{head} budget {format_mib(gpu.budget_bytes)} ({format_percent(gpu.budget_bytes, gpu.total_bytes)}"
                f" of {format_mib(gpu.total_bytes)}) as nvidia-smi counts it = allocator limit "
                f"{format_mib(gpu.allocator_limit_bytes)} + about {format_mib(gpu.overhead_bytes)} "
                f"CUDA context and libraries ({gpu.overhead.describe()})"
                + (", growing on demand up to the limit" if policy.growth else "")
            )
        else:
            line = (
                f"{head} allocator limit {format_mib(gpu.allocator_limit_bytes)} "
                f"({format_percent(gpu.allocator_limit_bytes, gpu.total_bytes)} of {format_mib(gpu.total_bytes)}); "
                f"strict=off, so nvidia-smi will show about {format_mib(gpu.overhead_bytes)} more"
            )
            if gpu.ceiling_bytes is not None:
                line += (
                    f", which this server's ceiling of {format_mib(gpu.ceiling_bytes)} here counts too: the limit is "
                    f"lowered from {format_mib(gpu.budget_bytes)} to keep both under it"
                )
            lines.append(line)
    for device in plan.hidden:
        lines.append(f"  GPU {device.index} {device.name or ''}: hidden from this kernel")
    for device in plan.lost:
        lines.append(f"  GPU {device.index} {device.name or ''}: lost (fell off the bus), so no budget there")
    if policy.intra_threads is not None or policy.inter_threads is not None:
        lines.append(
            f"  CPU threads: intra-op {policy.intra_threads or 'default'}, inter-op {policy.inter_threads or 'default'}"
        )
    return lines


def unchecked(snapshot: Snapshot) -> list[str]:
    """What a policy decided under a driver that did not answer in time rests on (plan_lines says it when there
    are no figures at all: the plan's no_gpu)."""
    sentence = stalled(snapshot)
    return [f"jupyter-gpumem: {sentence} The plan below uses them."] if sentence and snapshot.devices else []


def recorded(state: State, source: str, installed: bool) -> list[str]:
    """A policy recorded before its framework is imported. ``installed``: some target is installed."""
    adapters = state.adapters
    if len(adapters) > 1:
        when = (
            f"None of {label(adapters)[0]} is imported yet; the settings apply to whichever is imported, "
            f"the moment its import completes ({state.imports})."
        )
    elif installed:
        when = (
            f"{adapters[0].name} is not imported yet; "
            f"the settings apply the moment `import {adapters[0].module}` completes."
        )
    else:
        chosen = state.policy.framework != "auto"
        missing = adapters[0].name if chosen else "No supported framework (TensorFlow, PyTorch, JAX)"
        when = (
            f"{missing} is not installed in this kernel's environment; the GPU selection "
            "(CUDA_VISIBLE_DEVICES) holds for whatever starts CUDA next."
        )
    plan = state.plan
    if plan is None:
        return []
    if state.policy.is_empty and state.ceiling != Ceiling():  # a ceiling alone
        head = f"jupyter-gpumem: this server's ceiling ({state.ceiling.describe()}) is the budget ({source})."
    else:
        head = f"jupyter-gpumem: {state.policy.describe()} recorded ({source})."
    return [f"{head} {when}", *plan_lines(plan)]


def applied(state: State, share: Plan, notes: list[str]) -> list[str]:
    """The plan applied to the state's frameworks at once (``share``: what each got)."""
    plan = state.plan
    assert plan is not None
    lines = [f"jupyter-gpumem: applied {plan.policy.describe()} to {state.frameworks}.", *plan_lines(plan)]
    if len(state.adapters) > 1:
        limits = [format_mib(g.allocator_limit_bytes) for g in share.gpus if g.allocator_limit_bytes]
        each = f" ({', '.join(limits)} each, per GPU)" if limits else ""
        lines.append(
            f"  {state.frameworks} are all imported in this kernel, so the policy applies to each, "
            f"and they share each GPU's allocator limit equally{each}."
        )
    return [*lines, *notes, *not_in_force(state)]


def applied_too(adapter: Framework, earlier: State, state: State, notes: list[str]) -> list[str]:
    """A framework imported after the policy went to another one: it gets the same plan."""
    policy = state.policy.describe()
    return [
        f"jupyter-gpumem: applied {policy} to {adapter.name} too. {earlier.frameworks} already has this budget on "
        f"the same GPUs, so together they may use up to {len(state.adapters)} times it. To share one budget, "
        "restart the kernel and import them all before running %gpumem.",
        *notes,
        *not_in_force(state),
    ]


def not_in_force(state: State) -> list[str]:
    """The one sentence on why an applied budget holds on no GPU, if so."""
    return [f"  Not in force: {state.no_gpu}"] if state.no_gpu else []


def too_late(adapters: Sequence[Framework], policy: Policy, reasons: list[str]) -> list[str]:
    name = label(adapters)[0]
    return [
        f"Too late: {'; '.join(reasons)}, so {policy.describe()} cannot take effect. Nothing was changed.",
        *("  In force: " + line for a in adapters if a.imported() for line in a.in_force()),
        f"  To get it: restart the kernel, then run %gpumem {policy.describe()} before any {name} code.",
    ]


def already(policy: Policy) -> list[str]:
    return [f"jupyter-gpumem: {policy.describe()} is already in force; nothing to do."]


def cannot_reset(state: State) -> list[str]:
    return [
        f"The policy {state.policy.describe()} is already applied to {state.frameworks}, which keeps it until "
        "the kernel restarts. Nothing was changed."
    ]


def forgotten(policy: Policy, state: State) -> list[str]:
    if state.plan is not None:  # a ceiling stays the budget
        return [
            f"jupyter-gpumem: forgot {policy.describe()}; this server's ceiling ({state.ceiling.describe()}) is "
            "the budget, applied when the framework is imported."
        ]
    defaults = state.takes if len(state.adapters) == 1 else "each framework's own defaults apply"
    return [f"jupyter-gpumem: forgot {policy.describe()}; {defaults}."]


def policy_note(state: State, started: bool) -> Said | None:
    """One sentence next to the policy wherever it is shown (the sidebar): where it stands."""
    if state.plan is None:
        return None
    if state.applied and state.no_gpu:
        return Said("policy_in_force_nowhere", why=state.no_gpu)
    if state.applied:
        return Said("policy_in_force", frameworks=state.frameworks)
    if started:
        return Said("policy_started_first", frameworks=state.frameworks)
    return Said("policy_applies_on_import", imports=[Said("import_statement", module=a.module) for a in state.adapters])


def policy_state(state: State, started: bool) -> str | None:
    """null | recorded | in_force | not_in_force, as the protocol sends it."""
    if state.plan is None:
        return None
    if state.applied:
        return "not_in_force" if state.no_gpu else "in_force"
    return "not_in_force" if started else "recorded"


def status(state: State, reading: Reading | None = None) -> list[str]:
    """The policy part of `%gpumem status`; with a reading, how this kernel's memory splits against it now."""
    now = now_lines(reading) if reading else []
    policy = state.policy.describe()
    if state.applied and state.no_gpu:
        threads = state.policy.intra_threads is not None or state.policy.inter_threads is not None
        threads_line = " Its CPU thread settings are in force." if threads else ""
        return [
            f"Policy: {policy}, applied to {state.frameworks} at {state.since()}, but the GPU budget is in force on "
            f"no GPU: {state.no_gpu}{threads_line}"
        ]
    if state.applied:
        lines = [f"Policy: {policy}, in force in {state.frameworks} since {state.since()}."]
        return [*lines, *(plan_lines(state.plan) if state.plan else []), *now]
    if reading is not None and reading.started and state.plan is not None:
        return [
            f"Policy: {policy}, NOT in force: {state.frameworks} started before it could be applied. "
            "Restart the kernel and run %gpumem first."
        ]
    if state.policy.is_empty and state.plan is not None:
        return [
            f"Policy: none set; this server's ceiling ({state.ceiling.describe()}) is the budget, "
            "applied when the framework is imported."
        ]
    if state.policy.is_empty:
        return [f"Policy: none set, so {state.takes}."]
    return [f"Policy: {policy}, recorded and waiting for the framework's import.", *now]


def now_lines(reading: Reading) -> list[str]:
    lines = []
    for device in reading.snapshot.devices:
        split = reading.breakdowns.get(device.uuid or "")
        if split is None or split.budget_bytes is None or device.lost:
            continue
        own = reading.own(device)
        if own.bytes is None and own.pid is None:  # N/A under its own PID: the table says so
            lines.append(
                f"  Now on GPU {device.index}: this kernel's memory is unknown ({own.reason}), so its "
                f"{format_mib(split.budget_bytes)} budget cannot be checked there."
            )
            continue
        if split.own_bytes is None or not own.holds:
            continue
        about = "about " if own.source == "estimated" else ""
        label = "" if own.source == "exact" else f" ({own.describe()})"
        line = (
            f"  Now on GPU {device.index}: {about}{format_mib(split.own_bytes)} as nvidia-smi counts it{label}, "
            f"{format_percent(split.own_bytes, split.budget_bytes)} of the {format_mib(split.budget_bytes)} budget"
        )
        if own.source == "estimated":
            pass  # the estimate is the pool plus the overhead: the label says so
        elif split.pool_known and split.pool_bytes is not None and split.overhead is not None:
            line += (
                f" = {reading.framework} pool {format_mib(split.pool_bytes)} + "
                f"{format_mib(split.own_bytes - split.pool_bytes)} outside it ({split.overhead.describe()})"
            )
        if split.reason:
            line += f"; {format_mib(split.over_bytes)} over: {split.reason}. %gpumem explain says what to change"
        lines.append(line + ".")
    return lines


def limit_lines(reading: Reading) -> list[str]:
    """Which limit holds this kernel's memory on each GPU, hard (MIG, MPS) or cooperative (%gpumem); what
    cannot be read about them; and the MPS offer."""
    gpus = [
        f"  GPU {device.index}: {limit.describe()}"
        for device in reading.snapshot.devices
        if (limit := reading.limits.gpus.get(device.uuid or "")) is not None
    ]
    lines = ["Limits on this kernel's memory:", *gpus] if gpus else []
    lines.extend(f"  {problem}" for problem in reading.limits.problems)
    offer = mps_offer(reading)
    return [*lines, f"  {offer}"] if offer else lines


def mps_offer(reading: Reading) -> Said | None:
    """Where an MPS server is in use, no MPS limit is set and CUDA has not started: how to make the budget a
    hard cap."""
    limits, state = reading.limits, reading.state
    if not limits.mps_server or limits.pinned or reading.started or state.policy.mps:
        return None
    budget = state.plan is not None and any(g.budget_bytes is not None for g in state.plan.gpus)
    asked = f"%gpumem {state.policy.describe()} mps=on" if budget and not state.policy.is_empty else None
    example = asked or ("%gpumem mps=on" if budget else "%gpumem fraction=0.4 mps=on")
    return Said("mps_offer", example=example)


def limit_note(reading: Reading) -> Said | None:
    """One sentence about hard limits for the sidebar: what cannot be read, else the MPS offer."""
    return reading.limits.problems[0] if reading.limits.problems else mps_offer(reading)


def mps_applied(environ: Mapping[str, str]) -> list[str]:
    """What mps=on set, for the lines %gpumem prints."""
    value = environ.get(PINNED)
    if not value:
        return []
    return [
        f"  MPS: {PINNED}={value}, a hard cap on this process's memory per GPU from when CUDA starts (per process, "
        "not per container; it limits what MPS counts: docs/containers.md)."
    ]
