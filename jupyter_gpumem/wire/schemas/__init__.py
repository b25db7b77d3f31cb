"""The JSON Schemas (draft 2020-12) of the formats that cross a process boundary, one file each, the reference
for both sides: ``comm.v1.json`` (the comm protocol, docs/protocol.md), ``report.v1.json`` (the kernel's report
file and the server's notice beside it) and ``api.v1.json`` (``/api/gpumem/v1``, docs/server.md).

A reader checks what another process sent with ``Schema.read``: a malformed message is logged in one sentence,
naming the sender and what is wrong, and dropped; the reader keeps going. Releases mix (docs/protocol.md,
"Versioning and releases mixing"): a message of an older release of the same major version lacks the fields added
since, and the reader fills in their ``default`` (what their absence means); one of a newer release has fields
this one does not know, and they are left as they are; one of another major version is told apart
(``Schema.other_version``), so that its reader says in one sentence which versions meet and what to upgrade.

Validation is compiled by fastjsonschema (a few ms to import, through nbformat already a dependency of
jupyter_server) on first use: jsonschema takes ~0.7 s to import, too slow for a kernel's ``%load_ext``; the tests
check the schemas and the fixtures with jsonschema too.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from functools import cache
from pathlib import Path
from typing import Any, Generic, TypeVar, cast

from jupyter_gpumem import values

FOLDER = Path(__file__).parent
FILES = ("comm.v1.json", "report.v1.json", "api.v1.json")
T = TypeVar("T")
# A package version as another process says it, before it is put in a sentence (a user controls their kernel's and
# their server's code): PEP 440's characters, bounded.
RELEASE = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+!_-]{0,39}")


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
        # The field that carries the format's major version (api: "version"; comm, report: "protocol"), and ours.
        properties = load(name)["properties"]
        self.version_field = "version" if "version" in properties else "protocol"
        self.version: int = properties[self.version_field]["const"]
        self._check: Any = None
        self._lock = threading.Lock()
        self._said: dict[str, str] = {}  # per sender, the sentence last logged

    def problem(self, data: object) -> str | None:
        """What is wrong with ``data``, as a phrase naming the field ("sample.gpus[0].used_bytes must be integer or
        null"); None: it is valid. First every value must be one a reader can compute with (``values.problem``:
        finite, within 2**53, nested at most 32 deep), whatever the schema says of it. Checking fills in, in ``data``
        itself, the ``default`` of every optional field it lacks (a field added after the sender's release: the typed
        values mark it NotRequired), as the TypeScript reader does (validate.ts): a reader then finds every field of
        this release, meaning "not known" where the sender did not say. A field with no ``default`` (``idle_since``)
        is one whose absence means something no value says; its reader asks whether it is there. Fields the schema
        does not name (from a newer release) are left as they are."""
        import fastjsonschema

        unsafe = values.problem(data, self.root)  # depth, non-finite and out-of-range numbers, lone surrogates
        if unsafe is not None:
            return unsafe
        with self._lock:
            if self._check is None:
                uri = load(self.name)["$id"] + ("" if self.definition is None else f"#/$defs/{self.definition}")
                self._check = fastjsonschema.compile({"$ref": uri}, handlers={"https": _by_id}, use_default=True)
        try:
            self._check(data)
        except fastjsonschema.JsonSchemaValueException as error:
            return self.root + error.message.removeprefix("data")
        return None

    def other_version(self, data: object) -> int | None:
        """The major version ``data`` says it is of, where that is not this schema's: an object whose version field
        (``version_field``) is another integer. Such a message is not malformed: its sender runs a release of
        another major version, and its reader says so in one sentence naming both versions and what to upgrade,
        with ``release(data)``, instead of what the schema would say of it. None: any other value."""
        if isinstance(data, dict):
            found = data.get(self.version_field)
            if isinstance(found, int) and not isinstance(found, bool) and found != self.version:
                return found
        return None

    def read(self, data: object, sender: str, log: logging.Logger) -> T | None:
        """``data`` as the type it is (with the defaults filled in), or None after one logged sentence (``tell``)."""
        problem = self.problem(data)
        self.tell(sender, problem, log)
        return None if problem is not None else cast(T, data)

    def tell(self, sender: str, problem: str | None, log: logging.Logger) -> None:
        """Log that ``sender`` sent a value that is not valid, once until it sends another problem or a valid
        one: a report file read every second would otherwise say the same every second."""
        self.say(
            sender, None if problem is None else f"ignored {self.what} from {sender} that is not valid: {problem}", log
        )

    def say(self, sender: str, sentence: str | None, log: logging.Logger) -> None:
        """Log ``sentence`` about what ``sender`` sent, once until it sends something else; None: it sent a valid
        value (the next problem is said again)."""
        if sentence is None:
            self._said.pop(sender, None)
        elif self._said.get(sender) != sentence:
            self._said[sender] = sentence
            log.warning("jupyter-gpumem: %s.", sentence)


def release(data: object) -> str | None:
    """The jupyter-gpumem version a message says its sender runs (its ``package_version``), where it looks like
    one; None: it does not say (or says something else), even in a message this reader cannot read otherwise."""
    found = data.get("package_version") if isinstance(data, dict) else None
    return found if isinstance(found, str) and RELEASE.fullmatch(found) else None
