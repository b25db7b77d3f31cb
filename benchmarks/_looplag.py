"""A Jupyter server extension for benchmarks/metrics.py: how late the server's event loop runs.

A task on the loop sleeps PERIOD_S over and over and records how much later than asked it woke:
anything that holds the loop (a handler, a periodic callback, the GIL held by another thread) shows
as lag. ``GET /looplag`` starts the probe if needed and answers the lag since the last call.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import threading
import time
from typing import Any

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

PERIOD_S = 0.002


class Probe:
    def __init__(self) -> None:
        self.lags_s: list[float] = []
        self.task: asyncio.Task[None] | None = None
        self.collections: list[tuple[int, float, str]] = []  # generation, seconds, thread
        self._collecting = 0.0
        self.objects = 0  # tracked by the garbage collector when the probe started
        gc.callbacks.append(self._gc)

    def _gc(self, phase: str, info: dict[str, int]) -> None:
        # A collection holds the GIL, so it holds the loop too, whichever thread it runs on.
        if phase == "start":
            self._collecting = time.perf_counter()
        else:
            seconds = time.perf_counter() - self._collecting
            self.collections.append((info["generation"], seconds, threading.current_thread().name))

    async def run(self) -> None:
        while True:
            start = time.perf_counter()
            await asyncio.sleep(PERIOD_S)
            self.lags_s.append(time.perf_counter() - start - PERIOD_S)

    def take(self) -> dict[str, Any]:
        if self.task is None:
            # Every server starts measuring just after a full collection: the first one of a process's life
            # comes at some point whatever runs in it, and costs the most (the whole heap).
            gc.collect()
            self.objects = len(gc.get_objects())
            self.task = asyncio.ensure_future(self.run())
        lags, self.lags_s = sorted(self.lags_s), []
        collections, self.collections = self.collections, []
        if not lags:
            return {"count": 0}
        slowest = max(collections, default=(0, 0.0, ""), key=lambda c: c[1])
        return {
            "count": len(lags),
            "p50_ms": statistics.median(lags) * 1e3,
            "p99_ms": lags[int(len(lags) * 0.99)] * 1e3,
            "worst_ms": lags[-1] * 1e3,
            "objects": self.objects,
            "full_collections": sum(c[0] == 2 for c in collections),
            "slowest_collection": {"generation": slowest[0], "ms": slowest[1] * 1e3, "thread": slowest[2]},
        }


class LagHandler(APIHandler):
    def initialize(self, probe: Probe) -> None:
        self.probe = probe

    @web.authenticated
    def get(self) -> None:
        self.finish(self.probe.take())


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "_looplag"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    route = url_path_join(serverapp.web_app.settings["base_url"], "/looplag")
    serverapp.web_app.add_handlers(".*$", [(route, LagHandler, {"probe": Probe()})])
