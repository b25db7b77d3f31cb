"""The server's ``/api/gpumem/v1`` body (server.handlers.encode) is what its schema, api.v1.json, admits: encoded from
Figures made of a real NVML snapshot and a kernel's report, under every privacy setting, with and without a driver
that answers; and every field of it has a figure of the schema's type (server.figures), which the encoder takes."""

from __future__ import annotations

import copy
import json
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

import jsonschema
import pytest
import referencing
from typing_extensions import get_type_hints, is_typeddict

from jupyter_gpumem.gpu.model import Device, GpuProcess, Snapshot
from jupyter_gpumem.server.figures import Figures, KernelSource, Privacy, make_figures
from jupyter_gpumem.server.handlers import _fields, encode, given
from jupyter_gpumem.wire.api import BODY, ServerBody
from jupyter_gpumem.wire.generated.report_v1 import Ceiling
from jupyter_gpumem.wire.schemas import FILES, load
from jupyter_gpumem.words import Said

GiB = 1024**3
REPORT = json.loads((Path(__file__).parents[1] / "fixtures" / "report" / "report.json").read_text())
GPU0, GPU1 = (g["uuid"] for g in REPORT["sample"]["gpus"])
NOW = REPORT["t"] + 1


def figures(privacy: Privacy, stalled_since: float | None, report: dict[str, Any] = REPORT) -> bytes:
    def process(pid: int, gpu: str, used: int | None, user: str | None) -> GpuProcess:
        return GpuProcess(pid, gpu, used, "compute", "python", user, None, False)

    devices = (
        Device(0, GPU0, "NVIDIA A100-SXM4-40GB", 40 * GiB, 12 * GiB, utilization_percent=30,
               processes=(process(4242, GPU0, 3 * GiB, "alice"), process(7001, GPU0, 4 * GiB, "bob"),
                          process(7002, GPU0, None, None))),
        Device(1, GPU1, "NVIDIA A100-SXM4-40GB", 40 * GiB, 5 * GiB, processes=(process(4242, GPU1, 5 * GiB, "alice"),)),
        Device(2, None, None, lost=True),
    )  # fmt: skip
    snapshot = Snapshot(NOW, -1, devices, "550.54.15", stalled_since=stalled_since)
    kernels = [KernelSource("k1", 4242, report, "busy", NOW - 5), KernelSource("k2", None, None)]
    return encode(make_figures(snapshot, kernels, NOW, 30, privacy), 1.0)


def reference() -> jsonschema.Draft202012Validator:
    registry: referencing.Registry[Any] = referencing.Registry().with_resources(
        (load(name)["$id"], referencing.Resource.from_contents(load(name))) for name in FILES
    )
    return jsonschema.Draft202012Validator({"$ref": load("api.v1.json")["$id"]}, registry=registry)


@pytest.mark.parametrize("stalled_since", [None, NOW - 20])
@pytest.mark.parametrize("privacy", ["aggregate", "names", "list"])
def test_the_servers_body_is_what_its_schema_admits(privacy: Privacy, stalled_since: float | None) -> None:
    body = json.loads(figures(privacy, stalled_since))
    assert [e.message for e in reference().iter_errors(body)] == []
    assert BODY.problem(copy.deepcopy(body)) is None
    # Absent, not null, while the driver answers; the kernel's report is carried through to its rows.
    assert body.get("stalled_since", "absent") == ("absent" if stalled_since is None else stalled_since)
    [k1, k2] = body["kernels"]
    assert k1["ceiling"] == REPORT["ceiling"] and k1["policy_state"] == REPORT["sample"]["policy_state"]
    assert [g["framework_peak_bytes"] for g in k1["gpus"]] == [
        g["framework_peak_bytes"] for g in REPORT["sample"]["gpus"]
    ]
    assert (k2["status"], k2["ceiling"], k2["gpus"]) == (
        "not_reporting",
        {"max_fraction": None, "max_limit_bytes": None},
        [],
    )
    gpu0 = body["gpus"][0]
    assert (gpu0["other_users"] is None) == (privacy == "aggregate")
    assert (gpu0["other_process_list"] is None) == (privacy != "list")


def test_the_body_carries_the_code_of_each_sentence_beside_it() -> None:
    said = {"code": "policy_applies_on_import", "values": {"imports": ["tensorflow"]}}
    report = {**REPORT, "sample": {**REPORT["sample"], "policy_note_said": said}}
    snapshot = Snapshot(NOW, -1, problem=Said("driver_not_loaded"))
    body = json.loads(encode(make_figures(snapshot, [KernelSource("k1", 4242, report)], NOW, 30), 1.0))
    assert [e.message for e in reference().iter_errors(body)] == []
    assert (body["problem"], body["problem_said"]) == (
        str(Said("driver_not_loaded")),
        {"code": "driver_not_loaded", "values": {}},
    )
    assert body["kernels"][0]["policy_note_said"] == said
    # From a kernel of an older release, which sends none: null.
    older = {**REPORT, "sample": {k: v for k, v in REPORT["sample"].items() if not k.endswith("_said")}}
    assert json.loads(figures("aggregate", None, older))["kernels"][0]["policy_note_said"] is None


def _core(hint: Any) -> tuple[Any, bool, bool]:
    """A type without its None and its list or tuple: the item's type, whether it admits None, whether it is many."""
    nullable = get_origin(hint) in (Union, UnionType) and NoneType in get_args(hint)
    if nullable:
        rest = [part for part in get_args(hint) if part is not NoneType]
        hint = rest[0] if len(rest) == 1 else Union[tuple(rest)]  # noqa: UP007  (a Literal | None stays whole)
    many = get_origin(hint) in (list, tuple)
    return (get_args(hint)[0] if many else hint), nullable, many


def unsourced(shape: type, source: type, where: str, given: Collection[str] = ()) -> Iterator[str]:
    """Each field of the generated TypedDict ``shape`` that the class ``source`` (a dataclass or a named tuple of the
    figures) holds no attribute for, or holds as another type than the schema's, as "ServerBody.kernels[].gpus[].x"."""
    held = get_type_hints(source)
    for name, hint in get_type_hints(shape).items():
        if name in given:
            continue
        at = f"{where}.{name}"
        if name not in held:
            yield f"{at}: {source.__name__} has no {name}"
            continue
        (wire, wire_null, wire_many), (ours, our_null, our_many) = _core(hint), _core(held[name])
        if is_typeddict(wire) and wire is not ours:  # a shape of its own: its figures' class, field by field
            if (wire_null, wire_many) != (our_null, our_many):
                yield f"{at}: {source.__name__}.{name} is {held[name]}, the schema's {hint}"
            yield from unsourced(wire, ours, at + ("[]" if wire_many else ""))
        elif (wire, wire_null, wire_many) != (ours, our_null, our_many):
            yield f"{at}: {source.__name__}.{name} is {held[name]}, the schema's {hint}"


def test_every_field_of_the_body_has_a_figure_of_the_schemas_type() -> None:
    """The figures' classes are held to the generated types: a field added to api.v1.json (or to a shape it takes from
    comm.v1.json) that no figure holds fails here, and the encoder raises rather than leave it out."""
    assert list(unsourced(ServerBody, Figures, "ServerBody", given(1.0))) == []


def test_the_encoder_refuses_figures_that_lack_a_field_of_the_schema() -> None:
    @dataclass(frozen=True)
    class Older:  # a Ceiling without max_limit_bytes: as if the schema had gained a field the figures lack
        max_fraction: float | None

    with pytest.raises(TypeError, match="Older holds no max_limit_bytes for the schema's Ceiling"):
        _fields(Ceiling, Older(0.5))
