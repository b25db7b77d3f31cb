# Generated from wire/schemas/comm.v1.json (SampleGpu's x-line) by `python tests/wire/test_generated.py --write`: do not edit.
"""The GPU's lines that its schema declares (docs/protocol.md, "A field's line"): a SampleGpu field shown,
where it is not null, as its words with the figure, formatted as ``format`` says, in place of ``%1``. Each
surface words them through its own catalogue and formatter (render/viewtext.py; format/panel.ts from
labextension/src/wire/lines.ts), in this order."""

from __future__ import annotations

from typing import Literal, NamedTuple

GpuLineField = Literal["unlisted_bytes"]
GpuLineFormat = Literal["gib_or_mib"]


class GpuLine(NamedTuple):
    field: GpuLineField  # the SampleGpu key, as on the wire
    words: str  # the message (its msgid): %1 is the figure
    format: GpuLineFormat  # how the figure is worded


GPU_LINES: tuple[GpuLine, ...] = (
    GpuLine(
        "unlisted_bytes", "Not listed: %1 the driver uses for processes it hides (other containers’)", "gib_or_mib"
    ),
)
