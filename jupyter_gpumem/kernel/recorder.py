"""Which cell took the memory: a record per executed cell (render/cells.py says what each figure means).

IPython's ``pre_run_cell`` and ``post_run_cell`` (main thread) open and close a cell's record: its first line,
its times, and the framework's allocator figures, with the peak reset as the cell starts where the framework can
(PyTorch, TensorFlow; only once its runtime exists, never starting it). The sampler thread hands each reading it
already takes to ``observe``, which folds this kernel's memory per GPU into the cell it fell in: no extra NVML
or framework call on its path. The hooks cost microseconds (benchmarks/cells.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Sequence

from jupyter_gpumem.budget.framework_interface import Allocator
from jupyter_gpumem.frameworks import Adapter
from jupyter_gpumem.gpu.reader import stalled
from jupyter_gpumem.kernel.control import Controller
from jupyter_gpumem.render import framework_names, html
from jupyter_gpumem.render.cells import Cell, first_line, span, tables
from jupyter_gpumem.wire import comm

KEEP = 1000  # cells remembered
log = logging.getLogger("jupyter_gpumem")


class Recorder:
    def __init__(self, control: Controller, keep: int = KEEP):
        self._control = control
        self._cells: deque[Cell] = deque(maxlen=keep)
        self._lock = threading.Lock()  # the cells' NVML figures: written by the sampler thread, read by the magic
        self._latest: dict[str, int | None] = {}  # this kernel's memory per GPU uuid at the last reading
        self._running: Cell | None = None
        self._reset: dict[str, bool] = {}  # per framework started as the running cell began: its peak was reset

    # ------------------------------------------------------------------ main thread: IPython's events

    def before(self, info: object = None) -> None:
        try:
            self._before(info)
        except Exception:  # the user's cell matters, not its record: ours goes to the log
            log.exception("jupyter-gpumem: recording a cell's start failed")

    def after(self, result: object = None) -> None:
        try:
            self._after(result)
        except Exception:
            log.exception("jupyter-gpumem: recording a cell's end failed")

    def _before(self, info: object) -> None:
        started = self._started()
        self._reset = {a.name: a.reset_peak() for a in started}
        # Its execution count is known when it ends (IPython versions differ on when they count it): until then
        # it is running, [*] as Jupyter shows it.
        cell = Cell(None, first_line(getattr(info, "raw_cell", "") or ""), time.time())
        cell.allocator_before = _allocators(started)
        with self._lock:
            cell.held_before = dict(self._latest)
            self._cells.append(cell)
        self._running = cell

    def _after(self, result: object) -> None:
        cell, self._running = self._running, None
        if cell is None:
            return
        started = self._started()
        cell.allocator_after = _allocators(started)
        # Worded now, in the language in use: the cells table puts it into its translated headings as it is.
        cell.framework = framework_names(started) if started else None
        # Exact where every started framework's peak was reset as the cell began, or it started during the cell.
        cell.peak_exact = bool(started) and all(self._reset.get(a.name, True) for a in started)
        cell.count = getattr(result, "execution_count", None)
        cell.error = getattr(result, "error_in_exec", None) is not None
        cell.end_t = time.time()

    # ------------------------------------------------------------------ sampler thread

    def observe(self, t: float, owns: dict[str, int | None]) -> None:
        """A reading taken at ``t``: this kernel's memory per GPU uuid goes to the cell it fell in (from its start
        to the next cell's start)."""
        with self._lock:
            self._latest = owns
            cell = next((c for c in reversed(self._cells) if c.start_t <= t), None)
            if cell is None:
                return
            for uuid, own in owns.items():
                if own is not None:  # the cell's peak: its readings, and what was held when it started
                    known = [v for v in (own, cell.peak.get(uuid), cell.held_before.get(uuid)) if v is not None]
                    cell.peak[uuid] = max(known)
                cell.held_after[uuid] = own

    def spans(self, since_t: float, until_t: float) -> list[comm.Cell]:
        """The cells a sample taken at ``until_t`` carries: those that ended since the previous one, and the one
        running."""
        with self._lock:
            return [
                span(c)
                for c in self._cells
                if c.start_t <= until_t and (c.end_t is None or since_t < c.end_t <= until_t)
            ]

    # ------------------------------------------------------------------ any thread

    def finished(self) -> list[Cell]:
        with self._lock:
            return [c for c in self._cells if c.end_t is not None]

    def _started(self) -> list[Adapter]:
        return [a for a in self._control.adapters.values() if a.imported() and a.initialised()]


def _allocators(started: Sequence[Adapter]) -> tuple[Allocator, ...]:
    """The started frameworks' allocators per framework GPU, together, with the peak since the cell began."""
    together: list[Allocator] = []
    for adapter in started:
        for index, allocator in enumerate(adapter.memory_in_use(cell=True)):
            if index < len(together):
                together[index] = together[index].plus(allocator)
            else:
                together.append(allocator)
    return tuple(together)


def report(recorder: Recorder, control: Controller, interval_s: float, shown: int) -> html.Rich:
    """`%gpumem cells`: the last ``shown`` finished cells, a table per GPU."""
    cells = recorder.finished()
    hidden = max(0, len(cells) - shown)
    reading = control.read(control.snapshot())
    gpus = [(d.uuid, f"GPU {d.index} {d.name or ''}".rstrip()) for d in reading.snapshot.devices if d.uuid]
    found = tables(cells[hidden:], gpus, control.framework_uuids(reading))
    return html.cells(found, interval_s, hidden, stalled(reading.snapshot))
