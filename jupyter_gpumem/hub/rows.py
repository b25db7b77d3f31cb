"""One row per user, server, kernel and GPU, made from a single-user server's ``/api/gpumem/v1`` body.

Plain immutable data: the page and the metrics render these rows, they never re-read the servers' bodies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Row:
    user: str
    server: str  # the server's name; "" for the default server
    kernel_id: str | None  # None: the server's row when it could not be read (``problem`` says why)
    status: str | None  # reporting | stale | not_reporting
    gpu_index: int | None
    gpu_uuid: str | None
    used_bytes: int | None
    budget_bytes: int | None
    over_budget: bool | None
    ceiling_fraction: float | None
    ceiling_bytes: int | None
    limit_kind: str | None  # mig | mps | cooperative
    limit_hard: bool
    execution_state: str | None  # the server's view: idle | busy | starting ...
    idle_s: float | None  # seconds since the kernel's last activity, while idle; None: busy or not known
    problem: str | None = None


def rows_of_server(user: str, server: str, body: Mapping[str, Any], now: float) -> list[Row]:
    """The rows of one server's reading. A kernel on no GPU still has one row (no GPU figures)."""
    rows: list[Row] = []
    for kernel in body.get("kernels") or []:
        ceiling = kernel.get("ceiling") or {}
        state = kernel.get("execution_state")
        last = kernel.get("last_activity")
        idle_s = max(0.0, now - float(last)) if state == "idle" and isinstance(last, (int, float)) else None
        common = dict(
            user=user,
            server=server,
            kernel_id=str(kernel.get("id")),
            status=kernel.get("status"),
            ceiling_fraction=ceiling.get("max_fraction"),
            ceiling_bytes=ceiling.get("max_limit_bytes"),
            execution_state=state,
            idle_s=idle_s,
        )
        gpus = kernel.get("gpus") or []
        for gpu in gpus:
            rows.append(
                Row(
                    **common,
                    gpu_index=gpu.get("index"),
                    gpu_uuid=gpu.get("uuid"),
                    used_bytes=gpu.get("used_bytes"),
                    budget_bytes=gpu.get("budget_bytes"),
                    over_budget=gpu.get("over_budget"),
                    limit_kind=gpu.get("limit_kind"),
                    limit_hard=gpu.get("limit_hard") is True,
                )
            )
        if not gpus:
            rows.append(
                Row(
                    **common,
                    gpu_index=None,
                    gpu_uuid=None,
                    used_bytes=None,
                    budget_bytes=None,
                    over_budget=None,
                    limit_kind=None,
                    limit_hard=False,
                )
            )
    return rows


def unreadable(user: str, server: str, problem: str) -> Row:
    return Row(user, server, None, None, None, None, None, None, None, None, None, None, False, None, None, problem)
