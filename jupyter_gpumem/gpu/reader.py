"""The one thread of a process that calls NVML, and callers that never wait on it longer than they asked.

NVML calls are synchronous and take the driver's locks: after an Xid error, with a GPU falling off the bus, or
without persistence mode on a large node (``nvmlInit`` loads the driver's state), one call can take seconds or never
return, and a call in flight cannot be cancelled from Python. So only the :class:`Reader`'s thread calls NVML.
A caller asks it for a reading and waits at most its deadline; past it, the caller gets the last figures the driver
gave, marked ``stalled_since`` (the time of that answer), and goes on. A stalled call holds the one thread, never
more: callers that come meanwhile only raise the number of the reading they wait for.

Readings are numbered. A caller that asks waits for the first reading that starts after it asked; ``next()``
(the sampler's call) first takes the oldest reading finished since the one it had, so a reading the driver gave
late is never lost, and the figures a late answer gave are stamped with the time they arrived.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace

from jupyter_gpumem.gpu.model import Snapshot
from jupyter_gpumem.words import Said

# How long a caller on the kernel's main thread waits for the driver by default (GpumemConfig.nvml_deadline_s).
DEADLINE_S = 1.0
# Readings next() can still deliver after they were made: more than a stall leaves (its late answer, the one after).
RECENT = 8


class Reader:
    """``read(cpu_window_s)`` makes one Snapshot (nvml.read with the host's process table); the Reader calls it
    on its own daemon thread, started on first use, never on a caller's."""

    def __init__(self, read: Callable[[float], Snapshot], own_pid: int, name: str = "jupyter-gpumem-nvml"):
        self._read = read
        self._own_pid = own_pid
        self._name = name
        self._changed = threading.Condition()
        self._asked = 0  # the number of the newest reading asked for
        self._done = 0  # the number of the last reading made (0: none yet)
        self.readings = 0  # how many readings the driver has completed: for benchmarks/soak.py and tests
        self._window_s = 0.0  # the longest CPU% window asked of the next reading
        self._last: Snapshot | None = None  # the last reading the driver gave
        # The last readings made, by number, for next(): a bounded few (readings are not queued during a stall).
        self._recent: deque[tuple[int, Snapshot]] = deque(maxlen=RECENT)
        self._since: float | None = None  # when the reading in flight began (None: none in flight)
        self._first_asked: float | None = None  # when the first reading was asked for
        self._late = False  # a caller was given stale figures while the reading in flight ran
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def start(self) -> None:
        """Begin the first reading now without waiting for it (``%load_ext``: nvmlInit may take seconds)."""
        with self._changed:
            self._ask(0.0)

    def fresh(self, deadline_s: float = DEADLINE_S, cpu_window_s: float = 0.0) -> Snapshot:
        """A reading begun after this call, or past ``deadline_s`` the last one the driver gave, marked stalled."""
        with self._changed:
            wanted = self._ask(cpu_window_s)
            return self._wait(wanted, deadline_s)

    def next(self, after: int, deadline_s: float) -> tuple[int, Snapshot]:
        """The sampler's call: the oldest reading made since reading number ``after`` if there is one (a late answer
        is delivered, then the one made right after it, one a call: none is dropped), else a new one as ``fresh``;
        and the number of the reading returned."""
        with self._changed:
            if (made := self._oldest_after(after)) is not None:
                return made
            snapshot = self._wait(self._ask(0.0), deadline_s)
            # While it waited, a late answer may have come in before the reading it waited for: that one first.
            made = self._oldest_after(after)
            return made if made is not None else (after, snapshot)

    def last(self) -> Snapshot | None:
        """The last reading the driver gave, without asking for another (None before the first)."""
        return self._last

    @property
    def waiting_since(self) -> float | None:
        """When the reading in flight began: None while the driver is not being waited on."""
        return self._since

    # ------------------------------------------------------------------ with self._changed held

    def _ask(self, cpu_window_s: float) -> int:
        if self._first_asked is None:
            self._first_asked = time.time()
        if self._pid != os.getpid():  # a forked child: the parent's thread is not in this process
            self._pid, self._thread, self._since, self._done, self._asked = os.getpid(), None, None, 0, 0
            self._recent.clear()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()
        if self._asked == self._done or self._since is not None:
            self._asked += 1  # one reading after the one in flight serves every caller that asks meanwhile
        self._window_s = max(self._window_s, cpu_window_s)
        self._changed.notify_all()
        return self._asked

    def _oldest_after(self, after: int) -> tuple[int, Snapshot] | None:
        return next(((number, made) for number, made in self._recent if number > after), None)

    def _wait(self, wanted: int, deadline_s: float) -> Snapshot:
        end = time.monotonic() + deadline_s
        while self._done < wanted:
            left = end - time.monotonic()
            if left <= 0:
                return self._stalled()
            self._changed.wait(left)
        assert self._last is not None
        return self._last

    def _stalled(self) -> Snapshot:
        now = time.time()
        self._late = True
        if self._last is None:
            since = self._first_asked if self._first_asked is not None else now
            return Snapshot(taken_at=now, own_pid=self._own_pid, stalled_since=since)
        return replace(self._last, taken_at=now, stalled_since=self._last.taken_at)

    # ------------------------------------------------------------------ the reader's thread

    def _run(self) -> None:
        while True:
            with self._changed:
                while self._done >= self._asked:
                    self._changed.wait()
                number, window_s = self._asked, self._window_s
                self._window_s = 0.0
                self._since, self._late = time.time(), False
            try:
                snapshot = self._read(window_s)
            except Exception as error:  # a bug of ours: the callers get a sentence, the thread goes on
                snapshot = Snapshot(
                    taken_at=time.time(),
                    own_pid=self._own_pid,
                    problem=Said("reader_failed", error_type=type(error).__name__, error=str(error)),
                )
            with self._changed:
                self._since = None
                if self._late:  # its figures are as of when they arrived, after the stale ones given meanwhile
                    snapshot = replace(snapshot, taken_at=time.time())
                self._last, self._done = snapshot, number
                self._recent.append((number, snapshot))
                self.readings += 1
                self._changed.notify_all()


def stalled(snapshot: Snapshot, now: float | None = None) -> Said | None:
    """The one sentence every Python surface gives a snapshot the driver did not answer in time; None if it did."""
    if snapshot.stalled_since is None:
        return None
    return stalled_sentence(snapshot.stalled_since, time.time() if now is None else now, bool(snapshot.devices))


def stalled_sentence(since: float, now: float, figures: bool) -> Said:
    """ "The NVIDIA driver has not answered since 10:42:03 (for 12 s); figures are from then." (format/channel.ts's
    stalledLine says the same in the sidebar and the inline view)."""
    then = Said("stalled_figures_from_then") if figures else Said("stalled_no_figures_yet")
    return Said("driver_stalled", since=since, for_s=max(0.0, now - since), then=then)
