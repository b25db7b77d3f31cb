"""The comm protocol between a kernel and the sidebar or an inline view, version 1: its comm target, the
settings' defaults and ranges, and its messages as typed values. The reference is the schema
``schemas/comm.v1.json`` (docs/protocol.md); ``tests/wire/test_schemas.py`` keeps these types' keys equal to
its properties, and their required keys to its ``required``: the fields every release has sent. A NotRequired field
was added since; a reader gets its default where an older kernel leaves it out (``Schema.problem``), and the
TypeScript side checks the same schema."""

import sys
from typing import Literal, TypedDict

from jupyter_gpumem.wire.schemas import Schema, bounds

if sys.version_info >= (3, 11):
    from typing import NotRequired
else:  # pragma: no cover
    from typing_extensions import NotRequired

PROTOCOL = 1
TARGET = "jupyter_gpumem"  # the comm target the sidebar registers

DEFAULT_INTERVAL_S = 1.0  # the sidebar's defaults too (labextension/src/protocol.ts)
DEFAULT_HISTORY_S = 900.0

TABLE = ("processes", "others")  # what a sample says of processes; history keeps only the figures

INTERVAL_RANGE_S = bounds("comm.v1.json", "configure", "interval_s")
HISTORY_RANGE_S = bounds("comm.v1.json", "configure", "history_s")

OwnSource = Literal["exact", "matched", "estimated", "unknown"]
OverheadSource = Literal["estimated", "remembered", "measured"]
LimitKind = Literal["mig", "mps", "cooperative"]
PolicyState = Literal["recorded", "in_force", "not_in_force"]
PidNamespace = Literal["host", "translated", "untranslated", "unlisted"]
NoticeKind = Literal["idle_warning", "idle_shutdown"]


class Process(TypedDict):
    pid: int
    name: str | None
    user: str | None
    used_bytes: int | None
    cpu_percent: float | None
    self: bool
    local: NotRequired[bool | None]
    cpu_pending: NotRequired[bool]


class UserShare(TypedDict):
    user: str | None
    processes: int
    used_bytes: int | None


class Others(TypedDict):
    processes: int
    used_bytes: int | None
    users: list[UserShare] | None


class Notice(TypedDict):
    kind: NoticeKind
    text: str
    t: float
    shutdown_at: float | None


class Cell(TypedDict):
    count: int | None
    line: str
    start_t: float
    end_t: float | None
    error: bool


class Gpu(TypedDict):
    index: int
    uuid: str | None
    name: str | None
    lost: bool
    hidden: bool
    total_bytes: int | None
    used_bytes: int | None
    own_bytes: int | None
    own_source: NotRequired[OwnSource | None]
    own_reason: NotRequired[str | None]
    own_pid: NotRequired[int | None]
    own_candidates: NotRequired[int]
    unlisted_bytes: NotRequired[int | None]
    limit_kind: NotRequired[LimitKind | None]
    limit_hard: NotRequired[bool]
    limit_bytes: NotRequired[int | None]
    budget_bytes: int | None
    in_force: NotRequired[bool]
    pool_bytes: NotRequired[int | None]
    pool_known: NotRequired[bool]
    overhead_bytes: NotRequired[int | None]
    overhead_source: NotRequired[OverheadSource | None]
    over_reason: NotRequired[str | None]
    framework_bytes: int | None
    framework_peak_bytes: int | None
    processes_known: bool
    processes: NotRequired[list[Process]]  # absent in history (figures only)
    others: NotRequired[Others | None]


class Sample(TypedDict):
    t: float
    problem: str | None
    stalled_since: NotRequired[float | None]  # absent: the driver answered
    simulated: str | None
    policy: str | None
    policy_state: NotRequired[PolicyState | None]
    policy_note: NotRequired[str | None]
    framework: str | None
    framework_started: bool
    takes: NotRequired[str | None]
    pid_namespace: NotRequired[PidNamespace | None]
    limit_note: NotRequired[str | None]
    gpus: list[Gpu]
    notice: NotRequired[Notice | None]  # absent in history
    cells: NotRequired[list[Cell]]  # absent: no cell ended since the previous sample, none running


class Hello(TypedDict):
    protocol: Literal[1]
    type: Literal["hello"]
    package_version: str
    interval_s: float
    history_s: float
    history: list[Sample]


class SampleMessage(TypedDict):
    protocol: Literal[1]
    type: Literal["sample"]
    sample: Sample


class Configure(TypedDict):
    protocol: Literal[1]
    type: Literal["configure"]
    interval_s: float
    history_s: float


Message = Hello | SampleMessage | Configure

CONFIGURE: Schema[Configure] = Schema("comm.v1.json", "a configure message", "message", "configure")
MESSAGE: Schema[Message] = Schema("comm.v1.json", "a comm message", "message")
