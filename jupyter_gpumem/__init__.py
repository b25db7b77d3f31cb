"""jupyter-gpumem: GPU memory control and a live view for Jupyter notebooks.

In a notebook::

    %load_ext jupyter_gpumem
    %gpumem status
    %gpumem show        # the live view in the cell's output (jupyter_gpumem.show() returns it)
"""

from __future__ import annotations

from typing import Any

from jupyter_gpumem._version import __version__
from jupyter_gpumem.gpu.model import Device, GpuProcess, MigDevice, Snapshot
from jupyter_gpumem.gpu.snapshot import take_snapshot
from jupyter_gpumem.kernel.batched import batched

__all__ = [
    "Device",
    "GpuProcess",
    "MigDevice",
    "Snapshot",
    "__version__",
    "batched",
    "figure",
    "load_ipython_extension",
    "show",
    "take_snapshot",
    "unload_ipython_extension",
]


def show() -> Any:
    """This kernel's GPU memory, live, in the cell's output: the headline against the budget, a chart (this
    kernel, its framework, the others, the budget, the device total, over-budget marks) and every process
    on the GPU, as the GPU Memory sidebar shows them. Returns the view (an ipywidgets widget): make it the
    cell's last expression, or ``display()`` it; ``view.close()`` stops it and leaves its last picture.
    Updated by the kernel's one sampler thread, also while other cells run. It is drawn by the sidebar's own
    code (an anywidget), so both say the same."""
    from jupyter_gpumem.kernel.widget import show as make

    return make()


def figure(gpu: int | str | None = None, window: str | float = "15min") -> Any:
    """This kernel's recorded GPU memory as a ``plotly.graph_objects.Figure``: the live chart's traces (this
    kernel, its framework's in-use bytes, the other processes, the budget, the device total) and its
    over-budget marks, over the last ``window`` ("90s", "15min", "1h", or seconds) on ``gpu`` (its index or
    uuid; None: the GPU the views show first). For reports and export: ``fig.write_html("gpu.html")``. The
    kernel records from ``%load_ext jupyter_gpumem`` on, as much history as the sidebar keeps (15 min by
    default). Needs plotly: ``%pip install 'jupyter-gpumem[view]'``."""
    from jupyter_gpumem.kernel.stream import stream
    from jupyter_gpumem.render.figure import figure as make
    from jupyter_gpumem.units import parse_duration

    window_s = parse_duration(window)
    if window_s is None:
        raise ValueError(f"window={window!r} is not a time span: give seconds, or e.g. '90s', '15min', '1h'.")
    return make(stream().sampler.history(), gpu, window_s)


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "jupyter-gpumem"}]


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext jupyter_gpumem`: registers the `%gpumem` magic and the out-of-memory advisor, and
    applies configured defaults (docs/configuration.md). Loading again changes nothing."""
    from jupyter_gpumem.kernel.advisor import on_post_run_cell
    from jupyter_gpumem.kernel.control import _controller, controller
    from jupyter_gpumem.kernel.magic import GpumemMagics
    from jupyter_gpumem.kernel.publish import kernel_report_path
    from jupyter_gpumem.kernel.stream import stream

    first = _controller is None
    if first:
        _log_where_the_kernel_logs(ipython)
    ipython.register_magics(GpumemMagics)
    if on_post_run_cell not in ipython.events.callbacks["post_run_cell"]:
        ipython.events.register("post_run_cell", on_post_run_cell)
    cells = stream(ipython).cells  # %gpumem cells: after the advisor, which names a cell that ended before
    if cells.before not in ipython.events.callbacks["pre_run_cell"]:
        ipython.events.register("pre_run_cell", cells.before)
        ipython.events.register("post_run_cell", cells.after)
    stream(ipython).sampler.start()  # the cells' figures as nvidia-smi counts them come from its readings
    if first:
        lines = controller(ipython).load_defaults()
        if lines:
            _say(lines, ipython)
        path = kernel_report_path()
        if path is not None:  # in a kernel: its server reads what it reports (publish.py)
            publisher = stream(ipython).publish_to(path)
            ipython.events.register("pre_run_cell", publisher.activity.started)
            ipython.events.register("post_run_cell", publisher.activity.finished)


def _log_where_the_kernel_logs(ipython: Any) -> None:
    """In a kernel, the package's warnings go where the kernel application's go (the kernel's stderr:
    the server's log), not to logging's last resort, the notebook's stderr, where they land in
    whatever cell runs, or nowhere at kernel start."""
    import logging

    from jupyter_gpumem.budget.config import application_of

    class ToApplication(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            application.log.handle(record)  # type: ignore[union-attr]

    log = logging.getLogger("jupyter_gpumem")
    application = application_of(ipython)
    if application is not None and not log.handlers:
        log.addHandler(ToApplication())
        log.propagate = False


def _say(lines: list[str], ipython: Any) -> None:
    """Show ``lines`` where the user sees them (HTML in a notebook, text elsewhere). Loaded at kernel start
    (listed in the kernel's configuration), output answers no request and no frontend shows it: then they go to
    the first cell that runs."""
    from jupyter_gpumem.kernel.control import say

    header = getattr(ipython, "parent_header", None)
    if not isinstance(header, dict) or header.get("msg_id"):
        say(lines)  # plain IPython, or inside a cell (%load_ext)
        return

    def first_cell(info: Any) -> None:
        ipython.events.unregister("pre_run_cell", first_cell)
        say(lines)

    ipython.events.register("pre_run_cell", first_cell)


def _connect_sidebar(interval_s: float | None = None, history_s: float | None = None) -> None:
    """Run silently by the JupyterLab sidebar: load the extension, then stream to it (stream.py).
    Without arguments: the protocol's default interval and history."""
    from IPython import get_ipython

    from jupyter_gpumem.kernel.stream import stream
    from jupyter_gpumem.wire.comm import DEFAULT_HISTORY_S, DEFAULT_INTERVAL_S

    interval_s = DEFAULT_INTERVAL_S if interval_s is None else interval_s
    history_s = DEFAULT_HISTORY_S if history_s is None else history_s
    shell = get_ipython()
    if shell is not None:
        # Not through the extension manager: a user's own `%load_ext jupyter_gpumem` later would then
        # print "already loaded" in their notebook. Loading again changes nothing anyway.
        load_ipython_extension(shell)
    stream(shell).connect(interval_s, history_s)


def unload_ipython_extension(ipython: Any) -> None:
    from jupyter_gpumem.kernel.advisor import on_post_run_cell
    from jupyter_gpumem.kernel.stream import _stream

    ipython.magics_manager.magics["line"].pop("gpumem", None)
    if on_post_run_cell in ipython.events.callbacks["post_run_cell"]:
        ipython.events.unregister("post_run_cell", on_post_run_cell)
    if _stream is not None and _stream.cells.before in ipython.events.callbacks["pre_run_cell"]:
        ipython.events.unregister("pre_run_cell", _stream.cells.before)
        ipython.events.unregister("post_run_cell", _stream.cells.after)
