"""A stalled driver's sentence says the same in Python and in TypeScript (tests/ts/format.test.ts reads the same
fixture): the status and the inline view's still picture here, the sidebar there."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_gpumem.gpu.model import Device, Snapshot
from jupyter_gpumem.gpu.reader import stalled
from jupyter_gpumem.render.viewtext import stalled_line

CASES = json.loads((Path(__file__).parents[1] / "fixtures" / "stalled_words.json").read_text())["cases"]


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize("case", CASES, ids=lambda case: case["words"][-30:])
def test_a_stalled_drivers_sentence_names_the_time_of_its_last_answer_and_how_long_ago(case: dict[str, Any]) -> None:
    devices = tuple(Device(index=i, uuid=f"GPU-{i}", name="A100") for i in range(case["gpus"]))
    snapshot = Snapshot(taken_at=case["t"], own_pid=1, devices=devices, stalled_since=case["stalled_since"])
    assert stalled(snapshot, now=case["t"]) == case["words"]
    sample = {"t": case["t"], "stalled_since": case["stalled_since"], "gpus": [{}] * case["gpus"]}
    assert stalled_line(sample) == case["words"]


def test_a_driver_that_answered_has_no_sentence() -> None:
    assert stalled(Snapshot(taken_at=1.0, own_pid=1)) is None
    assert stalled_line({"t": 1.0, "gpus": []}) is None
