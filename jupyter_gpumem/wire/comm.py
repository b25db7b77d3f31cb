"""The comm protocol between a kernel and the sidebar or an inline view, version 1: its comm target, the
settings' defaults and ranges, and its messages as typed values. The reference is the schema
``schemas/comm.v1.json`` (docs/protocol.md); the types are generated from it (``generated/comm_v1.py``): a field it
requires, one every release has sent, is a plain key; one added since is NotRequired, and a reader gets its default
where an older kernel leaves it out (``Schema.problem``). The TypeScript side checks the same schema."""

from jupyter_gpumem.wire.generated.comm_v1 import (
    Cell,
    Configure,
    GpuProcess,
    Hello,
    LimitKind,
    Notice,
    OtherUsers,
    OverheadSource,
    OwnSource,
    PolicyState,
    Said,
    Sample,
    SampleGpu,
    SampleMessage,
    UserShare,
)
from jupyter_gpumem.wire.schemas import Schema, bounds

# The generated types this module's callers use.
__all__ = [
    "Cell",
    "Configure",
    "GpuProcess",
    "Hello",
    "LimitKind",
    "Notice",
    "OtherUsers",
    "OverheadSource",
    "OwnSource",
    "PolicyState",
    "Said",
    "Sample",
    "SampleGpu",
    "SampleMessage",
    "UserShare",
]

PROTOCOL = 1
TARGET = "jupyter_gpumem"  # the comm target the sidebar registers

DEFAULT_INTERVAL_S = 1.0  # the sidebar's defaults too (labextension/src/wire/protocol.ts)
DEFAULT_HISTORY_S = 900.0

TABLE = ("processes", "others")  # what a sample says of processes; history keeps only the figures

INTERVAL_RANGE_S = bounds("comm.v1.json", "configure", "interval_s")
HISTORY_RANGE_S = bounds("comm.v1.json", "configure", "history_s")

Message = Hello | SampleMessage | Configure

CONFIGURE: Schema[Configure] = Schema("comm.v1.json", "a configure message", "message", "configure")
MESSAGE: Schema[Message] = Schema("comm.v1.json", "a comm message", "message")
