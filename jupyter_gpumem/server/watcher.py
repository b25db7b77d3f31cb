"""The server extension's one thread: every interval, NVML and the kernels' reports become a View.

Nothing here runs on the server's event loop. NVML can take milliseconds per call (seconds when the
driver is slow), so /metrics and /api/gpumem/v1 read only what this thread published last: one
immutable ``Published``, replaced whole by one attribute assignment. It holds the View already rendered
(the metric rows, the JSON body), not the View itself: nothing the garbage collector tracks outlives a
reading (metrics.py says why that matters).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Collection, Iterator, Mapping
from datetime import datetime
from typing import Any, NamedTuple

from .. import nvml
from ..host import HostProcesses
from ..model import HostInfo
from ..publish import report_path
from . import api, metrics
from .view import EMPTY, KernelSource, Privacy, View, make_view

# Between two steps of a reading the thread sleeps this long, so the event loop's thread gets the GIL
# if it is waiting: otherwise it would wait up to the interpreter's switch interval (5 ms) for a thread
# that runs Python to let go of it.
YIELD_S = 0.0005


class Published(NamedTuple):
    rows: tuple[metrics.Row, ...]  # for /metrics
    body: bytes  # for /api/gpumem/v1


def publish(view: View, interval_s: float) -> Published:
    found = metrics.rows(view)
    time.sleep(YIELD_S)
    return Published(found, api.encode(view, interval_s))


class Watcher:
    def __init__(
        self,
        kernel_manager: Any,
        interval_s: float,
        stale_after_s: float,
        log: logging.Logger,
        privacy: Privacy = "aggregate",
    ):
        self.kernel_manager = kernel_manager
        self.privacy = privacy
        # Other processes' users are looked up only where they are shown.
        self._host = _no_host if privacy == "aggregate" else HostProcesses().lookup
        self.interval_s = interval_s
        self.stale_after_s = stale_after_s
        self.log = log
        self.published = publish(EMPTY, interval_s)
        self._stop = threading.Event()
        self._failed = False
        self._thread = threading.Thread(target=self._run, name="jupyter-gpumem-server", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        due = time.monotonic()
        while True:
            try:
                self.published = publish(self.read(), self.interval_s)
            except Exception:  # a bug of ours: the metrics keep the last reading, the server runs on
                if not self._failed:
                    self.log.exception("jupyter-gpumem: reading the GPUs failed; the metrics keep the last reading")
                self._failed = True
            due = max(due + self.interval_s, time.monotonic())  # a slow reading is not caught up on
            if self._stop.wait(due - time.monotonic()):
                return

    def read(self) -> View:
        kernels = list(_kernels(self.kernel_manager))
        # The server's own process is no kernel: no pid of ours is marked, and names are not looked up
        # (the metrics and the API show none).
        snapshot = nvml.read(own_pid=-1, host=self._host)
        time.sleep(YIELD_S)
        sources = [
            KernelSource(kernel_id, pid, _report(connection), state, last)
            for kernel_id, pid, connection, state, last in kernels
        ]
        time.sleep(YIELD_S)
        view = make_view(snapshot, sources, time.time(), self.stale_after_s, self.privacy)
        time.sleep(YIELD_S)
        return view


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


def _report(connection_file: str | None) -> Any:
    if not connection_file:
        return None
    try:
        return json.loads(report_path(connection_file).read_bytes())
    except (OSError, ValueError):  # none yet, gone, or not JSON: not reporting
        return None


def _no_host(pids: Collection[int], name: Any) -> Mapping[int, HostInfo]:
    return {}
