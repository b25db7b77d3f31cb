"""The kernel's report file and the server's notice beside it (docs/server.md): where they are, how often the
report is rewritten, and both as typed values generated from their reference, ``schemas/report.v1.json``
(``generated/report_v1.py``). The kernel writes its report (kernel.publish) and reads the notice; the server
(server.watcher) reads the report and writes the notice. Both only in a folder of their own user's
(``private_directory``)."""

from __future__ import annotations

import os
import stat
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


def private_directory(path: Path, create: bool = False) -> str | None:
    """None where ``path`` is a folder of this process's user that no other user can read, write or replace: a
    directory, not a symbolic link, owned by this process's (effective) user, with no permission for its group or
    others (0700), in a folder that only its owner (this user or root) can rename it in, or a sticky one (as /tmp).
    Else why not, as the end of a sentence ("/tmp/rt/jupyter-gpumem belongs to uid 1001, not to this process's
    user (uid 1000)"). ``create``: make it first (mode 0700) where it is missing.

    The kernel writes its report and reads its notice, and the server reads the report and writes the notice, only
    in such a folder (docs/hub.md, "Trust model"). Where the runtime directory is shared (JUPYTER_RUNTIME_DIR in a
    world-writable /tmp), another user could otherwise have made ``jupyter-gpumem/`` first, and forge the reports
    the idle culler acts on, or the notices a notebook shows. The folder is checked by lstat after mkdir; its
    contents are then used by path, which another user cannot change under it once the checks hold."""
    if create:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass  # checked below, whoever made it
        except OSError as error:
            return f"{path} cannot be made ({error.strerror})"
    try:
        found = os.lstat(path)
        parent = os.stat(path.parent)  # the folder it is in, wherever a link to it points
    except FileNotFoundError:
        return f"{path} does not exist"
    except OSError as error:
        return f"{path} cannot be looked at ({error.strerror})"
    if stat.S_ISLNK(found.st_mode):
        return f"{path} is a symbolic link"
    if not stat.S_ISDIR(found.st_mode):
        return f"{path} is not a folder"
    if not hasattr(os, "geteuid"):  # Windows: no Unix owner or mode; the user's profile folders are their own
        return None
    uid = os.geteuid()
    if found.st_uid != uid:
        return f"{path} belongs to uid {found.st_uid}, not to this process's user (uid {uid})"
    if found.st_mode & 0o077:
        return f"{path} is open to other users (mode {stat.S_IMODE(found.st_mode):04o}, not 0700)"
    if parent.st_uid not in (uid, 0):
        return f"{path.parent} belongs to uid {parent.st_uid}, who could replace {path.name} in it"
    if parent.st_mode & 0o022 and not parent.st_mode & stat.S_ISVTX:
        return (
            f"{path.parent} is writable by other users without the sticky bit (mode "
            f"{stat.S_IMODE(parent.st_mode):04o}), so they could replace {path.name} in it"
        )
    return None


REPORT: Schema[Report] = Schema("report.v1.json", "a kernel report", "report")
NOTICE: Schema[NoticeFile] = Schema("report.v1.json", "a notice", "notice", "notice_file")
