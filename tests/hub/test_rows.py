"""The hub service's rows from servers' /api/gpumem/v1 bodies (tests/fixtures/api/): a body that is not valid is
that server's own row with the reason, never an exception for the whole poll."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from jupyter_gpumem.hub.rows import refusal, rows_of_server
from jupyter_gpumem.words import catalogue, wire, word_wire

API = Path(__file__).parents[1] / "fixtures" / "api"
NOW = 1763740900.0


def body(name: str) -> object:
    return json.loads((API / name).read_text())


def test_a_servers_body_becomes_a_row_per_kernel_and_gpu() -> None:
    rows = rows_of_server("alice", "", body("body.json"), NOW)
    assert [(r.kernel_id, r.status, r.gpu_index, r.over_budget, r.idle_s, r.problem) for r in rows] == [
        ("5f0c4a6e-kernel-a", "reporting", 1, True, 400.0, None),
        ("9b1d-kernel-b", "not_reporting", None, None, None, None),
    ]
    assert (rows[0].budget_bytes, rows[0].ceiling_fraction, rows[0].limit_kind) == (4096 * 2**20, 0.5, "cooperative")


def test_a_body_whose_kernels_is_not_a_list_is_that_servers_row_with_the_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, "jupyter_gpumem.hub"):
        [row] = rows_of_server("bob", "gpu", body("malformed/kernels_not_a_list.json"), NOW)
        rows_of_server("bob", "gpu", body("malformed/kernels_not_a_list.json"), NOW)  # the next poll: said once
    assert (row.user, row.server, row.kernel_id) == ("bob", "gpu", None)
    assert row.problem == "its /api/gpumem/v1 body is not valid: body.kernels must be array"
    assert [r.getMessage() for r in caplog.records] == [
        "jupyter-gpumem: ignored a /api/gpumem/v1 body from bob's server 'gpu' that is not valid: "
        "body.kernels must be array."
    ]


@pytest.mark.parametrize("path", sorted((API / "malformed").glob("*.json")), ids=lambda p: p.stem)
def test_every_malformed_body_is_one_row_that_says_why(path: Path) -> None:
    data = json.loads(path.read_text())
    [row] = rows_of_server("carol", "", data, NOW)
    assert row.kernel_id is None and row.problem
    if isinstance(data, dict) and data.get("version") != 1:  # another version: which, and what to upgrade
        assert row.problem == refusal(data) and row.problem.endswith("upgrade jupyter-gpumem in the hub's environment")
    else:
        assert row.problem.startswith("its /api/gpumem/v1 body is not valid")


@pytest.mark.parametrize(
    ("change", "english", "japanese"),
    [
        (
            lambda b: b["gpus"][0].update(uuid="<script>"),
            "gpus[0].uuid is not a GPU's UUID",
            "gpus[0].uuid は GPU の UUID ではありません",
        ),
        (
            lambda b: b["gpus"][0].update(total_bytes=2**50),
            f"gpus[0].total_bytes is {2**50} bytes, more than any GPU holds",
            f"gpus[0].total_bytes は {2**50} バイトで、どの GPU の容量よりも大きい値です",
        ),
        (
            lambda b: b["kernels"][0].update(last_activity=-1),
            "kernels[0].last_activity is not a time",
            "kernels[0].last_activity は時刻ではありません",
        ),
        (  # a time of day cannot be made of it (year 31 million): the admin page would fail for every admin
            lambda b: b.update(stalled_since=10**15),
            "stalled_since is not a time",
            "stalled_since は時刻ではありません",
        ),
    ],
)
def test_a_value_no_server_could_send_is_said_as_a_code_the_page_words_in_its_language(change, english, japanese):
    data = body("body.json")
    change(data)
    [row] = rows_of_server("dave", "", data, NOW)
    assert row.problem == f"its /api/gpumem/v1 body is not valid: {english}"  # the sentence older pages show
    said = wire(row.problem)
    assert said is not None and said["values"]["problem"]["code"].startswith("body_")
    assert word_wire(said, catalogue("ja_JP")) == f"/api/gpumem/v1 の本文が無効です: {japanese}"
