"""The kernel's one sampler thread, and where each sample goes: the JupyterLab sidebar's comm, the inline
views in cell outputs (widget.py), the notebook's warnings (alerts.py), and the report the Jupyter server
reads (publish.py).

In a kernel, loading the extension starts the sampler and the report. The sidebar runs
``jupyter_gpumem._connect_sidebar(...)`` silently when it starts following a kernel. That opens a
fresh comm (closing the previous one: every open frontend gets the new comm_open and follows it),
replays the history in its ``hello`` and streams a ``sample`` per interval from the sampler thread.
Comms are opened and closed on the main thread only; ipykernel (>= 6, not 7.0.x) lets the sampler
thread send.
"""

from __future__ import annotations

import logging
import sys
import threading
from pathlib import Path
from typing import NamedTuple

import comm
from comm.base_comm import BaseComm, MessageType

from jupyter_gpumem import i18n
from jupyter_gpumem.budget.reading import Reading
from jupyter_gpumem.gpu.model import Snapshot
from jupyter_gpumem.gpu.snapshot import reader
from jupyter_gpumem.kernel import protocol
from jupyter_gpumem.kernel.advisor import Advisor
from jupyter_gpumem.kernel.alerts import Alerts
from jupyter_gpumem.kernel.control import Controller
from jupyter_gpumem.kernel.publish import Publisher
from jupyter_gpumem.kernel.recorder import Recorder
from jupyter_gpumem.kernel.sampler import Sampler
from jupyter_gpumem.kernel.widget import GpuMemView
from jupyter_gpumem.wire.comm import TARGET, Sample

log = logging.getLogger("jupyter_gpumem")


class Tick(NamedTuple):
    """One interval's reading, and the same as the protocol sends it."""

    reading: Reading
    sample: Sample

    @property
    def figures(self) -> Sample:
        return protocol.figures_only(self.sample)


class Stream:
    def __init__(self, control: Controller, cells: Recorder, advisor: Advisor):
        """``cells``: fed every sample (IPython's cell events feed it too); ``advisor``: its count of
        out-of-memory errors goes in the server's report."""
        self.control = control
        self.cells = cells
        self._advisor = advisor
        self.comm: BaseComm | None = None
        self.publisher: Publisher | None = None
        self.alerts = Alerts()
        self._sampled_t = 0.0  # when the last sample the sampler delivered was taken
        self._got = 0  # the number of the NVML reader's reading the sampler took last (reader.Reader.next)
        self.sampler: Sampler[Tick] = Sampler(self.take, self._deliver, keep=lambda tick: tick.figures)
        # The inline views (widget.py): added and removed on the main thread, fed by the sampler thread.
        self._views: tuple[GpuMemView, ...] = ()
        self._views_lock = threading.Lock()

    def take(self) -> Tick:
        """The sampler thread's sample: the NVML reader's next reading, or past the interval (and the deadline)
        the last one marked stalled; every reading the driver gives is delivered once, however late."""
        deadline_s = min(self.sampler.interval_s, self.control.config.nvml_deadline_s)
        self._got, snapshot = reader.next(self._got, deadline_s)
        return self._tick(snapshot)

    def _tick(self, snapshot: Snapshot) -> Tick:
        """One sample: NVML, the budget, and the framework's allocator figures if (and only if) its
        runtime has already started: the sampler must never be what starts it (Controller.read)."""
        reading = self.control.read(snapshot)
        notice = self.publisher.notice() if self.publisher is not None else None
        cells = self.cells.spans(self._sampled_t, reading.snapshot.taken_at)
        return Tick(reading, protocol.encode_sample(reading, notice, cells))

    def connect(self, interval_s: float, history_s: float) -> None:
        settings = protocol.check_settings(interval_s, history_s)
        self.sampler.configure(settings.interval_s, settings.history_s)
        self.sampler.replay(self._open)
        self.sampler.start()

    def _open(self, history: list[Sample]) -> None:
        """A fresh comm whose hello replays ``history``, in place of the last one: between two samples
        (Sampler.replay), so the next sample goes to the new comm and none falls between them."""
        if self.comm is not None:
            self.comm.close()
        hello = protocol.hello(self.sampler.interval_s, self.sampler.history_s, history)
        opened = comm.create_comm(target_name=TARGET, data=hello)
        opened.on_msg(self._on_msg)
        opened.on_close(lambda message: self._closed(opened))
        self.comm = opened

    def stop(self) -> None:
        """The kernel is going away: each inline view leaves its last picture in its outputs (a notebook saved
        after this shows it, not a widget whose model died with the kernel), then sampling stops."""
        for view in self.views:
            try:
                view.close()
            except Exception:  # the channels may be closing already: the picture is lost, not the shutdown
                log.debug("jupyter-gpumem: an inline view could not leave its picture", exc_info=True)
        self.sampler.stop()
        self.comm = None  # the kernel is going away; its channels may already be closed
        if self.publisher is not None:
            self.publisher.remove()

    def publish_to(self, path: Path) -> Publisher:
        """Also report every sample to the Jupyter server (publish.py), from now on: sampling starts."""
        self.publisher = Publisher(path)
        self.sampler.start()
        return self.publisher

    def add_view(self) -> GpuMemView:
        """A new inline view (the main thread): made with a sample taken now (the cell may just have changed
        the policy), then fed every sample until it closes; it asks the sampler for the history it replays."""
        if threading.current_thread() is not threading.main_thread():
            # Comms (widgets) are opened on the main thread only (docs/architecture.md, threading rule 5).
            raise RuntimeError(
                "jupyter_gpumem.show() makes widgets, which are made on the main thread only: call it in a cell, "
                "not from another thread."
            )
        view = GpuMemView(self.sampler, self._tick(self.control.snapshot()).sample, self.remove_view)
        with self._views_lock:
            self._views = (*self._views, view)
        self.sampler.start()
        return view

    def remove_view(self, view: GpuMemView) -> None:
        with self._views_lock:
            self._views = tuple(v for v in self._views if v is not view)

    @property
    def views(self) -> tuple[GpuMemView, ...]:
        return self._views

    def _deliver(self, tick: Tick) -> None:
        sample = tick.sample
        self._sampled_t = sample["t"]
        if sample.get("stalled_since") is None:  # stale figures are not this moment's: no cell's peak
            self.cells.observe(sample["t"], {g["uuid"]: g["own_bytes"] for g in sample["gpus"] if g["uuid"]})
        channel = self.comm
        if channel is not None:
            channel.send(dict(protocol.sample_message(tick.sample)))
        for view in self._views:  # a tuple replaced whole: a view added or removed meanwhile is safe
            try:
                view.update(tick.sample)
            except Exception:  # one broken view must not stop the others, the sidebar or the warnings
                log.exception("jupyter-gpumem: updating an inline view failed; that view stops updating")
                self.remove_view(view)
        if self.publisher is not None:
            self.publisher.publish(tick.sample, self.control.ceiling, self._advisor.errors)
        warnings = self.alerts.check(tick.reading)
        if warnings:
            # From this thread ipykernel shows it in the cell that is running (or ran last).
            print("\n".join(warnings), file=sys.stderr, flush=True)

    def _on_msg(self, message: MessageType) -> None:
        try:
            settings = protocol.parse_request(message.get("content", {}).get("data"))
        except protocol.ProtocolError as error:
            log.warning("jupyter-gpumem: dropped a message from the sidebar: %s", error)
            return
        except Exception:  # a bug of ours on one message: dropped, said, and the stream goes on
            log.warning("jupyter-gpumem: dropped a message from the sidebar that could not be read", exc_info=True)
            return
        self.sampler.configure(settings.interval_s, settings.history_s)
        if settings.language is not None:
            # The interface's language: %gpumem words in it from now on, as the sidebar around it does.
            i18n.use_language(settings.language)

    def _closed(self, closed: BaseComm) -> None:
        # A frontend closed it. The sampler keeps sampling, so the next connect replays the history.
        if self.comm is closed:
            self.comm = None
