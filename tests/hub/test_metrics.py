"""The hub service's /metrics, built with prometheus_client: the same names, labels and values as the text
the service wrote by hand before (tests/fixtures/hub/metrics.prom, written by that code from these rows),
read back with prometheus_client's own parser. No hub is started: the rows are what a poll makes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from jupyter_gpumem.hub.rows import Row, rows_of_server, unreadable
from jupyter_gpumem.hub.service import render_metrics
from jupyter_gpumem.units import GiB

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
OLD = FIXTURES / "hub" / "metrics.prom"
NOW = 1_763_740_800.0

# Two GPUs for one kernel (its ceiling and idle time once), a kernel on no GPU, a busy kernel, a server that
# cannot be read, N/A figures (no sample), and names that need escaping in a label. The figures the metrics
# show, on a whole body of the API (tests/fixtures/api/body.json) for the rest: the hub reads only valid ones.
FIGURES: dict[str, Any] = {
    "kernels": [
        {
            "id": "k-alice-1",
            "status": "reporting",
            "execution_state": "idle",
            "last_activity": NOW - 90,
            "ceiling": {"max_fraction": 0.25, "max_limit_bytes": 10 * GiB},
            "gpus": [
                {"index": 0, "uuid": "GPU-0", "used_bytes": 3 * GiB, "budget_bytes": 2 * GiB, "over_budget": True,
                 "limit_kind": "cooperative", "limit_hard": False},
                {"index": 1, "uuid": "GPU-1", "used_bytes": None, "budget_bytes": None, "over_budget": None,
                 "limit_kind": "mig", "limit_hard": True},
            ],
        },
        {"id": "k-alice-2", "status": "not_reporting", "execution_state": "busy", "last_activity": None,
         "ceiling": {"max_fraction": None, "max_limit_bytes": None}, "gpus": []},
    ]
}  # fmt: skip


def whole(figures: dict[str, Any]) -> dict[str, Any]:
    """``figures`` on a valid API body: each kernel and GPU of it filled in from the fixture's first ones."""
    body = json.loads((FIXTURES / "api" / "body.json").read_text())
    kernel, gpu = body["kernels"][0], body["kernels"][0]["gpus"][0]
    body["kernels"] = [{**kernel, **k, "gpus": [{**gpu, **g} for g in k["gpus"]]} for k in figures["kernels"]]
    return body


BODY = whole(FIGURES)


def rows() -> list[Row]:
    return [
        *rows_of_server("alice", "", BODY, NOW),
        *rows_of_server('bob "the\\builder"\n', "gpu", BODY, NOW),
        unreadable("carol", "", "jupyter-gpumem is not installed in this server"),
    ]


def samples(text: str) -> dict[str, Any]:
    """Each family's type and help, and its samples as (name, labels, value), sorted (a repeated one stays two)."""
    return {
        family.name: (
            family.type,
            family.documentation,
            sorted((s.name, tuple(sorted(s.labels.items())), s.value) for s in family.samples),
        )
        for family in text_string_to_metric_families(text)
    }


def test_the_hubs_metrics_have_the_names_labels_and_values_the_hand_written_text_had() -> None:
    new = render_metrics(rows(), NOW).decode()
    added = {"jupyter_gpumem_hub_user_group_info"}  # after the hand-written text (the report's groups)
    assert {k: v for k, v in samples(new).items() if k not in added} == samples(OLD.read_text())
    assert len(samples(new)["jupyter_gpumem_hub_kernel_memory_used_bytes"][2]) == 2  # GPU 1's N/A: no sample


def test_before_the_first_poll_every_family_is_described_and_has_no_sample() -> None:
    families = samples(render_metrics([], None).decode())
    assert len(families) == 9 and all(found == [] for _, _, found in families.values())


def test_each_users_groups_are_a_series_of_one_per_group() -> None:
    found = samples(render_metrics([], None, {"alice": ["physics", "chemistry"], "bob": [], "": ["x"]}).decode())
    name = "jupyter_gpumem_hub_user_group_info"  # a user without groups has none; a name that is none, none
    assert found[name][2] == [
        (name, (("group", "chemistry"), ("user", "alice")), 1.0),
        (name, (("group", "physics"), ("user", "alice")), 1.0),
    ]
