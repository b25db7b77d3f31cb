"""The chart's thresholds and constants live in one file both languages read (jupyter_gpumem/render/chart.json;
the sidebar bundles a copy that tests/ts/constants.test.ts holds equal): the kernel's figures, pictures and
warnings use its values, and no Python or TypeScript source keeps a literal of its own of one of them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from jupyter_gpumem.kernel.alerts import OVER_BUDGET
from jupyter_gpumem.render import chart, history
from jupyter_gpumem.render.figure import TRACES

ROOT = Path(__file__).resolve().parents[2]
CHART = json.loads((ROOT / "jupyter_gpumem" / "render" / "chart.json").read_text(encoding="utf-8"))
# Generated from the wire's schemas (tests/wire/test_generated.py, tests/ts/schema.test.ts): not written by hand.
GENERATED = ("jupyter_gpumem/wire/generated/", "labextension/src/wire/schema.ts", "labextension/src/wire/types.ts")
# Lines that hold one of the numbers for another fact.
ELSEWHERE = {'GPU_FULL = Mark("GPU full", on=0.95, off=0.90)'}  # the device 95% full, not an episode's end


def literal(value: float) -> str:
    """A number as a source would write it, not part of a longer one (0.95, not 10.95 or 0.955)."""
    return rf"(?<![\w.]){re.escape(repr(value))}(?![\w.])"


def patterns() -> dict[str, str]:
    """The ways a source would spell each constant of chart.json for itself, derived from the file."""
    span, top = CHART["min_span_s"], CHART["min_top_bytes"]
    ladder = r",\s*".join(str(size) for size in CHART["buckets_s"])
    return {
        "over_ends_below": literal(CHART["over_ends_below"]),
        "headroom": literal(CHART["headroom"]),
        "min_span_s": rf"(?<![\w.])({span}_?000|{span}\.0)(?![\w.])",  # 120_000 ms, 120.0 s
        "min_top_bytes": rf"(?<![\w.])({top}|{top // 2**20} \* MiB)(?![\w.])",
        "buckets_s": ladder,
        "cells.top": literal(CHART["cells"]["top"]),
        "cells.opacity": literal(CHART["cells"]["opacity"]),
    }


def mirrors(sources: dict[str, str]) -> list[str]:
    """Each line of the given sources (path: text) that holds a literal of one of chart.json's constants."""
    found = []
    for path, text in sources.items():
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip() in ELSEWHERE:
                continue
            found += [
                f"{path}:{number}: {name}: {line.strip()}" for name, p in patterns().items() if re.search(p, line)
            ]
    return found


def hand_written() -> dict[str, str]:
    files = [*(ROOT / "jupyter_gpumem").rglob("*.py"), *(ROOT / "labextension" / "src").rglob("*.ts")]
    paths = {f.relative_to(ROOT).as_posix(): f for f in files}
    return {path: f.read_text(encoding="utf-8") for path, f in paths.items() if not path.startswith(GENERATED)}


def test_no_python_or_typescript_source_keeps_its_own_copy_of_a_chart_constant() -> None:
    sources = hand_written()
    assert "labextension/src/chart/scale.ts" in sources and "jupyter_gpumem/render/history.py" in sources
    assert mirrors(sources) == []


@pytest.mark.parametrize(
    "line",
    [
        "export const OVER_ENDS_BELOW = 0.95;",
        "OVER_BUDGET = Mark('over budget', on=1.0, off=0.95)",
        "const HEADROOM = 1.08;",
        "export const MIN_SPAN_MS = 120_000;",
        "MIN_SPAN_S = 120.0",
        "  top = Math.max(top * HEADROOM, 256 * MiB);",
        "BUCKETS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600)",
        "const cellTop = (scale.top / GiB) * 0.985;",
        "fillcolor: translucent(colours.own, 0.06)",
    ],
)
def test_a_source_that_spells_a_chart_constant_again_is_caught(line: str) -> None:
    assert len(mirrors({"planted.ts": f"// before\n{line}\n"})) == 1


def test_the_kernel_draws_and_warns_with_the_files_values() -> None:
    assert OVER_BUDGET.off == history.OVER_ENDS_BELOW == CHART["over_ends_below"]
    assert CHART["min_span_s"] == history.MIN_SPAN_S and CHART["headroom"] == history.HEADROOM
    # The ladder: a span of one rung per point is that rung's bucket; past the top rung, whole hours.
    for size in CHART["buckets_s"]:
        assert history.bucket_s(size, 1) == size
    assert history.bucket_s(CHART["buckets_s"][-1] + 1, 1) == 2 * 3600
    nothing = {name: [float("nan")] for name in history.FIELDS}
    assert history.y_top(nothing) == CHART["min_top_bytes"]
    assert {t.key: (t.dash, t.width) for t in TRACES} == {
        key: (style["dash"], style["width"]) for key, style in CHART["lines"].items()
    }
    assert (CHART["cells"]["top"], CHART["cells"]["opacity"]) == (chart.CELLS_TOP, chart.CELLS_OPACITY)


def test_each_line_has_a_dash_plotly_draws() -> None:
    assert {style["dash"] for style in CHART["lines"].values()} <= {"solid", "dot", "dash"}
    assert set(CHART["lines"]) == {"own", "framework", "others", "budget", "driverLimit", "total"}
