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

import logging
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anywidget

from jupyter_gpumem.kernel import protocol
from jupyter_gpumem.kernel.protocol import figures_only
from jupyter_gpumem.render import html, viewtext
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

    def _bundle(self, live: bool, stopped: str | None = None) -> dict[str, Any]:
        with self._lock:
            snapshot = snapshot_html(self._latest, self._gpu(), self._history, self._window_s, stopped)
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
            bundle = self._bundle(live=False, stopped=viewtext.clock(time.time()))
            for handle in self._handles:
                handle.update(bundle, raw=True)
        super().close()


# -- the HTML the view and its snapshot share -------------------------------------------------------------


def header_html(sample: Sample | None, gpu: Gpu | None) -> str:
    return html.fragment("view_parts.html.j2", "header", sample, gpu)


def table_html(gpu: Gpu | None) -> str:
    return html.fragment("view_parts.html.j2", "processes", gpu)


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


def snapshot_html(
    sample: Sample | None, gpu: Gpu | None, history: Any, window_s: float, stopped: str | None = None
) -> str:
    """The view as still HTML: what a saved notebook shows without its kernel's widgets; ``stopped``: the time
    the view was closed."""
    note, chart = None, None
    if gpu is not None and history is None:
        note = f"The still chart needs numpy: {PIP_VIEW}."
    elif gpu is not None and history is not None and not gpu["lost"]:
        series = history.series(viewtext.gpu_key(gpu))
        chart = None if series is None else still_chart(series, window_s)
    return html.render("view.html.j2", sample=sample, gpu=gpu, chart_note=note, chart_data=chart, stopped=stopped)


def still_chart(series: Any, window_s: float, width: int = 600, height: int = 160) -> dict[str, Any] | None:
    """The chart's lines for a small static SVG (view.html.j2 draws it): this kernel, its budget, the others."""
    from jupyter_gpumem.render.history import chart_data

    data = chart_data(series, window_s, width)
    if data is None:
        return None
    span = max(1e-9, data.x1 - data.x0)
    top = data.scale.top / data.scale.size
    lines = []
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
        label = viewtext.CHART_LABELS.get(name, name)
        dashes = {"dot": "2 3", "dash": "6 4"}.get(dash)
        lines += [
            {"points": " ".join(seg), "var": var, "fallback": fallback, "dash": dashes, "width": stroke, "label": label}
            for seg in points
        ]
    return {"width": width, "height": height, "unit": data.scale.unit, "top": f"{top:g}", "lines": lines}


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
