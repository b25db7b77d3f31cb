"""Files other processes read while they are written: replaced whole, never seen half-written."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


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
