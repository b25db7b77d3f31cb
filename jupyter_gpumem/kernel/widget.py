"""The inline live view: `%gpumem show` and ``jupyter_gpumem.show()``.

The sidebar's view in a cell's output, for every frontend that shows ipywidgets (JupyterLab with or
without this package's labextension, Notebook 7, VS Code): an anywidget whose module is the sidebar's
own rendering (labextension/src/inline.ts, bundled into static/inline.js by ``jlpm build:inline``), so
the headline against the budget, the chart (this kernel, its framework's in-use bytes, the others, the
budget line, the device total, the over-budget marks) and the process table say exactly what the sidebar
says. The kernel sends it the comm protocol's messages (docs/protocol.md): a ``sample`` per interval,
and a ``hello`` with the history when the module asks for one (``replay``).

Threads (docs/architecture.md): the widget is created, displayed and closed on the main thread; the
kernel's one sampler thread (stream.py) hands each sample to every open view, which sends it on its comm:
ipykernel lets a thread send on a comm, and the sampler does not wait for the busy main thread, so the
view moves while other cells run. The module's requests (``replay``, ``stop``) are answered on the main
thread, when the kernel is free.

The output carries a static HTML snapshot beside the widget, for frontends without widgets (nbconvert,
GitHub); closing a view (its Stop button, ``view.close()``, the kernel shutting down) replaces the live
output by its last snapshot, so a notebook saved afterwards keeps the picture.
"""

from __future__ import annotations

import html as _html
import logging
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anywidget

from jupyter_gpumem.kernel import protocol
from jupyter_gpumem.kernel.protocol import figures_only
from jupyter_gpumem.render import viewtext
from jupyter_gpumem.render.html import esc
from jupyter_gpumem.wire.comm import Gpu, Sample

if TYPE_CHECKING:
    from jupyter_gpumem.kernel.stream import Stream

log = logging.getLogger("jupyter_gpumem")

PIP_VIEW = "%pip install 'jupyter-gpumem[view]'"
STATIC = Path(__file__).parent.parent / "static"
NOT_BUILT = (
    "export default { render({ el }) { el.textContent = 'jupyter-gpumem: the inline view is not built in this "
    "installation (in a checkout: jlpm build:inline; the wheel carries it).'; } };"
)


def _static(name: str, missing: str) -> str:
    path = STATIC / name
    return path.read_text() if path.exists() else missing


# Theme colours through --jp-* variables (VS Code's next, then a plain colour): the still picture's styles.
CSS = """
.jp-gpumem-view { font-family: var(--jp-ui-font-family, var(--vscode-font-family, sans-serif));
  font-size: var(--jp-ui-font-size1, 13px); color: var(--jp-ui-font-color1, var(--vscode-editor-foreground, #222));
  max-width: 760px; line-height: 1.4; }
.jp-gpumem-view .jp-gpumem-banner { color: var(--jp-warn-color0, #b45f06); font-weight: 600; }
.jp-gpumem-view .jp-gpumem-headline { font-size: var(--jp-ui-font-size3, 16px); font-weight: 600; }
.jp-gpumem-view .jp-gpumem-headline[data-level="warn"], .jp-gpumem-view .jp-gpumem-policy[data-level="warn"],
.jp-gpumem-view .jp-gpumem-notice {
  color: var(--jp-warn-color0, #b45f06); }
.jp-gpumem-view .jp-gpumem-headline[data-level="error"] { color: var(--jp-error-color0, #b71c1c); }
.jp-gpumem-view .jp-gpumem-source { font-size: var(--jp-ui-font-size0, 11px); color: var(--jp-ui-font-color2, #616161);
  border: 1px solid var(--jp-border-color2, #ccc); border-radius: 2px; padding: 0 3px; margin-left: 6px;
  font-weight: normal; vertical-align: middle; }
.jp-gpumem-view .jp-gpumem-detail { color: var(--jp-ui-font-color2, #616161); }
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
"""
# The still chart's lines, in drawing order: (name, colour variable, plain colour, dash, width).
TRACES = (
    ("total", "--jp-ui-font-color2", "#757575", "dot", 1),
    ("others", "--jp-ui-font-color3", "#9e9e9e", "solid", 1),
    ("budget", "--jp-error-color1", "#d32f2f", "dash", 1.5),
    ("framework", "--jp-accent-color1", "#00897b", "solid", 1.5),
    ("own", "--jp-brand-color1", "#1976d2", "solid", 2.5),
)


def _history_module() -> Any:
    """The still chart's history (numpy), or None when numpy (the `view` extra) is not installed."""
    try:
        from jupyter_gpumem.render import history
    except ImportError:
        return None
    return history


class GpuMemView(anywidget.AnyWidget):
    """This kernel's GPU memory, live, in a cell's output. Made by ``jupyter_gpumem.show()``."""

    _esm = _static("inline.js", NOT_BUILT)
    _css = _static("base.css", "")

    def __init__(self, stream: Stream, history: list[Sample], latest: Sample | None):
        super().__init__()
        self._lock = threading.RLock()
        self._stream = stream
        self._closed = False
        self._handles: list[Any] = []
        self._latest: Sample | None = None
        self._shown: str | None = None
        self._window_s = stream.sampler.history_s
        module = _history_module()
        # The still picture's chart: the same samples, kept here (the live chart keeps its own in the browser).
        self._history = module.History(max(1, round(self._window_s / stream.sampler.interval_s))) if module else None
        with self._lock:
            for sample in history:
                self._push(sample)
            if latest is not None:
                self._push(latest)
                self._latest = latest
        self.on_msg(self._on_msg)

    # -- the sampler thread's side --------------------------------------------------------------------

    def update(self, sample: Sample) -> None:
        """A new sample (the sampler thread): sent on to the browser, kept for the still picture."""
        with self._lock:
            if self._closed:
                return
            self._push(sample)
            self._latest = sample
        self.send(protocol.sample_message(sample))

    def _push(self, sample: Sample) -> None:
        if self._history is not None:
            self._history.push(figures_only(sample))

    # -- the browser's requests (the main thread) -------------------------------------------------------

    def _on_msg(self, widget: Any, content: Any, buffers: Any) -> None:
        """``replay``: the module (just loaded, or loaded again) asks for the history; ``stop``: its Stop
        button. Anything else is ignored: this comm is ours, and the module sends nothing else."""
        kind = content.get("type") if isinstance(content, dict) else None
        if kind == "replay" and not self._closed:
            sampler = self._stream.sampler
            self.send(protocol.hello(sampler.interval_s, sampler.history_s, sampler.history()))
        elif kind == "stop":
            self.close()

    def _gpu(self) -> Gpu | None:
        sample = self._latest
        if sample is None or sample.get("problem") or not sample["gpus"]:
            return None
        self._shown = viewtext.choose_gpu(sample["gpus"], self._shown)
        gpus = sample["gpus"]
        return next(g for g in gpus if viewtext.gpu_key(g) == self._shown)

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
        """Stop updating; each output of this view keeps its last picture (static HTML), then the widget
        goes. Several views share the sampler, which goes on for the others and the sidebar."""
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
        super().close()


# -- the HTML the view and its snapshot share -------------------------------------------------------------


def header_html(sample: Sample | None, gpu: Gpu | None) -> str:
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


def table_html(gpu: Gpu | None) -> str:
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


def snapshot_text(sample: Sample | None, gpu: Gpu | None) -> str:
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


def snapshot_html(sample: Sample | None, gpu: Gpu | None, history: Any, window_s: float) -> str:
    """The view as still HTML: what a saved notebook shows without its kernel's widgets."""
    chart = ""
    if gpu is not None and history is None:
        chart = f'<div class="jp-gpumem-detail">The still chart needs numpy: {esc(PIP_VIEW)}.</div>'
    elif gpu is not None and history is not None and not gpu["lost"]:
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
    from jupyter_gpumem.render.history import chart_data

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

    from jupyter_gpumem import load_ipython_extension
    from jupyter_gpumem.kernel.stream import stream

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
