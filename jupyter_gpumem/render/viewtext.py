"""The inline view's lines, from a protocol sample: the same words as the sidebar's (labextension/src/
format.ts), so a user sees one wording in the sidebar, the status bar and the cell output. Pure; the
view (widget.py) only places them. Bytes in binary units as nvidia-smi counts them; None is "N/A", never 0.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from jupyter_gpumem.budget.privacy import from_sample, others_line
from jupyter_gpumem.units import GiB, MiB

Level = Literal["ok", "warn", "error"]
Gpu = Mapping[str, Any]  # a protocol gpu (wire.comm.Gpu), read only
Sample = Mapping[str, Any]  # a protocol sample (wire.comm.Sample), read only

WARN_AT = 0.9  # at or above this share of the budget the headline turns to the warning colour (format.ts)


def format_bytes(value: int | float | None) -> str:
    if value is None:
        return "N/A"
    if value >= GiB:
        return f"{value / GiB:.1f} GiB"
    return f"{round(value / MiB)} MiB"


def gpu_key(gpu: Gpu) -> str:
    return str(gpu["uuid"]) if gpu.get("uuid") else f"index {gpu['index']}"


def choose_gpu(gpus: Sequence[Gpu], shown: str | None) -> str | None:
    """The GPU shown: the one already shown while it is there; else the one with a budget, else the one
    this kernel uses, else the first (history.ts chooseGpu)."""
    keys = [gpu_key(g) for g in gpus]
    if shown in keys:
        return shown
    pick = (
        next((g for g in gpus if g.get("budget_bytes") is not None), None)
        or next((g for g in gpus if (g.get("own_bytes") or 0) > 0), None)
        or (gpus[0] if gpus else None)
    )
    return None if pick is None else gpu_key(pick)


def gpu_option(gpu: Gpu) -> str:
    if gpu["lost"]:
        return f"GPU {gpu['index']}: lost"
    return f"GPU {gpu['index']}: {gpu['name'] or 'unknown'}"


def simulated_banner(scenario: str | None) -> str | None:
    return f"SIMULATED GPU — stand-in NVML ({os.path.basename(scenario)})" if scenario else None


def device_line(gpu: Gpu) -> str:
    if gpu["lost"]:
        name = f" {gpu['name']}" if gpu.get("name") else ""
        return f"GPU {gpu['index']}{name}: lost (fell off the bus; it needs a reset)"
    return (
        f"GPU {gpu['index']} · {gpu['name'] or 'unknown'} · {format_bytes(gpu['used_bytes'])} of "
        f"{format_bytes(gpu['total_bytes'])} used"
    )


def _level(own: int, budget: int) -> Level:
    share = own / budget if budget > 0 else float("inf")
    return "error" if share > 1 else "warn" if share >= WARN_AT else "ok"


def headline(gpu: Gpu, sample: Sample) -> tuple[str, Level]:
    """ "3.1 of 4.0 GiB budget (78%)", in the warning colour from 90% and the error colour above."""
    own, budget = gpu.get("own_bytes"), gpu.get("budget_bytes")
    if gpu["lost"]:
        return f"GPU {gpu['index']} is lost: N/A", "error"
    if gpu.get("hidden"):
        return f"Hidden from this kernel by its policy ({sample.get('policy') or 'gpus='})", "ok"
    if budget is None:
        if own is None:
            return "N/A used by this kernel (the driver cannot tell)", "ok"
        return f"{format_bytes(own)} used by this kernel", "ok"
    unheld = [] if gpu.get("in_force") else ["not in force"]
    if own is None:
        why = [*unheld, "the driver cannot tell this kernel's memory"]
        return f"N/A of {format_bytes(budget)} budget ({'; '.join(why)})", "ok"
    unit, digits, name = (GiB, 1, "GiB") if budget >= GiB else (MiB, 0, "MiB")
    share = f"{round(own / budget * 100)}%" if budget > 0 else "∞"
    text = f"{own / unit:.{digits}f} of {budget / unit:.{digits}f} {name} budget ({', '.join([share, *unheld])})"
    return text, _level(own, budget)


def source_label(gpu: Gpu) -> tuple[str, str] | None:
    """What this kernel's figure rests on, for the label under the headline, and why (its tooltip);
    None on a lost or hidden GPU."""
    if gpu["lost"] or gpu.get("hidden"):
        return None
    source = gpu.get("own_source") or "exact"
    return source, str(gpu.get("own_reason") or "")


def budget_note(gpu: Gpu, sample: Sample) -> str | None:
    if gpu["lost"] or gpu.get("hidden") or gpu.get("budget_bytes") is not None:
        return None
    return f"No budget set — {sample.get('takes') or 'a framework takes its default amount when it starts'}"


def breakdown(gpu: Gpu, framework: str | None) -> str | None:
    if (
        gpu.get("hidden")
        or gpu["lost"]
        or gpu.get("budget_bytes") is None
        or gpu.get("pool_bytes") is None
        or gpu.get("overhead_bytes") is None
        or gpu.get("overhead_source") is None
    ):
        return None
    source = {"estimated": "estimated", "remembered": "measured by an earlier kernel", "measured": "measured"}[
        gpu["overhead_source"]
    ]
    who = framework or "Allocator"
    if gpu.get("pool_known") and gpu.get("own_bytes") is not None:
        outside = max(0, gpu["own_bytes"] - gpu["pool_bytes"])
        return (
            f"{who} pool {format_bytes(gpu['pool_bytes'])} + {format_bytes(outside)} outside it ({source}) = "
            f"{format_bytes(gpu['own_bytes'])}"
        )
    return (
        f"{who} limit {format_bytes(gpu['pool_bytes'])} + {format_bytes(gpu['overhead_bytes'])} set aside for "
        f"CUDA and libraries ({source})"
    )


def over_line(gpu: Gpu) -> str | None:
    return f"Over budget: {gpu['over_reason']}" if gpu.get("over_reason") and not gpu.get("hidden") else None


def policy_line(sample: Sample) -> tuple[str, Level] | None:
    if sample.get("policy") is None:
        return None
    note = sample.get("policy_note")
    text = f"Policy: {sample['policy']} — {note}" if note else f"Policy: {sample['policy']}"
    return text, "warn" if sample.get("policy_state") == "not_in_force" else "ok"


def process_note(gpu: Gpu) -> str | None:
    if gpu["lost"]:
        return "This GPU is lost: no figures until it is reset."
    if not gpu.get("processes_known", True):
        return "The driver does not list the processes on this GPU."
    return None


def others_note(gpu: Gpu) -> str | None:
    """Other users' processes, where privacy shows them as one figure (format.ts othersNote)."""
    others = from_sample(gpu.get("others"))
    return others_line(others, format_bytes) if others and others.processes else None


def process_cells(p: Mapping[str, Any]) -> dict[str, str]:
    """One row of the process table: MiB as nvidia-smi's table counts them, CPU% to one decimal; N/A where
    the driver or the host cannot tell, "…" where the host has not measured the CPU yet."""
    pending = p.get("cpu_percent") is None and p.get("cpu_pending")
    cpu = p.get("cpu_percent")
    return {
        "pid": str(p["pid"]),
        "name": "N/A" if p.get("name") is None else str(p["name"]),
        "user": "N/A" if p.get("user") is None else str(p["user"]),
        "used": "N/A" if p.get("used_bytes") is None else str(round(p["used_bytes"] / MiB)),
        "cpu": f"{cpu:.1f}" if cpu is not None else "…" if pending else "N/A",
    }


def mark_title(t: float, reason: str | None) -> str:
    return f"Over budget from {clock(t)}: {reason}" if reason else f"Over budget from {clock(t)}"


def clock(t: float) -> str:
    """ "14:03:27", the kernel's local time."""
    return time.strftime("%H:%M:%S", time.localtime(t))


def total_above(total: float) -> str:
    return f"device total {format_bytes(total)} ↑"


CHART_LABELS = {
    "own": "this kernel",
    "others": "others",
    "budget": "budget",
    "total": "device total",
}


def framework_label(framework: str | None) -> str:
    return f"{framework} in use" if framework else "framework in use"
