"""``GET /api/gpumem/v1``: the Figures as JSON, schema version 1 (docs/server.md).

The body is encoded on the extension's thread, once per reading; the handler only writes the latest.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web

from jupyter_gpumem._version import __version__
from jupyter_gpumem.server.figures import Figures, OtherProcess
from jupyter_gpumem.wire.api import PATH, Body
from jupyter_gpumem.wire.comm import UserShare

__all__ = ["PATH", "GpumemHandler", "encode"]


def encode(figures: Figures, interval_s: float) -> bytes:
    """The JSON body for the Figures (wire/schemas/api.v1.json)."""
    body: Body = {
        "version": 1,
        "package_version": __version__,
        "interval_s": interval_s,
        "t": figures.t,
        "problem": figures.problem,
        "driver_version": figures.driver_version,
        "simulated": figures.simulated,
        "gpus": [
            {
                "index": g.index,
                "uuid": g.uuid,
                "name": g.name,
                "lost": g.lost,
                "total_bytes": g.total_bytes,
                "used_bytes": g.used_bytes,
                "utilization_percent": g.utilization_percent,
                "processes_known": g.processes_known,
                "other_processes": g.other_processes,
                "other_bytes": g.other_bytes,
                "other_users": _by_user(g.others) if figures.privacy != "aggregate" and g.processes_known else None,
                "other_process_list": (
                    [{"pid": p.pid, "user": p.user, "used_bytes": p.used_bytes} for p in g.others]
                    if figures.privacy == "list" and g.processes_known
                    else None
                ),
            }
            for g in figures.gpus
        ],
        "kernels": [
            {
                "id": k.id,
                "pid": k.pid,
                "status": k.status,
                "report_age_s": k.report_age_s,
                "package_version": k.package_version,
                "policy": k.policy,
                "policy_state": k.policy_state,
                "policy_note": k.policy_note,
                "framework": k.framework,
                "framework_started": k.framework_started,
                "oom_errors_total": k.oom_errors_total,
                "ceiling": {"max_fraction": k.max_fraction, "max_limit_bytes": k.max_limit_bytes},
                "execution_state": k.execution_state,
                "last_activity": k.last_activity,
                "gpus": [
                    {
                        "index": g.index,
                        "uuid": g.uuid,
                        "used_bytes": g.used_bytes,
                        "budget_bytes": g.budget_bytes,
                        "in_force": g.in_force,
                        "over_budget": g.over_budget,
                        "pool_bytes": g.pool_bytes,
                        "pool_known": g.pool_known,
                        "overhead_bytes": g.overhead_bytes,
                        "overhead_source": g.overhead_source,
                        "framework_bytes": g.framework_bytes,
                        "framework_peak_bytes": g.framework_peak_bytes,
                        "limit_kind": g.limit_kind,
                        "limit_hard": g.limit_hard,
                    }
                    for g in k.gpus
                ],
            }
            for k in figures.kernels
        ],
    }
    if figures.stalled_since is not None:
        body["stalled_since"] = figures.stalled_since
    return json.dumps(body, separators=(",", ":")).encode()


def _by_user(others: tuple[OtherProcess, ...]) -> list[UserShare]:
    """Other processes summed per Unix user (null: a user the host does not show, or memory N/A)."""
    users: dict[str | None, list[OtherProcess]] = {}
    for process in others:
        users.setdefault(process.user, []).append(process)
    return [
        {"user": user, "processes": len(group), "used_bytes": _sum([p.used_bytes for p in group])}
        for user, group in sorted(users.items(), key=lambda item: item[0] or "")
    ]


def _sum(values: list[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


class GpumemHandler(APIHandler):
    # jupyter_server's authorizer is asked for "read" on "gpumem"; JupyterHub's default token scopes
    # (access:servers) allow it, and a finer authorizer can grant it alone.
    auth_resource = "gpumem"

    def initialize(self, latest: Callable[[], bytes]) -> None:
        self._latest = latest

    @web.authenticated
    @authorized
    def get(self) -> None:
        self.set_header("Content-Type", "application/json")
        self.finish(self._latest())
