"""The chart's thresholds and constants, read from chart.json: the one file the sidebar's chart
(labextension/src/model/chart.json is its copy) and the kernel's own figures, still pictures and warnings take
them from, so that the two languages cannot drift apart."""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any, NamedTuple

_CHART: dict[str, Any] = json.loads(files("jupyter_gpumem.render").joinpath("chart.json").read_text(encoding="utf-8"))


class LineStyle(NamedTuple):
    dash: str  # plotly's: "solid", "dot" or "dash"
    width: float  # in pixels


OVER_ENDS_BELOW: float = _CHART["over_ends_below"]
"""An over-budget episode starts above the budget and ends below this share of it (one mark, one warning)."""
MIN_SPAN_S: float = float(_CHART["min_span_s"])
"""The shortest x range: a 20-second ramp gets a sixth of the width, not a few pixels."""
HEADROOM: float = _CHART["headroom"]
"""The y scale's room above the highest figure it has to show."""
MIN_TOP_BYTES: int = _CHART["min_top_bytes"]
"""The y scale's lowest top, for a kernel that holds (nearly) nothing."""
BUCKETS_S: tuple[int, ...] = tuple(_CHART["buckets_s"])
"""The ladder of decimation bucket sizes: the buckets, aligned to multiples of their size, stay put while the
x range grows."""
LINES: dict[str, LineStyle] = {
    key: LineStyle(style["dash"], float(style["width"])) for key, style in _CHART["lines"].items()
}
"""Each line's dash and width, by its key."""
CELLS_TOP: float = _CHART["cells"]["top"]
"""The cells' band reaches this share of the y scale's top."""
CELLS_OPACITY: float = _CHART["cells"]["opacity"]
"""The cells' band is this kernel's colour at this opacity."""
