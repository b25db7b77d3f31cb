"""One number format in both languages (docs/numbers.md): hypothesis generates thousands of readings — figures
exactly half way (2.25 GiB, 78.5%, 2.5 MiB, 90 s), exactly the budget and 90% of it and a byte either side, N/A,
zero, one byte, a petabyte, budgets of a few bytes — and every surface's words for them, made by Python (units.py,
render/viewtext.py) and by the TypeScript formatter (labextension/src/format/, in one node process for the whole
run, tests/ts/numbers-harness.ts), must be the same: sizes, shares of a budget, the headline, the status bar,
the inline view's lines, the process table, idle times, clock times, the stalled driver's sentence."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from golden_cases import view
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from protocol_fixtures import s1_reading

from jupyter_gpumem.kernel.protocol import encode_sample
from jupyter_gpumem.render import viewtext
from jupyter_gpumem.units import (
    GiB,
    MiB,
    against_budget,
    budget_level,
    format_duration,
    format_gib_or_mib,
    format_percent,
)

# the checkout with node_modules: this one, or the one holding mutmut's copy of it (benchmarks/mutation.py)
ROOT = next((p for p in Path(__file__).resolve().parents if (p / "node_modules").is_dir()), Path(__file__).parents[2])
HARNESS = ROOT / "build" / "ts-tests" / "tests" / "ts" / "numbers-harness.js"
BUILD = "node_modules/.bin/tsc -p tsconfig.test.json --noEmitOnError false"
PB = 10**15  # about the most memory one host's GPUs hold together for years to come; within 2**53
BATCH = 60  # readings per example: one line to node and back


def _stale() -> bool:
    if not HARNESS.exists():
        return True
    sources = [*ROOT.glob("labextension/src/**/*.ts"), *ROOT.glob("tests/ts/*.ts")]
    return max(p.stat().st_mtime for p in sources) > HARNESS.stat().st_mtime


@pytest.fixture(scope="module")
def typescript() -> Iterator[Callable[[list[dict[str, Any]]], list[Any]]]:
    """The TypeScript formatter's words for a batch of readings, from one node process (built first when the
    compiled harness is missing or older than the sources)."""
    if shutil.which("node") is None:
        pytest.fail("node is not installed: the TypeScript formatter cannot be run (the project needs Node 20)")
    if _stale():  # type errors are `jlpm lint`'s to report: this test needs the JavaScript
        built = subprocess.run(BUILD.split(), cwd=ROOT, capture_output=True, text=True)
        assert not _stale(), f"`{BUILD}` did not build the harness (run `jlpm test`):\n{built.stdout}{built.stderr}"
    node = subprocess.Popen(
        ["node", str(HARNESS), "--serve"], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert node.stdin is not None and node.stdout is not None

    def words(cases: list[dict[str, Any]]) -> list[Any]:
        node.stdin.write(json.dumps(cases) + "\n")
        node.stdin.flush()
        return json.loads(node.stdout.readline())

    yield words
    node.stdin.close()
    node.wait(timeout=10)


def sizes() -> st.SearchStrategy[int]:
    """Byte counts, most of them where the words change: a half MiB below 1 GiB and a quarter GiB above it (the
    exact ties, 2.5 MiB and 2.25 GiB) and a byte either side, the unit's edges, zero, one byte, a petabyte."""
    halves = st.integers(0, 2 * 1024).map(lambda h: h * MiB // 2)
    quarters = st.integers(4, 4 * PB // GiB).map(lambda q: q * GiB // 4)
    near = st.one_of(halves, quarters).flatmap(lambda b: st.sampled_from([b - 1, b, b + 1]).filter(lambda v: v >= 0))
    edges = st.sampled_from([0, 1, MiB - 1, MiB, GiB - 1, GiB, GiB + 1, 2**50, PB])
    return st.one_of(near, edges, st.integers(0, 64 * GiB), st.integers(0, PB))


@st.composite
def shares(draw: st.DrawFn) -> tuple[int, int]:
    """(own, budget): own at every half percent of the budget from 0 to 300% (78.5%, 90%, 100%), a byte either
    side; or anywhere; budgets of a few bytes up to a petabyte."""
    if draw(st.booleans()):
        return draw(sizes()), draw(st.one_of(sizes(), st.integers(0, 16)))
    step = draw(st.one_of(st.integers(1, 16), st.integers(1, 4 * MiB), st.integers(1, PB // 200)))
    own = draw(st.integers(0, 600)) * step + draw(st.sampled_from([-1, 0, 1]))
    return max(own, 0), 200 * step


def seconds() -> st.SearchStrategy[float]:
    """Idle times and a stalled driver's wait: whole and half seconds and minutes (59.5 s, 90 s), any."""
    halves = st.integers(0, 2 * 86400).map(lambda h: h / 2)
    minutes = st.integers(0, 2 * 24 * 60).map(lambda m: m * 30.0)
    any_time = st.floats(0, 10 * 86400, allow_nan=False)
    return st.one_of(halves, minutes, any_time, st.sampled_from([59.5, 60.0, 89.5, 7170.0, 7199.0, 7200.0]))


def clock_times() -> st.SearchStrategy[float]:
    return st.one_of(st.integers(1_600_000_000, 2_000_000_000).map(float), st.floats(1.6e9, 2e9))


def cpu_shares() -> st.SearchStrategy[float]:
    """CPU%: quarters (12.25, one decimal exactly half way), tenths as the kernel sends them, any."""
    return st.one_of(st.integers(0, 6400).map(lambda q: q / 4), st.integers(0, 16000).map(lambda t: t / 10),
                     st.floats(0, 3200, allow_nan=False))  # fmt: skip


TEMPLATE = encode_sample(s1_reading())  # today's shape of a sample: the generated figures replace its own


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


@st.composite
def gpus(draw: st.DrawFn, index: int) -> dict[str, Any]:
    own, budget = draw(shares())
    pool, overhead = draw(maybe(sizes())), draw(maybe(sizes()))
    process = TEMPLATE["gpus"][1]["processes"][0]
    processes = [
        {**process, "pid": 1000 + i, "used_bytes": draw(maybe(sizes())), "cpu_percent": draw(maybe(cpu_shares()))}
        for i in range(draw(st.integers(0, 3)))
    ]
    others = draw(maybe(st.tuples(st.integers(1, 3), maybe(sizes()))))
    return {
        **TEMPLATE["gpus"][1],
        "index": index,
        "uuid": f"GPU-{index}",
        "total_bytes": draw(maybe(sizes())),
        "used_bytes": draw(maybe(sizes())),
        "own_bytes": draw(st.sampled_from([own, own, None])),
        "budget_bytes": draw(st.sampled_from([budget, budget, None])),
        "in_force": draw(st.booleans()),
        "unlisted_bytes": draw(maybe(sizes())),
        "pool_bytes": pool,
        "pool_known": draw(st.booleans()),
        "overhead_bytes": overhead,
        "over_reason": None,
        "over_reason_said": None,
        "processes": processes,
        "others": None if others is None else {"processes": others[0], "used_bytes": others[1], "users": []},
    }


@st.composite
def samples(draw: st.DrawFn) -> dict[str, Any]:
    t = draw(clock_times())
    stalled = draw(maybe(seconds()))
    return {
        **TEMPLATE,
        "t": t,
        "stalled_since": None if stalled is None else t - stalled,
        "gpus": [draw(gpus(i)) for i in range(draw(st.integers(0, 2)))],
    }


def readings() -> st.SearchStrategy[dict[str, Any]]:
    """One reading for one surface: the key names it (tests/ts/numbers-harness.ts reads the same keys)."""
    return st.one_of(
        maybe(sizes()).map(lambda b: {"bytes": b}),
        shares().filter(lambda s: s[1] > 0).map(lambda s: {"share": list(s)}),
        seconds().map(lambda s: {"seconds": s}),
        clock_times().map(lambda t: {"t": t}),
        samples().map(lambda s: {"sample": s}),
    )


def status_bar(gpu: dict[str, Any]) -> dict[str, str]:
    """The status bar's item (format/statusbar.ts) as units words its figures; it has no Python twin."""
    own, budget = gpu["own_bytes"], gpu["budget_bytes"]
    if budget is None:
        return {"text": f"GPU {format_gib_or_mib(own)}", "level": "ok"}
    if own is None:
        return {"text": f"GPU N/A of {format_gib_or_mib(budget)}", "level": "ok"}
    figure, limit, unit = against_budget(own, budget)
    return {"text": f"GPU {figure}/{limit} {unit}", "level": budget_level(own, budget)}


def python_words(case: dict[str, Any]) -> Any:
    """What the Python side says of a reading, in the harness's shapes."""
    if "bytes" in case:
        return format_gib_or_mib(case["bytes"])
    if "share" in case:
        return format_percent(*case["share"])
    if "seconds" in case:
        return format_duration(case["seconds"])
    if "t" in case:
        return viewtext.clock(case["t"])
    sample = case["sample"]
    return {
        "stalled": viewtext.stalled_line(sample),
        "gpus": [{**view(sample, g), "status": status_bar(g)} for g in sample["gpus"]],
    }


def disagreements(cases: list[dict[str, Any]], typescript: Callable[[list[dict[str, Any]]], list[Any]]) -> list[str]:
    return [
        f"{json.dumps(case)}\n  Python:     {json.dumps(ours, ensure_ascii=False)}\n"
        f"  TypeScript: {json.dumps(theirs, ensure_ascii=False)}"
        for case, ours, theirs in zip(cases, map(python_words, cases), typescript(cases), strict=True)
        if ours != theirs
    ]


TIES = [
    {"bytes": 9 * GiB // 4},  # 2.25 GiB: 2.3
    {"bytes": 5 * MiB // 2},  # 2.5 MiB: 3
    {"share": [157 * MiB, 200 * MiB]},  # 78.5%: 79%
    {"share": [9 * MiB, 10 * MiB]},
    {"seconds": 59.5},
    {"seconds": 90.0},
]


@settings(max_examples=100, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases=st.lists(readings(), min_size=BATCH, max_size=BATCH))
@example(cases=TIES)
def test_python_and_the_sidebar_say_every_figure_in_the_same_words(
    cases: list[dict[str, Any]], typescript: Callable[[list[dict[str, Any]]], list[Any]]
) -> None:
    found = disagreements(cases, typescript)
    assert not found, f"{len(found)} of {len(cases)} readings differ:\n" + "\n".join(found[:5])


def test_figures_half_way_round_up_in_both_languages(
    typescript: Callable[[list[dict[str, Any]]], list[Any]],
) -> None:
    # the issue's own cases: 157 MiB of a 200 MiB budget read 78% in `%gpumem status` and 79% in the sidebar
    assert [python_words(c) for c in TIES] == ["2.3 GiB", "3 MiB", "79%", "90%", "1 min", "2 min"]
    assert not disagreements(TIES, typescript)
