"""Files other processes read while they are written: replaced whole, never seen half-written; and read back
bounded, through the one check of another process's values (values.py)."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from jupyter_gpumem import values


def replace_json(path: Path, data: Any, durable: bool = True, **dump: Any) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``: readers see the
    old file or the new one. ``durable``: on disk before the rename (survives a crash; costs a sync).
    ``dump``: json.dump's options."""
    handle, temporary = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out, allow_nan=False, **dump)  # NaN and Infinity are not JSON
            if durable:
                out.flush()
                os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def read_json(path: Path, most_bytes: int) -> Any:
    """Another process's JSON file, read at most ``most_bytes`` (a larger one is not read whole). Raises OSError
    where there is none (yet), ``values.Refused`` (one phrase) where it is larger, or not JSON a reader can use."""
    with path.open("rb") as file:
        raw = file.read(most_bytes + 1)
    if len(raw) > most_bytes:
        raise values.Refused(f"it is larger than {most_bytes // 1024} KiB")
    return values.loads(raw)
