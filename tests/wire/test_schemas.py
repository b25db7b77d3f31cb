"""One schema per wire format (jupyter_gpumem/wire/schemas/): the reference both sides check. Every fixture in
tests/fixtures/{protocol,report,api}/ is run through it here, by the package's validator (fastjsonschema) and by
jsonschema, the reference implementation of draft 2020-12; tests/ts/schemas.test.ts runs the same files through
the TypeScript side's."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_origin

import jsonschema
import pytest
import referencing
from protocol_fixtures import s1_sample
from typing_extensions import NotRequired, get_type_hints

from jupyter_gpumem.budget.plan import Ceiling
from jupyter_gpumem.kernel.publish import Publisher
from jupyter_gpumem.wire import api, comm, report
from jupyter_gpumem.wire.generated import api_v1, comm_v1, report_v1
from jupyter_gpumem.wire.schemas import FILES, FOLDER, Schema, load

FIXTURES = Path(__file__).parents[1] / "fixtures"
# Which schema each fixture folder is checked against; the server's notice files are named notice*.json.
SCHEMAS: dict[str, Schema[Any]] = {"protocol": comm.MESSAGE, "report": report.REPORT, "api": api.BODY}


def schema_of(path: Path) -> Schema[Any]:
    folder = path.parent.parent.name if path.parent.name == "malformed" else path.parent.name
    return report.NOTICE if path.name.startswith("notice") else SCHEMAS[folder]


def fixtures(malformed: bool) -> list[Path]:
    pattern = "*/malformed/*.json" if malformed else "*/*.json"
    return sorted(p for folder in SCHEMAS for p in FIXTURES.glob(pattern) if p.relative_to(FIXTURES).parts[0] == folder)


VALID, MALFORMED = fixtures(False), fixtures(True)


def reference(schema: Schema[Any]) -> jsonschema.Draft202012Validator:
    """jsonschema's validator for the same schema, resolving references between our files by their $id."""
    registry: referencing.Registry[Any] = referencing.Registry().with_resources(
        (load(name)["$id"], referencing.Resource.from_contents(load(name))) for name in FILES
    )
    uri = load(schema.name)["$id"] + ("" if schema.definition is None else f"#/$defs/{schema.definition}")
    return jsonschema.Draft202012Validator({"$ref": uri}, registry=registry)


def test_the_fixtures_are_found() -> None:
    assert {p.relative_to(FIXTURES).parts[0] for p in VALID} == set(SCHEMAS)
    assert {p.relative_to(FIXTURES).parts[0] for p in MALFORMED} == set(SCHEMAS)
    assert len(MALFORMED) >= 20


@pytest.mark.parametrize("name", FILES)
def test_each_schema_is_draft_2020_12_versioned_and_every_field_is_described(name: str) -> None:
    schema = load(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].endswith("/" + name) and ".v1." in name
    undescribed = [where for where, node in _properties(schema) if "description" not in node and "$ref" not in node]
    assert not undescribed


@pytest.mark.parametrize("path", VALID, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_valid_fixture_passes_both_validators(path: Path) -> None:
    data = json.loads(path.read_text())
    schema = schema_of(path)
    assert list(reference(schema).iter_errors(data)) == []
    assert schema.problem(data) is None


@pytest.mark.parametrize("path", MALFORMED, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_malformed_fixture_is_refused_by_both_validators_with_where(path: Path) -> None:
    data = json.loads(path.read_text())
    schema = schema_of(path)
    assert list(reference(schema).iter_errors(data)) != []
    problem = schema.problem(data)
    assert problem is not None and problem.startswith(schema.root), problem


def test_a_malformed_message_is_logged_once_per_sender_and_problem(caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger("test_schemas")
    bad = json.loads((FIXTURES / "api" / "malformed" / "version_2.json").read_text())
    good = json.loads((FIXTURES / "api" / "body.json").read_text())
    schema: Schema[api.ServerBody] = Schema("api.v1.json", "a /api/gpumem/v1 body", "body")
    with caplog.at_level(logging.WARNING, "test_schemas"):
        assert schema.read(bad, "alice's server ''", log) is None
        assert schema.read(bad, "alice's server ''", log) is None
        assert schema.read(bad, "bob's server ''", log) is None
        assert schema.read(good, "alice's server ''", log) == good
        assert schema.read(bad, "alice's server ''", log) is None
    assert [r.getMessage() for r in caplog.records] == [
        f"jupyter-gpumem: ignored a /api/gpumem/v1 body from {who}'s server '' that is not valid: "
        "body.version must be same as const definition: 1."
        for who in ("alice", "bob", "alice")
    ]


# Each generated TypedDict and the schema definition it types, found by its title: the releases-mixing rule holds
# (docs/protocol.md): a field the schema requires, one every release has sent, is a plain key, any other NotRequired.
GENERATED = {"comm.v1.json": comm_v1, "report.v1.json": report_v1, "api.v1.json": api_v1}
TYPED = [
    (name, definition)
    for name in FILES
    for definition in [None, *load(name)["$defs"]]
    if "properties" in (load(name) if definition is None else load(name)["$defs"][definition])
]


@pytest.mark.parametrize(("name", "definition"), TYPED, ids=lambda x: str(x))
def test_each_generated_type_has_its_schemas_fields_and_its_required_ones(name: str, definition: str | None) -> None:
    node = _definition(name, definition)
    properties, required = _fields(name, node)
    hints = get_type_hints(getattr(GENERATED[name], node["title"]), include_extras=True)
    assert set(hints) == properties
    assert {key for key, hint in hints.items() if get_origin(hint) is not NotRequired} == required


def test_the_settings_ranges_are_the_schemas() -> None:
    interval = load("comm.v1.json")["$defs"]["configure"]["properties"]["interval_s"]
    assert comm.INTERVAL_RANGE_S == (interval["minimum"], interval["maximum"]) == (0.2, 10)
    assert comm.HISTORY_RANGE_S == (10, 24 * 3600)


def test_the_kernels_report_is_the_report_fixture(tmp_path: Path) -> None:
    publisher = Publisher(tmp_path / "kernel-1.json")
    publisher.activity.idle_since = 1763740500.0
    publisher.publish(s1_sample(), Ceiling(max_fraction=0.5), 1)
    written = json.loads(publisher.path.read_text())
    expected = json.loads((FIXTURES / "report" / "report.json").read_text())
    assert {**written, "pid": 4242, "package_version": "0.2.0"} == expected


def test_the_schemas_ship_in_the_package() -> None:
    assert sorted(p.name for p in FOLDER.glob("*.json")) == sorted(FILES)


def _definition(name: str, definition: str | None) -> dict[str, Any]:
    schema = load(name)
    return schema if definition is None else schema["$defs"][definition]


def _fields(name: str, node: dict[str, Any]) -> tuple[set[str], set[str]]:
    """A definition's properties and required ones, with those of the definitions it takes in (allOf)."""
    properties, required = set(node.get("properties", {})), set(node.get("required", []))
    for part in node.get("allOf", []):
        if "$ref" in part:
            file, _, pointer = part["$ref"].partition("#/$defs/")
            more = _fields(file or name, _definition(file or name, pointer))
            properties |= more[0]
            required |= more[1]
    return properties, required


def _properties(node: Any, where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every property schema in a schema, with where it is (not the conditions that pick a message's kind)."""
    if isinstance(node, dict):
        for key, value in node.get("properties", {}).items():
            yield f"{where}.{key}", value
        for key, value in node.items():
            if key != "if":
                yield from _properties(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _properties(value, f"{where}[{i}]")
