"""A kernel's figures per GPU over a window, as the chart draws them: the same series, over-budget marks,
ranges and decimation as the sidebar's chart (labextension/src/model/history.ts and chart/), with its thresholds
(chart.json), for the plotly figure (figure.py).

Samples arrive as the protocol encodes them (protocol.encode_sample, or figures_only in the history).
Numbers only, NaN where a figure was N/A (a gap, never 0). Decimation keeps each bucket's largest value,
so a memory peak is never smoothed away, and buckets are aligned to multiples of their size, so a new
sample changes only the last one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jupyter_gpumem.render.chart import BUCKETS_S, HEADROOM, MIN_SPAN_S, MIN_TOP_BYTES, OVER_ENDS_BELOW
from jupyter_gpumem.render.viewtext import gpu_key

FIELDS = ("own", "framework", "others", "total", "budget", "driverLimit")  # the live chart's keys (model/history.ts)


@dataclass(frozen=True)
class Mark:
    """Where an over-budget episode began: this kernel's figure then, and the kernel's reason."""

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

    def push(self, sample: Mapping[str, Any]) -> None:
        t = float(sample["t"])
        for gpu in sample["gpus"]:
            key = gpu_key(gpu)
            s = self._series.setdefault(key, Series())
            if s.t and t <= s.t[-1]:
                continue  # replayed history and the live stream overlap by a sample
            # The last figures a stalled driver gave are not this moment's: a gap in the lines (model/history.ts).
            fresh = sample.get("stalled_since") is None
            own, used = (gpu.get("own_bytes"), gpu.get("used_bytes")) if fresh else (None, None)
            budget = gpu.get("budget_bytes")
            limit = gpu.get("driver_limit") or {}
            others = None if used is None else max(0, used - (own or 0))
            s.t.append(t)
            for name, v in (
                ("own", own),
                ("framework", gpu.get("framework_bytes") if fresh else None),
                ("others", others),
                ("total", gpu.get("total_bytes")),
                ("budget", budget),
                ("driverLimit", limit.get("hard_bytes")),
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


def of_samples(samples: Iterable[Mapping[str, Any]]) -> History:
    """The series of a list of samples (the sampler's history), every one kept."""
    kept = list(samples)
    history = History(len(kept))
    for sample in kept:
        history.push(sample)
    return history


def bucket_s(span_s: float, points: int) -> float:
    """At most ``points`` buckets over ``span_s``, from a short ladder of sizes (chart/range.ts bucketMs)."""
    wanted = span_s / max(1, points)
    for size in BUCKETS_S:
        if size >= wanted:
            return float(size)
    return math.ceil(wanted / 3600) * 3600.0


def decimate(
    t: list[float], values: dict[str, list[float]], size_s: float
) -> tuple[list[float], dict[str, list[float]]]:
    """Each bucket of ``size_s`` keeps its largest value (NaN only if all are) at the time of its last sample."""
    times: list[float] = []
    kept: dict[str, list[float]] = {name: [] for name in values}
    bucket = math.nan
    for i, when in enumerate(t):
        key = math.floor(when / size_s)
        if key != bucket:
            bucket = key
            times.append(when)
            for name, v in values.items():
                kept[name].append(v[i])
            continue
        times[-1] = when
        for name, v in values.items():
            if not math.isnan(v[i]) and (math.isnan(kept[name][-1]) or v[i] > kept[name][-1]):
                kept[name][-1] = v[i]
    return times, kept


def peak(values: Iterable[float]) -> float:
    """The largest known value; 0 when none is known."""
    return max((v for v in values if not math.isnan(v)), default=0.0)


def binding_limit(values: Mapping[str, list[float]]) -> list[float]:
    """The NVIDIA driver's hard limit where it binds (below that moment's device total, or the total not known),
    NaN elsewhere: what the chart draws and, without a budget, scales to (chart/scale.ts bindingLimit)."""
    return [
        limit if not math.isnan(limit) and (math.isnan(total) or total > limit) else math.nan
        for limit, total in zip(values["driverLimit"], values["total"], strict=True)
    ]


def y_top(values: Mapping[str, list[float]]) -> float:
    """Up to the larger of this kernel's peak (or its framework's) and its budget, with headroom; without a
    budget, the driver's hard limit where it binds stands in for one; only when this kernel holds nothing and has
    no budget do the others set it; never the device total (chart/scale.ts)."""
    budget = peak(values["budget"])
    top = max(peak(values["own"]), peak(values["framework"]), budget if budget > 0 else peak(binding_limit(values)))
    if top <= 0:
        top = peak(values["others"])
    return max(top * HEADROOM, MIN_TOP_BYTES)


def x_range(t: list[float], window_s: float) -> tuple[float, float]:
    """From the first sample to the last, at least MIN_SPAN_S, at most the window (then it slides)."""
    first, last = t[0], t[-1]
    if last - first > window_s:
        return last - window_s, last
    return first, max(last, first + min(MIN_SPAN_S, window_s))
