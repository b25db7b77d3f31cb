"""`%gpumem cells`' words from cell records: the table as text and HTML, and the advice's line naming the cell."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from jupyter_gpumem import i18n
from jupyter_gpumem.render import html, width
from jupyter_gpumem.render.cells import Cell, culprit, tables
from jupyter_gpumem.units import MiB

GPU = "GPU-a1a1a1a1-0000-4000-8000-000000000001"


def cell(count: int, line: str, before: int | None, peak: int | None, after: int | None) -> Cell:
    return Cell(
        count,
        line,
        100.0 + count,
        100.5 + count,
        held_before={GPU: before},
        peak={GPU: peak} if peak is not None else {},
        held_after={GPU: after},
    )


@pytest.fixture
def language() -> Iterator[None]:
    """Leaves the process in its environment's language, whatever a test chose."""
    yield
    i18n.use_language(None)


CELLS = [
    cell(1, "import torch", 0, 300 * MiB, 300 * MiB),
    cell(2, "model = build()", 300 * MiB, 3300 * MiB, 3200 * MiB),
    cell(3, "x = 1", 3200 * MiB, 3200 * MiB, 3300 * MiB),
]


def test_the_cell_that_raised_the_memory_most_is_the_one_the_advice_names():
    assert culprit(CELLS, GPU) == (
        "  Cell [2] (model = build()) raised this kernel's memory from 300 MiB to 3.1 GiB as nvidia-smi counts it, "
        "and it is still held (%gpumem cells lists every cell)."
    )
    assert culprit(CELLS[2:], "GPU-other") is None  # no figures on that GPU: no cell named


def test_a_cells_code_is_shown_as_text_in_the_html_never_as_markup():
    found = tables([cell(4, "<img src=x onerror=alert(1)>", 0, MiB, MiB)], [(GPU, "GPU 0")], [])
    markup = html.cells(found, 1.0, 0).html
    assert "<img" not in markup and "&lt;img src=x onerror=alert(1)&gt;" in markup


def test_the_text_table_lines_its_figures_up_and_says_what_it_leaves_out():
    found = tables(CELLS, [(GPU, "GPU 0 NVIDIA A100")], [])
    text = html.cells(found, 1.0, hidden=5).text.splitlines()
    assert text[2:6] == [
        "GPU 0 NVIDIA A100",
        "CELL  FIRST LINE        TIME     PEAK  HELD AFTER    CHANGE",
        "[1]   import torch     0.5 s  300 MiB     300 MiB  +300 MiB",
        "[2]   model = build()  0.5 s  3.2 GiB     3.1 GiB  +2.8 GiB",
    ]
    assert "5 earlier cells are not shown (%gpumem cells 8 shows them)." in text


def test_a_japanese_table_lines_up_by_the_columns_its_characters_take_not_by_their_count(language):
    i18n.use_language("ja-JP")
    found = tables([*CELLS[:1], cell(2, "モデル = 作る()", 300 * MiB, 3300 * MiB, 3200 * MiB)], [(GPU, "GPU 0")], [])
    head, first, second = html.cells(found, 1.0, 0).text.splitlines()[3:6]
    assert head.startswith("セル  先頭行  ")  # the titles are Japanese: two columns a character
    assert second.startswith("[2]   モデル = 作る()  ")
    # Every column ends where the one above it ends on the screen: the right-aligned figures close each line.
    assert {width.columns(line) for line in (head, first, second)} == {width.columns(head)}
    assert len(head) != len(first)  # by characters they differ, so padding by len() would not line them up
    assert first.index("0.5 s") + 5 == width.columns(second[: second.index("0.5 s") + 5])
