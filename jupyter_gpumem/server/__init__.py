"""The jupyter-gpumem Jupyter server extension: every kernel's GPU memory on the server's /metrics
(Prometheus) and at /api/gpumem/v1 (JSON), without ever reading NVML on the event loop; and the inline view's
code at /jupyter-gpumem/static/, so that a view's widget state carries none (kernel/widget.py).

Enabled on install (``jupyter-config/jupyter_server_config.d/jupyter_gpumem.json``); configured with
``c.GpumemServer``. docs/server.md.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from jupyter_server.base.handlers import FileFindHandler
from jupyter_server.utils import url_path_join
from prometheus_client import REGISTRY
from tornado.ioloop import IOLoop
from traitlets import Enum, Float, default
from traitlets.config import LoggingConfigurable

from jupyter_gpumem._version import __version__ as __version__  # jupyter server extension list shows it
from jupyter_gpumem.budget.privacy import level_of
from jupyter_gpumem.server import culler
from jupyter_gpumem.server.figures import PRIVACY
from jupyter_gpumem.server.handlers import PATH, GpumemHandler
from jupyter_gpumem.server.metrics import GpumemCollector
from jupyter_gpumem.server.watcher import Watcher
from jupyter_gpumem.wire.report import HEARTBEAT_S

# The inline view's module, its plotly chunk and styles (jlpm build:inline), for the view's loader
# (labextension/src/widgets/loader.ts ROUTE), under the server's base URL.
STATIC_PATH = "jupyter-gpumem/static"
STATIC = Path(__file__).parents[1] / "static"

# The running extension: one per process, as prometheus_client's default registry is.
_running: tuple[Watcher, GpumemCollector] | None = None


class GpumemServer(LoggingConfigurable):
    """Settings of the jupyter-gpumem server extension (``c.GpumemServer.interval_s = 2`` in
    ``jupyter_server_config.py``). It shows what kernels use and report; it limits nothing. Only where the
    administrator opts in (``idle_warn_minutes``, ``idle_shutdown_minutes``) does it warn idle kernels holding
    GPU memory and shut them down."""

    interval_s = Float(
        1.0,
        min=0.1,
        max=600.0,
        help="""Seconds between two readings of NVML and the kernels' reports, on the extension's own thread.
        /metrics and /api/gpumem/v1 answer with the latest reading; they never read NVML themselves.""",
    ).tag(config=True)

    stale_after_s = Float(
        3 * HEARTBEAT_S,
        min=1.5 * HEARTBEAT_S,
        help=f"""A kernel's report older than this many seconds is called stale and its figures are not
        shown. Kernels rewrite their report at least every {HEARTBEAT_S:g} s, busy or not.""",
    ).tag(config=True)

    privacy = Enum(
        list(PRIVACY),
        help="""What this server's /metrics and /api/gpumem/v1 show of GPU processes that are none of its kernels
        (other users' jobs, under a hub): "aggregate" (the default) their count and memory per GPU; "names"
        also per Unix user; "list" also each process's PID, user and memory. Never a command line. Default:
        the JUPYTER_GPUMEM_PRIVACY environment variable, else "aggregate". This limits what jupyter-gpumem
        shows, not what a user can see: nvidia-smi in their own terminal lists every process on the GPU.""",
    ).tag(config=True)

    @default("privacy")
    def _privacy_default(self) -> str:
        return level_of(os.environ.get("JUPYTER_GPUMEM_PRIVACY", "")) or "aggregate"  # as the kernel reads it

    idle_warn_minutes = Float(
        min=0.0,
        help="""Warn in the notebook of a kernel that has held GPU memory while idle for this many minutes (it
        names when it will be shut down, with idle_shutdown_minutes). 0: no warning (the default). Default: the
        JUPYTER_GPUMEM_IDLE_WARN_MINUTES environment variable (a spawner can set it per group), else 0.""",
    ).tag(config=True)

    idle_shutdown_minutes = Float(
        min=0.0,
        help=f"""Shut down a kernel that has held GPU memory while idle for this many minutes, saying why in
        its notebook ({culler.GRACE_S:g} s before) and in the server's log. Never sooner than
        idle_shutdown_minutes - idle_warn_minutes after its warning. 0: never (the default). Default: the
        JUPYTER_GPUMEM_IDLE_SHUTDOWN_MINUTES environment variable, else 0.""",
    ).tag(config=True)

    @default("idle_warn_minutes")
    def _idle_warn_default(self) -> float:
        return self._minutes("JUPYTER_GPUMEM_IDLE_WARN_MINUTES")

    @default("idle_shutdown_minutes")
    def _idle_shutdown_default(self) -> float:
        return self._minutes("JUPYTER_GPUMEM_IDLE_SHUTDOWN_MINUTES")

    def _minutes(self, variable: str) -> float:
        """The variable's minutes; unset, empty or not a number of minutes (one log line): 0, off."""
        text = os.environ.get(variable, "").strip()
        try:
            value = float(text) if text else 0.0
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value >= 0):
            self.log.warning("jupyter-gpumem: %s=%r is not a number of minutes; it is off", variable, text)
            return 0.0
        return value

    def idle(self) -> culler.Settings:
        return culler.Settings(warn_s=self.idle_warn_minutes * 60, shutdown_s=self.idle_shutdown_minutes * 60)


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "jupyter_gpumem.server"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    global _running
    settings = GpumemServer(parent=serverapp)
    idle = settings.idle()
    io_loop = getattr(serverapp, "io_loop", None) or IOLoop.current()  # jupyter_server sets it before extensions
    watcher = Watcher(
        serverapp.kernel_manager,
        settings.interval_s,
        settings.stale_after_s,
        serverapp.log,
        settings.privacy,
        idle,
        io_loop,
    )
    collector = GpumemCollector(lambda: watcher.published.rows)
    if _running is not None:  # a second server in this process (tests): it takes over the registry
        _running[0].stop()
        REGISTRY.unregister(_running[1])
    REGISTRY.register(collector)
    _running = watcher, collector
    base_url = serverapp.web_app.settings["base_url"]
    route = url_path_join(base_url, PATH)
    serverapp.web_app.add_handlers(
        ".*$",
        [
            (route, GpumemHandler, {"latest": lambda: watcher.published.body}),
            (url_path_join(base_url, STATIC_PATH, "(.*)"), FileFindHandler, {"path": [str(STATIC)]}),
        ],
    )
    watcher.start()
    serverapp.log.info(
        "jupyter-gpumem: GPU memory per kernel on /metrics and %s, read every %g s", route, settings.interval_s
    )
    if idle.on:
        serverapp.log.info(
            "jupyter-gpumem: idle kernels holding GPU memory are %s",
            " and ".join(
                f"{what} after {minutes:g} min idle (GpumemServer.{name})"
                for what, minutes, name, given in (
                    ("warned", settings.idle_warn_minutes, "idle_warn_minutes", idle.warns),
                    ("shut down", settings.idle_shutdown_minutes, "idle_shutdown_minutes", idle.shutdown_s > 0),
                )
                if given
            ),
        )
    if idle.warn_s > 0 and not idle.warns:
        serverapp.log.warning(
            "jupyter-gpumem: GpumemServer.idle_warn_minutes=%g is not below idle_shutdown_minutes=%g: no warning "
            "before the shutdown notice",
            settings.idle_warn_minutes,
            settings.idle_shutdown_minutes,
        )
