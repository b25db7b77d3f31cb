"""A kernel's GPU memory over time as a plotly figure: ``jupyter_gpumem.figure()``, and the picture a stopped
inline view leaves in its output (interactive without the kernel wherever plotly's mimetype renders:
JupyterLab and Notebook 7 with plotly installed, VS Code).

The live chart's content (labextension/src/widgets/chart.ts): this kernel, its framework's in-use bytes, the other
processes, the budget, the device total (a line when it fits under the scale, else a note), one mark per
over-budget episode with its reason on hover; the same scales (history.py). The trace names and their order
are pinned for both by tests/fixtures/chart/traces.json. plotly is imported only here, when a figure is made.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from jupyter_gpumem.render import history, viewtext
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


TRACES = (  # the legend's order and the line styles of the live chart (labextension/src/widgets/figure.ts)
    Trace("own", "#1976d2", "solid", 2.0),
    Trace("framework", "#00897b", "dot", 1.5),
    Trace("others", "#9e9e9e", "solid", 1.5),
    Trace("budget", "#d32f2f", "dash", 1.5),
    Trace("total", "#757575", "solid", 1.0),
)
MUTED = "#808080"  # text and grid on a transparent background: readable in light and dark themes
CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"], "responsive": True}


def figure(
    samples: Iterable[Mapping[str, Any]], gpu: int | str | None = None, window_s: float = 900.0, subtitle: str = ""
) -> go.Figure:
    """The samples' last ``window_s`` on one GPU (its index or uuid; None: the one the views show first);
    ``subtitle``: a line under the title (a stopped view's headline)."""
    try:
        import plotly.graph_objects as go
    except ImportError as error:
        raise ImportError(f"The chart needs plotly: {PIP_VIEW}.") from error
    kept = list(samples)
    latest = kept[-1] if kept else None
    gpus = list(latest["gpus"]) if latest is not None and not latest.get("problem") else []
    chosen = _choose(gpus, gpu)
    fig = go.Figure(layout=_layout(chosen, subtitle))
    series = None if chosen is None else history.of_samples(kept).series(viewtext.gpu_key(chosen))
    if latest is None or chosen is None or chosen["lost"] or series is None or len(series.t) < 2:
        return _note(fig, _empty(latest, gpus, gpu, chosen))
    x0, x1 = history.x_range(series.t, window_s)
    start = next(i for i, t in enumerate(series.t) if t >= x0)
    t, values = history.decimate(
        series.t[start:], {k: v[start:] for k, v in series.values.items()}, history.bucket_s(x1 - x0, POINTS)
    )
    top = history.y_top(values)
    unit, size = ("GiB", GiB) if top >= GiB else ("MiB", MiB)
    total = history.peak(values["total"])
    labels = viewtext.chart_labels(latest.get("framework"))
    times = [datetime.fromtimestamp(s) for s in t]
    _cells(fig, kept, t, series.t[-1], x0, x1, top / size)  # first: its area under the lines
    for trace in TRACES:
        shown = [None if math.isnan(v) else v / size for v in values[trace.key]]
        if (trace.key == "total" and total > top) or all(v is None for v in shown):
            continue  # as the live chart: only what has figures, the total only where it fits the scale
        fig.add_scatter(
            x=times,
            y=shown,
            name=labels[trace.key],
            mode="lines",
            line={"color": trace.colour, "dash": trace.dash, "width": trace.width},
            fill="tozeroy" if trace.key == "own" else None,
            hovertemplate=f"{_plain(labels[trace.key])}: %{{y:.2f}} {unit}<extra></extra>",
        )
    marks = [m for m in series.marks if x0 <= m.t <= x1]
    if marks:
        fig.add_scatter(
            x=[datetime.fromtimestamp(m.t) for m in marks],
            y=[m.own_bytes / size for m in marks],
            name="over budget",
            mode="markers",
            marker={"symbol": "triangle-down", "size": 11, "color": TRACES[3].colour},
            hovertext=[_plain(viewtext.mark_title(m.t, m.reason)) for m in marks],
            hoverinfo="text",
            showlegend=False,
        )
    if total > top:
        fig.add_annotation(
            text=viewtext.total_above(total), xref="paper", yref="paper", x=1, y=1.0, xanchor="right",
            yanchor="bottom", showarrow=False, font={"size": 11, "color": MUTED},
        )  # fmt: skip
    fig.update_xaxes(range=[datetime.fromtimestamp(x0), datetime.fromtimestamp(x1)])
    fig.update_yaxes(range=[0, top / size], title_text=unit)
    return fig


def _cells(
    fig: go.Figure, samples: list[Mapping[str, Any]], t: list[float], last: float, x0: float, x1: float, top: float
) -> None:
    """Each notebook cell in view (the samples' ``cells``) as the live chart draws them (widgets/figure.ts): one
    trace, a line along the top whose hover names the cell at each sample time ``t`` it spans, and its area a band
    behind the lines."""
    from plotly.colors import hex_to_rgb

    cells: dict[float, Mapping[str, Any]] = {}
    for sample in samples:
        for cell in sample.get("cells") or ():
            cells[cell["start_t"]] = cell  # a running cell's later word (ended) replaces it
    xs: list[datetime | None] = []
    names: list[str | None] = []
    for cell in cells.values():
        start, end = cell["start_t"], cell["end_t"] if cell["end_t"] is not None else last
        if end < x0 or start > x1:
            continue
        count = "*" if cell["count"] is None else cell["count"]
        name = _plain(f"[{count}] {printable(cell['line'])}" + (" (error)" if cell["error"] else ""))
        span = [start, *(s for s in t if start < s < end), end]
        xs += [*(datetime.fromtimestamp(s) for s in span), None]  # None: a gap between two cells' areas
        names += [*(name for _ in span), None]
    if xs:
        fig.add_scatter(
            x=xs, y=[None if x is None else top * 0.985 for x in xs], mode="lines", name="cells", showlegend=False,
            hovertext=names, hovertemplate="%{hovertext}<extra></extra>", line={"color": MUTED, "width": 3},
            fill="tozeroy", fillcolor=f"rgba{(*hex_to_rgb(TRACES[0].colour), 0.06)}",  # this kernel's, as faint as live
        )  # fmt: skip


def bundle(fig: go.Figure) -> dict[str, object]:
    """The figure as plotly's mimetype (with the mode bar's settings), for an output's bundle."""
    return {"application/vnd.plotly.v1+json": {**fig.to_plotly_json(), "config": CONFIG}}


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
        return (
            "No GPU memory recorded yet: this kernel records once jupyter_gpumem is loaded (%load_ext jupyter_gpumem)."
        )
    if latest.get("problem"):
        return str(latest["problem"])
    if not gpus:
        return "The NVIDIA driver is loaded but reports no GPUs."
    if chosen is not None and chosen["lost"]:
        return "This GPU is lost: no figures until it is reset."
    if chosen is None:
        named = ", ".join(f"{g['index']}" for g in gpus)
        return f"No GPU {gpu!r} here: the GPUs are {named} (or their uuids)."
    return "Collecting…"


def _layout(gpu: Mapping[str, Any] | None, subtitle: str) -> dict[str, object]:
    title = "" if gpu is None else f"GPU {gpu['index']} · {_plain(printable(gpu.get('name') or 'unknown GPU'))}"
    title = f"{title} — this kernel's GPU memory" if title else ""
    if subtitle:
        title = f"{title}<br><sup>{_plain(subtitle)}</sup>"
    grid = "rgba(128,128,128,0.25)"
    return {
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
    reason or a GPU name holding "<b>" or "<a href=...>" stays as written (widgets/figure.ts hoverText does the
    same)."""
    return html.escape(text, quote=False)


def _note(fig: go.Figure, text: str) -> go.Figure:
    fig.add_annotation(text=_plain(text), xref="paper", yref="paper", x=0.5, y=0.5, showarrow=False)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig
