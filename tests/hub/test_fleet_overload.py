"""When a poll cannot reach every server within its period, the servers it did not reach are asked first in the
next one: no healthy server waits behind the hung ones poll after poll. The hub service in front of the simulated
fleet (tests/hub/fleet.py), with two requests in flight, a period of 1 s and a deadline of 2 s, so that two hung
servers hold both slots past the period, whatever the machine's load. About 20 s."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from fleet import kinds
from hub_fixtures import Fleet, running_fleet

SERVERS, HUNG = 40, 12
KIND = dict(kinds(SERVERS, {"hung": HUNG}))
HEALTHY = {user for user, kind in KIND.items() if kind == "healthy"}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    env = {
        "JUPYTER_GPUMEM_HUB_CONCURRENCY": "2",
        "JUPYTER_GPUMEM_HUB_DEADLINE_S": "2",  # past the period: two hung servers hold both slots through it
        "JUPYTER_GPUMEM_HUB_INTERVAL_S": "1",
        "JUPYTER_GPUMEM_HUB_MAX_REQUESTS_PER_S": "1000",  # the period is the interval
    }
    with running_fleet(tmp_path_factory.mktemp("overload"), SERVERS, f"hung={HUNG}", env) as running:
        yield running


def read_in(data: dict[str, Any]) -> set[str]:
    return {row["user"] for row in data["rows"] if row["kernel_id"] and not row["problem"]}


def test_a_server_a_poll_did_not_reach_is_read_in_a_later_poll_not_left_behind_the_hung_ones(fleet: Fleet) -> None:
    # Each poll passes two hung servers it had not asked before, so every healthy server is read within a few
    # polls (seven on an idle machine). Before the fix, those a poll did not reach waited behind the same hung
    # servers in every poll after it, and were never read.
    polls: dict[float, dict[str, Any]] = {}
    read: set[str] = set()
    deadline = time.monotonic() + 60
    while not read >= HEALTHY and time.monotonic() < deadline:
        data = fleet.rows()
        if data["t"] is not None and data["t"] not in polls:
            polls[data["t"]] = data
            read |= read_in(data)
        time.sleep(0.2)
    assert any(p["poll"]["not_reached"] for p in polls.values()), "every poll reached every server: nothing tested"
    never = sorted(HEALTHY - read)
    last = list(polls.values())[-1]
    why = Counter(str(row["problem"]) for row in last["rows"] if row["user"] in never)
    assert not never, f"{len(never)} healthy servers never read in {len(polls)} polls (60 s): {never}, {dict(why)}"
