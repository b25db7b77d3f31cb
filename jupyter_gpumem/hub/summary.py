"""What the admin page shows first, decided once per poll from the rows and GPUs (the page only renders it):
the GPUs' memory, kernels over budget, idle kernels holding memory (largest first), users by memory held, how
many servers answered, and how many of them run each jupyter-gpumem release."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from jupyter_gpumem.hub.rows import GpuRow, Row
from jupyter_gpumem.units import format_duration, format_gib_or_mib, format_mib, round_half_up

TOP = 10  # per list; the table below has every row, and its filter finds the rest


def _kernel(r: Row) -> dict[str, Any]:
    return {"user": r.user, "server": r.server, "kernel_id": r.kernel_id, "gpu_index": r.gpu_index,
            "used_bytes": r.used_bytes, "budget_bytes": r.budget_bytes, "idle_s": r.idle_s,
            "stale": r.stale_since is not None, **texts(r)}  # fmt: skip


def texts(r: Row) -> dict[str, str]:
    """A row's figures as text, by units.py (the one place figures become text); the page shows only these."""
    ceiling = [f"{round_half_up(100 * r.ceiling_fraction)}%"] if r.ceiling_fraction is not None else []
    ceiling += [format_mib(r.ceiling_bytes)] if r.ceiling_bytes is not None else []
    return {
        "used_text": "" if r.used_bytes is None else format_mib(r.used_bytes),
        "budget_text": "" if r.budget_bytes is None else format_mib(r.budget_bytes),
        "idle_text": "" if r.idle_s is None else format_duration(r.idle_s),
        "ceiling_text": " / ".join(ceiling),
        "driver_limit_text": "" if r.driver_limit_bytes is None else format_mib(r.driver_limit_bytes),
    }


def summary(rows: list[Row], gpus: list[GpuRow]) -> dict[str, Any]:
    over = sorted(
        (r for r in rows if r.over_budget and r.used_bytes is not None and r.budget_bytes is not None),
        key=lambda r: (r.budget_bytes or 0) - (r.used_bytes or 0),
    )
    idle = sorted(
        (r for r in rows if r.idle_s is not None and (r.used_bytes or 0) > 0), key=lambda r: -(r.used_bytes or 0)
    )
    held: dict[str, int] = defaultdict(int)
    for r in rows:
        held[r.user] += r.used_bytes or 0
    users = sorted(held.items(), key=lambda item: (-item[1], item[0]))
    servers: dict[tuple[str, str], str] = {}
    releases: dict[tuple[str, str], str | None] = {}
    for r in rows:
        state = "not_answering" if r.stale_since is not None else ("unreadable" if r.problem else "answering")
        servers[(r.user, r.server)] = state
        releases[(r.user, r.server)] = r.server_version
    # The servers read by the jupyter-gpumem release they run ("": not said): which releases are in use. A server of
    # another major version is not among them: it is "unreadable", and its row says what to upgrade.
    read: dict[str, int] = defaultdict(int)
    for key, state in servers.items():
        if state == "answering":
            read[releases[key] or ""] += 1
    known_total = [g.total_bytes for g in gpus if g.total_bytes is not None]
    known_used = [g.used_bytes for g in gpus if g.used_bytes is not None]
    return {
        "gpus": {
            "count": len(gpus),
            "lost": sum(g.lost for g in gpus),
            "total_bytes": sum(known_total) if known_total else None,
            "used_bytes": sum(known_used) if known_used else None,
            "total_text": format_gib_or_mib(sum(known_total)) if known_total else "",
            "used_text": format_gib_or_mib(sum(known_used)) if known_used else "",
        },
        "servers": {
            state: list(servers.values()).count(state) for state in ("answering", "unreadable", "not_answering")
        },
        "releases": dict(sorted(read.items())),
        "over_budget": {"count": len(over), "top": [_kernel(r) for r in over[:TOP]]},
        "idle_holding": {"count": len(idle), "top": [_kernel(r) for r in idle[:TOP]]},
        "users": {
            "count": len(users),
            "top": [{"user": u, "used_bytes": b, "used_text": format_gib_or_mib(b)} for u, b in users[:TOP] if b > 0],
        },
    }
