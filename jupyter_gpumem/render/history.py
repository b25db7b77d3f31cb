"""The inline view's figures per GPU over its window, and what its chart draws of them: the same series,
scales, decimation and over-budget marks as the sidebar's chart (labextension/src/history.ts, chart.ts).

Samples arrive as the protocol encodes them (protocol.encode_sample, or figures_only in the history).
Numbers only, NaN where a figure was N/A (a gap, never 0). Decimation keeps each bucket's largest value,
so a memory peak is never smoothed away, and buckets are aligned to multiples of their size, so a new
sample changes only the last one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jupyter_gpumem.render.viewtext import gpu_key
from jupyter_gpumem.units import GiB, MiB

FIELDS = ("own", "framework", "others", "total", "budget")
OVER_ENDS_BELOW = 0.95  # an over-budget episode ends below this share of the budget (history.ts, alerts.py)
MIN_SPAN_S = 120.0  # the shortest x range: a 20-second ramp gets a sixth of the width (chart.ts)
HEADROOM = 1.08
BUCKETS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600)


@dataclass(frozen=True)
class Mark:
    t: float
    own_bytes: int
    reason: str | None


@dataclass
class Series:
    t: list[float] = field(default_factory=list)
    values: dict[str, list[float]] = field(default_factory=lambda: {f: [] for f in FIELDS})
    marks: list[Mark] = field(default_factory=list)
    over: bool = False


def _value(v: Any) -> float:
    return math.nan if v is None else float(v)


class History:
    """Per-GPU series over ``capacity`` samples."""

    def __init__(self, capacity: int):
        self.capacity = max(1, capacity)
        self._series: dict[str, Series] = {}

    def series(self, key: str) -> Series | None:
        return self._series.get(key)

    def push(self, sample: dict[str, Any]) -> None:
        t = float(sample["t"])
        for gpu in sample["gpus"]:
            key = gpu_key(gpu)
            s = self._series.setdefault(key, Series())
            if s.t and t <= s.t[-1]:
                continue  # replayed history and the live stream overlap by a sample
            own, used, budget = gpu.get("own_bytes"), gpu.get("used_bytes"), gpu.get("budget_bytes")
            others = None if used is None else max(0, used - (own or 0))
            s.t.append(t)
            for name, v in (
                ("own", own),
                ("framework", gpu.get("framework_bytes")),
                ("others", others),
                ("total", gpu.get("total_bytes")),
                ("budget", budget),
            ):
                s.values[name].append(_value(v))
            if not s.over and own is not None and budget is not None and own > budget:
                s.marks.append(Mark(t, own, gpu.get("over_reason")))
                s.over = True
            elif s.over and (budget is None or (own is not None and own < OVER_ENDS_BELOW * budget)):
                s.over = False  # N/A for a moment does not end it
            excess = len(s.t) - self.capacity
            if excess > self.capacity // 8:  # cut in one go every so often, not shift every sample
                del s.t[:excess]
                for values in s.values.values():
                    del values[:excess]
                s.marks = [m for m in s.marks if m.t >= s.t[0]]


def bucket_s(span_s: float, width_px: int) -> float:
    """One point per pixel column at most, from a short ladder of sizes (chart.ts bucketMs)."""
    wanted = span_s / max(1, width_px)
    for size in BUCKETS_S:
        if size >= wanted:
            return float(size)
    return math.ceil(wanted / 3600) * 3600.0


def decimate(t: np.ndarray, values: dict[str, np.ndarray], size_s: float) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Each bucket of ``size_s`` keeps its largest value (NaN only if all are) at the time of its last sample."""
    if len(t) == 0:
        return t, values
    keys = np.floor(t / size_s)
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    ends = np.concatenate((starts[1:] - 1, [len(t) - 1]))
    with np.errstate(invalid="ignore"):
        return t[ends], {name: np.fmax.reduceat(v, starts) for name, v in values.items()}


@dataclass(frozen=True)
class Scale:
    top: float  # bytes
    unit: str  # "GiB" | "MiB"
    size: float  # bytes per unit
    dtick: float  # in the unit


def _peak(v: np.ndarray) -> float:
    if len(v) == 0 or bool(np.all(np.isnan(v))):
        return 0.0
    return float(np.nanmax(v))


def y_scale(values: dict[str, np.ndarray], max_ticks: int = 5) -> Scale:
    """Up to the larger of this kernel's peak (or its framework's) and its budget, with headroom, to a
    round tick; only when this kernel holds nothing and has no budget do the others set it; never the
    device total (chart.ts yScale)."""
    top = max(_peak(values["own"]), _peak(values["framework"]), _peak(values["budget"]))
    if top <= 0:
        top = _peak(values["others"])
    top = max(top * HEADROOM, 256 * MiB)
    unit, size = ("GiB", float(GiB)) if top >= GiB else ("MiB", float(MiB))
    raw = top / size / max(1, max_ticks)
    power = 10 ** math.floor(math.log10(raw))
    step = next((m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw), 10 * power)
    count = math.ceil(top / size / step - 1e-9)
    return Scale(count * step * size, unit, size, step)


def x_range(t: np.ndarray, window_s: float) -> tuple[float, float]:
    first, last = float(t[0]), float(t[-1])
    if last - first > window_s:
        return last - window_s, last
    return first, max(last, first + min(MIN_SPAN_S, window_s))


@dataclass(frozen=True)
class ChartData:
    """What the chart draws: times (s since the epoch), each line in ``scale.unit``, the marks, the
    x range and whether the device total fits under the y scale (else it is a note at the top)."""

    t: np.ndarray
    lines: dict[str, np.ndarray]
    scale: Scale
    x0: float
    x1: float
    total: float  # the device total's peak, bytes (0: unknown)
    total_fits: bool
    marks: list[Mark]


def chart_data(series: Series, window_s: float, width_px: int = 600) -> ChartData | None:
    """None before there are two samples to draw a line between."""
    if len(series.t) < 2:
        return None
    t = np.asarray(series.t, dtype=np.float64)
    values = {name: np.asarray(v, dtype=np.float64) for name, v in series.values.items()}
    x0, x1 = x_range(t, window_s)
    shown = t >= x0
    t, values = decimate(t[shown], {k: v[shown] for k, v in values.items()}, bucket_s(x1 - x0, width_px))
    scale = y_scale(values)
    total = _peak(values["total"])
    fits = 0 < total <= scale.top
    lines = {name: v / scale.size for name, v in values.items()}
    marks = [m for m in series.marks if x0 <= m.t <= x1]
    return ChartData(t, lines, scale, x0, x1, total, fits, marks)
