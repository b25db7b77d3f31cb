"""The extension in one kernel: the Runtime owns the kernel's parts (the Controller, the cell Recorder, the
out-of-memory Advisor and the Stream with its sampler thread), makes each with what it needs, and hooks them to
IPython's events.

One Runtime per process, made on first use (``runtime()``): a process has one IPython shell, one sampler thread,
one import watch on ``sys.meta_path`` and one report file. ``jupyter_gpumem.show()``, ``figure()``, ``batched``
and the sidebar's ``_connect_sidebar`` take no kernel argument, so they find it here.
"""

from __future__ import annotations

import atexit
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from IPython import get_ipython
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Configurable

from jupyter_gpumem.budget.config import application_of, load_config
from jupyter_gpumem.frameworks.choice import referenced_in
from jupyter_gpumem.kernel.advisor import Advisor
from jupyter_gpumem.kernel.control import Controller, say
from jupyter_gpumem.kernel.magic import GpumemMagics
from jupyter_gpumem.kernel.publish import kernel_report_path
from jupyter_gpumem.kernel.recorder import Recorder
from jupyter_gpumem.kernel.stream import Stream
from jupyter_gpumem.render import figure
from jupyter_gpumem.units import parse_duration

if TYPE_CHECKING:
    import plotly.graph_objects as go


class Runtime:
    def __init__(self, control: Controller):
        self.control = control
        self.cells = Recorder(control)  # fed by IPython's cell events and by every sample
        self.advisor = Advisor(control, self.cells)
        self.stream = Stream(control, self.cells, self.advisor)
        self._loaded = False  # the configured defaults and the report to the server: at the first load only

    @classmethod
    def of_shell(cls, shell: Configurable | None) -> Runtime:
        """The kernel's Runtime, its configuration read from the shell's config (None: the environment alone)."""
        config, problems = load_config(shell)
        return cls(Controller(config, problems=problems, referenced=referenced_in(_notebook_namespace)))

    def load(self, ipython: InteractiveShell) -> None:
        """`%load_ext jupyter_gpumem`: the `%gpumem` magic, the advisor and the cell records on IPython's events,
        the sampler started; the first time, the configured defaults applied and the report to the server begun.
        Loading again changes nothing."""
        _log_where_the_kernel_logs(ipython)
        ipython.register_magics(GpumemMagics(ipython, self.control, self.cells, self.stream))
        events = ipython.events
        if self.advisor.after_cell not in events.callbacks["post_run_cell"]:
            events.register("post_run_cell", self.advisor.after_cell)
        if self.cells.before not in events.callbacks["pre_run_cell"]:
            # After the advisor, which names a cell that ended before the one that failed.
            events.register("pre_run_cell", self.cells.before)
            events.register("post_run_cell", self.cells.after)
        self.stream.sampler.start()  # the cells' figures as nvidia-smi counts them come from its readings
        if self._loaded:
            return
        self._loaded = True
        lines = self.control.load_defaults()
        if lines:
            _say(lines, ipython)
        path = kernel_report_path()
        if path is not None:  # in a kernel: its server reads what it reports (publish.py)
            publisher = self.stream.publish_to(path)
            events.register("pre_run_cell", publisher.activity.started)
            events.register("post_run_cell", publisher.activity.finished)

    def figure(self, gpu: int | str | None, window: str | float) -> go.Figure:
        """The recorded history as a plotly figure (``jupyter_gpumem.figure()``)."""
        window_s = parse_duration(window)
        if window_s is None:
            raise ValueError(f"window={window!r} is not a time span: give seconds, or e.g. '90s', '15min', '1h'.")
        return figure.figure(self.stream.sampler.history(), gpu, window_s)

    def unload(self, ipython: InteractiveShell) -> None:
        """`%unload_ext jupyter_gpumem`: the magic and the cell hooks go; the sampler and the report go on (the
        sidebar and the server still follow this kernel)."""
        ipython.magics_manager.magics["line"].pop("gpumem", None)
        events = ipython.events
        if self.advisor.after_cell in events.callbacks["post_run_cell"]:
            events.unregister("post_run_cell", self.advisor.after_cell)
        if self.cells.before in events.callbacks["pre_run_cell"]:
            events.unregister("pre_run_cell", self.cells.before)
            events.unregister("post_run_cell", self.cells.after)


_runtime: Runtime | None = None  # process-wide: see the module's docstring


def runtime(shell: Configurable | None = None) -> Runtime:
    """This process's one Runtime, made on first use (configuration read from ``shell``'s config)."""
    global _runtime
    if _runtime is None:
        _runtime = Runtime.of_shell(shell)
        atexit.register(_runtime.stream.stop)
    return _runtime


def current() -> Runtime | None:
    """This process's Runtime if one was made; None: nothing ran in this process yet (no advice, no history)."""
    return _runtime


def _notebook_namespace() -> Mapping[str, object] | None:
    shell = get_ipython()
    return None if shell is None else shell.user_ns


def _log_where_the_kernel_logs(ipython: InteractiveShell) -> None:
    """In a kernel, the package's warnings go where the kernel application's go (the kernel's stderr:
    the server's log), not to logging's last resort, the notebook's stderr, where they land in
    whatever cell runs, or nowhere at kernel start."""
    log = logging.getLogger("jupyter_gpumem")
    application = application_of(ipython)
    if application is None or log.handlers:
        return

    class ToApplication(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            application.log.handle(record)  # type: ignore[union-attr]

    log.addHandler(ToApplication())
    log.propagate = False


def _say(lines: list[str], ipython: InteractiveShell) -> None:
    """Show ``lines`` where the user sees them (HTML in a notebook, text elsewhere). Loaded at kernel start
    (listed in the kernel's configuration), output answers no request and no frontend shows it: then they go to
    the first cell that runs."""
    header = getattr(ipython, "parent_header", None)
    if not isinstance(header, dict) or header.get("msg_id"):
        say(lines)  # plain IPython, or inside a cell (%load_ext)
        return

    def first_cell(info: object) -> None:
        ipython.events.unregister("pre_run_cell", first_cell)
        say(lines)

    ipython.events.register("pre_run_cell", first_cell)
