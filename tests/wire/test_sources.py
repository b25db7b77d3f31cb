"""Every field of every shape this package sends has a source where the shape is made: a field added to a schema that
no code computes fails here, before a message goes out without it.

The server's ``/api/gpumem/v1`` body is held field by field to the figures' classes it is encoded from
(test_server_body.py). The other messages (the kernel's samples, hello and report, the server's notice) are built as
dict literals typed by the generated TypedDicts: mypy holds their required fields, not the optional ones, which a
builder may leave out (absent means the default). So here each field of each shape must be named, as a key, in the
module that builds it: a new field's name is in no builder until someone writes its source."""

from __future__ import annotations

import ast
import inspect
from functools import cache
from types import ModuleType, NoneType, UnionType
from typing import Any, Union, get_args, get_origin

import pytest
from typing_extensions import get_type_hints, is_typeddict

from jupyter_gpumem import words
from jupyter_gpumem.kernel import protocol, publish
from jupyter_gpumem.render import cells
from jupyter_gpumem.server import culler
from jupyter_gpumem.wire.generated import comm_v1, report_v1

# What a process sends, whole: the kernel's comm messages and report file, the server's notice file.
SENT = (comm_v1.SampleMessage, comm_v1.Hello, report_v1.Report, report_v1.NoticeFile)
# Each shape in them, and the module that makes it.
BUILDERS: dict[type, ModuleType] = {
    comm_v1.SampleMessage: protocol,
    comm_v1.Hello: protocol,
    comm_v1.Sample: protocol,
    comm_v1.SampleGpu: protocol,
    comm_v1.GpuProcess: protocol,
    comm_v1.OtherUsers: protocol,
    comm_v1.UserShare: protocol,
    comm_v1.DriverLimit: protocol,
    comm_v1.MigSlice: protocol,
    comm_v1.Cell: cells,
    comm_v1.Said: words,
    comm_v1.Notice: culler,
    report_v1.NoticeFile: culler,
    report_v1.Report: publish,
    report_v1.Ceiling: publish,
}


def _inner(hint: Any) -> list[Any]:
    """The shapes a field's type names: X, X | None, list[X]."""
    if get_origin(hint) in (Union, UnionType):
        return [found for part in get_args(hint) if part is not NoneType for found in _inner(part)]
    if get_origin(hint) in (list, tuple):
        return _inner(get_args(hint)[0])
    return [hint] if is_typeddict(hint) else []


def shapes(roots: tuple[type, ...]) -> set[type]:
    found: set[type] = set()
    todo = list(roots)
    while todo:
        shape = todo.pop()
        if shape not in found:
            found.add(shape)
            todo += [inner for hint in get_type_hints(shape).values() for inner in _inner(hint)]
    return found


@cache
def keys(module: ModuleType) -> frozenset[str]:
    """The strings a module uses as keys: of dict literals, and in ``x["key"]``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(inspect.getsource(module))):
        if isinstance(node, ast.Dict):
            found |= {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            found.add(str(node.slice.value))
    return frozenset(found)


def test_every_shape_sent_has_its_builder_named() -> None:
    assert shapes(SENT) - set(BUILDERS) == set()


@pytest.mark.parametrize("shape", sorted(BUILDERS, key=lambda s: s.__name__), ids=lambda s: s.__name__)
def test_every_field_of_a_shape_is_named_where_it_is_made(shape: type) -> None:
    module = BUILDERS[shape]
    assert sorted(set(get_type_hints(shape)) - keys(module)) == [], f"no source in {module.__name__}"
