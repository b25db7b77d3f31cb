"""The inline live view: `%gpumem show` and ``jupyter_gpumem.show()``.

The sidebar's view in a cell's output, for every frontend that shows ipywidgets (JupyterLab with or
without this package's labextension, Notebook 7, VS Code): the headline against the budget, a plotly
``FigureWidget`` chart (this kernel, its framework's in-use bytes, the others, the budget line, the device
total, the over-budget marks) and the process table.

Threads (docs/architecture.md): the widgets are created, displayed and closed on the main thread; the
kernel's one sampler thread (stream.py) hands each sample to every open view, which only sets widget
values: ipykernel lets a thread send on a comm, and the sampler does not wait for the busy main thread,
so the view moves while other cells run. A lock per view keeps the sampler's update, the GPU choice
(main thread) and plotly's replies from the browser (main thread) apart.

Every view renders the protocol's encoded sample, as the sidebar does: it decides nothing again. The
output carries a static HTML snapshot beside the widget, for frontends without widgets (nbconvert,
GitHub); closing a view replaces the live output by its last snapshot, so a notebook saved afterwards
keeps the picture.
"""

from __future__ import annotations

import html as _html
import logging
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any

import ipywidgets
from traitlets import observe

from . import viewtext
from .html import esc
from .protocol import figures_only

if TYPE_CHECKING:
    from .stream import Stream

log = logging.getLogger("jupyter_gpumem")

PIP_VIEW = "%pip install 'jupyter-gpumem[view]'"
CHART_HEIGHT_PX = 230
# A fixed width that fits a notebook's output area beside both sidebars: plotly.js in a widget sizes itself
# once, before the output has its width, and then stays 700 px wide. Also the decimation's width.
CHART_WIDTH_PX = 560

# Theme colours through --jp-* variables (VS Code's next, then a plain colour). plotly.js writes its colours
# as inline styles; these rules override them, so a theme change needs no message from the kernel.
CSS = """
.jp-gpumem-view { font-family: var(--jp-ui-font-family, var(--vscode-font-family, sans-serif));
  font-size: var(--jp-ui-font-size1, 13px); color: var(--jp-ui-font-color1, var(--vscode-editor-foreground, #222));
  max-width: 760px; }
.jp-gpumem-view .widget-html-content { line-height: 1.4; }
.jp-gpumem-view .jp-gpumem-banner { color: var(--jp-warn-color0, #b45f06); font-weight: 600; }
.jp-gpumem-view .jp-gpumem-headline { font-size: var(--jp-ui-font-size3, 16px); font-weight: 600; }
.jp-gpumem-view .jp-gpumem-headline[data-level="warn"], .jp-gpumem-view .jp-gpumem-policy[data-level="warn"],
.jp-gpumem-view .jp-gpumem-notice {
  color: var(--jp-warn-color0, #b45f06); }
.jp-gpumem-view .jp-gpumem-headline[data-level="error"] { color: var(--jp-error-color0, #b71c1c); }
.jp-gpumem-view .jp-gpumem-source { font-size: var(--jp-ui-font-size0, 11px); color: var(--jp-ui-font-color2, #616161);
  border: 1px solid var(--jp-border-color2, #ccc); border-radius: 2px; padding: 0 3px; margin-left: 6px;
  font-weight: normal; vertical-align: middle; }
.jp-gpumem-view .jp-gpumem-detail, .jp-gpumem-view .jp-gpumem-live { color: var(--jp-ui-font-color2, #616161); }
.jp-gpumem-view .jp-gpumem-reason { color: var(--jp-error-color0, #b71c1c); }
.jp-gpumem-view table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin-top: 4px; }
.jp-gpumem-view th { text-align: left; font-weight: 600; padding: 1px 10px 1px 4px;
  border-bottom: 1px solid var(--jp-border-color2, #e0e0e0); }
.jp-gpumem-view td { padding: 1px 10px 1px 4px; white-space: nowrap; max-width: 24em; overflow: hidden;
  text-overflow: ellipsis; }
.jp-gpumem-view .jp-gpumem-num { text-align: right; }
.jp-gpumem-view tr.jp-gpumem-self td { background: var(--jp-layout-color2, #eee); font-weight: 600; }
.jp-gpumem-view .jp-gpumem-badge { margin-left: 6px; padding: 0 4px; border-radius: 2px; font-size: 0.85em;
  background: var(--jp-brand-color1, #1976d2); color: var(--jp-ui-inverse-font-color1, #fff); }
.jp-gpumem-view .jp-gpumem-na { color: var(--jp-ui-font-color2, #616161); font-style: italic; }
.jp-gpumem-view .js-plotly-plot .xtick text, .jp-gpumem-view .js-plotly-plot .ytick text,
.jp-gpumem-view .js-plotly-plot .legendtext, .jp-gpumem-view .js-plotly-plot .g-ytitle text,
.jp-gpumem-view .js-plotly-plot .annotation-text { fill: var(--jp-ui-font-color2, #616161) !important; }
.jp-gpumem-view .js-plotly-plot .gridlayer path, .jp-gpumem-view .js-plotly-plot .zerolinelayer path {
  stroke: var(--jp-border-color2, #e0e0e0) !important; }
"""
# The traces, in drawing order, with their colours; the legend lists them by `legendrank`.
TRACES = (
    ("total", "--jp-ui-font-color2", "#757575", "dot", 1),
    ("others", "--jp-ui-font-color3", "#9e9e9e", "solid", 1),
    ("budget", "--jp-error-color1", "#d32f2f", "dash", 1.5),
    ("framework", "--jp-accent-color1", "#00897b", "solid", 1.5),
    ("own", "--jp-brand-color1", "#1976d2", "solid", 2.5),
)
LEGEND_RANK = {"own": 1, "framework": 2, "others": 3, "budget": 4, "total": 5}
for _i, (_name, _var, _fallback, _dash, _width) in enumerate(TRACES):
    CSS += (
        f".jp-gpumem-view .scatterlayer .trace:nth-child({_i + 1}) .js-line {{ stroke: var({_var}, {_fallback}) "
        "!important; }\n"
        f".jp-gpumem-view .legend .traces:nth-child({LEGEND_RANK[_name]}) .js-line {{ stroke: var({_var}, "
        f"{_fallback}) !important; }}\n"
    )
CSS += (
    ".jp-gpumem-view .scatterlayer .trace:nth-child(6) .point { fill: var(--jp-error-color1, #d32f2f) !important; "
    "stroke: var(--jp-layout-color1, #fff) !important; }\n"
)


def _chart_module() -> Any:
    """plotly's graph_objects, or None when plotly (the `view` extra) is not installed."""
    try:
        import numpy  # noqa: F401  (the chart's series)
        import plotly.graph_objects as go
    except ImportError:
        return None
    return go


class GpuMemView(ipywidgets.VBox):  # type: ignore[misc]
    """This kernel's GPU memory, live, in a cell's output. Made by ``jupyter_gpumem.show()``."""

    def __init__(self, stream: Stream, history: list[dict[str, Any]], latest: dict[str, Any] | None):
        self._lock = threading.RLock()
        self._stream = stream
        self._closed = False
        self._handles: list[Any] = []
        self._latest: dict[str, Any] | None = None
        self._shown: str | None = None
        self._window_s = stream.sampler.history_s
        self._interval_s = stream.sampler.interval_s
        self._header = ipywidgets.HTML(_dom_classes=["jp-gpumem-header"])
        self._table = ipywidgets.HTML(_dom_classes=["jp-gpumem-table"])
        self._live = ipywidgets.HTML(_dom_classes=["jp-gpumem-status"])
        self._choice = ipywidgets.Dropdown(description="", layout=ipywidgets.Layout(width="auto", display="none"))
        self._close_button = ipywidgets.Button(
            description="Stop",
            tooltip="Stop updating and keep this picture in the output",
            layout=ipywidgets.Layout(width="auto"),
        )
        self._close_button.on_click(lambda _button: self.close())
        self._setting_choice = False
        self._choice.observe(self._chosen, "value")
        self._go = _chart_module()
        self._figure: Any = None
        self._history: Any = None
        self._chart_state: dict[str, Any] = {}
        parts: list[Any] = [ipywidgets.HTML(f"<style>{CSS}</style>"), self._header]
        if self._go is not None:
            from .history import History

            self._history = History(max(1, round(self._window_s / self._interval_s)))
            self._figure = _figure_widget(self._go, self._lock)
            parts.append(self._figure)
        else:
            parts.append(
                ipywidgets.HTML(
                    '<div class="jp-gpumem-detail">The chart needs plotly and anywidget, which are not installed '
                    f"in this kernel's environment: {esc(PIP_VIEW)}, then run %gpumem show again.</div>"
                )
            )
        parts += [self._table, ipywidgets.HBox([self._choice, self._close_button, self._live])]
        super().__init__(parts, _dom_classes=["jp-gpumem-view"])
        with self._lock:
            for sample in history:
                self._push(sample)
            if latest is not None:
                self._push(latest)
                self._latest = latest
            self._render()

    # -- the sampler thread's side --------------------------------------------------------------------

    def update(self, sample: dict[str, Any]) -> None:
        """A new sample (the sampler thread): the figures, the headline and the table follow it."""
        with self._lock:
            if self._closed:
                return
            self._push(sample)
            self._latest = sample
            self._render()

    def _push(self, sample: dict[str, Any]) -> None:
        if self._history is not None:
            self._history.push(figures_only(sample))

    # -- rendering (under the lock) -------------------------------------------------------------------

    def _gpu(self) -> dict[str, Any] | None:
        sample = self._latest
        if sample is None or sample.get("problem") or not sample["gpus"]:
            return None
        self._shown = viewtext.choose_gpu(sample["gpus"], self._shown)
        gpus: list[dict[str, Any]] = sample["gpus"]
        return next(g for g in gpus if viewtext.gpu_key(g) == self._shown)

    def _render(self) -> None:
        sample = self._latest
        gpu = self._gpu()
        self._header.value = header_html(sample, gpu)
        self._table.value = table_html(gpu)
        if sample is not None:
            self._live.value = (
                '<span class="jp-gpumem-live">'
                f"live · {viewtext.clock(sample['t'])} · every {self._interval_s:g} s</span>"
            )
        self._update_choice(sample)
        if self._figure is not None and self._history is not None and gpu is not None and sample is not None:
            self._draw(gpu, sample)

    def _update_choice(self, sample: dict[str, Any] | None) -> None:
        gpus = sample["gpus"] if sample and not sample.get("problem") else []
        options = [(viewtext.gpu_option(g), viewtext.gpu_key(g)) for g in gpus]
        self._setting_choice = True  # not the user's choice: _chosen ignores it
        try:
            if list(self._choice.options) != options:
                self._choice.options = options
            if self._shown is not None and self._choice.value != self._shown:
                self._choice.value = self._shown
        finally:
            self._setting_choice = False
        display = "" if len(options) > 1 else "none"
        if self._choice.layout.display != display:
            self._choice.layout.display = display

    def _chosen(self, change: dict[str, Any]) -> None:
        """The user picked another GPU (the main thread)."""
        with self._lock:
            if self._closed or self._setting_choice or change["new"] is None:
                return
            self._shown = change["new"]
            self._chart_state.clear()
            self._render()

    def _draw(self, gpu: dict[str, Any], sample: dict[str, Any]) -> None:
        from .history import chart_data

        series = self._history.series(viewtext.gpu_key(gpu))
        data = None if gpu["lost"] or series is None else chart_data(series, self._window_s, CHART_WIDTH_PX)
        figure = self._figure
        if data is None:
            note = "Collecting…" if not gpu["lost"] else "GPU lost: no figures"
            if self._chart_state.get("note") != note:
                figure._send_update_msg(
                    {"x": [[]] * 6, "y": [[]] * 6}, {"annotations[0].text": note, "xaxis.type": "date"}, list(range(6))
                )
            self._chart_state.clear()
            self._chart_state["note"] = note
            return
        x = data.t * 1000 + _utc_offset_ms()
        ys = [data.lines[name] for name, *_ in TRACES]
        if not data.total_fits:
            ys[0] = ys[0] * float("nan")  # the total is a note at the top instead
        marks = data.marks
        names = [
            *(
                viewtext.CHART_LABELS.get(name) or viewtext.framework_label(sample.get("framework"))
                for name, *_ in TRACES
            ),
            "over budget",
        ]
        restyle: dict[str, Any] = {
            "x": [x] * 5 + [[m.t * 1000 + _utc_offset_ms() for m in marks]],
            "y": [*ys, [m.own_bytes / data.scale.size for m in marks]],
            "hovertext": [None] * 5 + [[viewtext.mark_title(m.t, m.reason) for m in marks]],
        }
        layout: dict[str, Any] = {
            "xaxis.range": [data.x0 * 1000 + _utc_offset_ms(), data.x1 * 1000 + _utc_offset_ms()],
            "yaxis.range": [0, data.scale.top / data.scale.size],
            "yaxis.dtick": data.scale.dtick,
            "yaxis.title.text": data.scale.unit,
            "annotations[0].text": "" if data.total_fits or not data.total else viewtext.total_above(data.total),
        }
        state = {"names": names}
        if self._chart_state.get("names") != names:
            restyle["name"] = names
        changed = {k: v for k, v in layout.items() if self._chart_state.get(k) != v}
        self._chart_state.update(state)
        self._chart_state.update(changed)
        # plotly.js forgets an axis type set in the layout when a restyle changes x, unless the same update
        # sets it; and the figure's own plotly_update would validate every point (milliseconds a sample) and
        # send only what differs from its Python copy. So the view sends the update message itself: the
        # figure delta, the arrays as binary buffers. Its Python copy keeps the initial, empty traces.
        axis = {"xaxis.type": "date", "xaxis.range": layout["xaxis.range"]}  # the range after the type: it holds
        figure._send_update_msg(restyle, {**axis, **changed}, list(range(len(TRACES) + 1)))

    # -- display and closing (the main thread) ----------------------------------------------------------

    def _ipython_display_(self) -> None:
        """Shown with a display id of its own, so closing can leave the snapshot in its place."""
        from IPython.display import display

        handle = display(self._bundle(live=True), raw=True, display_id=uuid.uuid4().hex)  # type: ignore[no-untyped-call]
        self._handles.append(handle)

    def _bundle(self, live: bool) -> dict[str, Any]:
        with self._lock:
            snapshot = snapshot_html(self._latest, self._gpu(), self._history, self._window_s)
            text = snapshot_text(self._latest, self._gpu())
        bundle: dict[str, Any] = {"text/plain": text, "text/html": snapshot}
        if live:
            bundle["application/vnd.jupyter.widget-view+json"] = {
                "version_major": 2,
                "version_minor": 0,
                "model_id": self.model_id,
            }
        return bundle

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Stop updating; each output of this view keeps its last picture (static HTML), then the widgets
        go. Several views share the sampler, which goes on for the others and the sidebar."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._stream.remove_view(self)
        if self._handles:
            bundle = self._bundle(live=False)
            bundle["text/html"] = bundle["text/html"].replace(
                "<!--stopped-->", f'<div class="jp-gpumem-detail">Stopped at {viewtext.clock(time.time())}.</div>'
            )
            for handle in self._handles:
                handle.update(bundle, raw=True)
        for child in self.children:
            if child is not self._figure:
                child.close()
        if self._figure is not None:
            self._figure.close()
        super().close()


def _utc_offset_ms() -> float:
    """plotly.js shows times as UTC: shifting them by the kernel's offset shows its local clock."""
    return float(time.localtime().tm_gmtoff * 1000)


def _figure_widget(go: Any, lock: threading.RLock) -> Any:
    """A FigureWidget whose handlers of the browser's replies take the view's lock (they run on the main
    thread while the sampler thread may be updating the same figure), and which keeps its layout as set."""

    class Figure(go.FigureWidget):  # type: ignore[misc]
        @observe("_js2py_traceDeltas")
        def _handler_js2py_traceDeltas(self, change: Any) -> None:
            with lock:
                super()._handler_js2py_traceDeltas(change)

        @observe("_js2py_layoutDelta")
        def _handler_js2py_layoutDelta(self, change: Any) -> None:
            # plotly.py would drop every layout setting equal to what the browser computed from it, the date
            # axis type and the y range among them, which the browser then recomputes from the data (a linear
            # axis of milliseconds, an autoranged y): the view keeps what it set, and needs no defaults.
            with lock:
                if change["new"]:
                    self._layout_edit_in_process = False
                    self._js2py_layoutDelta = None

        @observe("_js2py_restyle")
        def _handler_js2py_restyle(self, change: Any) -> None:
            with lock:
                super()._handler_js2py_restyle(change)

        @observe("_js2py_relayout")
        def _handler_js2py_relayout(self, change: Any) -> None:
            with lock:
                super()._handler_js2py_relayout(change)

        @observe("_js2py_update")
        def _handler_js2py_update(self, change: Any) -> None:
            with lock:
                super()._handler_js2py_update(change)

    traces = [
        go.Scatter(
            x=[],
            y=[],
            mode="lines",
            name=viewtext.CHART_LABELS.get(name, "framework in use"),
            line={"color": fallback, "dash": dash, "width": width},
            legendrank=LEGEND_RANK[name],
            hovertemplate="%{y:.2f}<extra>%{fullData.name}</extra>",
            connectgaps=False,
        )
        for name, _var, fallback, dash, width in TRACES
    ]
    traces.append(
        go.Scatter(
            x=[],
            y=[],
            mode="markers",
            name="over budget",
            showlegend=False,
            marker={"symbol": "triangle-down", "size": 10, "color": "#d32f2f"},
            hovertemplate="%{hovertext}<extra></extra>",
        )
    )
    layout = {
        "height": CHART_HEIGHT_PX,
        "width": CHART_WIDTH_PX,
        "margin": {"l": 44, "r": 8, "t": 28, "b": 28},
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "hovermode": "x",
        "showlegend": True,
        "legend": {"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom", "font": {"size": 11}},
        "xaxis": {
            "type": "date",
            "hoverformat": "%H:%M:%S",  # the hover gives the time to the second
            "tickformatstops": [
                {"dtickrange": [None, 60_000], "value": "%H:%M:%S"},
                {"dtickrange": [60_000, None], "value": "%H:%M"},
            ],
            "showgrid": False,
        },
        "yaxis": {"rangemode": "tozero", "title": {"text": "GiB", "standoff": 4}, "gridcolor": "#e0e0e0"},
        "font": {"size": 11},
        "annotations": [
            {
                "text": "Collecting…",
                "xref": "paper",
                "yref": "paper",
                "x": 1,
                "y": 1,
                "xanchor": "right",
                "yanchor": "top",
                "showarrow": False,
            }
        ],
    }
    figure = Figure(data=traces, layout=layout)
    figure._config = {"displaylogo": False}
    return figure


# -- the HTML the view and its snapshot share -------------------------------------------------------------


def header_html(sample: dict[str, Any] | None, gpu: dict[str, Any] | None) -> str:
    if sample is None:
        return '<div class="jp-gpumem-detail">Collecting…</div>'
    parts = []
    banner = viewtext.simulated_banner(sample.get("simulated"))
    if banner:
        parts.append(f'<div class="jp-gpumem-banner" title="{esc(sample["simulated"])}">{esc(banner)}</div>')
    notice = sample.get("notice")
    if notice:  # the server's word (its idle culler): first, in the warning colour
        parts.append(f'<div class="jp-gpumem-notice" data-level="warn">{esc(notice["text"])}</div>')
    if sample.get("problem"):
        parts.append(f"<div>{esc(sample['problem'])}</div>")
        return "".join(parts)
    if gpu is None:
        parts.append("<div>The NVIDIA driver is loaded but reports no GPUs.</div>")
        return "".join(parts)
    text, level = viewtext.headline(gpu, sample)
    label = viewtext.source_label(gpu)
    badge = (
        f'<span class="jp-gpumem-source" title="{esc(label[1])}" data-source="{esc(label[0])}">{esc(label[0])}</span>'
        if label
        else ""
    )
    parts.append(f'<div class="jp-gpumem-headline" data-level="{level}">{esc(text)}{badge}</div>')
    for cls, line in (
        ("detail jp-gpumem-note", viewtext.budget_note(gpu, sample)),
        ("detail jp-gpumem-breakdown", viewtext.breakdown(gpu, sample.get("framework"))),
        ("reason", viewtext.over_line(gpu)),
    ):
        if line:
            parts.append(f'<div class="jp-gpumem-{cls}">{esc(line)}</div>')
    policy = viewtext.policy_line(sample)
    if policy:
        parts.append(f'<div class="jp-gpumem-policy" data-level="{policy[1]}">{esc(policy[0])}</div>')
    parts.append(f'<div class="jp-gpumem-detail jp-gpumem-device">{esc(viewtext.device_line(gpu))}</div>')
    return "".join(parts)


def table_html(gpu: dict[str, Any] | None) -> str:
    if gpu is None:
        return ""
    note = viewtext.process_note(gpu)
    if note:
        return f'<div class="jp-gpumem-detail">{esc(note)}</div>'
    rows = sorted(gpu["processes"], key=lambda p: -1 if p["used_bytes"] is None else p["used_bytes"], reverse=True)
    others = viewtext.others_note(gpu)
    after = f'<div class="jp-gpumem-detail jp-gpumem-others">{esc(others)}</div>' if others else ""
    if not rows:
        return after or '<div class="jp-gpumem-detail">No processes on this GPU.</div>'
    out = [
        '<table class="jp-gpumem-processes"><thead><tr><th class="jp-gpumem-num">PID</th><th>Name</th><th>User</th>'
        '<th class="jp-gpumem-num" title="GPU memory of the process in MiB, as nvidia-smi counts it">MiB</th>'
        '<th class="jp-gpumem-num" title="CPU use of the process, % of one core">CPU %</th></tr></thead><tbody>'
    ]
    for p in rows:
        cells = viewtext.process_cells(p)
        mine = bool(p.get("self")) or (gpu.get("own_pid") is not None and p["pid"] == gpu.get("own_pid"))
        badge = '<span class="jp-gpumem-badge">this kernel</span>' if mine else ""

        def cell(value: str) -> str:
            return '<span class="jp-gpumem-na">N/A</span>' if value == "N/A" else esc(value)

        out.append(
            f'<tr class="{"jp-gpumem-self" if mine else ""}" data-pid="{cells["pid"]}">'
            f'<td class="jp-gpumem-num">{esc(cells["pid"])}</td>'
            f'<td title="{esc(cells["name"])}"><span class="jp-gpumem-name">{cell(cells["name"])}</span>{badge}</td>'
            f"<td>{cell(cells['user'])}</td>"
            f'<td class="jp-gpumem-num">{cell(cells["used"])}</td><td class="jp-gpumem-num">{cell(cells["cpu"])}</td>'
            "</tr>"
        )
    out.append("</tbody></table>")
    out.append(after)
    return "".join(out)


def snapshot_text(sample: dict[str, Any] | None, gpu: dict[str, Any] | None) -> str:
    """The view as text: the headline and the device (what a terminal or a log shows)."""
    if sample is None:
        return "jupyter-gpumem: collecting…"
    if sample.get("problem"):
        return str(sample["problem"])
    if gpu is None:
        return "jupyter-gpumem: the NVIDIA driver reports no GPUs."
    banner = viewtext.simulated_banner(sample.get("simulated"))
    lines = [banner] if banner else []
    lines += [viewtext.headline(gpu, sample)[0], viewtext.device_line(gpu)]
    return "\n".join(lines)


def snapshot_html(sample: dict[str, Any] | None, gpu: dict[str, Any] | None, history: Any, window_s: float) -> str:
    """The view as still HTML: what a saved notebook shows without its kernel's widgets."""
    chart = ""
    if gpu is not None and history is not None and not gpu["lost"]:
        series = history.series(viewtext.gpu_key(gpu))
        chart = svg_chart(series, window_s) if series is not None else ""
    taken = f" at {viewtext.clock(sample['t'])}" if sample else ""
    return (
        f'<div class="jp-gpumem-view jp-gpumem-snapshot"><style>{CSS}</style>{header_html(sample, gpu)}{chart}'
        f'{table_html(gpu)}<!--stopped--><div class="jp-gpumem-detail">jupyter-gpumem snapshot{_html.escape(taken)}'
        " (the live view needs its kernel).</div></div>"
    )


def svg_chart(series: Any, window_s: float, width: int = 600, height: int = 160) -> str:
    """The chart's lines as a small static SVG: this kernel, its budget, the others."""
    from .history import chart_data

    data = chart_data(series, window_s, width)
    if data is None:
        return ""
    span = max(1e-9, data.x1 - data.x0)
    top = data.scale.top / data.scale.size
    paths = []
    for name, var, fallback, dash, stroke in TRACES:
        if name == "total" and not data.total_fits:
            continue
        points: list[list[str]] = []
        segment: list[str] = []
        for t, v in zip(data.t, data.lines[name], strict=True):
            if v != v:  # NaN: a gap
                if segment:
                    points.append(segment)
                segment = []
                continue
            segment.append(f"{(t - data.x0) / span * width:.1f},{height - v / top * height:.1f}")
        if segment:
            points.append(segment)
        dashes = {"dot": ' stroke-dasharray="2 3"', "dash": ' stroke-dasharray="6 4"'}.get(dash, "")
        for seg in points:
            paths.append(
                f'<polyline points="{" ".join(seg)}" fill="none" style="stroke: var({var}, {fallback})" '
                f'stroke-width="{stroke}"{dashes}><title>{esc(viewtext.CHART_LABELS.get(name, name))}</title>'
                "</polyline>"
            )
    return (
        f'<svg class="jp-gpumem-still" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="GPU memory over time ({data.scale.unit}, top {top:g})">{"".join(paths)}</svg>'
    )


def show(shell: Any = None, display_now: bool = False) -> GpuMemView:
    """The live view of this kernel's GPU memory (``jupyter_gpumem.show()``): returned, to be the cell's
    last expression or given to ``display()``; ``%gpumem show`` displays it at once. Loads the extension
    if needed and starts the kernel's one sampler (shared with the sidebar and every other view)."""
    from IPython import get_ipython

    from . import load_ipython_extension
    from .stream import stream

    if threading.current_thread() is not threading.main_thread():
        # Comms (widgets) are opened on the main thread only (docs/architecture.md, threading rule 5).
        raise RuntimeError(
            "jupyter_gpumem.show() makes widgets, which are made on the main thread only: call it in a cell, "
            "not from another thread."
        )
    shell = shell or get_ipython()
    if shell is not None:
        load_ipython_extension(shell)
    view = stream(shell).add_view(GpuMemView)
    if display_now:
        from IPython.display import display

        display(view)  # type: ignore[no-untyped-call]
    return view
