"""The kernel's report file and the server's notice beside it (docs/server.md): where they are, how often the
report is rewritten, and both as typed values generated from their reference, ``schemas/report.v1.json``
(``generated/report_v1.py``). The kernel writes its report (kernel.publish) and reads the notice; the server
(server.watcher) reads the report and writes the notice."""

from __future__ import annotations

import os
from pathlib import Path

from jupyter_gpumem.wire.generated.report_v1 import NoticeFile, Report
from jupyter_gpumem.wire.schemas import Schema

# The generated types this module's callers use.
__all__ = ["NoticeFile", "Report"]

FOLDER = "jupyter-gpumem"
HEARTBEAT_S = 10.0  # rewritten at least this often, so a reader can tell a live kernel's file


def report_path(connection_file: str | os.PathLike[str]) -> Path:
    """Where the kernel with this connection file reports (the server computes the same)."""
    connection = Path(connection_file)
    return connection.parent / FOLDER / connection.name


def notice_path(connection_file: str | os.PathLike[str]) -> Path:
    """Where the server leaves a notice for the kernel with this connection file (docs/server.md): beside its
    report, ``kernel-<id>.notice.json``. The server writes it; the kernel reads it and shows it."""
    return notice_beside(report_path(connection_file))


def notice_beside(report: Path) -> Path:
    return report.with_name(report.stem + ".notice.json")


REPORT: Schema[Report] = Schema("report.v1.json", "a kernel report", "report")
NOTICE: Schema[NoticeFile] = Schema("report.v1.json", "a notice", "notice", "notice_file")
