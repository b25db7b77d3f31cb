"""A background thread that takes a sample every interval and keeps a bounded history of them."""

from __future__ import annotations

import logging
import math
import threading
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

from jupyter_gpumem.wire.comm import DEFAULT_HISTORY_S, DEFAULT_INTERVAL_S, Sample

log = logging.getLogger("jupyter_gpumem")

T = TypeVar("T")
Kept = Sample


class Sampler(Generic[T]):
    """Calls ``take()`` every ``interval_s`` on one daemon thread and hands the sample to ``send``.

    History keeps ``history_s`` worth of samples, each reduced by ``keep`` to what a replay needs (the
    process tables are dropped: a sidebar needs them only for now). One Sampler per kernel; start() on a running one
    changes nothing, so loading the extension again never adds a thread.

    A sample is kept and sent as one step (``_delivering``), so ``replay`` can cut the stream between two samples: a
    replay and the samples sent after it meet without a gap or an overlap.
    """

    def __init__(
        self,
        take: Callable[[], T],
        send: Callable[[T], None],
        keep: Callable[[T], Kept],
        interval_s: float = DEFAULT_INTERVAL_S,
        history_s: float = DEFAULT_HISTORY_S,
    ):
        self._take = take
        self._send = send
        self._keep = keep
        self._lock = threading.Lock()  # the history and the settings
        self._delivering = threading.Lock()  # a sample from kept to sent; taken before _lock
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._failing = False
        self.interval_s = interval_s
        self.history_s = history_s
        self._history: deque[Kept] = deque(maxlen=self._length())

    def _length(self) -> int:
        return max(1, math.ceil(self.history_s / self.interval_s))

    def configure(self, interval_s: float, history_s: float) -> None:
        with self._lock:
            if (interval_s, history_s) == (self.interval_s, self.history_s):
                return
            self.interval_s, self.history_s = interval_s, history_s
            self._history = deque(self._history, maxlen=self._length())
        self._wake.set()  # the next sample comes at the new interval, not after the old one

    def history(self) -> list[Kept]:
        with self._lock:
            return list(self._history)

    def replay(self, switch: Callable[[list[Kept]], None]) -> None:
        """Calls ``switch(history)`` between two samples' deliveries, so that every sample is in that history or
        sent after ``switch`` returns, never both and never neither: where a frontend's hello and the samples after
        it meet. Read history() and then switch, and a sample kept meanwhile would go to the old receiver."""
        with self._delivering:
            switch(self.history())

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if self.running:
            return
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="jupyter-gpumem-sampler", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stopping = True
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)
        self._thread = None

    def _run(self) -> None:
        while not self._stopping:
            try:
                sample = self._take()
                with self._delivering:
                    with self._lock:
                        self._history.append(self._keep(sample))
                    self._send(sample)
                self._failing = False
            except Exception:  # a bad sample must not end the stream; say so in the kernel's log, once
                if not self._failing:
                    log.exception("jupyter-gpumem: taking or sending a sample failed; sampling goes on")
                self._failing = True
            self._wake.wait(self.interval_s)
            self._wake.clear()
