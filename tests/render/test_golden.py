"""Every surface's words for each golden case (tests/fixtures/golden/, made by tests/golden_cases.py): the inline
view's lines (viewtext.py, the same keys tests/ts/golden.test.ts checks format/ against), its still picture,
and `%gpumem status` as text and as HTML. A mismatch names the case and the surface."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from golden_cases import CASES, GOLDEN, HOSTILE_NAMES, surfaces

from jupyter_gpumem.render.text import printable

FILES = sorted(GOLDEN.glob("*.json"))


def test_every_case_has_its_fixture_and_every_fixture_its_case():
    assert [p.stem for p in FILES] == sorted(CASES)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_each_surface_shows_the_golden_words(path: Path):
    golden: dict[str, Any] = json.loads(path.read_text())
    made = surfaces(path.stem)
    for surface, expected in made.items():
        assert golden[surface] == expected, f"{path.stem}: {surface} differs from the golden fixture"


# Bidi overrides, embeddings, isolates and marks; C0 and C1 controls; the Unicode line separators; zero widths.
FORGING = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c\x00\x07\x1b\x7f\x85\x9b")
FORGING |= set("\t\r\u2028\u2029\u200b\u200c\u200d\ufeff\udcff")


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [s for item in items for s in strings(item)]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_no_surface_shows_a_character_that_reorders_or_forges_text(path: Path):
    # What the fixture must hold whatever regenerated it: the sample is the kernel's data, raw (escaping it is
    # each view's job); every surface shows it escaped.
    golden = json.loads(path.read_text())
    for surface in set(golden) - {"sample"}:
        for text in strings(golden[surface]):
            assert not FORGING & set(text), f"{path.stem}: {surface} shows {FORGING & set(text)!r} in {text!r}"


def test_every_surface_shows_each_hostile_name_escaped():
    golden = json.loads((GOLDEN / "hostile_names.json").read_text())
    for surface in ("view", "inline_still", "status_text", "status_html"):
        shown = "\n".join(strings(golden[surface]))
        for name in HOSTILE_NAMES:
            assert printable(name) in shown, f"hostile_names: {surface} lacks {printable(name)!r}"
