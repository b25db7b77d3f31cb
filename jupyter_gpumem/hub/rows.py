"""One row per user, server, kernel and GPU, made from a single-user server's ``/api/gpumem/v1`` body.

Plain immutable data: the page and the metrics render these rows, they never re-read the servers' bodies.
A body is another process's word: one that is not valid (wire/schemas/api.v1.json) becomes that server's
row with the reason, and the other servers' rows stand.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import cast

from jupyter_gpumem.wire.api import BODY, Body

log = logging.getLogger("jupyter_gpumem.hub")


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


def rows_of_server(user: str, server: str, data: object, now: float) -> list[Row]:
    """The rows of one server's reading. A kernel on no GPU still has one row (no GPU figures)."""
    problem = BODY.problem(data)
    BODY.tell(f"{user}'s server {server!r}", problem, log)
    if problem is not None:
        return [unreadable(user, server, f"its /api/gpumem/v1 body is not valid: {problem}")]
    body = cast(Body, data)
    rows: list[Row] = []
    for kernel in body["kernels"]:
        ceiling = kernel["ceiling"]
        state, last = kernel["execution_state"], kernel["last_activity"]
        idle_s = max(0.0, now - last) if state == "idle" and last is not None else None
        # The kernel's row on no GPU; on each GPU it is on, that row with the GPU's figures.
        alone = Row(
            user=user,
            server=server,
            kernel_id=kernel["id"],
            status=kernel["status"],
            gpu_index=None,
            gpu_uuid=None,
            used_bytes=None,
            budget_bytes=None,
            over_budget=None,
            ceiling_fraction=ceiling["max_fraction"],
            ceiling_bytes=ceiling["max_limit_bytes"],
            limit_kind=None,
            limit_hard=False,
            execution_state=state,
            idle_s=idle_s,
        )
        rows.extend(
            replace(
                alone,
                gpu_index=gpu["index"],
                gpu_uuid=gpu["uuid"],
                used_bytes=gpu["used_bytes"],
                budget_bytes=gpu["budget_bytes"],
                over_budget=gpu["over_budget"],
                limit_kind=gpu["limit_kind"],
                limit_hard=gpu["limit_hard"],
            )
            for gpu in kernel["gpus"]
        )
        if not kernel["gpus"]:
            rows.append(alone)
    return rows


def unreadable(user: str, server: str, problem: str) -> Row:
    return Row(user, server, None, None, None, None, None, None, None, None, None, None, False, None, None, problem)
