"""Every surface's words for each golden case (tests/fixtures/golden/, made by tests/golden_cases.py): the inline
view's lines (viewtext.py, the same keys tests/ts/golden.test.ts checks format/ against), its still picture,
and `%gpumem status` as text and as HTML, in English and in each translated language (golden/<language>/). A
mismatch names the case, the language and the surface."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from golden_cases import CASES, GOLDEN, HOSTILE_NAMES, LANGUAGES, surfaces, surfaces_in, words_of
from golden_cases import language as golden_language

from jupyter_gpumem import i18n
from jupyter_gpumem.render import messages
from jupyter_gpumem.render.text import printable

FILES = sorted(GOLDEN.glob("*.json"))
# (language, fixture) for every translated language's words of every case
TRANSLATED = [(language, path) for language in LANGUAGES for path in sorted((GOLDEN / language).glob("*.json"))]
EVERY = FILES + [path for _, path in TRANSLATED]


def label(path: Path) -> str:
    return path.stem if path.parent == GOLDEN else f"{path.parent.name}/{path.stem}"


TRANSLATED_PARAMS = [pytest.param(language, path, id=label(path)) for language, path in TRANSLATED]


def test_every_case_has_its_fixture_and_every_fixture_its_case():
    assert [p.stem for p in FILES] == sorted(CASES)
    for language in LANGUAGES:
        assert sorted(p.stem for p in (GOLDEN / language).glob("*.json")) == sorted(CASES), language


def test_every_language_with_a_catalogue_has_its_golden_words():
    assert sorted(i18n.available()) == sorted(LANGUAGES)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_each_surface_shows_the_golden_words(path: Path):
    golden: dict[str, Any] = json.loads(path.read_text())
    made = surfaces(path.stem)
    for surface, expected in made.items():
        assert golden[surface] == expected, f"{path.stem}: {surface} differs from the golden fixture"


@pytest.mark.parametrize(("language", "path"), TRANSLATED_PARAMS)
def test_each_surface_shows_the_golden_words_in_each_language(language: str, path: Path):
    golden: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    made = surfaces_in(path.stem, language)
    assert golden["language"] == language
    for surface, expected in words_of(made).items():
        assert golden[surface] == expected, f"{label(path)}: {surface} differs from the golden fixture"
    # the wire carries codes and figures: a kernel in another language sends the English fixture's sample
    english = json.loads((GOLDEN / f"{path.stem}.json").read_text())
    assert made["sample"] == english["sample"], f"{label(path)}: the sample has words of the language in it"


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_translated_language_words_the_surfaces_in_it(language: str):
    # Not a check of the translations (the fixture is): that the fixture is of the language at all, a headline
    # of S1 translated, so a catalogue that failed to load cannot be golden.
    english = json.loads((GOLDEN / "s1_over_budget.json").read_text())
    translated = json.loads((GOLDEN / language / "s1_over_budget.json").read_text(encoding="utf-8"))
    for surface in ("view", "inline_still", "status_text", "status_html"):
        assert translated[surface] != english[surface], f"{language}: {surface} is the English one"


# Bidi overrides, embeddings, isolates and marks; C0 and C1 controls; the Unicode line separators; zero widths.
FORGING = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c\x00\x07\x1b\x7f\x85\x9b")
FORGING |= set("\t\r\u2028\u2029\u200b\u200c\u200d\ufeff\udcff")


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [s for item in items for s in strings(item)]


@pytest.mark.parametrize("path", EVERY, ids=label)
def test_no_surface_shows_a_character_that_reorders_or_forges_text(path: Path):
    # What the fixture must hold whatever regenerated it: the sample is the kernel's data, raw (escaping it is
    # each view's job); every surface shows it escaped, in every language.
    golden = json.loads(path.read_text(encoding="utf-8"))
    for surface in set(golden) - {"sample"}:
        for text in strings(golden[surface]):
            assert not FORGING & set(text), f"{path.stem}: {surface} shows {FORGING & set(text)!r} in {text!r}"


@pytest.mark.parametrize("folder", ["", *LANGUAGES])
def test_every_surface_shows_each_hostile_name_escaped(folder: str):
    golden = json.loads((GOLDEN / folder / "hostile_names.json").read_text(encoding="utf-8"))
    for surface in ("view", "inline_still", "status_text", "status_html"):
        shown = "\n".join(strings(golden[surface]))
        for name in HOSTILE_NAMES:
            assert printable(name) in shown, f"hostile_names {folder}: {surface} lacks {printable(name)!r}"


# A seam: English punctuation that code put around a translated phrase: a full stop ending a line in Japanese or
# Chinese ("予算 200 MiB の 79%.") or after one of their words ("しません. "), "; " after one, or a space after an
# ideographic full stop ("(%gpumem)。 TensorFlow"). The catalogue's own punctuation belongs there.
CJK = "[\u3040-\u30ff\u3400-\u9fff\uff00-\uffef\u3000-\u303f]"
SEAM = re.compile(f"{CJK}.*\\.$|{CJK}[)）]?\\. |。 |{CJK}; ")


def seamed(text: str) -> bool:
    return any(SEAM.search(line) for line in re.split(r"\n|\\n", text))


@pytest.mark.parametrize("language", LANGUAGES)
def test_no_english_punctuation_is_put_between_translated_sentences(language: str):
    shown = []
    for name, case in CASES.items():
        made = words_of(surfaces_in(name, language))
        shown += [(f"{name}: {surface}", text) for surface in made for text in strings(made[surface])]
        reading = case()[0]
        if reading is not None:  # the policy part of %gpumem status, the now lines and the limits
            with golden_language(language):
                policy = [*messages.status(reading.state, reading), *messages.limit_lines(reading)]
            shown += [(f"{name}: status policy", text) for text in policy]
    seams = [f"{where}: {text}" for where, text in shown if seamed(text)]
    assert not seams, "\n".join(seams)
