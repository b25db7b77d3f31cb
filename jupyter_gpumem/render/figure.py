"""A kernel's GPU memory over time as a plotly figure: ``jupyter_gpumem.figure()``, and the picture a stopped
inline view leaves in its output (interactive without the kernel wherever plotly's mimetype renders:
JupyterLab and Notebook 7 with plotly installed, VS Code).

The live chart's content (labextension/src/chart/figure.ts): this kernel, its framework's in-use bytes, the other
processes, the budget, the hard limit the NVIDIA driver enforces where it binds (below the device total) and
reaches under the scale, the device total (a line when it fits under the scale, else a note), one mark per
over-budget episode with its reason on hover; the same scales (history.py). The trace names and their order
are pinned for both by tests/fixtures/chart/traces.json. plotly is imported only here, when a figure is made.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from jupyter_gpumem.i18n import gettext as _
from jupyter_gpumem.render import history, list_of, viewtext
from jupyter_gpumem.render.chart import CELLS_OPACITY, CELLS_TOP, LINES
from jupyter_gpumem.render.text import printable
from jupyter_gpumem.units import GiB, MiB

if TYPE_CHECKING:
    import plotly.graph_objects as go

PIP_VIEW = "%pip install 'jupyter-gpumem[view]'"
POINTS = 600  # per trace at most: one per pixel column of a wide output; peaks kept (history.decimate)


class Trace(NamedTuple):
    key: str
    colour: str  # JupyterLab's light theme's (--jp-brand-color1, --jp-accent-color1, ...), readable on dark too
    dash: str
    width: float


TRACES = tuple(  # the legend's order; the line styles are the live chart's (chart.json)
    Trace(key, colour, *LINES[key])
    for key, colour in (
        ("own", "#1976d2"),
        ("framework", "#00897b"),
        ("others", "#9e9e9e"),
        ("budget", "#d32f2f"),
        ("driverLimit", "#f57c00"),  # --jp-warn-color1
        ("total", "#757575"),
    )
)
MUTED = "#808080"  # text and grid on a transparent background: readable in light and dark themes
TIME = "%Y-%m-%d %H:%M:%S"  # a date axis's value in plotly's own form, to the second
CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"], "responsive": True}


class Cell(NamedTuple):
    """A notebook cell in view: from its start to its end (the last sample while it runs), and its name."""

    start_t: float
    end_t: float
    name: str  # as printed: "[7] train() (error)"


@dataclass(frozen=True)
class Plot:
    """What the chart shows, decided once for both drawings of it: the plotly figure here and the still SVG
    (still.py). Times in seconds, figures in bytes; ``empty``: why there is nothing to draw (then only ``gpu``)."""

    gpu: Mapping[str, Any] | None
    empty: str | None = None
    x0: float = 0.0
    x1: float = 1.0
    t: list[float] = field(default_factory=list)  # decimated (history.decimate: each bucket's largest value)
    values: dict[str, list[float]] = field(default_factory=dict)
    top: float = 1.0  # the y scale's end
    total: float = 0.0  # the device total: a line only where it fits under ``top``, else a note
    labels: Mapping[str, str] = field(default_factory=dict)
    marks: list[history.Mark] = field(default_factory=list)
    cells: list[Cell] = field(default_factory=list)

    @property
    def unit(self) -> tuple[str, int]:
        return ("GiB", GiB) if self.top >= GiB else ("MiB", MiB)

    def shown(self) -> list[Trace]:
        """The traces drawn, in the legend's order: as the live chart, only what has figures, the total only
        where it fits the scale, the driver's limit only where some of it is under the scale's top."""
        return [
            trace
            for trace in TRACES
            if not (trace.key == "total" and self.total > self.top)
            and not (trace.key == "driverLimit" and not any(v <= self.top for v in self.values[trace.key]))
            and any(not math.isnan(v) for v in self.values[trace.key])
        ]


def plot(
    samples: Iterable[Mapping[str, Any]], gpu: int | str | None = None, window_s: float = 900.0, points: int = POINTS
) -> Plot:
    """The samples' last ``window_s`` on one GPU (its index or uuid; None: the one the views show first), at
    most ``points`` per trace."""
    kept = list(samples)
    latest = kept[-1] if kept else None
    gpus = list(latest["gpus"]) if latest is not None and not latest.get("problem") else []
    chosen = _choose(gpus, gpu)
    series = None if chosen is None else history.of_samples(kept).series(viewtext.gpu_key(chosen))
    if latest is None or chosen is None or chosen["lost"] or series is None or len(series.t) < 2:
        return Plot(chosen, _empty(latest, gpus, gpu, chosen))
    x0, x1 = history.x_range(series.t, window_s)
    start = next(i for i, t in enumerate(series.t) if t >= x0)
    t, values = history.decimate(
        series.t[start:], {k: v[start:] for k, v in series.values.items()}, history.bucket_s(x1 - x0, points)
    )
    values["driverLimit"] = history.binding_limit(values)  # drawn only where it binds, as live
    return Plot(
        gpu=chosen,
        x0=x0,
        x1=x1,
        t=t,
        values=values,
        top=history.y_top(values),
        total=history.peak(values["total"]),
        labels=viewtext.chart_labels(viewtext.framework_name(latest)),
        marks=[m for m in series.marks if x0 <= m.t <= x1],
        cells=_cells_in_view(kept, series.t[-1], x0, x1),
    )


def figure(
    samples: Iterable[Mapping[str, Any]], gpu: int | str | None = None, window_s: float = 900.0, subtitle: str = ""
) -> go.Figure:
    """The samples' last ``window_s`` on one GPU (its index or uuid; None: the one the views show first);
    ``subtitle``: a line under the title (a stopped view's headline)."""
    try:
        import plotly.graph_objects as go
    except ImportError as error:
        raise ImportError(_("The chart needs plotly: {install}.").format(install=PIP_VIEW)) from error
    drawn = plot(samples, gpu, window_s)
    fig = go.Figure(layout=_layout(drawn.gpu, subtitle))
    if drawn.empty is not None:
        return _note(fig, drawn.empty)
    unit, size = drawn.unit
    times = [datetime.fromtimestamp(s) for s in drawn.t]
    _cells(fig, drawn, drawn.top / size)  # first: its area under the lines
    for trace in drawn.shown():
        label = drawn.labels[trace.key]
        fig.add_scatter(
            x=times,
            y=[None if math.isnan(v) else v / size for v in drawn.values[trace.key]],
            name=label,
            mode="lines",
            line={"color": trace.colour, "dash": trace.dash, "width": trace.width},
            fill="tozeroy" if trace.key == "own" else None,
            hovertemplate=f"{_plain(label)}: %{{y:.2f}} {unit}<extra></extra>",
        )
    if drawn.marks:
        fig.add_scatter(
            x=[datetime.fromtimestamp(m.t) for m in drawn.marks],
            y=[m.own_bytes / size for m in drawn.marks],
            name="over budget",
            mode="markers",
            marker={"symbol": "triangle-down", "size": 11, "color": TRACES[3].colour},
            hovertext=[_plain(viewtext.mark_title(m.t, m.reason)) for m in drawn.marks],
            hoverinfo="text",
            showlegend=False,
        )
    if drawn.total > drawn.top:
        fig.add_annotation(
            text=viewtext.total_above(drawn.total), xref="paper", yref="paper", x=1, y=1.0, xanchor="right",
            yanchor="bottom", showarrow=False, font={"size": 11, "color": MUTED},
        )  # fmt: skip
    fig.update_xaxes(range=[datetime.fromtimestamp(drawn.x0), datetime.fromtimestamp(drawn.x1)])
    fig.update_yaxes(range=[0, drawn.top / size], title_text=unit)
    return fig


def _cells_in_view(samples: list[Mapping[str, Any]], last: float, x0: float, x1: float) -> list[Cell]:
    """Each notebook cell the samples name (``cells``) that lies in view; a running one ends at ``last``."""
    cells: dict[float, Mapping[str, Any]] = {}
    for sample in samples:
        for cell in sample.get("cells") or ():
            cells[cell["start_t"]] = cell  # a running cell's later word (ended) replaces it
    shown = []
    for cell in cells.values():
        start, end = cell["start_t"], cell["end_t"] if cell["end_t"] is not None else last
        if end < x0 or start > x1:
            continue
        count = "*" if cell["count"] is None else cell["count"]
        name = f"[{count}] {printable(cell['line'])}"
        shown.append(Cell(start, end, _("{cell} (error)").format(cell=name) if cell["error"] else name))
    return shown


def _cells(fig: go.Figure, drawn: Plot, top: float) -> None:
    """Each notebook cell in view as the live chart draws them (chart/figure.ts): one trace, a line along the
    top whose hover names the cell at each sample time it spans, and its area a band behind the lines."""
    from plotly.colors import hex_to_rgb

    xs: list[datetime | None] = []
    names: list[str | None] = []
    for cell in drawn.cells:
        name = _plain(cell.name)
        span = [cell.start_t, *(s for s in drawn.t if cell.start_t < s < cell.end_t), cell.end_t]
        xs += [*(datetime.fromtimestamp(s) for s in span), None]  # None: a gap between two cells' areas
        names += [*(name for _ in span), None]
    if xs:
        fig.add_scatter(
            x=xs, y=[None if x is None else top * CELLS_TOP for x in xs], mode="lines", name="cells", showlegend=False,
            hovertext=names, hovertemplate="%{hovertext}<extra></extra>", line={"color": MUTED, "width": 3},
            fill="tozeroy", fillcolor=f"rgba{(*hex_to_rgb(TRACES[0].colour), CELLS_OPACITY)}",  # this kernel's, as live
        )  # fmt: skip


def bundle(fig: go.Figure) -> dict[str, object]:
    """The figure as plotly's mimetype (with the mode bar's settings), for an output's bundle, lean as a saved
    notebook keeps it: no template (plotly.js's defaults, as the live chart), times to the second in the form
    plotly reads ("2026-11-25 14:03:27", the kernel's clock), figures to a ten-thousandth of the scale (a
    fraction of a pixel). plotly.js itself is never in it: the frontend's plotly renderer draws it."""
    data = fig.to_plotly_json()
    layout = dict(data["layout"])
    layout.pop("template", None)
    top = float(layout.get("yaxis", {}).get("range", (0, 1))[1] or 1)
    digits = max(0, 3 - math.floor(math.log10(top)))
    traces = [{**trace, **{k: _lean(trace[k], digits) for k in ("x", "y") if k in trace}} for trace in data["data"]]
    if "range" in layout.get("xaxis", {}):
        layout["xaxis"] = {**layout["xaxis"], "range": _lean(layout["xaxis"]["range"], digits)}
    return {"application/vnd.plotly.v1+json": {"data": traces, "layout": layout, "config": CONFIG}}


def _lean(values: Iterable[Any], digits: int) -> list[Any]:
    return [
        v.strftime(TIME) if isinstance(v, datetime) else round(v, digits) if isinstance(v, float) else v for v in values
    ]


def _choose(gpus: list[Mapping[str, Any]], gpu: int | str | None) -> Mapping[str, Any] | None:
    if gpu is None:
        key = viewtext.choose_gpu(gpus, None)
        return next((g for g in gpus if viewtext.gpu_key(g) == key), None)
    return next((g for g in gpus if gpu in (g["index"], g.get("uuid")) and not isinstance(gpu, bool)), None)


def _empty(
    latest: Mapping[str, Any] | None,
    gpus: list[Mapping[str, Any]],
    gpu: int | str | None,
    chosen: Mapping[str, Any] | None,
) -> str:
    """Why there is nothing to draw, as a sentence."""
    if latest is None:
        return _(
            "No GPU memory recorded yet: this kernel records once jupyter_gpumem is loaded (%load_ext jupyter_gpumem)."
        )
    if latest.get("problem"):
        return str(latest["problem"])
    if not gpus:
        return _("The NVIDIA driver is loaded but reports no GPUs.")
    if chosen is not None and chosen["lost"]:
        return _("This GPU is lost: no figures until it is reset.")
    if chosen is None:
        named = list_of([f"{g['index']}" for g in gpus])
        return _("No GPU {gpu} here: the GPUs are {named} (or their uuids).").format(gpu=repr(gpu), named=named)
    return _("Collecting…")


def _layout(gpu: Mapping[str, Any] | None, subtitle: str) -> dict[str, object]:
    title = (
        ""
        if gpu is None
        else _("GPU {index} · {name} — this kernel's GPU memory").format(
            index=gpu["index"], name=_plain(printable(gpu.get("name") or _("unknown GPU")))
        )
    )
    if subtitle:
        title = f"{title}<br><sup>{_plain(subtitle)}</sup>"
    grid = "rgba(128,128,128,0.25)"
    return {
        "template": "none",  # plotly.js's own defaults, as the live chart: the rest is set here
        "title": {"text": title, "font": {"size": 13}, "x": 0},
        "height": 300 if not subtitle else 320,
        "margin": {"l": 48, "r": 12, "t": 52 if subtitle else 36, "b": 36},
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "font": {"color": MUTED, "size": 11},
        "hovermode": "x unified",
        "legend": {"orientation": "h", "y": -0.18, "x": 0},
        "xaxis": {"type": "date", "hoverformat": "%H:%M:%S", "gridcolor": grid, "zeroline": False},
        "yaxis": {"gridcolor": grid, "zeroline": False, "rangemode": "tozero"},
    }


def _plain(text: str) -> str:
    """Text from the kernel for plotly, which reads tags in titles and hovers (and follows links): escaped, so a
    reason or a GPU name holding "<b>" or "<a href=...>" stays as written (chart/figure.ts hoverText does the
    same)."""
    return html.escape(text, quote=False)


def _note(fig: go.Figure, text: str) -> go.Figure:
    fig.add_annotation(text=_plain(text), xref="paper", yref="paper", x=0.5, y=0.5, showarrow=False)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig
