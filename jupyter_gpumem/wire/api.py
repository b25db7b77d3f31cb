"""The server extension's ``GET /api/gpumem/v1`` body, version 1, as typed values (the reference:
``schemas/api.v1.json``, docs/server.md): the server encodes it (server.api), the hub service reads it
(hub.rows). A NotRequired field is one added after the first release: a body from an older server lacks it, and
``BODY.problem`` fills in its default (docs/protocol.md, "Versioning and releases mixing")."""

import sys
from typing import Literal, TypedDict

from jupyter_gpumem.wire.comm import LimitKind, OverheadSource, PolicyState, UserShare
from jupyter_gpumem.wire.report import Ceiling
from jupyter_gpumem.wire.schemas import Schema

if sys.version_info >= (3, 11):
    from typing import NotRequired
else:  # pragma: no cover
    from typing_extensions import NotRequired

VERSION = 1
PATH = "/api/gpumem/v1"

Status = Literal["reporting", "stale", "not_reporting"]


class OtherProcess(TypedDict):
    pid: int
    user: str | None
    used_bytes: int | None


class Gpu(TypedDict):
    index: int
    uuid: str | None
    name: str | None
    lost: bool
    total_bytes: int | None
    used_bytes: int | None
    utilization_percent: int | None
    processes_known: bool
    other_processes: int | None
    other_bytes: int | None
    other_users: NotRequired[list[UserShare] | None]  # absent from a server older than privacy names/list
    other_process_list: NotRequired[list[OtherProcess] | None]


class KernelGpu(TypedDict):
    index: int
    uuid: str
    used_bytes: int | None
    budget_bytes: int | None
    in_force: bool
    over_budget: bool | None
    pool_bytes: int | None
    pool_known: bool
    overhead_bytes: int | None
    overhead_source: OverheadSource | None
    framework_bytes: int | None
    framework_peak_bytes: int | None
    limit_kind: NotRequired[LimitKind | None]
    limit_hard: NotRequired[bool]


class Kernel(TypedDict):
    id: str
    pid: int | None
    status: Status
    report_age_s: float | None
    package_version: str | None
    policy: str | None
    policy_state: PolicyState | None
    policy_note: str | None
    framework: str | None
    framework_started: bool
    oom_errors_total: int | None
    ceiling: Ceiling
    execution_state: NotRequired[str | None]
    last_activity: NotRequired[float | None]
    gpus: list[KernelGpu]


class Body(TypedDict):
    version: Literal[1]
    package_version: str
    interval_s: float
    t: float | None
    problem: str | None
    stalled_since: NotRequired[float | None]  # absent: the driver answered
    driver_version: str | None
    simulated: str | None
    gpus: list[Gpu]
    kernels: list[Kernel]


BODY: Schema[Body] = Schema("api.v1.json", "a /api/gpumem/v1 body", "body")
