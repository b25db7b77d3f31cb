"""The server extension's one thread: every interval, NVML and the kernels' reports become a Figures.

Nothing here runs on the server's event loop. NVML can take milliseconds per call (seconds when the
driver is slow), so /metrics and /api/gpumem/v1 read only what this thread published last: one
immutable ``Published``, replaced whole by one attribute assignment. It holds the Figures already rendered
(the metric rows, the JSON body), not the Figures itself: nothing the garbage collector tracks outlives a
reading (metrics.py says why that matters).

With the idle culler on (``GpumemServer.idle_warn_minutes`` / ``idle_shutdown_minutes``), the same thread
decides from each Figures which idle kernels holding GPU memory to warn or shut down (culler.py), writes their
notice files (publish.notice_path) and logs why. The shutdown itself is the kernel manager's coroutine, so
it is handed to the server's event loop (``IOLoop.add_callback``, the one IOLoop method safe from another
thread).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
import threading
import time
from collections.abc import Collection, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from jupyter_gpumem._version import __version__
from jupyter_gpumem.gpu import nvml
from jupyter_gpumem.gpu.files import replace_json
from jupyter_gpumem.gpu.host import HostProcesses
from jupyter_gpumem.gpu.model import HostInfo
from jupyter_gpumem.gpu.reader import Reader
from jupyter_gpumem.server import culler, handlers, metrics
from jupyter_gpumem.server.figures import EMPTY, Figures, KernelSource, Privacy, make_figures
from jupyter_gpumem.units import format_duration, format_gib_or_mib
from jupyter_gpumem.wire.report import REPORT, Report, notice_path, report_path
from jupyter_gpumem.wire.schemas import release
from jupyter_gpumem.words import clock

# Between two steps of a reading the thread sleeps this long, so the event loop's thread gets the GIL
# if it is waiting: otherwise it would wait up to the interpreter's switch interval (5 ms) for a thread
# that runs Python to let go of it.
YIELD_S = 0.0005


class Published(NamedTuple):
    rows: tuple[metrics.Row, ...]  # for /metrics
    body: bytes  # for /api/gpumem/v1


def publish(figures: Figures, interval_s: float) -> Published:
    found = metrics.rows(figures)
    time.sleep(YIELD_S)
    return Published(found, handlers.encode(figures, interval_s))


class Watcher:
    def __init__(
        self,
        kernel_manager: Any,
        interval_s: float,
        stale_after_s: float,
        log: logging.Logger,
        privacy: Privacy = "aggregate",
        idle: culler.Settings = culler.OFF,
        io_loop: Any = None,
    ):
        self.kernel_manager = kernel_manager
        self.privacy = privacy
        # Other processes' users are looked up only where they are shown.
        self._host = _no_host if privacy == "aggregate" else HostProcesses().lookup
        # The server's own process is no kernel: no pid of ours is marked, and names are not looked up (the metrics
        # and the API show none).
        self._reader = Reader(lambda cpu_window_s: nvml.read(own_pid=-1, host=self._host), own_pid=-1)
        self._got = 0
        self.interval_s = interval_s
        self.stale_after_s = stale_after_s
        self.log = log
        self.published = publish(EMPTY, interval_s)
        self._stop = threading.Event()
        self._failed = False
        # The idle culler: its settings, the server's IOLoop (where kernels are shut down), what it decided
        # so far per kernel, each kernel's connection file in the last reading, and the notices it wrote.
        self.idle = idle
        self._io_loop = io_loop
        self._episodes: dict[str, culler.Episode] = {}
        self._connections: dict[str, str | None] = {}
        self._notices: dict[str, Path] = {}
        self._cull_failed = False
        self._thread = threading.Thread(target=self._run, name="jupyter-gpumem-server", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        due = time.monotonic()
        while True:
            figures = None
            try:
                figures = self.read()
                self.published = publish(figures, self.interval_s)
            except Exception:  # a bug of ours: the metrics keep the last reading, the server runs on
                if not self._failed:
                    self.log.exception("jupyter-gpumem: reading the GPUs failed; the metrics keep the last reading")
                self._failed = True
            if figures is not None and self.idle.on:
                try:
                    self.cull(figures, time.time())
                except Exception:  # a bug of ours: nothing more is culled until it passes, the server runs on
                    if not self._cull_failed:
                        self.log.exception("jupyter-gpumem: the idle culler failed; no kernel is warned or shut down")
                    self._cull_failed = True
            due = max(due + self.interval_s, time.monotonic())  # a slow reading is not caught up on
            if self._stop.wait(due - time.monotonic()):
                return

    def read(self) -> Figures:
        kernels = list(_kernels(self.kernel_manager))
        # The server's own process is no kernel: no pid of ours is marked, and names are not looked up
        # (the metrics and the API show none).
        # Waits for the driver an interval at most: a stalled one leaves the last figures, marked, and the kernels'
        # reports still come in.
        self._got, snapshot = self._reader.next(self._got, self.interval_s)
        time.sleep(YIELD_S)
        self._connections = {kernel_id: connection for kernel_id, _, connection, _, _ in kernels}
        sources = [
            KernelSource(kernel_id, pid, _report(kernel_id, connection, self.log), state, last)
            for kernel_id, pid, connection, state, last in kernels
        ]
        time.sleep(YIELD_S)
        figures = make_figures(snapshot, sources, time.time(), self.stale_after_s, self.privacy)
        time.sleep(YIELD_S)
        return figures

    def cull(self, figures: Figures, now: float) -> None:
        """Warn and shut down idle kernels holding GPU memory, as culler.decide says, and log why."""
        self._episodes, actions = culler.decide(figures, self.idle, self._episodes, now)
        for action in actions:
            held, idle = format_gib_or_mib(action.held_bytes), format_duration(action.idle_s)
            if action.kind == "warn":
                self._write_notice(action, now)
                at = action.shutdown_at
                then = "" if at is None else f", to be shut down at {clock(at, now)}"
                self.log.warning(
                    "jupyter-gpumem: kernel %s has held %s of GPU memory while idle for %s "
                    "(GpumemServer.idle_warn_minutes=%g): warned in its notebook%s",
                    action.kernel_id, held, idle, self.idle.warn_s / 60, then,
                )  # fmt: skip
            elif action.kind == "shutdown_notice":
                self._write_notice(action, now)
                self.log.warning(
                    "jupyter-gpumem: kernel %s has held %s of GPU memory while idle for %s "
                    "(GpumemServer.idle_shutdown_minutes=%g): told in its notebook, shut down in %g s",
                    action.kernel_id, held, idle, self.idle.shutdown_s / 60, culler.GRACE_S,
                )  # fmt: skip
            elif action.kind == "shutdown":
                self.log.warning(
                    "jupyter-gpumem: shutting down kernel %s: it has held %s of GPU memory while idle for %s "
                    "(GpumemServer.idle_shutdown_minutes=%g)",
                    action.kernel_id, held, idle, self.idle.shutdown_s / 60,
                )  # fmt: skip
                self._io_loop.add_callback(self._shut_down, action.kernel_id)
            else:  # withdraw, gone
                if self._remove_notice(action.kernel_id) and action.kind == "withdraw":
                    self.log.info(
                        "jupyter-gpumem: kernel %s ran something, or holds no GPU memory now: its idle notice is "
                        "withdrawn",
                        action.kernel_id,
                    )

    def _write_notice(self, action: culler.Action, now: float) -> None:
        connection = self._connections.get(action.kernel_id)
        if not connection:
            return
        path = notice_path(connection)
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # a kernel without jupyter_gpumem has none
            replace_json(path, culler.notice(action, now), durable=False)
        except OSError as error:
            self.log.warning("jupyter-gpumem: could not write kernel %s's notice %s: %s", action.kernel_id, path, error)
            return
        self._notices[action.kernel_id] = path

    def _remove_notice(self, kernel_id: str) -> bool:
        path = self._notices.pop(kernel_id, None)
        if path is None:
            return False
        with contextlib.suppress(OSError):
            path.unlink()
        return True

    async def _shut_down(self, kernel_id: str) -> None:
        """On the server's event loop. The notice is removed at the next reading that no longer lists it."""
        try:
            result = self.kernel_manager.shutdown_kernel(kernel_id)
            if inspect.isawaitable(result):
                await result
        except KeyError:  # shut down meanwhile
            return
        except Exception:
            self.log.exception("jupyter-gpumem: shutting down idle kernel %s failed", kernel_id)
            return
        self.log.info("jupyter-gpumem: idle kernel %s is shut down", kernel_id)


def _kernels(manager: Any) -> Iterator[tuple[str, int | None, str | None, str | None, float | None]]:
    """Each kernel's id, pid, connection file, execution state and last activity. Only reads: a list of the
    manager's keys and attributes of its kernel managers, which the GIL keeps whole; it never awaits or calls
    into a kernel."""
    for kernel_id in manager.list_kernel_ids():
        try:
            kernel = manager.get_kernel(kernel_id)
        except KeyError:  # shut down meanwhile
            continue
        provisioner = getattr(kernel, "provisioner", None)
        pid = getattr(provisioner, "pid", None)  # LocalProvisioner
        if not isinstance(pid, int):
            pid = getattr(getattr(provisioner, "process", None), "pid", None)
        connection = getattr(kernel, "connection_file", None)
        state = getattr(kernel, "execution_state", None)
        last = getattr(kernel, "last_activity", None)  # a datetime (MappingKernelManager sets it)
        yield (
            kernel_id,
            pid if isinstance(pid, int) else None,
            connection if isinstance(connection, str) else None,
            state if isinstance(state, str) else None,
            last.timestamp() if isinstance(last, datetime) else None,
        )


def _report(kernel_id: str, connection_file: str | None, log: logging.Logger) -> Report | None:
    """The kernel's report, with the defaults of the fields an older kernel does not send filled in; None when it
    has none (yet), one that is not valid, or one of another protocol (each logged once). The kernel is then not
    reporting: its memory still shows, from NVML."""
    if not connection_file:
        return None
    path = report_path(connection_file)
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):  # none yet, gone, or being replaced: not reporting
        return None
    sender = f"kernel {kernel_id} ({path})"
    protocol = REPORT.other_version(data)
    if protocol is not None:
        # A kernel of another major release (docs/protocol.md, "Versioning and releases mixing"): one sentence that
        # names both, and where to upgrade.
        theirs = release(data)
        runs = f"runs jupyter-gpumem {theirs}, whose" if theirs else "runs a jupyter-gpumem whose"
        where = "where the Jupyter server runs" if protocol > REPORT.version else "in the kernel's environment"
        REPORT.say(
            sender,
            f"{sender} {runs} report (protocol {protocol}) this Jupyter server (jupyter-gpumem {__version__}, "
            f"protocol {REPORT.version}) cannot read: upgrade jupyter-gpumem {where}",
            log,
        )
        return None
    return REPORT.read(data, sender, log)


def _no_host(pids: Collection[int], name: Any) -> Mapping[int, HostInfo]:
    return {}
