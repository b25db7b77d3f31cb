# Generated from wire/schemas/report.v1.json by `python tests/wire/test_generated.py --write`: do not edit.

from __future__ import annotations

from typing import Literal, TypedDict

from typing_extensions import NotRequired

from . import comm_v1
from .comm_v1 import Notice


class Ceiling(TypedDict):
    """
    The administrator's ceiling for this kernel (docs/configuration.md).
    """

    max_fraction: float | None
    """
    The largest fraction of a GPU a policy may ask for; null: none.
    """
    max_limit_bytes: int | None
    """
    The largest budget a policy may ask for; null: none.
    """


class NoticeFile(Notice):
    """
    The server's notice to a kernel: kernel-<id>.notice.json beside its report, written by the idle culler (docs/server.md). Its fields besides protocol and type are the sample's notice.
    """

    protocol: Literal[1]
    """
    The protocol's version: a change an older reader would misread bumps it.
    """
    type: Literal["notice"]
    """
    This format.
    """


class Report(TypedDict):
    """
    What a kernel tells its Jupyter server: <runtime dir>/jupyter-gpumem/kernel-<id>.json, replaced when it changes and at least every 10 s (docs/server.md). The server's notice to the kernel, beside it, is $defs/notice_file. Evolves additively within protocol 1 (docs/protocol.md, 'Versioning and releases mixing'): the required fields are those every release has sent, forever; a field added since is optional and its description says what its absence means; readers ignore fields they do not know.
    """

    protocol: Literal[1]
    """
    The protocol's version: a change an older reader would misread bumps it.
    """
    type: Literal["report"]
    """
    This format.
    """
    pid: int
    """
    The kernel's own PID (it differs from the kernel manager's when a wrapper started it).
    """
    package_version: str
    """
    jupyter-gpumem's version in the kernel.
    """
    t: float
    """
    When it was written (the sample's t, time.time() in the kernel).
    """
    oom_errors_total: int
    """
    GPU out-of-memory errors in the kernel's cells.
    """
    ceiling: Ceiling
    idle_since: NotRequired[float | None]
    """
    When the user's last cell finished (or the extension loaded, if none has run since); null while a cell runs. Absent from an older kernel: the server's own last activity is used.
    """
    sample: comm_v1.Sample
    """
    The latest sample without process tables (processes, others) and without notice (docs/protocol.md).
    """
