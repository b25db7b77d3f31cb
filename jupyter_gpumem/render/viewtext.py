"""The inline view's lines, from a protocol sample: the same words as the sidebar's (labextension/src/
format/panel.ts), so a user sees one wording in the sidebar, the status bar and the cell output. The golden fixture
(tests/fixtures/golden/) is the contract: both test suites check every case's lines against it. Pure; the view
(widget.py) only places them. Bytes in binary units as nvidia-smi counts them; None is "N/A", never 0; every
string from the kernel's sample through `printable`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from jupyter_gpumem.budget.privacy import from_sample
from jupyter_gpumem.gpu.reader import stalled_sentence
from jupyter_gpumem.i18n import gettext as _
from jupyter_gpumem.i18n import ngettext, pgettext
from jupyter_gpumem.render.text import printable
from jupyter_gpumem.units import (
    Level,
    against_budget,
    budget_level,
    format_clock,
    format_gib_or_mib,
    format_tenth,
    percent,
    whole_mib,
)
from jupyter_gpumem.wire.comm import Sample, SampleGpu
from jupyter_gpumem.wire.generated.gpu_lines import GPU_LINES, GpuLineFormat
from jupyter_gpumem.words import Said, word_wire


def gpu_key(gpu: Mapping[str, Any]) -> str:  # a sample's gpu, or one of history's samples
    return str(gpu["uuid"]) if gpu.get("uuid") else f"index {gpu['index']}"


def choose_gpu(gpus: Sequence[Mapping[str, Any]], shown: str | None) -> str | None:
    """The GPU shown: the one already shown while it is there; else the one with a budget, else the one
    this kernel uses, else the first (model/history.ts chooseGpu)."""
    keys = [gpu_key(g) for g in gpus]
    if shown in keys:
        return shown
    pick = (
        next((g for g in gpus if g.get("budget_bytes") is not None), None)
        or next((g for g in gpus if (g.get("own_bytes") or 0) > 0), None)
        or (gpus[0] if gpus else None)
    )
    return None if pick is None else gpu_key(pick)


def simulated_banner(scenario: str | None) -> str | None:
    if not scenario:
        return None
    return _("SIMULATED GPU — stand-in NVML ({scenario})").format(scenario=printable(os.path.basename(scenario)))


def stalled_line(sample: Sample) -> str | None:
    """format/channel.ts's stalledLine: the sample's figures are the last a stalled driver gave."""
    since = sample.get("stalled_since")
    return None if since is None else stalled_sentence(since, sample["t"], bool(sample["gpus"])).words()


def device_line(gpu: SampleGpu) -> str:
    named = gpu.get("name")
    name = printable(named) if named is not None else None
    if gpu["lost"]:
        if name is None:
            return _("GPU {index}: lost (fell off the bus; it needs a reset)").format(index=gpu["index"])
        return _("GPU {index} {name}: lost (fell off the bus; it needs a reset)").format(index=gpu["index"], name=name)
    return _("GPU {index} · {name} · {used} of {total} used").format(
        index=gpu["index"],
        name=name or _("unknown"),
        used=format_gib_or_mib(gpu["used_bytes"]),
        total=format_gib_or_mib(gpu["total_bytes"]),
    )


def headline(gpu: SampleGpu, sample: Sample) -> tuple[str, Level]:
    """ "3.1 of 4.0 GiB budget (78%)", in the warning colour from 90% and the error colour above."""
    own, budget = gpu.get("own_bytes"), gpu.get("budget_bytes")
    if gpu["lost"]:
        return _("GPU {index} is lost: N/A").format(index=gpu["index"]), "error"
    if gpu.get("hidden"):
        policy = sample.get("policy") or ""
        if "gpus=" not in policy:  # no gpus= of its own: the GPUs it started with (a hub's spawner's) leave this out
            return _("Not this kernel's: it started without this GPU (CUDA_VISIBLE_DEVICES)"), "ok"
        return _("Hidden from this kernel by its policy ({policy})").format(policy=printable(policy)), "ok"
    if budget is None:
        if own is None:
            return _("N/A used by this kernel (the driver cannot tell)"), "ok"
        return _("{used} used by this kernel").format(used=format_gib_or_mib(own)), "ok"
    in_force = bool(gpu.get("in_force"))
    if own is None:
        if in_force:
            said = _("N/A of {budget} budget (the driver cannot tell this kernel's memory)")
        else:
            said = _("N/A of {budget} budget (not in force; the driver cannot tell this kernel's memory)")
        return said.format(budget=format_gib_or_mib(budget)), "ok"
    figure, limit, unit = against_budget(own, budget)
    share = f"{percent(own, budget)}%" if budget > 0 else "∞"
    if in_force:
        said = _("{figure} of {limit} {unit} budget ({share})")
    else:
        said = _("{figure} of {limit} {unit} budget ({share}, not in force)")
    return said.format(figure=figure, limit=limit, unit=unit, share=share), budget_level(own, budget)


def said(sentence: str | None, code: Mapping[str, Any] | None) -> str | None:
    """A sentence field and the code beside it (format/words.ts said): the code worded in the language in use,
    or the sentence where there is no code (an older kernel) or one this catalogue cannot word (a newer one)."""
    if code:
        try:
            return word_wire(code)
        except (KeyError, TypeError, AssertionError):
            pass
    return sentence


def lab(message: str, *values: str) -> str:
    """One of the sidebar's own messages (format/*.ts: %1 … %n), in the language in use, filled as JupyterLab's
    Gettext.strfmt fills it, so the still view says what the sidebar says in every language."""
    return re.sub(r"%(\d+)", lambda m: values[int(m.group(1)) - 1], _(message))


def lab_p(context: str, message: str, *values: str) -> str:
    """A sidebar message in a context (``trans._p``), filled as ``lab`` fills one."""
    return re.sub(r"%(\d+)", lambda m: values[int(m.group(1)) - 1], pgettext(context, message))


def lab_n(singular: str, plural: str, count: int) -> str:
    return lab(ngettext(singular, plural, count), str(count))


def own_line(gpu: SampleGpu) -> tuple[str, Level] | None:
    """ "Exact: NVML lists this kernel's PID": how this kernel's figure is known, in the kernel's words after
    its label; None from a kernel that does not say (never a guess), or on a lost or hidden GPU."""
    source = gpu.get("own_source")
    if gpu["lost"] or gpu.get("hidden") or source is None:
        return None
    labels = {"exact": _("Exact"), "matched": _("Matched"), "estimated": _("Estimated"), "unknown": _("Unknown")}
    label, reason = labels.get(source, source.capitalize()), said(gpu.get("own_reason"), gpu.get("own_reason_said"))
    text = _("{label}: {reason}").format(label=label, reason=printable(reason)) if reason else label
    return text, "warn" if source == "unknown" else "ok"


def budget_note(gpu: SampleGpu, sample: Sample) -> str | None:
    if gpu["lost"] or gpu.get("hidden") or gpu.get("budget_bytes") is not None:
        return None
    takes = said(sample.get("takes"), sample.get("takes_said"))
    return _("No budget set — {takes}").format(
        takes=printable(takes) if takes else _("a framework takes its default amount when it starts")
    )


def limit_lines(gpu: SampleGpu, sample: Sample) -> str | None:
    """What holds this kernel on the GPU, what a shared GPU adds, the lines its schema declares (the memory the
    driver lists under no process…), and the kernel's note on its limits: one line each."""
    lines = []
    if not gpu["lost"]:
        kind = gpu.get("limit_kind")
        if kind == "mig":
            lines.append(_("Hard limit: a MIG partition"))
        elif kind == "mps":
            lines.append(_("Hard limit: MPS, per process"))
        elif kind == "cooperative" and gpu.get("budget_bytes") is not None:
            lines.append(_("Cooperative limit (%gpumem): code that bypasses it is not held"))
        lines.extend(printable(line.words()) for line in shape_lines(gpu))
        lines.extend(declared_lines(gpu))
    note = said(sample.get("limit_note"), sample.get("limit_note_said"))
    if note:
        lines.append(printable(note))
    return "\n".join(lines) or None


# How a declared line's figure is worded, by the name its ``x-line`` gives (format/panel.ts LINE_FORMATS).
LINE_FORMATS: dict[GpuLineFormat, Callable[[int], str]] = {"gib_or_mib": format_gib_or_mib}


def declared_lines(gpu: SampleGpu) -> list[str]:
    """Each line the schema declares on a SampleGpu field (``x-line``, generated into GPU_LINES) whose figure is
    known, in the schema's order: its words in the language in use, the figure in place of %1 (format/panel.ts
    declaredLines)."""
    return [
        lab(line.words, LINE_FORMATS[line.format](value))
        for line in GPU_LINES
        if (value := gpu.get(line.field)) is not None
    ]


def shape_lines(gpu: SampleGpu) -> list[Said]:
    """What a shared GPU adds, as the sidebar words it: the MIG slice the kernel runs on, the limit the NVIDIA
    driver enforces on its cgroup, memory shared with the CPU."""
    lines = []
    if (piece := gpu.get("slice")) is not None:
        size = cast(int, piece["total_bytes"])  # None reads N/A
        lines.append(Said("mig_slice", profile=piece["profile"] or "?", total_bytes=size))
    if (limit := gpu.get("driver_limit")) is not None:
        used = cast(int, limit["used_bytes"])
        lines.append(Said("driver_limit", limit_bytes=limit["hard_bytes"], cgroup=limit["cgroup"], used_bytes=used))
    if gpu.get("memory_shared"):
        lines.append(Said("memory_shared"))
    return lines


def framework_name(sample: Mapping[str, Any]) -> str | None:
    """The sample's framework for a sentence in the language in use: several frameworks' names worded from
    their code (``framework_said``, "TensorFlow と PyTorch"), else the plain ``framework`` (one name, or an
    older kernel's English); an unknown code or bad values fall back to the plain string too."""
    said = sample.get("framework_said")
    if isinstance(said, Mapping):
        try:
            return word_wire(said)
        except (KeyError, TypeError, ValueError):
            pass
    framework = sample.get("framework")
    return framework if isinstance(framework, str) else None


def breakdown(gpu: SampleGpu, framework: str | None) -> str | None:
    pool, aside, kind, own = (
        gpu.get("pool_bytes"),
        gpu.get("overhead_bytes"),
        gpu.get("overhead_source"),
        gpu.get("own_bytes"),
    )
    if (
        gpu.get("hidden")
        or gpu["lost"]
        or gpu.get("budget_bytes") is None
        or pool is None
        or aside is None
        or kind is None
    ):
        return None
    source = {"estimated": _("estimated"), "remembered": _("measured by an earlier kernel"), "measured": _("measured")}[
        kind
    ]
    who = framework or _("Allocator")
    if gpu.get("pool_known") and own is not None:
        outside = max(0, own - pool)
        return _("{who} pool {pool} + {outside} outside it ({source}) = {own}").format(
            who=who,
            pool=format_gib_or_mib(pool),
            outside=format_gib_or_mib(outside),
            source=source,
            own=format_gib_or_mib(own),
        )
    return _("{who} limit {pool} + {aside} set aside for CUDA and libraries ({source})").format(
        who=who, pool=format_gib_or_mib(pool), aside=format_gib_or_mib(aside), source=source
    )


def over_line(gpu: SampleGpu) -> str | None:
    reason = said(gpu.get("over_reason"), gpu.get("over_reason_said"))
    return _("Over budget: {reason}").format(reason=printable(reason)) if reason and not gpu.get("hidden") else None


def policy_line(sample: Sample) -> tuple[str, Level] | None:
    policy_said, note = sample.get("policy"), said(sample.get("policy_note"), sample.get("policy_note_said"))
    if policy_said is None:
        return None
    policy = printable(policy_said)
    if note:
        text = _("Policy: {policy} — {note}").format(policy=policy, note=printable(note))
    else:
        text = _("Policy: {policy}").format(policy=policy)
    return text, "warn" if sample.get("policy_state") == "not_in_force" else "ok"


def process_note(gpu: SampleGpu) -> str | None:
    if gpu["lost"]:
        return _("This GPU is lost: no figures until it is reset.")
    if not gpu.get("processes_known", True):
        return _("The driver does not list the processes on this GPU.")
    return None


def others_note(gpu: SampleGpu) -> str | None:
    """Other users' processes, where privacy shows them as one figure (format/table.ts othersNote)."""
    others = from_sample(gpu.get("others"))
    if not others or not others.processes:
        return None
    line = lab(
        "other users: %1, %2",
        lab_n("%1 process", "%1 processes", others.processes),
        format_gib_or_mib(others.used_bytes),
    )
    if not others.users:
        return line
    each = [
        lab(
            "%1: %2, %3",
            _("user unknown") if u.user is None else printable(u.user),
            lab_n("%1 process", "%1 processes", u.processes),
            format_gib_or_mib(u.used_bytes),
        )
        for u in others.users
    ]
    return lab_p("other users, each", "%1 (%2)", line, pgettext("list separator", "; ").join(each))


def process_cells(p: Mapping[str, Any]) -> dict[str, str]:
    """One row of the process table: MiB as nvidia-smi's table counts them, CPU% to one decimal; N/A where
    the driver or the host cannot tell, "…" where the host has not measured the CPU yet."""
    pending = p.get("cpu_percent") is None and p.get("cpu_pending")
    cpu = p.get("cpu_percent")
    return {
        "pid": str(p["pid"]),
        "name": "N/A" if p.get("name") is None else printable(p["name"]),
        "user": "N/A" if p.get("user") is None else printable(p["user"]),
        "used": "N/A" if p.get("used_bytes") is None else str(whole_mib(p["used_bytes"])),
        "cpu": format_tenth(cpu) if cpu is not None else "…" if pending else "N/A",
    }


def clock(t: float) -> str:
    """ "14:03:27", the kernel's local time."""
    return format_clock(t)


def chart_labels(framework: str | None) -> dict[str, str]:
    """The chart's trace names (format/chart.ts chartLabels): tests/fixtures/chart/traces.json pins both."""
    return {
        "own": pgettext("chart", "this kernel"),
        "framework": pgettext("chart", "{framework} in use").format(framework=framework)
        if framework
        else pgettext("chart", "framework in use"),
        "others": pgettext("chart", "others"),
        "budget": pgettext("chart", "budget"),
        "driverLimit": pgettext("chart", "driver limit"),
        "total": pgettext("chart", "device total"),
    }


def total_above(total_bytes: float) -> str:
    """The chart's note where the device total lies above its scale (format/chart.ts totalAbove)."""
    return _("device total {total} ↑").format(total=format_gib_or_mib(total_bytes))


def mark_title(t: float, reason: str | None) -> str:
    """An over-budget mark's hover (format/chart.ts markTitle)."""
    if reason:
        return _("Over budget from {time}: {reason}").format(time=clock(t), reason=printable(reason))
    return _("Over budget from {time}").format(time=clock(t))
