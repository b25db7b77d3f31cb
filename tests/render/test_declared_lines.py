"""A GPU's line declared in the schema (``x-line`` on a SampleGpu property, docs/protocol.md "A field's line") is
worded by both surfaces from that declaration alone: the inline view (render/viewtext.py, from the generated
wire/generated/gpu_lines.py) and the sidebar (format/panel.ts, from the generated wire/lines.ts; tests/ts/lines.test.ts
checks it there). Its words are written once, in the schema: a surface that words one by hand is refused here, as is
a line naming a field the GPU's shape does not have or a format a surface cannot word."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from jupyter_gpumem.i18n import extract
from jupyter_gpumem.render import viewtext
from jupyter_gpumem.wire.comm import SampleGpu
from jupyter_gpumem.wire.generated.gpu_lines import GPU_LINES, GpuLine

ROOT = Path(__file__).parents[2]
SAMPLE = json.loads((ROOT / "tests" / "fixtures" / "protocol" / "sample.json").read_text(encoding="utf-8"))["sample"]
PANEL = ROOT / "labextension" / "src" / "format" / "panel.ts"
# Where the words may be: their declaration and what is generated from it (the catalogues aside).
GENERATED = {
    ROOT / "jupyter_gpumem" / "wire" / "schemas" / "comm.v1.json",
    ROOT / "jupyter_gpumem" / "wire" / "generated" / "gpu_lines.py",
    ROOT / "labextension" / "src" / "wire" / "lines.ts",
}
# A figure of each format and how the English catalogue words it: a new format needs a case here.
FIGURES = {"gib_or_mib": (3 * 2**30, "3.0 GiB")}


def hand_written() -> list[Path]:
    """Every source a surface's words are written in: the package's Python and templates, the sidebar's TypeScript."""
    package = ROOT / "jupyter_gpumem"
    sources = [*package.rglob("*.py"), *package.rglob("*.j2"), *(ROOT / "labextension" / "src").rglob("*.ts")]
    skip = {"labextension", "static", "node_modules", "__pycache__"}
    return sorted(
        p for p in sources if p not in GENERATED and not skip & set(p.relative_to(package.parent).parts[1:-1])
    )


def pieces(words: str) -> list[str]:
    """The declared words' own text around the figure, long enough to be this line's and no other's: a copy that
    places its figure otherwise (``{unlisted}``, ``%s``) still holds them."""
    return [piece.strip() for piece in words.split("%1") if len(piece.strip()) >= 12]


def copied(words: str, sources: list[Path]) -> list[str]:
    found = []
    for path in sources:
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        found += [f"{where}: {piece!r}" for piece in pieces(words) if piece in text]
    return found


@pytest.mark.parametrize("line", GPU_LINES, ids=lambda line: line.field)
def test_a_declared_line_is_worded_from_its_declaration_and_by_no_surface_by_hand(line: GpuLine) -> None:
    assert pieces(line.words), f"{line.field}: its words are too short to tell a copy of them"
    found = copied(line.words, hand_written())
    assert not found, f"worded by hand as well as in the schema's x-line (word it from GPU_LINES): {found}"


def test_a_copy_of_a_declared_lines_words_is_found_whatever_its_placeholder(tmp_path: Path) -> None:
    assert {ROOT / "jupyter_gpumem" / "render" / "viewtext.py", PANEL} <= set(hand_written())
    scratch = tmp_path / "copy.py"
    scratch.write_text(f"_({GPU_LINES[0].words.replace('%1', '{unlisted}')!r})\n", encoding="utf-8")
    assert copied(GPU_LINES[0].words, [scratch])


@pytest.mark.parametrize("line", GPU_LINES, ids=lambda line: line.field)
def test_a_declared_line_names_a_field_of_the_gpu_and_a_figure_both_surfaces_word(line: GpuLine) -> None:
    fields = SampleGpu.__required_keys__ | SampleGpu.__optional_keys__
    assert line.field in fields, f"x-line on {line.field}, a field SampleGpu does not have"
    assert re.findall(r"%\d+", line.words) == ["%1"], f"{line.field}: its words place the figure as %1, once"
    assert line.format in viewtext.LINE_FORMATS, f"render/viewtext.py cannot word a figure as {line.format}"
    assert line.format in FIGURES, f"give FIGURES a case of {line.format}"
    assert re.search(rf"^\s*{line.format}: ", PANEL.read_text(encoding="utf-8"), re.M), (
        f"format/panel.ts cannot word a figure as {line.format}"
    )


def gpu_with(line: GpuLine, value: int | None) -> dict[str, Any]:
    gpu: dict[str, Any] = copy.deepcopy(SAMPLE["gpus"][0])
    gpu.update({other.field: None for other in GPU_LINES})
    gpu[line.field] = value
    return gpu


@pytest.mark.parametrize("line", GPU_LINES, ids=lambda line: line.field)
def test_the_inline_view_shows_a_declared_line_where_its_figure_is_known_and_not_where_it_is_null(
    line: GpuLine,
) -> None:
    figure, worded = FIGURES[line.format]
    shown = viewtext.limit_lines(gpu_with(line, figure), SAMPLE)  # type: ignore[arg-type]
    assert shown is not None and viewtext.lab(line.words, worded) in shown.split("\n")
    hidden = viewtext.limit_lines(gpu_with(line, None), SAMPLE)  # type: ignore[arg-type]
    assert viewtext.lab(line.words, worded) not in (hidden or "").split("\n")
    lost = viewtext.limit_lines({**gpu_with(line, figure), "lost": True}, SAMPLE)  # type: ignore[typeddict-item]
    assert viewtext.lab(line.words, worded) not in (lost or "").split("\n")


def test_the_template_takes_each_declared_lines_words_from_the_schema() -> None:
    found = {(context, msgid): location for location, msgid, context in extract.lines()}
    for line in GPU_LINES:
        assert (None, line.words) in found, f"{line.field}: jlpm i18n:extract would not find its words"
        assert found[(None, line.words)][0] == "jupyter_gpumem/wire/schemas/comm.v1.json"
