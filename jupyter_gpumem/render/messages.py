"""The sentences `%gpumem` prints about the policy: recorded, applied, too late, forgotten, and the
policy part of `%gpumem status`. Each reads a State (and a Reading for figures now); none decides
anything (control.py does)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

from jupyter_gpumem.budget.framework_interface import Framework
from jupyter_gpumem.budget.limits import PINNED
from jupyter_gpumem.budget.plan import Ceiling, Plan
from jupyter_gpumem.budget.policy import Policy
from jupyter_gpumem.budget.reading import Reading
from jupyter_gpumem.budget.state import State
from jupyter_gpumem.frameworks import ADAPTERS
from jupyter_gpumem.gpu.model import Device, Snapshot
from jupyter_gpumem.gpu.reader import stalled
from jupyter_gpumem.i18n import gettext as _
from jupyter_gpumem.i18n import pgettext
from jupyter_gpumem.render import framework_names, list_of, words
from jupyter_gpumem.units import format_mib, format_percent
from jupyter_gpumem.words import Said, catalogue, word


def plan_lines(plan: Plan) -> list[str]:
    """Per GPU: the budget as nvidia-smi counts it and its split; hidden and lost GPUs; threads."""
    policy = plan.policy
    lines = []
    if plan.no_gpu:
        lines.append("  " + _("No GPU: {why} Thread settings still apply.").format(why=words(plan.no_gpu)))
    for gpu in plan.gpus:
        head = f"  GPU {gpu.index} {gpu.name}:"
        figures = {
            "budget": format_mib(gpu.budget_bytes),
            "limit": format_mib(gpu.allocator_limit_bytes),
            "total": format_mib(gpu.total_bytes),
            "overhead": format_mib(gpu.overhead_bytes),
        }
        if gpu.budget_bytes is None:
            grows = _("grows on demand") if policy.growth else _("no budget set: the framework takes nearly all of it")
            lines.append(f"{head} {grows}")
        elif policy.strict:
            if policy.growth:
                said = _(
                    "budget {budget} ({percent} of {total}) as nvidia-smi counts it = allocator limit {limit} + "
                    "about {overhead} CUDA context and libraries ({basis}), growing on demand up to the limit"
                )
            else:
                said = _(
                    "budget {budget} ({percent} of {total}) as nvidia-smi counts it = allocator limit {limit} + "
                    "about {overhead} CUDA context and libraries ({basis})"
                )
            percent = format_percent(gpu.budget_bytes, gpu.total_bytes)
            lines.append(f"{head} " + said.format(percent=percent, basis=words(gpu.overhead.describe()), **figures))
        else:
            percent = format_percent(gpu.allocator_limit_bytes, gpu.total_bytes)
            if gpu.ceiling_bytes is not None:
                said = _(
                    "allocator limit {limit} ({percent} of {total}); strict=off, so nvidia-smi will show about "
                    "{overhead} more, which this server's ceiling of {ceiling} here counts too: the limit is lowered "
                    "from {budget} to keep both under it"
                )
            else:
                said = _(
                    "allocator limit {limit} ({percent} of {total}); strict=off, so nvidia-smi will show about "
                    "{overhead} more"
                )
            ceiling = format_mib(gpu.ceiling_bytes) if gpu.ceiling_bytes is not None else ""
            lines.append(f"{head} " + said.format(percent=percent, ceiling=ceiling, **figures))
    for device in plan.hidden:
        lines.append(f"  GPU {device.index} {device.name or ''}: " + _("hidden from this kernel"))
    for device in plan.lost:
        lines.append(f"  GPU {device.index} {device.name or ''}: " + _("lost (fell off the bus), so no budget there"))
    if policy.intra_threads is not None or policy.inter_threads is not None:
        lines.append(
            "  "
            + _("CPU threads: intra-op {intra}, inter-op {inter}").format(
                intra=policy.intra_threads or _("default"), inter=policy.inter_threads or _("default")
            )
        )
    return lines


def unchecked(snapshot: Snapshot) -> list[str]:
    """What a policy decided under a driver that did not answer in time rests on (plan_lines says it when there
    are no figures at all: the plan's no_gpu)."""
    sentence = stalled(snapshot)
    if not sentence or not snapshot.devices:
        return []
    return [_("jupyter-gpumem: {stalled} The plan below uses them.").format(stalled=sentence.words())]


def recorded(state: State, source: str, installed: bool) -> list[str]:
    """A policy recorded before its framework is imported. ``installed``: some target is installed."""
    adapters = state.adapters
    if len(adapters) > 1:
        when = _(
            "None of {frameworks} is imported yet; the settings apply to whichever is imported, the moment its "
            "import completes ({imports})."
        ).format(frameworks=framework_names(adapters), imports=state.imports)
    elif installed:
        when = _("{framework} is not imported yet; the settings apply the moment `import {module}` completes.").format(
            framework=adapters[0].name, module=adapters[0].module
        )
    elif state.policy.framework != "auto":
        when = _(
            "{framework} is not installed in this kernel's environment; the GPU selection (CUDA_VISIBLE_DEVICES) "
            "holds for whatever starts CUDA next."
        ).format(framework=adapters[0].name)
    else:
        when = _(
            "None of the frameworks jupyter-gpumem supports ({frameworks}) is installed in this kernel's environment; "
            "the GPU selection (CUDA_VISIBLE_DEVICES) holds for whatever starts CUDA next."
        ).format(frameworks=list_of([adapter.name for adapter in ADAPTERS.values()]))
    plan = state.plan
    if plan is None:
        return []
    if state.policy.is_empty and state.ceiling != Ceiling():  # a ceiling alone
        head = _("jupyter-gpumem: this server's ceiling ({ceiling}) is the budget ({source}).").format(
            ceiling=state.ceiling.describe(), source=source
        )
    else:
        head = _("jupyter-gpumem: {policy} recorded ({source}).").format(policy=state.policy.describe(), source=source)
    # two sentences in one line: Japanese and Chinese join them without the space
    return [pgettext("sentences", "{first} {second}").format(first=head, second=when), *plan_lines(plan)]


def applied(state: State, share: Plan, notes: list[str]) -> list[str]:
    """The plan applied to the state's frameworks at once (``share``: what each got)."""
    plan = state.plan
    assert plan is not None
    lines = [
        _("jupyter-gpumem: applied {policy} to {frameworks}.").format(
            policy=plan.policy.describe(), frameworks=framework_names(state.adapters, state.together)
        ),
        *plan_lines(plan),
    ]
    if len(state.adapters) > 1:
        limits = [format_mib(g.allocator_limit_bytes) for g in share.gpus if g.allocator_limit_bytes]
        if limits:
            said = _(
                "{frameworks} are all imported in this kernel, so the policy applies to each, and they share each "
                "GPU's allocator limit equally ({limits} each, per GPU)."
            )
        else:
            said = _(
                "{frameworks} are all imported in this kernel, so the policy applies to each, and they share each "
                "GPU's allocator limit equally."
            )
        lines.append("  " + said.format(frameworks=framework_names(state.adapters), limits=list_of(limits)))
    return [*lines, *notes, *not_in_force(state)]


def applied_too(adapter: Framework, earlier: State, state: State, notes: list[str]) -> list[str]:
    """A framework imported after the policy went to another one: it gets the same plan."""
    return [
        _(
            "jupyter-gpumem: applied {policy} to {framework} too. {earlier} already has this budget on the same "
            "GPUs, so together they may use up to {times} times it. To share one budget, restart the kernel and "
            "import them all before running %gpumem."
        ).format(
            policy=state.policy.describe(),
            framework=adapter.name,
            earlier=framework_names(earlier.adapters, earlier.together),
            times=len(state.adapters),
        ),
        *notes,
        *not_in_force(state),
    ]


def not_in_force(state: State) -> list[str]:
    """The one sentence on why an applied budget holds on no GPU, if so."""
    return ["  " + _("Not in force: {why}").format(why=words(state.no_gpu))] if state.no_gpu else []


def too_late(adapters: Sequence[Framework], policy: Policy, reasons: list[str]) -> list[str]:
    name = framework_names(adapters)
    return [
        _("Too late: {reasons}, so {policy} cannot take effect. Nothing was changed.").format(
            reasons=catalogue()["join_semicolon"].join(words(r) for r in reasons), policy=policy.describe()
        ),
        *(
            "  " + _("In force: {setting}").format(setting=line)
            for a in adapters
            if a.imported()
            for line in a.in_force()
        ),
        "  "
        + _("To get it: restart the kernel, then run %gpumem {policy} before any {framework} code.").format(
            policy=policy.describe(), framework=name
        ),
    ]


def already(policy: Policy) -> list[str]:
    return [_("jupyter-gpumem: {policy} is already in force; nothing to do.").format(policy=policy.describe())]


def cannot_reset(state: State) -> list[str]:
    return [
        _(
            "The policy {policy} is already applied to {frameworks}, which keeps it until the kernel restarts. "
            "Nothing was changed."
        ).format(policy=state.policy.describe(), frameworks=framework_names(state.adapters, state.together))
    ]


def forgotten(policy: Policy, state: State) -> list[str]:
    if state.plan is not None:  # a ceiling stays the budget
        return [
            _(
                "jupyter-gpumem: forgot {policy}; this server's ceiling ({ceiling}) is the budget, applied when the "
                "framework is imported."
            ).format(policy=policy.describe(), ceiling=state.ceiling.describe())
        ]
    if len(state.adapters) == 1:
        return [
            _("jupyter-gpumem: forgot {policy}; {framework_takes}.").format(
                policy=policy.describe(), framework_takes=state.takes.words()
            )
        ]
    return [_("jupyter-gpumem: forgot {policy}; each framework's own defaults apply.").format(policy=policy.describe())]


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
    policy, frameworks = state.policy.describe(), framework_names(state.adapters, state.together)
    if state.applied and state.no_gpu:
        threads = state.policy.intra_threads is not None or state.policy.inter_threads is not None
        if threads:
            said = _(
                "Policy: {policy}, applied to {frameworks} at {since}, but the GPU budget is in force on no GPU: "
                "{why} Its CPU thread settings are in force."
            )
        else:
            said = _(
                "Policy: {policy}, applied to {frameworks} at {since}, but the GPU budget is in force on no GPU: {why}"
            )
        return [said.format(policy=policy, frameworks=frameworks, since=state.since(), why=words(state.no_gpu))]
    if state.applied:
        lines = [
            _("Policy: {policy}, in force in {frameworks} since {since}.").format(
                policy=policy, frameworks=frameworks, since=state.since()
            )
        ]
        return [*lines, *(plan_lines(state.plan) if state.plan else []), *now]
    if reading is not None and reading.started and state.plan is not None:
        return [
            _(
                "Policy: {policy}, NOT in force: {frameworks} started before it could be applied. Restart the kernel "
                "and run %gpumem first."
            ).format(policy=policy, frameworks=frameworks)
        ]
    if state.policy.is_empty and state.plan is not None:
        return [
            _(
                "Policy: none set; this server's ceiling ({ceiling}) is the budget, applied when the framework is "
                "imported."
            ).format(ceiling=state.ceiling.describe())
        ]
    if state.policy.is_empty:
        return [_("Policy: none set, so {framework_takes}.").format(framework_takes=state.takes.words())]
    return [_("Policy: {policy}, recorded and waiting for the framework's import.").format(policy=policy), *now]


def now_lines(reading: Reading) -> list[str]:
    lines = []
    for device in reading.snapshot.devices:
        split = reading.breakdowns.get(device.uuid or "")
        if split is None or split.budget_bytes is None or device.lost:
            continue
        own = reading.own(device)
        if own.bytes is None and own.pid is None:  # N/A under its own PID: the table says so
            lines.append(
                "  "
                + _(
                    "Now on GPU {index}: this kernel's memory is unknown ({reason}), so its {budget} budget cannot "
                    "be checked there."
                ).format(index=device.index, reason=own.reason.words(), budget=format_mib(split.budget_bytes))
            )
            continue
        if split.own_bytes is None or not own.holds:
            continue
        figures = {
            "index": device.index,
            "used": format_mib(split.own_bytes),
            "percent": format_percent(split.own_bytes, split.budget_bytes),
            "budget": format_mib(split.budget_bytes),
        }
        if own.source == "estimated":
            line = _(
                "Now on GPU {index}: about {used} as nvidia-smi counts it ({source}), {percent} of the {budget} budget"
            ).format(source=own.describe(), **figures)
        elif own.source == "exact":
            line = _("Now on GPU {index}: {used} as nvidia-smi counts it, {percent} of the {budget} budget").format(
                **figures
            )
        else:
            line = _(
                "Now on GPU {index}: {used} as nvidia-smi counts it ({source}), {percent} of the {budget} budget"
            ).format(source=own.describe(), **figures)
        if own.source == "estimated":
            pass  # the estimate is the pool plus the overhead: the label says so
        elif split.pool_known and split.pool_bytes is not None and split.overhead is not None:
            line += " " + _("= {framework} pool {pool} + {outside} outside it ({basis})").format(
                framework=words(reading.framework),
                pool=format_mib(split.pool_bytes),
                outside=format_mib(split.own_bytes - split.pool_bytes),
                basis=split.overhead.describe().words(),
            )
        # the separator and the full stop are the catalogue's ("。" in Japanese), not English punctuation
        if split.reason:
            line += word("join_semicolon", {}) + _("{over} over: {reason}. %gpumem explain says what to change").format(
                over=format_mib(split.over_bytes), reason=words(split.reason)
            )
        lines.append("  " + word("sentence", {"phrase": line}))
    return lines


def limit_lines(reading: Reading) -> list[str]:
    """Which limit holds this kernel's memory on each GPU, hard (MIG, MPS) or cooperative (%gpumem); what
    cannot be read about them; and the MPS offer."""
    gpus = [
        f"  GPU {device.index}: {words(limit.describe())}"
        for device in reading.snapshot.devices
        if (limit := reading.limits.gpus.get(device.uuid or "")) is not None
    ]
    gpus += [
        f"  GPU {device.index}: {driver_limit(device).words()}"
        for device in reading.snapshot.devices
        if device.driver_limit
    ]
    lines = [_("Limits on this kernel's memory:"), *gpus] if gpus else []
    lines.extend(f"  {words(problem)}" for problem in reading.limits.problems)
    if reading.snapshot.driver_limits_unknown is not None:  # once, not per GPU
        lines.append(f"  {reading.snapshot.driver_limits_unknown.words()}")
    offer = mps_offer(reading)
    return [*lines, f"  {offer.words()}"] if offer else lines


def driver_limit(device: Device) -> Said:
    """The limit the NVIDIA driver enforces on this kernel's cgroup on ``device`` (it has one), with what it counts."""
    limit = device.driver_limit
    assert limit is not None
    used = cast(int, limit.used_bytes)  # None reads N/A (words.py)
    return Said("driver_limit", limit_bytes=limit.hard_bytes, cgroup=limit.cgroup, used_bytes=used)


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
        "  "
        + _(
            "MPS: {variable}={value}, a hard cap on this process's memory per GPU from when CUDA starts (per "
            "process, not per container; it limits what MPS counts: docs/containers.md)."
        ).format(variable=PINNED, value=value)
    ]
