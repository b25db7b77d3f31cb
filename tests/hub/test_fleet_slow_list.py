"""A hub whose list of users is slow (a busy database, thousands of users in pages) takes none of the servers' time:
a poll's period, in which it starts its requests, counts from when the list arrived. The hub service in front of
the simulated fleet (tests/hub/fleet.py), whose list answers 1.5 s late, with a period of 1 s. Before the fix the
period counted from the poll's start, so the list used it all and no server was ever read, and the next poll asked
the hub for its list again at once. About 12 s."""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from hub_fixtures import Fleet, running_fleet

SERVERS, LIST_DELAY_S = 20, 1.5


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    env = {
        "JUPYTER_GPUMEM_HUB_INTERVAL_S": "1",
        "JUPYTER_GPUMEM_HUB_DEADLINE_S": "3",
        "JUPYTER_GPUMEM_HUB_MAX_REQUESTS_PER_S": "1000",  # the period is the interval
    }
    with running_fleet(tmp_path_factory.mktemp("slow-list"), SERVERS, "", env, list_delay_s=LIST_DELAY_S) as running:
        yield running


def test_a_slow_list_of_users_leaves_the_servers_their_period(fleet: Fleet) -> None:
    polls: dict[float, dict[str, Any]] = {}
    deadline = time.monotonic() + 30
    while len(polls) < 3 and time.monotonic() < deadline:
        data = fleet.rows()
        if data["t"] is not None and data["poll"] is not None:
            polls.setdefault(data["t"], data)
        time.sleep(0.2)
    assert len(polls) == 3, f"{len(polls)} polls in 30 s"
    starts = sorted(polls)
    # And the hub gets its rest: the next poll starts a period after this one's requests began, not at once.
    gaps = [later - earlier for earlier, later in itertools.pairwise(starts)]
    assert min(gaps) >= LIST_DELAY_S + 1 - 0.05, gaps
    for data in polls.values():
        stats = data["poll"]
        assert stats["duration_s"] >= LIST_DELAY_S, f"the list was not slow: nothing tested: {stats}"
        read = {row["user"] for row in data["rows"] if row["kernel_id"] and not row["problem"]}
        why = Counter(str(row["problem"]) for row in data["rows"] if row["user"] not in read)
        assert len(read) == SERVERS and stats["not_reached"] == 0, (
            f"{SERVERS - len(read)} not read, {dict(why)}: {stats}"
        )
