"""The JSON Schemas (draft 2020-12) of the formats that cross a process boundary, one file each, the reference
for both sides: ``comm.v1.json`` (the comm protocol, docs/protocol.md), ``report.v1.json`` (the kernel's report
file and the server's notice beside it) and ``api.v1.json`` (``/api/gpumem/v1``, docs/server.md).

A reader checks what another process sent with ``Schema.read``: a malformed message is logged in one sentence,
naming the sender and what is wrong, and dropped; the reader keeps going. Validation is compiled by
fastjsonschema (a few ms to import, through nbformat already a dependency of jupyter_server) on first use:
jsonschema takes ~0.7 s to import, too slow for a kernel's ``%load_ext``; the tests check the schemas and
the fixtures with jsonschema too.
"""

from __future__ import annotations

import json
import logging
import threading
from functools import cache
from pathlib import Path
from typing import Any, Generic, TypeVar, cast

FOLDER = Path(__file__).parent
FILES = ("comm.v1.json", "report.v1.json", "api.v1.json")
T = TypeVar("T")


@cache
def load(name: str) -> dict[str, Any]:
    """One schema file, parsed."""
    return cast(dict[str, Any], json.loads((FOLDER / name).read_text(encoding="utf-8")))


def _by_id(uri: str) -> dict[str, Any]:
    for name in FILES:
        if load(name)["$id"] == uri:
            return load(name)
    raise LookupError(f"no schema of ours has $id {uri}")


def bounds(name: str, definition: str, field: str) -> tuple[float, float]:
    """A number's ``minimum`` and ``maximum`` in one of a schema file's ``$defs``."""
    found = load(name)["$defs"][definition]["properties"][field]
    return float(found["minimum"]), float(found["maximum"])


class Schema(Generic[T]):
    """A schema file, or one of its ``$defs``, and the values it admits: ``T``. ``what`` names such a value
    in the log ("a kernel report"), ``root`` where a problem is ("report.sample.t must be number")."""

    def __init__(self, name: str, what: str, root: str, definition: str | None = None):
        self.name, self.what, self.root, self.definition = name, what, root, definition
        self._check: Any = None
        self._lock = threading.Lock()
        self._said: dict[str, str] = {}  # per sender, the problem last logged

    def problem(self, data: object) -> str | None:
        """What is wrong with ``data``, as a phrase naming the field ("sample.gpus[0].used_bytes must be
        integer or null"); None: it is valid. ``data`` is left as it is: a field an older sender leaves out stays
        absent (the typed values mark it NotRequired), where the TypeScript reader takes its ``default``."""
        import fastjsonschema

        with self._lock:
            if self._check is None:
                uri = load(self.name)["$id"] + ("" if self.definition is None else f"#/$defs/{self.definition}")
                self._check = fastjsonschema.compile({"$ref": uri}, handlers={"https": _by_id}, use_default=False)
        try:
            self._check(data)
        except fastjsonschema.JsonSchemaValueException as error:
            return self.root + error.message.removeprefix("data")
        return None

    def read(self, data: object, sender: str, log: logging.Logger) -> T | None:
        """``data`` as the type it is, or None after one logged sentence (``tell``)."""
        problem = self.problem(data)
        self.tell(sender, problem, log)
        return None if problem is not None else cast(T, data)

    def tell(self, sender: str, problem: str | None, log: logging.Logger) -> None:
        """Log that ``sender`` sent a value that is not valid, once until it sends another problem or a valid
        one: a report file read every second would otherwise say the same every second."""
        if problem is None:
            self._said.pop(sender, None)
        elif self._said.get(sender) != problem:
            self._said[sender] = problem
            log.warning("jupyter-gpumem: ignored %s from %s that is not valid: %s.", self.what, sender, problem)
