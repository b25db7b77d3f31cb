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
import logging
import os
import stat
import threading
import time
from collections.abc import Collection, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

import psutil

from jupyter_gpumem import values
from jupyter_gpumem._version import __version__
from jupyter_gpumem.gpu import nvml
from jupyter_gpumem.gpu.files import read_json, replace_json
from jupyter_gpumem.gpu.host import HostProcesses
from jupyter_gpumem.gpu.model import HostInfo
from jupyter_gpumem.gpu.reader import Reader
from jupyter_gpumem.server import culler, handlers, metrics
from jupyter_gpumem.server.figures import EMPTY, Figures, KernelSource, Privacy, make_figures
from jupyter_gpumem.units import format_duration, format_gib_or_mib
from jupyter_gpumem.wire.report import REPORT, Report, notice_path, private_directory, report_path
from jupyter_gpumem.wire.schemas import release
from jupyter_gpumem.words import clock

# A report is ~2 KiB per GPU: a larger file is no kernel's report, and is not read whole.
MAX_REPORT_BYTES = 256 * 1024

# Between two steps of a reading the thread sleeps this long, so the event loop's thread gets the GIL
# if it is waiting: otherwise it would wait up to the interpreter's switch interval (5 ms) for a thread
# that runs Python to let go of it.
YIELD_S = 0.0005
# A process of a kernel's is at most this many generations below the kernel's pid (_own_processes).
MAX_DEPTH = 32
NONE: frozenset[int] = frozenset()
_PROC_STAT = os.path.exists(f"/proc/{os.getpid()}/stat")  # Linux; elsewhere psutil asks the system


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
        listed = {process.pid for device in snapshot.devices for process in device.processes}
        own = _own_processes({pid: kernel_id for kernel_id, pid, _, _, _ in kernels if pid is not None}, listed)
        time.sleep(YIELD_S)
        sources = [
            KernelSource(
                kernel_id, pid, _guarded_report(kernel_id, connection, self.log), state, last, own.get(kernel_id, NONE)
            )
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
        # Made where the kernel made none (one without jupyter_gpumem); never written into another user's folder.
        refused = private_directory(path.parent, create=True)
        if refused is not None:
            self.log.warning("jupyter-gpumem: kernel %s's notice is not written: %s.", action.kernel_id, refused)
            return
        try:
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
        provisioner = _attribute(kernel, "provisioner")
        pid = _attribute(provisioner, "pid")  # LocalProvisioner
        if not isinstance(pid, int):
            pid = _attribute(_attribute(provisioner, "process"), "pid")
        connection = _attribute(kernel, "connection_file")
        state = _attribute(kernel, "execution_state")
        last = _attribute(kernel, "last_activity")  # a datetime (MappingKernelManager sets it)
        yield (
            kernel_id,
            pid if isinstance(pid, int) else None,
            connection if isinstance(connection, str) and connection else None,  # "" until it is written
            state if isinstance(state, str) else None,
            last.timestamp() if isinstance(last, datetime) else None,
        )


def _attribute(owner: object, name: str) -> object:
    """``owner.name``, or None where it has none yet. A kernel manager's traits are read while the server starts
    and stops kernels: ServerKernelManager's ``last_activity`` has no value until MappingKernelManager sets it after
    the start, and read in between it raises TraitError (its default None is not a datetime), not AttributeError.
    That one kernel failed the whole reading, every kernel's figures with it."""
    try:
        return getattr(owner, name, None)
    except Exception:
        return None


def _own_processes(kernels: Mapping[int, str], listed: Collection[int]) -> dict[str, frozenset[int]]:
    """Which of the processes NVML ``listed`` are which kernel's own (by the kernel manager's pid of each,
    ``kernels``): the kernel's pid and its descendants, by each process's parent in the process table (/proc) up to
    a kernel's pid. A process whose parent cannot be read (gone, of another PID namespace, access denied, a zombie)
    is no kernel's, nor is one more than MAX_DEPTH below any. A kernel's report also names a pid, but any process
    of the user can write that: it counts for nothing here. Each process's chain is read once a reading, and only
    for the processes NVML lists, not for every process of the host."""
    owner: dict[int, str | None] = dict(kernels)
    for pid in listed:
        chain: list[int] = []
        current: int | None = pid
        while current is not None and current not in owner:
            chain.append(current)
            if current <= 1 or len(chain) > MAX_DEPTH:  # the root of the tree, or too far below any kernel
                current = None
                break
            current = _parent(current)
        found = None if current is None else owner[current]
        for seen in chain:
            owner[seen] = found
    own: dict[str, set[int]] = {}
    for pid in listed:
        kernel_id = owner.get(pid)
        if kernel_id is not None:
            own.setdefault(kernel_id, set()).add(pid)
    return {kernel_id: frozenset(pids) for kernel_id, pids in own.items()}


def _parent(pid: int) -> int | None:
    """The parent of ``pid`` in the process table; None where it cannot be read: gone, of another PID namespace,
    hidden (``hidepid``), or a zombie. On Linux from ``/proc/<pid>/stat`` itself, a fifth of what psutil.Process
    costs (its constructor reads the file too): 30 µs, not 150."""
    if not _PROC_STAT:
        try:
            return psutil.Process(pid).ppid()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            return None
    try:
        handle = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
        try:
            found = os.read(handle, 1024)
        finally:
            os.close(handle)
    except OSError:
        return None
    # "pid (comm) state ppid ...": the command's name may hold spaces and parentheses, so from its last ")".
    try:
        state, ppid, _ = found[found.rfind(b")") + 2 :].split(b" ", 2)
        return None if state == b"Z" else int(ppid)
    except ValueError:  # gone while read: nothing, or not the whole line
        return None


def _report(kernel_id: str, connection_file: str | None, log: logging.Logger) -> Report | None:
    """The kernel's report, with the defaults of the fields an older kernel does not send filled in; None when it
    has none (yet), one that is not valid, or one of another protocol (each logged once). The kernel is then not
    reporting: its memory still shows, from NVML."""
    if not connection_file:
        return None
    path = report_path(connection_file)
    if not _private_report(kernel_id, path, log):
        return None
    sender = f"kernel {kernel_id} ({path})"
    try:
        data = read_json(path, MAX_REPORT_BYTES)
    except OSError:  # none yet, or gone: not reporting
        return None
    except values.Refused as refused:  # NaN, 10**400, nested 10,000 deep: one sentence, the other kernels read on
        REPORT.tell(sender, str(refused), log)
        return None
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


def _private_report(kernel_id: str, path: Path, log: logging.Logger) -> bool:
    """Whether the kernel's report may be read: its folder is private to the server's own user (the user who runs
    the server runs its kernels; ``private_directory``) and the file is a file of that user's, not a link. Where
    either is another user's, or open to others, the kernel is not reporting, said once (``REPORT.say``); where
    there is none (yet), nothing is said."""
    sender = f"kernel {kernel_id} ({path})"
    refused = private_directory(path.parent)
    if refused is None:
        try:
            found = os.lstat(path)
        except OSError:  # none yet, or gone: not reporting, as reading it would find
            return False
        if stat.S_ISLNK(found.st_mode) or not stat.S_ISREG(found.st_mode):
            refused = f"{path} is not a plain file"
        elif hasattr(os, "geteuid") and found.st_uid != os.geteuid():  # (Windows has no Unix owner)
            refused = f"{path} belongs to uid {found.st_uid}, not to this server's user (uid {os.geteuid()})"
        else:
            return True
    elif not os.path.lexists(path.parent):  # a kernel without jupyter-gpumem (or not yet started): nothing to say
        return False
    REPORT.say(sender, f"{sender} is not read, because {refused}: the kernel is not reporting", log)
    return False


def _guarded_report(kernel_id: str, connection_file: str | None, log: logging.Logger) -> Report | None:
    """``_report``, with whatever one kernel's file causes kept to that kernel: it is then not reporting (its memory
    still shows, from NVML), the cause is logged once, and every other kernel is read as before."""
    try:
        return _report(kernel_id, connection_file, log)
    except Exception as error:  # a bug of ours on one file: that kernel's, not the server's
        REPORT.say(f"kernel {kernel_id}", f"could not read kernel {kernel_id}'s report: {error!r}", log)
        return None


def _no_host(pids: Collection[int], name: Any) -> Mapping[int, HostInfo]:
    return {}
