"""What a kernel tells its Jupyter server about its GPU memory, without either ever waiting on the other.

The kernel's sampler thread replaces a small JSON file beside the kernel's connection file:
``<runtime dir>/jupyter-gpumem/kernel-<id>.json`` for ``<runtime dir>/kernel-<id>.json``. The server
extension reads these on its own thread. A busy kernel (a cell running) keeps sampling on its own
thread; a busy server reads the files later; neither sends the other a message that waits in a
queue. Both files live only in a folder of the user's own (``private_directory``: 0700, theirs, not a link); where
``jupyter-gpumem/`` is another user's, or open to others (a shared runtime directory), the kernel says so once in its
log and keeps its report in memory only: its sidebar is unaffected, and its server sees it as not reporting.

The file (docs/server.md):

    {"protocol": 1, "type": "report", "pid": 4242, "package_version": "0.2.0", "t": 1763740800.0,
     "oom_errors_total": 0, "ceiling": {"max_fraction": 0.25, "max_limit_bytes": null},
     "idle_since": 1763740500.0, "sample": <a protocol sample without process tables (docs/protocol.md)>}

``idle_since``: when the user's last cell finished (or the extension loaded, if none has run since); null
while a cell runs. The server cannot tell this itself: every message the kernel sends, the sidebar's samples
too, counts as activity to jupyter_server, so a kernel followed by a sidebar never looks idle there.

The reference for the file, and for the server's notice beside it (``$defs/notice_file``), is the schema
jupyter_gpumem/wire/schemas/report.v1.json.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import time
from pathlib import Path
from typing import cast

from jupyter_gpumem import values
from jupyter_gpumem._version import __version__
from jupyter_gpumem.budget.plan import Ceiling
from jupyter_gpumem.gpu.files import read_json, replace_json
from jupyter_gpumem.kernel.protocol import figures_only
from jupyter_gpumem.wire.comm import Notice, Sample
from jupyter_gpumem.wire.report import HEARTBEAT_S, NOTICE, Report, notice_beside, private_directory, report_path

log = logging.getLogger("jupyter_gpumem")
MAX_NOTICE_BYTES = 64 * 1024  # a notice is one sentence and a few numbers


def kernel_report_path() -> Path | None:
    """This kernel's report file; None outside an ipykernel (plain IPython, a script)."""
    try:
        from ipykernel.connect import get_connection_file

        return report_path(get_connection_file())
    except Exception:  # not in a kernel, or a kernel without a connection file
        return None


class Activity:
    """When the user last ran code here: IPython's ``pre_run_cell`` and ``post_run_cell`` (registered by
    load_ipython_extension). Silent executions, such as the sidebar's request to stream, fire neither."""

    def __init__(self) -> None:
        self.idle_since: float | None = time.time()

    def started(self, info: object = None) -> None:
        self.idle_since = None

    def finished(self, result: object = None) -> None:
        self.idle_since = time.time()


class Publisher:
    """Writes the report when what it says changes, and at least every HEARTBEAT_S."""

    def __init__(self, path: Path):
        self.path = path
        self.activity = Activity()
        self._last: Report | None = None
        self._written_at = 0.0
        self._notice_stamp: tuple[int, int] | None = None
        self._notice: Notice | None = None
        self._refused: str | None = None  # why the report's folder is not used, as last logged

    def publish(self, sample: Sample, ceiling: Ceiling, oom_errors: int) -> None:
        report: Report = {
            "protocol": 1,
            "type": "report",
            "pid": os.getpid(),
            "package_version": __version__,
            "oom_errors_total": oom_errors,
            "ceiling": {"max_fraction": ceiling.max_fraction, "max_limit_bytes": ceiling.max_limit_bytes},
            "idle_since": self.activity.idle_since,
            # Not the cells: their first lines are the user's code, which stays between the kernel and its frontends.
            "sample": cast(Sample, {k: v for k, v in figures_only(sample).items() if k != "cells"}),
            "t": sample["t"],
        }
        now = sample["t"]
        unchanged = self._last is not None and _without_time(report) == _without_time(self._last)
        if unchanged and now - self._written_at < HEARTBEAT_S:
            return
        self._last, self._written_at = report, now  # refused, the report stays here: checked again at the heartbeat
        refused = private_directory(self.path.parent, create=True)
        if refused != self._refused and refused is not None:
            log.warning(
                "jupyter-gpumem: this kernel keeps its report in memory only, because %s; its sidebar is unaffected, "
                "but its Jupyter server sees it as not reporting and shows no notice from it.",
                refused,
            )
        self._refused = refused
        if refused is None:
            replace_json(self.path, report, durable=False, separators=(",", ":"))

    def remove(self) -> None:
        if private_directory(self.path.parent) is not None:  # nothing of ours is there
            return
        with contextlib.suppress(OSError):
            self.path.unlink()

    def notice(self) -> Notice | None:
        """What the server's notice beside the report says now (``notice_path``), as the sample carries it
        (docs/protocol.md); None: there is none, or its folder is not this user's own (``private_directory``). Read
        again only when the file changes."""
        path = notice_beside(self.path)
        stamp: tuple[int, int] | None = None
        if private_directory(path.parent) is None:  # one lstat and one stat of folders a sample
            try:
                found = os.lstat(path)  # one stat a sample; the file is read only when it changed
                if stat.S_ISREG(found.st_mode):  # not a link
                    stamp = (found.st_mtime_ns, found.st_size)
            except OSError:
                pass
        if stamp != self._notice_stamp:
            self._notice_stamp, self._notice = stamp, _read_notice(path) if stamp else None
        return self._notice


def _read_notice(path: Path) -> Notice | None:
    sender = f"the Jupyter server ({path})"
    try:
        data = read_json(path, MAX_NOTICE_BYTES)
    except OSError:  # gone meanwhile
        return None
    except values.Refused as refused:  # being written by a server without replace_json, or not the server's
        NOTICE.tell(sender, str(refused), log)
        return None
    protocol = NOTICE.other_version(data)
    if protocol is not None:
        # A server of another major release (docs/protocol.md, "Versioning and releases mixing"): the notice has no
        # package version, its protocol says which.
        where = "in this kernel's environment" if protocol > NOTICE.version else "where the Jupyter server runs"
        NOTICE.say(
            sender,
            f"{sender} wrote a notice in protocol {protocol}, which this kernel (jupyter-gpumem {__version__}, "
            f"protocol {NOTICE.version}) cannot read: upgrade jupyter-gpumem {where}",
            log,
        )
        return None
    notice = NOTICE.read(data, sender, log)
    if notice is None:
        return None
    return {
        "kind": notice["kind"],
        "text": notice["text"],
        "text_said": notice.get("text_said"),
        "t": notice["t"],
        "shutdown_at": notice["shutdown_at"],
    }


def _without_time(report: Report) -> Report:
    """The report as compared: the time alone is no change."""
    return {**report, "t": 0.0, "sample": {**report["sample"], "t": 0.0}}
