"""The chart of a stopped inline view as a small inline SVG, for the still HTML beside its plotly figure: what
nbconvert's HTML export (JupyterLab's "Export as HTML"), GitHub and a frontend without plotly's renderer show,
where text/html outranks plotly's mimetype. Drawn here in Python, without plotly.

It is the plotly figure's picture (figure.plot decides what both show): the same traces, colours, dashes and
scales (this kernel, its framework, the others, the budget, the driver's limit where it binds, the device total
or its note above the scale), the over-budget marks and the cells in view, a time axis with a few labels in the
kernel's clock. Decimated to about a point per pixel column, each keeping its bucket's largest value, so a peak
stays. Colours are the figure's mid tones and the text and grid a grey, on a transparent background: readable in
light and dark themes. Every text from the kernel or the GPU host (a cell's line, a reason) is escaped; a tooltip
(an SVG title) names a cell or a mark's reason on hover.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from html import escape
from typing import Any

from jupyter_gpumem.i18n import gettext as _
from jupyter_gpumem.render import list_of, viewtext
from jupyter_gpumem.render.chart import CELLS_OPACITY
from jupyter_gpumem.render.figure import MUTED, TRACES, Plot, Trace, plot
from jupyter_gpumem.render.width import columns

WIDTH, HEIGHT = 720, 236  # with the legend on one row; each more row adds LEGEND_ROW_PX
LEGEND_ROW_PX = 16
LEFT, RIGHT, TOP, BOTTOM = 40, 10, 18, 48  # the plot's margins: y labels, the time axis and the legend below
GRID = "rgba(128,128,128,0.25)"
DASHES = {"solid": None, "dot": "2 3", "dash": "6 4"}
# The legend's 11 px text: about 7 px a Latin letter, and a CJK character (two columns, render/width.py) about
# the font's size, which two columns' 14 px cover.
COLUMN_PX = 7
TIME_STEPS_S = (10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)


def svg(samples: Iterable[Mapping[str, Any]], gpu: int | str | None = None, window_s: float = 900.0) -> str | None:
    """The samples' last ``window_s`` on one GPU (as figure.figure takes them) as an ``<svg>`` element; None
    with nothing to draw (fewer than two samples, a lost GPU: the still HTML's header says so already)."""
    return draw(plot(samples, gpu, window_s, points=WIDTH - LEFT - RIGHT))


def draw(drawn: Plot) -> str | None:
    if drawn.empty is not None:
        return None
    unit, size = drawn.unit
    shown = drawn.shown()
    scale = _Scale(drawn)
    names = list_of([drawn.labels[trace.key] for trace in shown])
    # Outside the f-string: babel's extractor does not look inside one, so the message would stay English.
    label = _("GPU memory over time ({unit}): {names}").format(unit=unit, names=names)
    legend, rows = _legend(shown, drawn.labels)
    height = HEIGHT + (rows - 1) * LEGEND_ROW_PX
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="100%" '
        f'style="max-width:{WIDTH}px;height:auto;display:block" role="img" font-size="11" fill="{MUTED}" '
        f'aria-label="{escape(label)}">'
    ]
    parts += _axes(scale, drawn.top / size, unit)
    parts += _cells(scale, drawn)
    for trace in shown:
        parts += _trace(scale, trace, drawn.t, drawn.values[trace.key])
    for mark in drawn.marks:
        x, y = scale.x(mark.t), scale.y(mark.own_bytes)
        title = escape(viewtext.mark_title(mark.t, mark.reason))
        parts.append(
            f'<path d="M{x - 5:.0f},{y - 8:.0f}h10l-5,8z" fill="{TRACES[3].colour}"><title>{title}</title></path>'
        )
    if drawn.total > drawn.top:
        note = escape(viewtext.total_above(drawn.total))
        parts.append(f'<text x="{WIDTH - RIGHT}" y="{TOP - 6}" text-anchor="end">{note}</text>')
    parts += legend
    parts.append("</svg>")
    return "".join(parts)


class _Scale:
    """Seconds and bytes to the SVG's pixels."""

    def __init__(self, drawn: Plot):
        self.x0, self.span = drawn.x0, max(drawn.x1 - drawn.x0, 1e-9)
        self.top = drawn.top
        self.bottom = HEIGHT - BOTTOM

    def x(self, t: float) -> float:
        return LEFT + (t - self.x0) / self.span * (WIDTH - LEFT - RIGHT)

    def y(self, v: float) -> float:
        return self.bottom - min(v, self.top) / self.top * (self.bottom - TOP)


def _axes(scale: _Scale, top: float, unit: str) -> list[str]:
    """A grid line and label per round figure of the unit, and a few clock times under the plot."""
    step = _nice(top / 4)
    lines, labels = [], []
    for i in range(int(top / step) + 1):
        v = i * step
        y = scale.bottom - v / top * (scale.bottom - TOP)
        lines.append(f"M{LEFT},{y:.0f}H{WIDTH - RIGHT}")
        labels.append(f'<text x="{LEFT - 4}" y="{y + 4:.0f}">{v:g}</text>')
    parts = [
        f'<path d="{"".join(lines)}" stroke="{GRID}"/>',
        f'<g text-anchor="end">{"".join(labels)}<text x="{LEFT - 4}" y="{TOP - 6}">{unit}</text></g>',
    ]
    ticks = []
    for t in _times(scale.x0, scale.x0 + scale.span):
        clock = datetime.fromtimestamp(t).strftime("%H:%M:%S" if scale.span < 300 else "%H:%M")
        ticks.append(f'<text x="{scale.x(t):.0f}" y="{scale.bottom + 14}">{clock}</text>')
    parts.append(f'<g text-anchor="middle">{"".join(ticks)}</g>')
    return parts


def _nice(step: float) -> float:
    """The round step (1, 2 or 5 times a power of ten) at or above ``step``."""
    power = 10.0 ** math.floor(math.log10(step))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= step * 0.999)


def _times(x0: float, x1: float) -> list[float]:
    """Round clock times (in the kernel's time zone) between ``x0`` and ``x1``, three to six of them."""
    step = next((s for s in TIME_STEPS_S if (x1 - x0) / s <= 6), TIME_STEPS_S[-1])
    offset = (datetime.fromtimestamp(x0).astimezone().utcoffset() or timedelta()).total_seconds()
    first = math.ceil((x0 + offset) / step) * step - offset
    return [first + i * step for i in range(int((x1 - first) // step) + 1)]


def _cells(scale: _Scale, drawn: Plot) -> list[str]:
    """Each cell in view: a faint band in this kernel's colour with a line along its top, named on hover."""
    parts = []
    for cell in drawn.cells:
        x0, x1 = scale.x(max(cell.start_t, drawn.x0)), scale.x(min(cell.end_t, drawn.x1))
        width = max(x1 - x0, 1)
        parts.append(
            f"<g><title>{escape(cell.name)}</title>"
            f'<rect x="{x0:.0f}" y="{TOP}" width="{width:.0f}" height="{scale.bottom - TOP}" fill="{TRACES[0].colour}" '
            f'fill-opacity="{CELLS_OPACITY:g}"/>'
            f'<path d="M{x0:.0f},{TOP + 1.5}h{width:.0f}" stroke="{MUTED}" stroke-width="3"/></g>'
        )
    return parts


def _trace(scale: _Scale, trace: Trace, t: list[float], values: list[float]) -> list[str]:
    """One trace as a path (a gap where a figure was N/A), this kernel's with its area down to zero."""
    runs: list[list[tuple[int, int]]] = [[]]
    for when, v in zip(t, values, strict=True):
        if math.isnan(v):
            if runs[-1]:
                runs.append([])
            continue
        runs[-1].append((round(scale.x(when)), round(scale.y(v))))
    runs = [_flat(run) for run in runs if run]
    line = "".join("M" + " ".join(f"{x},{y}" for x, y in run) for run in runs)
    dash = DASHES.get(trace.dash)
    parts = []
    if trace.key == "own":
        area = "".join(f"M{run[0][0]},{scale.bottom}L" + " ".join(f"{x},{y}" for x, y in run) + f"V{scale.bottom}Z"
                       for run in runs)  # fmt: skip
        parts.append(f'<path d="{area}" fill="{trace.colour}" fill-opacity="0.2"/>')
    parts.append(
        f'<path d="{line}" fill="none" stroke="{trace.colour}" stroke-width="{trace.width:g}"'
        + (f' stroke-dasharray="{dash}"' if dash else "")
        + ' stroke-linejoin="round"/>'
    )
    return parts


def _flat(run: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """A run without the points a straight stretch passes through (a flat budget line is two points)."""
    kept = run[:1]
    for i in range(1, len(run) - 1):
        (_, ya), (x, y), (_, yb) = kept[-1], run[i], run[i + 1]
        if not (ya == y == yb) and run[i] != kept[-1]:
            kept.append((x, y))
    if len(run) > 1:
        kept.append(run[-1])
    return kept


def _legend(shown: list[Trace], labels: Mapping[str, str]) -> tuple[list[str], int]:
    """The traces' names under the time axis, each after a short line in its style, on as many rows as they
    need (the live chart's legend wraps too); and the number of rows."""
    parts, x, y, rows = [], LEFT, HEIGHT - 10, 1
    for trace in shown:
        if x > LEFT and x + 27 + COLUMN_PX * columns(labels[trace.key]) > WIDTH:
            x, y, rows = LEFT, y + LEGEND_ROW_PX, rows + 1
        dash = DASHES.get(trace.dash)
        label = escape(labels[trace.key])
        parts.append(
            f'<path d="M{x},{y - 4}h22" stroke="{trace.colour}" stroke-width="{max(trace.width, 1.5):g}"'
            + (f' stroke-dasharray="{dash}"' if dash else "")
            + f'/><text x="{x + 27}" y="{y}">{label}</text>'
        )
        x += 27 + COLUMN_PX * columns(labels[trace.key]) + 18
    return parts, rows
