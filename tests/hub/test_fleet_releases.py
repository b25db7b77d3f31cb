"""Releases mix behind a hub (docs/protocol.md, "Versioning and releases mixing"): users' server images and the hub
are upgraded at different times. The hub service, started as JupyterHub starts it, in front of 150 simulated
single-user servers on 127.0.0.1 (tests/hub/fleet.py: real HTTP, the hub's API with its pagination) that answer with
the bodies of different releases (tests/fixtures/releases/): this release's, 0.1.0's as it shipped, the first body
the API had, an invented newer release of /api/gpumem/v1 with fields this one does not know, and an invented
/api/gpumem/v2. Every server of version 1 is read in every poll; each of version 2 is its own row saying which
releases meet and what to upgrade. About 15 s.

Once, beside three busy loops, 14 of 140 went unread in one poll: most likely the service's first, whose period then
counted from before the hub's list (hub/poll.py now counts it from the list, tests/hub/test_fleet_slow_list.py).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from fleet import ADMIN_TOKEN, kinds
from hub_fixtures import Fleet, running_fleet
from prometheus_client.parser import text_string_to_metric_families
from server_fixtures import http

from jupyter_gpumem._version import __version__

SERVERS = 150
MIXED = {"older": 40, "first": 30, "newer": 40, "major2": 10}  # the rest run this release
# A server answers within the deadline even on a loaded 2-core machine (the 150 servers and the service share it,
# as in test_fleet.py): with 1 s, 10 of 140 went unread in a poll beside two other suites.
INTERVAL_S, DEADLINE_S = 2.0, 3.0
KIND = dict(kinds(SERVERS, MIXED))
READABLE = {user for user, kind in KIND.items() if kind != "major2"}
# The release each readable kind's body names: "first" is 0.1.0 too, from early in its history.
RELEASE = {"healthy": __version__, "older": "0.1.0", "first": "0.1.0", "newer": "0.9.0"}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    faults = ",".join(f"{k}={v}" for k, v in MIXED.items())
    env = {"JUPYTER_GPUMEM_HUB_INTERVAL_S": f"{INTERVAL_S:g}", "JUPYTER_GPUMEM_HUB_DEADLINE_S": f"{DEADLINE_S:g}"}
    with running_fleet(tmp_path_factory.mktemp("releases"), SERVERS, faults, env) as running:
        yield running


def polls(fleet: Fleet, count: int, timeout_s: float = 30) -> list[dict[str, Any]]:
    """The service's JSON after each of its next ``count`` polls (told apart by their time)."""
    seen: dict[float, dict[str, Any]] = {}
    deadline = time.monotonic() + timeout_s
    while len(seen) < count and time.monotonic() < deadline:
        data = fleet.rows()
        if data["t"] is not None and data["poll"] is not None:
            seen.setdefault(data["t"], data)
        time.sleep(0.3)
    assert len(seen) >= count, f"{len(seen)} polls in {timeout_s} s"
    return [seen[t] for t in sorted(seen)]


def test_every_server_of_every_release_of_version_1_is_read_in_every_poll(fleet: Fleet) -> None:
    for number, data in enumerate(polls(fleet, 3), 1):
        rows: dict[str, list[dict[str, Any]]] = {}
        for row in data["rows"]:
            rows.setdefault(row["user"], []).append(row)
        read = {u for u, found in rows.items() if all(r["kernel_id"] and not r["problem"] for r in found)}
        why = Counter(str(r["problem"]) for u in READABLE - read for r in rows.get(u, [{"problem": "no row"}]))
        unread = len(READABLE - read)
        if number == 1 and set(why) == {"not read yet"}:
            # The first poll seen may be the service's first, which on a loaded machine may not start every request
            # within its period (hub/poll.py); its tail is asked first in the next poll. Not reached, nothing else.
            assert unread <= data["poll"]["not_reached"], data["poll"]
            continue
        assert read == READABLE, (
            f"poll {number}: {unread} of {len(READABLE)} servers of version 1 not read, {dict(why)}: {data['poll']}"
        )
        # A server a poll does not reach keeps its last rows, so they cannot tell: the poll's own count does.
        assert number == 1 or data["poll"]["not_reached"] == 0, f"poll {number}: {data['poll']}"
        for user in READABLE:
            [row] = rows[user]
            assert row["server_version"] == RELEASE[KIND[user]], row
            assert row["kernel_id"] == f"kernel-{int(user[1:]):05d}" and row["used_bytes"] is not None, row
            if KIND[user] == "first":  # sent before the API had them: not known, never made up
                assert (row["execution_state"], row["idle_s"], row["limit_kind"]) == (None, None, None), row
            else:
                assert row["execution_state"] in ("idle", "busy") and row["limit_kind"] == "cooperative", row
        summary = data["summary"]
        assert summary["servers"] == {"answering": len(READABLE), "unreadable": MIXED["major2"], "not_answering": 0}
        expected = Counter(RELEASE[KIND[u]] for u in READABLE)
        assert summary["releases"] == dict(sorted(expected.items()))
        print(f"\nthe hub read {summary['servers']['answering']} of {SERVERS} servers: {summary['releases']}")


def test_a_server_of_another_api_version_is_its_own_row_saying_what_to_upgrade(fleet: Fleet) -> None:
    data = polls(fleet, 1)[-1]
    refused = [r for r in data["rows"] if KIND[r["user"]] == "major2"]
    assert len(refused) == MIXED["major2"]
    assert {(r["kernel_id"], r["server_version"], r["problem"]) for r in refused} == {
        (
            None,
            "1.0.0",
            f"it runs jupyter-gpumem 1.0.0, whose /api/gpumem/v2 this hub service (jupyter-gpumem {__version__}) "
            "cannot read: upgrade jupyter-gpumem in the hub's environment",
        )
    }
    status, metrics = http(f"{fleet.service}metrics", ADMIN_TOKEN)
    assert status == 200
    up = {
        s.labels["user"]: s.value
        for family in text_string_to_metric_families(metrics.decode())
        for s in family.samples
        if s.name == "jupyter_gpumem_hub_server_up"
    }
    assert {u for u, v in up.items() if v == 1} == READABLE and {u for u, v in up.items() if v == 0} == set(
        KIND
    ) - READABLE
