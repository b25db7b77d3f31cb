"""``GET /api/gpumem/v1``: the Figures as JSON, schema version 1 (docs/server.md).

The body is encoded on the extension's thread, once per reading; the handler only writes the latest. The encoder
follows the types generated from the schema (wire/generated/api_v1.py): each field of a type is the figure's
attribute of that name, so a field added to the schema and to the figures needs nothing here. A field the figures do
not hold is a programming error, raised at once, never a field left out of the body
(tests/wire/test_server_body.py checks every field of every shape against the figures' classes).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import cache
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web
from typing_extensions import NotRequired, get_type_hints, is_typeddict

from jupyter_gpumem._version import __version__
from jupyter_gpumem.server.figures import Figures
from jupyter_gpumem.wire.api import PATH, VERSION, ServerBody

__all__ = ["PATH", "GpumemHandler", "encode", "given"]


def encode(figures: Figures, interval_s: float) -> bytes:
    """The JSON body for the Figures (wire/schemas/api.v1.json)."""
    body = _fields(ServerBody, figures, **given(interval_s))
    if figures.stalled_since is None:
        del body["stalled_since"]  # absent while the driver answers, as before the field was added
    return json.dumps(body, separators=(",", ":"), allow_nan=False).encode()  # NaN is not JSON: fail, never emit it


def given(interval_s: float) -> dict[str, object]:
    """The body's fields that are no figure's: what the server says of itself."""
    return {"version": VERSION, "package_version": __version__, "interval_s": interval_s}


def _fields(shape: type, source: object, **given: object) -> dict[str, Any]:
    """``source`` as the generated TypedDict ``shape``: each field the source's attribute of that name (its key, where
    it is already wire data), or ``given``. A field the source does not hold raises TypeError: the schema names a
    field that nothing computes, which a test finds before a body goes out without it."""
    missing = [name for name in _hints(shape) if name not in given and not _has(source, name)]
    if missing:
        raise TypeError(f"{type(source).__name__} holds no {', '.join(missing)} for the schema's {shape.__name__}")
    return {
        name: given[name] if name in given else _value(_get(source, name), hint)
        for name, (hint, _required) in _hints(shape).items()
    }


def _has(source: object, name: str) -> bool:
    return name in source if isinstance(source, Mapping) else hasattr(source, name)


def _get(source: object, name: str) -> Any:
    return source[name] if isinstance(source, Mapping) else getattr(source, name)


def _value(value: Any, hint: Any) -> Any:
    if value is None:
        return None
    if get_origin(hint) in (Union, UnionType):  # X | None: the value is not None
        hint = next(part for part in get_args(hint) if part is not NoneType)
    if is_typeddict(hint):
        return _fields(hint, value)
    if get_origin(hint) is list:
        return [_value(item, get_args(hint)[0]) for item in value]
    return value


@cache
def _hints(shape: type) -> dict[str, tuple[Any, bool]]:
    """Each field of a TypedDict: its type and whether it is required. Read from the annotations, not
    ``__required_keys__``: the generated modules' postponed annotations leave those all required."""
    fields: dict[str, tuple[Any, bool]] = {}
    for name, hint in get_type_hints(shape, include_extras=True).items():
        origin: object = get_origin(hint)
        fields[name] = (get_args(hint)[0], False) if origin is NotRequired else (hint, True)
    return fields


class GpumemHandler(APIHandler):
    # jupyter_server's authorizer is asked for "read" on "gpumem"; JupyterHub's default token scopes
    # (access:servers) allow it, and a finer authorizer can grant it alone.
    auth_resource = "gpumem"

    def initialize(self, latest: Callable[[], bytes]) -> None:
        self._latest = latest

    @web.authenticated
    @authorized
    def get(self) -> None:
        self.set_header("Content-Type", "application/json")
        self.finish(self._latest())
