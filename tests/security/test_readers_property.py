"""Every reader of another process's value holds its property (readers.py) for generated inputs: deep, huge,
non-finite, wrong types, lone surrogates, and valid messages with one value replaced. A few hundred inputs each here;
benchmarks/fuzz_readers.py runs 100,000 each."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from readers import READERS, private_directory

EXAMPLES = 300


@pytest.fixture(scope="module")
def directory() -> Iterator[Path]:
    with private_directory() as folder:
        yield Path(folder)


@pytest.mark.parametrize("name", sorted(READERS))
def test_a_reader_answers_a_value_within_range_or_one_sentence_for_any_input(name: str, directory: Path) -> None:
    strategy, check = READERS[name]
    takes_directory = name in ("report", "notice")

    @settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def holds(value: Any) -> None:
        check(value, directory) if takes_directory else check(value)

    holds()
