"""Releases mix (docs/protocol.md, "Versioning and releases mixing"): a user's kernel, their server image and the
hub are upgraded at different times, so every reader meets messages of other releases. tests/fixtures/releases/
keeps the messages of each release, one folder each (its README says where each comes from and which are
invented), and these tests hold every reader of this release to them, from now on:

- every message of every release of version 1, older or newer, is read by this release's readers: the hub service
  (a server's /api/gpumem/v1 body), the server (a kernel's report), the kernel (the server's notice, the sidebar's
  configure) and the schema the sidebar checks (tests/ts/releases.test.ts decodes the comm messages); a field an
  older release did not send reads as its default (not known), one a newer release adds is left alone;
- a message of another major version is refused with one sentence naming both releases and what to upgrade;
- an older release's readers read this release's messages: each released schema (frozen in its folder) admits every
  message of every later release of version 1;
- this release's folder is its fixtures and schemas as they are now, so a release freezes its own:
  ``python tests/wire/test_releases.py --freeze`` writes it.
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import referencing

from jupyter_gpumem._version import __version__
from jupyter_gpumem.gpu.model import Snapshot
from jupyter_gpumem.hub.rows import rows_of_server
from jupyter_gpumem.kernel import protocol
from jupyter_gpumem.kernel.publish import _read_notice
from jupyter_gpumem.server.figures import KernelSource, make_figures
from jupyter_gpumem.server.watcher import _report
from jupyter_gpumem.wire import api, comm, report
from jupyter_gpumem.wire.report import notice_beside, report_path
from jupyter_gpumem.wire.schemas import FILES, FOLDER, load

FIXTURES = Path(__file__).parents[1] / "fixtures"
RELEASES = FIXTURES / "releases"
FORMATS = ("protocol", "report", "api")  # the fixture folders a release freezes, with the schemas
NEWER_MAJOR = "newer-major"  # invented: protocol 2 and /api/gpumem/v2, from a jupyter-gpumem 1.0.0
# Oldest first: the messages of the first commits of each format, the release 0.1.0 as it shipped, this release,
# and an invented newer release of version 1 with fields this one does not know at every level.
ORDER = ["0.1.0-first", "0.1.0", "0.2.0", "newer-minor"]
MAJOR_1 = [r for r in ORDER if (RELEASES / r).is_dir()]


def current() -> dict[str, Any]:
    """This release's messages (the valid fixtures of tests/fixtures/{protocol,report,api}/) and schemas, by the
    path they have in a release's folder."""
    found = {f"{f}/{p.name}": json.loads(p.read_text()) for f in FORMATS for p in sorted((FIXTURES / f).glob("*.json"))}
    return found | {f"schemas/{name}": load(name) for name in FILES}


def frozen(folder: Path) -> dict[str, Any]:
    return {p.relative_to(folder).as_posix(): json.loads(p.read_text()) for p in sorted(folder.rglob("*.json"))}


def freeze() -> Path:
    """Writes this release's folder anew from its fixtures and schemas."""
    folder = RELEASES / __version__
    shutil.rmtree(folder, ignore_errors=True)
    for path, data in current().items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return folder


def messages(releases: list[str], form: str, prefix: str = "") -> list[tuple[str, Path]]:
    return [(r, p) for r in releases for p in sorted((RELEASES / r / form).glob(f"{prefix}*.json"))]


def name(value: Any) -> str:
    return f"{value[0]}/{value[1].parent.name}/{value[1].name}" if isinstance(value, tuple) else str(value)


def test_this_releases_folder_is_its_fixtures_and_schemas_as_they_are_now() -> None:
    folder = RELEASES / __version__
    how = f"python tests/wire/test_releases.py --freeze writes {folder.relative_to(FIXTURES.parent.parent)}"
    assert folder.is_dir(), f"this release ({__version__}) has no folder of its messages: {how}"
    assert frozen(folder) == current(), f"this release's messages or schemas changed since it was frozen: {how}"


def test_the_release_folders_are_there_and_hold_every_format() -> None:
    assert {p.name for p in RELEASES.iterdir() if p.is_dir()} == {*ORDER, NEWER_MAJOR}
    for release in [*ORDER, NEWER_MAJOR]:
        assert all(list((RELEASES / release / f).glob("*.json")) for f in FORMATS), release


def _missing_defaults(node: dict[str, Any], value: Any, file: str, where: str) -> Iterator[str]:
    """Where ``value`` lacks a field its schema names with a default: what a reader must have filled in."""
    if "$ref" in node:
        target, _, pointer = node["$ref"].partition("#/")
        file = target or file
        found: Any = load(file)
        for part in pointer.split("/"):  # a shape ($defs/sample) or a shared field ($defs/gpu_fields/$defs/index)
            found = found[part]
        yield from _missing_defaults(found, value, file, where)
    for part in [*node.get("allOf", []), *node.get("anyOf", [])]:
        yield from _missing_defaults(part, value, file, where)
    condition = node.get("if", {}).get("properties", {})
    if isinstance(value, dict) and condition and all(value.get(k) == c.get("const") for k, c in condition.items()):
        yield from _missing_defaults(node["then"], value, file, where)
    if isinstance(value, dict):
        for field, sub in node.get("properties", {}).items():
            if field in value:
                yield from _missing_defaults(sub, value[field], file, f"{where}.{field}")
            elif "default" in sub:
                yield f"{where}.{field}"
    if isinstance(value, list) and "items" in node:
        for i, item in enumerate(value):
            yield from _missing_defaults(node["items"], item, file, f"{where}[{i}]")


@pytest.mark.parametrize("found", messages(MAJOR_1, "protocol"), ids=name)
def test_every_comm_message_of_every_release_is_read_with_the_defaults_of_what_it_lacks(
    found: tuple[str, Path],
) -> None:
    data = json.loads(found[1].read_text())
    assert comm.MESSAGE.problem(data) is None
    assert list(_missing_defaults(load("comm.v1.json"), data, "comm.v1.json", "message")) == []


def test_an_older_kernels_sample_reads_as_not_known_where_it_did_not_say() -> None:
    data = json.loads((RELEASES / "0.1.0-first" / "protocol" / "sample.json").read_text())
    gpu = data["sample"]["gpus"][1]
    assert "pool_known" not in gpu and "own_source" not in gpu and "cells" not in data["sample"]
    assert comm.MESSAGE.problem(data) is None
    assert (gpu["pool_bytes"], gpu["pool_known"], gpu["overhead_source"], gpu["over_reason"]) == (
        None,
        False,
        None,
        None,
    )
    assert (gpu["own_source"], gpu["in_force"], gpu["limit_hard"]) == (None, False, False)
    assert (data["sample"]["stalled_since"], data["sample"]["notice"], data["sample"]["cells"]) == (None, None, [])
    assert gpu["own_bytes"] == 3355443200  # what it did say is as it said it


@pytest.mark.parametrize("found", messages(MAJOR_1, "protocol", "configure"), ids=name)
def test_the_kernel_takes_the_settings_of_a_sidebar_of_every_release(found: tuple[str, Path]) -> None:
    data = json.loads(found[1].read_text())
    assert protocol.parse_request(data) == protocol.Configure(data["interval_s"], data["history_s"])


def _install(tmp_path: Path, data: Any) -> Path:
    """A connection file whose kernel's report is ``data``."""
    connection = tmp_path / "kernel-5f0c.json"
    report_path(connection).parent.mkdir(mode=0o700, exist_ok=True)  # private to this user, as the server reads it
    report_path(connection).write_text(json.dumps(data))
    return connection


@pytest.mark.parametrize("found", messages(MAJOR_1, "report", "report"), ids=name)
def test_the_server_reads_the_report_of_a_kernel_of_every_release(
    found: tuple[str, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sent = json.loads(found[1].read_text())
    with caplog.at_level(logging.WARNING):
        read = _report("5f0c", str(_install(tmp_path, sent)), logging.getLogger("test_releases"))
    assert read is not None and caplog.records == []
    assert list(_missing_defaults(load("report.v1.json"), read, "report.v1.json", "report")) == []
    t = sent["t"]
    figures = make_figures(Snapshot(taken_at=t, own_pid=-1), [KernelSource("5f0c", 4242, read, "idle", 1.0)], t + 1, 30)
    [kernel] = figures.kernels
    said = (kernel.status, kernel.package_version, kernel.policy, kernel.framework_started)
    assert said == ("reporting", sent["package_version"], sent["sample"]["policy"], sent["sample"]["framework_started"])
    assert kernel.oom_errors_total == sent["oom_errors_total"]
    # idle_since has no default: from a kernel older than the idle culler, the server's own last activity counts.
    assert kernel.last_activity == sent.get("idle_since", 1.0)


@pytest.mark.parametrize("found", messages(MAJOR_1, "report", "notice"), ids=name)
def test_the_kernel_reads_the_notice_of_a_server_of_every_release(found: tuple[str, Path], tmp_path: Path) -> None:
    sent = json.loads(found[1].read_text())
    path = notice_beside(tmp_path / "kernel-5f0c.json")
    path.write_text(json.dumps(sent))
    # The words' code and values where the server's release sent them (0.2.0 on); null from an older one.
    assert _read_notice(path) == {
        **{k: sent[k] for k in ("kind", "text", "t", "shutdown_at")},
        "text_said": sent.get("text_said"),
    }


@pytest.mark.parametrize("found", messages(MAJOR_1, "api"), ids=name)
def test_the_hub_reads_the_body_of_a_server_of_every_release(found: tuple[str, Path]) -> None:
    sent = json.loads(found[1].read_text())
    data = json.loads(found[1].read_text())
    rows = rows_of_server("alice", "", data, sent["t"] + 100)
    assert all(r.problem is None for r in rows), rows[0].problem
    assert list(_missing_defaults(load("api.v1.json"), data, "api.v1.json", "body")) == []
    assert {r.server_version for r in rows} == {sent["package_version"]}
    assert [(r.kernel_id, r.gpu_index, r.used_bytes, r.budget_bytes) for r in rows] == [
        (k["id"], g["index"], g["used_bytes"], g["budget_bytes"]) if g else (k["id"], None, None, None)
        for k in sent["kernels"]
        for g in k["gpus"] or [None]
    ]
    first = rows[0]
    on = sent["kernels"][0]["gpus"][0]
    # What an older server did not send is not known (no limit, no idle time), never made up.
    assert (first.limit_kind, first.limit_hard) == (on.get("limit_kind"), on.get("limit_hard", False))
    assert first.execution_state == sent["kernels"][0].get("execution_state")


def test_a_body_of_another_api_version_is_that_servers_row_saying_what_to_upgrade(
    caplog: pytest.LogCaptureFixture,
) -> None:
    data = json.loads((RELEASES / NEWER_MAJOR / "api" / "body.json").read_text())
    sentence = (
        f"it runs jupyter-gpumem 1.0.0, whose /api/gpumem/v2 this hub service (jupyter-gpumem {__version__}) cannot "
        "read: upgrade jupyter-gpumem in the hub's environment"
    )
    with caplog.at_level(logging.WARNING, "jupyter_gpumem.hub"):
        [row] = rows_of_server("bob", "gpu", data, data["t"])
        rows_of_server("bob", "gpu", data, data["t"])  # the next poll: said once
    assert (row.kernel_id, row.problem, row.server_version) == (None, sentence, "1.0.0")
    assert [r.getMessage() for r in caplog.records] == [f"jupyter-gpumem: bob's server 'gpu': {sentence}."]
    # Another major version that does not say its release, and an older one, are worded as such.
    [row] = rows_of_server("bob", "", {"version": 0, "package_version": "<b>"}, 0.0)
    assert row.problem == (
        f"it runs a jupyter-gpumem whose /api/gpumem/v0 this hub service (jupyter-gpumem {__version__}) cannot read: "
        "upgrade jupyter-gpumem in this server's environment"
    )


def test_a_report_of_another_protocol_is_not_reporting_and_said_once_naming_both_releases(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sent = json.loads((RELEASES / NEWER_MAJOR / "report" / "report.json").read_text())
    connection = _install(tmp_path, sent)
    log = logging.getLogger("test_releases")
    with caplog.at_level(logging.WARNING, "test_releases"):
        assert _report("5f0c", str(connection), log) is None
        assert _report("5f0c", str(connection), log) is None
    assert [r.getMessage() for r in caplog.records] == [
        f"jupyter-gpumem: kernel 5f0c ({report_path(connection)}) runs jupyter-gpumem 1.0.0, whose report (protocol 2) "
        f"this Jupyter server (jupyter-gpumem {__version__}, protocol 1) cannot read: upgrade jupyter-gpumem where the "
        "Jupyter server runs."
    ]


def test_a_notice_of_another_protocol_is_not_shown_and_said_once_naming_both(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = notice_beside(tmp_path / "kernel-5f0c.json")
    path.write_text((RELEASES / NEWER_MAJOR / "report" / "notice.json").read_text())
    with caplog.at_level(logging.WARNING, "jupyter_gpumem"):
        assert _read_notice(path) is None
        assert _read_notice(path) is None
    assert [r.getMessage() for r in caplog.records] == [
        f"jupyter-gpumem: the Jupyter server ({path}) wrote a notice in protocol 2, which this kernel (jupyter-gpumem "
        f"{__version__}, protocol 1) cannot read: upgrade jupyter-gpumem in this kernel's environment."
    ]


@pytest.mark.parametrize("form", FORMATS)
def test_every_message_of_another_major_version_is_refused_by_this_releases_schema(form: str) -> None:
    for _, path in messages([NEWER_MAJOR], form):
        data = json.loads(path.read_text())
        schema = {"protocol": comm.MESSAGE, "report": report.REPORT, "api": api.BODY}[form]
        if path.name.startswith("notice"):
            schema = report.NOTICE
        assert schema.other_version(data) == 2 and schema.problem(data) is not None, path


def _released_schema(release: str, name: str, definition: str | None) -> jsonschema.Draft202012Validator:
    """A release's own schema, frozen in its folder, resolving references between its files by their $id."""
    files = {p.name: json.loads(p.read_text()) for p in (RELEASES / release / "schemas").glob("*.json")}
    registry: referencing.Registry[Any] = referencing.Registry().with_resources(
        (s["$id"], referencing.Resource.from_contents(s)) for s in files.values()
    )
    uri = files[name]["$id"] + ("" if definition is None else f"#/$defs/{definition}")
    return jsonschema.Draft202012Validator({"$ref": uri}, registry=registry)


READERS = [r for r in MAJOR_1 if (RELEASES / r / "schemas").is_dir()]  # releases that shipped schemas


@pytest.mark.parametrize("reader", READERS)
def test_each_release_reads_the_messages_of_every_later_release_of_version_1(reader: str) -> None:
    later = MAJOR_1[MAJOR_1.index(reader) + 1 :]
    assert later or reader == MAJOR_1[-1]
    checked = 0
    for form, name_, definition in (
        ("protocol", "comm.v1.json", None),
        ("report", "report.v1.json", None),
        ("api", "api.v1.json", None),
    ):
        for sender, path in messages(later, form):
            notice = path.name.startswith("notice")
            validator = _released_schema(reader, name_, "notice_file" if notice else definition)
            errors = [e.message for e in validator.iter_errors(json.loads(path.read_text()))]
            assert errors == [], f"{reader} cannot read {sender}'s {path.name}: {errors}"
            checked += 1
    assert checked > 0 or not later


def _nodes(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _nodes(value)
    elif isinstance(node, list):
        for value in node:
            yield from _nodes(value)


@pytest.mark.parametrize("file", FILES)
def test_no_schema_refuses_a_field_it_does_not_know_and_every_optional_field_says_what_its_absence_means(
    file: str,
) -> None:
    schema = load(file)
    assert not [n for n in _nodes(schema) if {"additionalProperties", "unevaluatedProperties"} & set(n)]
    silent = [
        f"{field}"
        for node in _nodes(schema)
        if isinstance(node.get("properties"), dict) and node.get("type") == "object"
        for field, sub in node["properties"].items()
        if field not in node.get("required", []) and "default" not in sub and "absent" not in sub["description"].lower()
    ]
    assert silent == []


def test_required_fields_are_forever_no_release_requires_what_an_earlier_one_did_not() -> None:
    """A field this release requires was required by every release that shipped schemas (so every sender of
    version 1 sends it), and the first messages of each format carry it (0.1.0-first passes this release's schemas,
    above): a field added since can only be optional."""
    for release in READERS:
        for file in FILES:
            then = json.loads((RELEASES / release / "schemas" / file).read_text())
            now = load(file)
            for key in ("", *now.get("$defs", {})):
                required_now = set((now["$defs"][key] if key else now).get("required", []))
                old = then["$defs"].get(key, {}) if key else then
                if key and key not in then["$defs"]:
                    continue  # a definition added since: its fields came together
                assert required_now <= set(old.get("required", [])), (release, file, key)


def test_the_schemas_in_this_releases_folder_are_the_packages() -> None:
    assert sorted(p.name for p in (RELEASES / __version__ / "schemas").glob("*.json")) == sorted(FILES)
    assert {p.name for p in FOLDER.glob("*.json")} == set(FILES)


if __name__ == "__main__":
    if sys.argv[1:] != ["--freeze"]:
        raise SystemExit("usage: python tests/wire/test_releases.py --freeze")
    print(f"wrote {freeze()}")
