"""What a notebook calls: ``%load_ext jupyter_gpumem`` (``load_ipython_extension``), ``jupyter_gpumem.show()``,
``figure()``, ``batched``, ``largest_batch`` and the sidebar's silent ``_connect_sidebar``. The package's root hands
these names out from here on first use, so that the server and the hub, which import the root too, never load the
kernel's runtime (IPython, ipywidgets, anywidget, comm)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from IPython import get_ipython
from IPython.core.interactiveshell import InteractiveShell

from jupyter_gpumem.kernel.batched import batched
from jupyter_gpumem.kernel.largest import BatchFit, largest_batch
from jupyter_gpumem.kernel.runtime import current, runtime
from jupyter_gpumem.kernel.widget import GpuMemView
from jupyter_gpumem.wire.comm import DEFAULT_HISTORY_S, DEFAULT_INTERVAL_S

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = [
    "BatchFit",
    "GpuMemView",
    "_connect_sidebar",
    "batched",
    "figure",
    "largest_batch",
    "load_ipython_extension",
    "show",
    "unload_ipython_extension",
]


def show() -> GpuMemView:
    """This kernel's GPU memory, live, in the cell's output: the headline against the budget, a chart (this
    kernel, its framework, the others, the budget, the device total, over-budget marks) and every process
    on the GPU, as the GPU Memory sidebar shows them. Returns the view (an ipywidgets widget): make it the
    cell's last expression, or ``display()`` it; ``view.close()`` stops it and leaves its last picture.
    Updated by the kernel's one sampler thread, also while other cells run. It is drawn by the sidebar's own
    code (an anywidget), so both say the same."""
    shell = get_ipython()
    if shell is not None:
        load_ipython_extension(shell)
    return runtime(shell).stream.add_view()


def figure(gpu: int | str | None = None, window: str | float = "15min") -> go.Figure:
    """This kernel's recorded GPU memory as a ``plotly.graph_objects.Figure``: the live chart's traces (this
    kernel, its framework's in-use bytes, the other processes, the budget, the device total) and its
    over-budget marks, over the last ``window`` ("90s", "15min", "1h", or seconds) on ``gpu`` (its index or
    uuid; None: the GPU the views show first). For reports and export: ``fig.write_html("gpu.html")``. The
    kernel records from ``%load_ext jupyter_gpumem`` on, as much history as the sidebar keeps (15 min by
    default). Needs plotly: ``%pip install 'jupyter-gpumem[view]'``."""
    # The shell's config: a %load_ext after this reuses the runtime made here.
    return runtime(get_ipython()).figure(gpu, window)


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """`%load_ext jupyter_gpumem`: registers the `%gpumem` magic and the out-of-memory advisor, and
    applies configured defaults (docs/configuration.md). Loading again changes nothing."""
    runtime(ipython).load(ipython)


def _connect_sidebar(interval_s: float | None = None, history_s: float | None = None) -> None:
    """Run silently by the JupyterLab sidebar: load the extension, then stream to it (stream.py).
    Without arguments: the protocol's default interval and history."""
    interval_s = DEFAULT_INTERVAL_S if interval_s is None else interval_s
    history_s = DEFAULT_HISTORY_S if history_s is None else history_s
    shell = get_ipython()
    if shell is not None:
        # Not through the extension manager: a user's own `%load_ext jupyter_gpumem` later would then
        # print "already loaded" in their notebook. Loading again changes nothing anyway.
        load_ipython_extension(shell)
    runtime(shell).stream.connect(interval_s, history_s)


def unload_ipython_extension(ipython: InteractiveShell) -> None:
    loaded = current()
    if loaded is not None:
        loaded.unload(ipython)
