"""The columns text takes on a terminal or in a notebook's monospace font (render/width.py), which every text
table in render/ pads and cuts by."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from jupyter_gpumem import i18n
from jupyter_gpumem.render import largest
from jupyter_gpumem.render.table import Row, text_lines
from jupyter_gpumem.render.width import columns, cut, left, right
from jupyter_gpumem.units import MiB


@pytest.fixture
def language() -> Iterator[None]:
    """Leaves the process in its environment's language, whatever a test chose."""
    yield
    i18n.use_language(None)


def test_a_cjk_character_takes_two_columns_and_a_combining_mark_none():
    assert columns("GPU") == 3
    assert columns("ユーザー") == 8
    assert columns("显存") == 4
    assert columns("e\u0301") == 1  # e + combining acute: one é on the screen
    assert columns("a\x1bb") == 3  # a control character counts as len() did (tables show it escaped anyway)


def test_padding_fills_to_the_columns_asked_for():
    assert left("ユーザー", 10) == "ユーザー  "
    assert right("显存", 6) == "  显存"
    assert left("much too long", 4) == "much too long"  # never cut by padding


def test_a_cut_never_halves_a_wide_character():
    assert cut("ユーザー名", 5) == "ユー"
    assert left(cut("ユーザー名", 5), 5) == "ユー "
    assert cut("alice", 12) == "alice"
    assert cut("bob", 0) == ""


def test_a_japanese_process_table_cuts_and_pads_its_columns_by_the_screen(language):
    i18n.use_language("ja-JP")
    rows = [
        Row(501, "山田太郎やまだたろう", 3000 * MiB, 12.5, False, "compute", "学習.py", None),
        Row(502, "bob", 10 * MiB, None, False, "compute", "python", None),
    ]
    head, first, second = text_lines(rows, str)
    assert head.startswith("     PID  ユーザー      ")  # a 12-column user column: ユーザー takes 8 of them
    assert first.startswith("     501  山田太郎やま    3000 MiB")  # cut at 12 columns: six characters
    # The columns before the unbounded name end at the same place on the screen in every line.
    starts = {columns(line[: line.index(name)]) for line, name in ((head, "名前"), (first, "学習"), (second, "python"))}
    assert len(starts) == 1


def test_largest_batch_facts_take_the_languages_colon_and_line_up_their_values(language):
    view = largest.View("headline", [("32", "5120 MiB", "")], [("fit", "a"), ("margin", "b")], [], "")
    i18n.use_language("en")
    assert largest.text(view).splitlines()[1:] == [
        "    batch        peak",
        "       32    5120 MiB",
        "  fit:    a",
        "  margin: b",
    ]
    i18n.use_language("zh-CN")
    facts = largest.text(view).splitlines()[3:]
    assert all("：" in line and ":" not in line for line in facts)
    assert len({columns(line[: line.index(value)]) for line, value in zip(facts, "ab", strict=True)}) == 1
