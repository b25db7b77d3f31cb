"""The inline live view: `%gpumem show` and ``jupyter_gpumem.show()``.

The sidebar's view in a cell's output, for every frontend that shows ipywidgets (JupyterLab with or
without this package's labextension, Notebook 7, VS Code): an anywidget running the sidebar's own rendering
(labextension/src/widgets/inline.ts), so the headline against the budget, the chart (this kernel, its
framework's in-use bytes, the others, the budget line, the device total, the over-budget marks) and the
process table say exactly what the sidebar says. The kernel sends it the comm protocol's messages
(docs/protocol.md): a ``sample`` per interval, and a ``hello`` with the history when the module asks for one
(``replay``).

The widget's state carries no code but a loader (static/loader.js, about 2 KB, from loader.ts): it takes the
module once per page from this package's labextension where the page has it, else from the server extension's
static route, else from the kernel, which sends static/inline.bundle.js over the comm when asked (``module``).
So a notebook with views, saved with its widget state, holds no copy of the module (docs/sidebar.md, "The
inline view's code").

Its words: where the page has no JupyterLab translator (the module from the route or the kernel), the module asks
for the catalogue of the kernel's language (``catalogue``), the one JupyterLab would serve for it; the kernel
answers with it, or with none where it words in English. A message rather than a trait, for the same reason: the
widget state holds no copy of it (docs/i18n-plumbing.md).

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

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import anywidget
from IPython.display import DisplayHandle, display

from jupyter_gpumem import i18n
from jupyter_gpumem.i18n import gettext as _
from jupyter_gpumem.kernel import protocol
from jupyter_gpumem.render import figure, html, still, viewtext
from jupyter_gpumem.wire.comm import Sample, SampleGpu

log = logging.getLogger("jupyter_gpumem")

STATIC = Path(__file__).parent.parent / "static"
NOT_BUILT = (
    "export default { render({ el }) { el.textContent = 'jupyter-gpumem: the inline view is not built in this "
    "installation (in a checkout: jlpm build:inline; the wheel carries it).'; } };"
)


def _static(name: str, missing: str) -> str:
    path = STATIC / name
    return path.read_text() if path.exists() else missing


def _module() -> list[bytes]:
    """The view's module in one file and its styles, for a loader that found them nowhere else."""
    return [(STATIC / "inline.bundle.js").read_bytes(), (STATIC / "base.css").read_bytes()]


def catalogue_message() -> dict[str, object]:
    """The answer to ``catalogue``: the kernel's language (``i18n.language()``) and its catalogue as JupyterLab
    serves it (locale/<ll_CC>/LC_MESSAGES/jupyter_gpumem.json, jed-like JSON), for a view without JupyterLab's
    translator; ``data`` None (the view's own English) where the kernel words in English or that file is missing
    or unreadable (an install that did not build it)."""
    language = i18n.language()
    if language == i18n.ENGLISH:
        return {"type": "catalogue", "language": i18n.ENGLISH, "data": None}
    path = i18n.LOCALE_DIR / language / "LC_MESSAGES" / f"{i18n.DOMAIN}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        log.info("jupyter-gpumem: the inline view words in English: no %s catalogue to send it (%s)", language, error)
        return {"type": "catalogue", "language": i18n.ENGLISH, "data": None}
    return {"type": "catalogue", "language": language, "data": data}


class Replay(Protocol):
    """What a view asks of the kernel's sampler: the history it replays, and its settings."""

    interval_s: float
    history_s: float

    def history(self) -> list[Sample]: ...

    def replay(self, switch: Callable[[list[Sample]], None]) -> None: ...


class GpuMemView(anywidget.AnyWidget):
    """This kernel's GPU memory, live, in a cell's output. Made by ``jupyter_gpumem.show()``."""

    _esm = _static("loader.js", NOT_BUILT)

    def __init__(self, replay: Replay, latest: Sample | None, closing: Callable[[GpuMemView], None]):
        """``closing(view)``: the view stops being fed (Stream.remove_view)."""
        super().__init__()
        self._lock = threading.RLock()
        self._replay = replay
        self._closing = closing
        self._closed = False
        self._handles: list[DisplayHandle] = []
        self._latest: Sample | None = None
        self._shown: str | None = None
        with self._lock:
            self._latest = latest
        self.on_msg(self._on_msg)

    # -- the sampler thread's side --------------------------------------------------------------------

    def update(self, sample: Sample) -> None:
        """A new sample (the sampler thread): sent on to the browser, kept for the still picture."""
        with self._lock:
            if self._closed:
                return
            self._latest = sample
        self.send(protocol.sample_message(sample))

    # -- the browser's requests (the main thread) -------------------------------------------------------

    def _on_msg(self, widget: object, content: object, buffers: object) -> None:
        """``module``: the loader found the module nowhere in the page or on the server; ``catalogue``: the
        module has no JupyterLab translator and asks for the kernel's words; ``replay``: the module (just loaded,
        or loaded again) asks for the history; ``stop``: its Stop button. Anything else is ignored: this comm is
        ours, and the module sends nothing else."""
        kind = content.get("type") if isinstance(content, dict) else None
        if kind == "module" and not self._closed:
            self.send({"type": "module"}, buffers=_module())
        elif kind == "catalogue" and not self._closed:
            self.send(catalogue_message())
        elif kind == "replay" and not self._closed:
            replay = self._replay
            # Between two samples: each is in the replay or comes after it (update), never both.
            replay.replay(lambda history: self.send(protocol.hello(replay.interval_s, replay.history_s, history)))
        elif kind == "stop":
            self.close()

    def _gpu(self) -> SampleGpu | None:
        sample = self._latest
        if sample is None or sample.get("problem") or not sample["gpus"]:
            return None
        self._shown = viewtext.choose_gpu(sample["gpus"], self._shown)
        gpus = sample["gpus"]
        return next(g for g in gpus if viewtext.gpu_key(g) == self._shown)

    # -- display and closing (the main thread) ----------------------------------------------------------

    def _ipython_display_(self) -> None:
        """Shown with a display id of its own, so closing can leave the snapshot in its place."""
        handle = display(self._bundle(live=True), raw=True, display_id=uuid.uuid4().hex)  # type: ignore[no-untyped-call]
        self._handles.append(handle)

    def _bundle(self, live: bool, stopped: str | None = None) -> dict[str, object]:
        """The output: live, the widget (with the still HTML for frontends without widgets); stopped, the
        recorded history as a plotly figure (interactive without the kernel), the still HTML beside it."""
        with self._lock:
            latest, gpu = self._latest, self._gpu()
        bundle: dict[str, object] = {"text/plain": snapshot_text(latest, gpu)}
        if live:
            bundle["application/vnd.jupyter.widget-view+json"] = {
                "version_major": 2,
                "version_minor": 0,
                "model_id": self.model_id,
            }
            bundle["text/html"] = snapshot_html(latest, gpu)
            return bundle
        replay = self._replay
        recorded, index = replay.history(), None if gpu is None else gpu["index"]
        # The chart as a small SVG in the still HTML too: what HTML exports and GitHub show (text/html
        # outranks plotly's mimetype there), and a frontend without plotly's renderer.
        chart_svg = still.svg(recorded, index, replay.history_s) if gpu is not None else None
        try:
            words = ([viewtext.headline(gpu, latest)[0]] if gpu is not None and latest is not None else []) + (
                [_("stopped at {time}").format(time=stopped)] if stopped else []
            )
            chart = figure.figure(recorded, index, replay.history_s, " · ".join(words))
        except ImportError as error:
            bundle["text/html"] = snapshot_html(latest, gpu, stopped, note=str(error), chart=chart_svg)
            return bundle
        bundle["text/html"] = snapshot_html(latest, gpu, stopped, chart=chart_svg)
        return {**figure.bundle(chart), **bundle}

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
        self._closing(self)
        if self._handles:
            bundle = self._bundle(live=False, stopped=viewtext.clock(time.time()))
            for handle in self._handles:
                handle.update(bundle, raw=True)  # type: ignore[no-untyped-call]
        super().close()


# -- the HTML the view and its snapshot share -------------------------------------------------------------


def header_html(sample: Sample | None, gpu: SampleGpu | None) -> str:
    return html.fragment("view_parts.html.j2", "header", sample, gpu)


def table_html(gpu: SampleGpu | None) -> str:
    return html.fragment("view_parts.html.j2", "processes", gpu)


def snapshot_text(sample: Sample | None, gpu: SampleGpu | None) -> str:
    """The view as text: the headline and the device (what a terminal or a log shows)."""
    if sample is None:
        return _("jupyter-gpumem: collecting…")
    if sample.get("problem"):
        return str(sample["problem"])
    if gpu is None:
        return _("jupyter-gpumem: the NVIDIA driver reports no GPUs.")
    banner = viewtext.simulated_banner(sample.get("simulated"))
    lines = [banner] if banner else []
    lines += [viewtext.headline(gpu, sample)[0], viewtext.device_line(gpu)]
    return "\n".join(lines)


def snapshot_html(
    sample: Sample | None,
    gpu: SampleGpu | None,
    stopped: str | None = None,
    note: str | None = None,
    chart: str | None = None,
) -> str:
    """The view as still HTML: what nbconvert, GitHub and a frontend without widgets or plotly show;
    ``stopped``: the time the view was closed; ``chart``: the recorded chart as an SVG (render/still.py),
    drawn where the live view has its chart."""
    return html.render("view.html.j2", sample=sample, gpu=gpu, chart_note=note, stopped=stopped, chart=chart)
