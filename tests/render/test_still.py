"""A stopped inline view's chart as a still SVG (render/still.py), what HTML exports and GitHub show: the plotly
figure's traces, colours, scales and marks (tests/fixtures/chart/traces.json), peaks kept at a point per pixel
column, N/A a gap, host text escaped, a few KB; and the plotly figure's own output lean (figure.bundle)."""

from __future__ import annotations

import itertools
import json
import math
import re
import unicodedata
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from conftest import FIXTURES
from test_figure import LIMIT, S1, T0, sample  # S1's GPU 1 as the figure tests have it

from jupyter_gpumem import i18n
from jupyter_gpumem.render import figure, still
from jupyter_gpumem.render.figure import TRACES
from jupyter_gpumem.units import GiB, MiB

SVG = "{http://www.w3.org/2000/svg}"
NAMES = json.loads((FIXTURES / "chart" / "traces.json").read_text())["traces"]
COLOUR = {t.key: t.colour for t in TRACES}


@pytest.fixture
def language() -> Iterator[None]:
    """Leaves the process in its environment's language, whatever a test chose."""
    yield
    i18n.use_language(None)


def hour(spike_at: int = 1234) -> list[Any]:
    """An hour at 1 s: this kernel at 2 GiB with a one-second spike to 3.5 GiB, the device's 8 GiB above the scale."""
    history = [sample(T0 + i, 2 * GiB, used=5 * GiB) for i in range(3600)]
    history[spike_at] = sample(T0 + spike_at, int(3.5 * GiB), used=5 * GiB)
    return history


def parsed(svg: str | None) -> ET.Element:
    assert svg is not None
    return ET.fromstring(svg)  # well-formed, or it raises: no host text broke out of its element


def lines(root: ET.Element) -> dict[str, str]:
    """Each trace's line (its path's d) by its colour, the legend's swatches left out."""
    return {
        p.get("stroke", ""): p.get("d", "")
        for p in root.iter(SVG + "path")
        if p.get("fill") == "none" and p.get("stroke") in COLOUR.values()
    }


def points(d: str) -> list[tuple[int, int]]:
    return [(int(x), int(y)) for x, y in re.findall(r"(-?\d+),(-?\d+)", d)]


def test_the_still_chart_draws_the_figures_traces_in_their_colours_dashes_and_names() -> None:
    history = [sample(T0 + i, 2 * GiB + i * MiB, budget=10 * GiB, used=3 * GiB, driver_limit=LIMIT) for i in range(60)]
    root = parsed(still.svg(history))
    drawn = lines(root)
    assert set(drawn) == {t.colour for t in TRACES}  # this kernel, TensorFlow, others, budget, driver, device total
    legend = [t.text for t in root.iter(SVG + "text")][-len(NAMES) :]
    assert legend == [name for _, name in NAMES]
    dashes = {p.get("stroke"): p.get("stroke-dasharray") for p in root.iter(SVG + "path") if p.get("fill") == "none"}
    assert dashes[COLOUR["framework"]] == "2 3" and dashes[COLOUR["budget"]] == "6 4" and dashes[COLOUR["own"]] is None
    [area] = [p for p in root.iter(SVG + "path") if p.get("fill") == COLOUR["own"]]  # this kernel's area to zero
    assert area.get("fill-opacity") == "0.2"
    assert root.get("aria-label") == "GPU memory over time (GiB): " + ", ".join(n for _, n in NAMES)


def test_an_hours_chart_keeps_its_one_second_peak_at_a_point_per_pixel_column_in_a_few_kb() -> None:
    svg = still.svg(hour(), window_s=3600)
    root = parsed(svg)
    own = points(lines(root)[COLOUR["own"]])
    plot_width = still.WIDTH - still.LEFT - still.RIGHT
    assert 2 <= len(own) <= plot_width
    flat, spike = max(y for _, y in own), min(y for _, y in own)  # pixels grow downwards
    bottom, top_px = still.HEIGHT - still.BOTTOM, still.TOP
    scale = 4 * GiB * 1.08  # up to the budget, with headroom (history.y_top)
    assert (bottom - spike) / (bottom - top_px) == pytest.approx(3.5 * GiB / scale, abs=0.01)
    assert (bottom - flat) / (bottom - top_px) == pytest.approx(2 * GiB / scale, abs=0.01)
    assert len(points(lines(root)[COLOUR["budget"]])) == 2  # a flat line is its two ends
    busy = [sample(T0 + i, int((2 + math.sin(i / 7) + (i % 600) / 600) * GiB), used=5 * GiB) for i in range(3600)]
    assert svg is not None and len(svg) < len(str(still.svg(busy, window_s=3600))) < 30_000  # every column moves
    assert COLOUR["total"] not in lines(root)  # 8 GiB, above the scale: a note instead
    assert "device total 8.0 GiB ↑" in [t.text for t in root.iter(SVG + "text")]


def test_the_time_axis_has_a_few_round_times_in_the_kernels_clock_and_the_y_axis_its_unit() -> None:
    texts = [t.text or "" for t in parsed(still.svg(hour(), window_s=3600)).iter(SVG + "text")]
    clocks = [t for t in texts if re.fullmatch(r"\d\d:\d\d", t)]
    assert 3 <= len(clocks) <= 7
    expected = {datetime.fromtimestamp(T0 + s).strftime("%H:%M") for s in range(0, 3600, 60)}
    assert set(clocks) <= expected and all(c.endswith("0") for c in clocks)  # every 10 min or more, round
    assert "GiB" in texts and "0" in texts
    small = [t.text or "" for t in parsed(still.svg([sample(T0 + i, 300 * MiB, budget=None) for i in range(30)]))
             .iter(SVG + "text")]  # fmt: skip
    assert "MiB" in small and any(re.fullmatch(r"\d\d:\d\d:\d\d", t) for t in small)  # two minutes: to the second


def test_na_is_a_gap_in_the_line_and_each_over_budget_episode_a_mark_with_its_reason() -> None:
    owns = [3, 4.1, 4.2, None, 3.9, 3, 5, 5]
    history = [sample(T0 + i, None if own is None else int(own * GiB)) for i, own in enumerate(owns)]
    root = parsed(still.svg(history))
    assert lines(root)[COLOUR["own"]].count("M") == 2  # two stretches around the N/A second
    marks = [p for p in root.iter(SVG + "path") if p.get("fill") == COLOUR["budget"]]
    assert len(marks) == 2
    clock = datetime.fromtimestamp(T0 + 1).strftime("%H:%M:%S")
    assert marks[0].findtext(SVG + "title") == f"Over budget from {clock}: CUDA context outside the limit"


def test_host_text_in_the_chart_is_escaped_and_stays_as_written() -> None:
    history = [sample(T0 + i, int((4 + i) * GiB), over_reason='<script>alert(1)</script>"') for i in range(5)]
    history[4] = {
        **history[4],
        "framework": "<b>Torch</b>",
        "cells": [{"count": 3, "line": "x = '<img src=x onerror=alert(1)>'", "start_t": T0, "end_t": None,
                   "error": False}],
    }  # fmt: skip
    svg = str(still.svg(history))
    assert "<script" not in svg and "<img" not in svg and "<b>" not in svg
    root = parsed(svg)
    titles = [t.text for t in root.iter(SVG + "title")]
    assert "[3] x = '<img src=x onerror=alert(1)>'" in titles
    assert any(t and t.endswith(': <script>alert(1)</script>"') for t in titles)
    assert "<b>Torch</b> in use" in [t.text for t in root.iter(SVG + "text")]


@pytest.mark.parametrize("samples", [[], [sample(T0, GiB)], [{**S1, "problem": "The NVIDIA driver is not loaded."}]])
def test_with_nothing_to_draw_there_is_no_still_chart(samples: list[Any]) -> None:
    assert still.svg(samples) is None  # the still HTML's header says why (the view's headline, problem or note)


def test_the_plotly_output_is_lean_short_times_no_template_and_no_plotly_js() -> None:
    fig = figure.figure(hour(), window_s=3600, subtitle="2.0 of 4.0 GiB budget · stopped at 16:00")
    data = figure.bundle(fig)["application/vnd.plotly.v1+json"]
    assert isinstance(data, dict) and "template" not in data["layout"]
    own = data["data"][0]
    assert own["name"] == "this kernel" and len(own["x"]) <= figure.POINTS
    # The kernel's clock, to the second; a 10 s bucket's point at its last sample (history.decimate).
    assert own["x"][0] == datetime.fromtimestamp(T0 + 9).strftime("%Y-%m-%d %H:%M:%S")
    assert max(own["y"]) == 3.5 and all(len(repr(y)) <= 6 for y in own["y"])  # a ten-thousandth of the scale
    assert data["layout"]["xaxis"]["range"][1] == datetime.fromtimestamp(T0 + 3599).strftime("%Y-%m-%d %H:%M:%S")
    text = json.dumps(data)
    assert len(text) < 60_000 and "<script" not in text and "plotly.js" not in text.lower()
    assert not any(isinstance(y, float) and math.isnan(y) for trace in data["data"] for y in trace.get("y", ()))


def test_a_japanese_legend_leaves_each_name_room_for_its_wide_characters(language: None) -> None:
    i18n.use_language("ja-JP")
    history = [
        sample(T0 + i, 2 * GiB + i * MiB, budget=10 * GiB, used=3 * GiB, driver_limit=LIMIT) for i in range(60)
    ]  # all six lines
    svg = still.svg(history)
    assert svg is not None
    items = [
        (int(swatch), int(x), int(y), name)
        for swatch, x, y, name in re.findall(
            r'<path d="M(\d+),\d+h22"[^>]*/><text x="(\d+)" y="(\d+)">([^<]*)</text>', svg
        )
    ]
    assert items[0][3] == "このカーネル" and len(items) == len(NAMES)

    # What 11 px text takes, judged apart from the code's own rule: a wide (East Asian) glyph about its font size,
    # a Latin letter or space at most 0.6 of it.
    def drawn_px(name: str) -> float:
        return sum(11 if unicodedata.east_asian_width(c) in "WF" else 6.6 for c in name)

    for (_, x, y, name), (swatch, _, next_y, _) in itertools.pairwise(items):
        assert y != next_y or x + drawn_px(name) + 8 <= swatch, f"{name!r} runs into the next item"
    for _, x, _, name in items:
        assert x + drawn_px(name) <= still.WIDTH, f"{name!r} runs off the picture"
    root = parsed(svg)
    assert float(root.get("viewBox", "").split()[3]) >= items[-1][2] + 4  # the last row inside the picture
    assert root.get("aria-label") == "GPU メモリの推移 (GiB): " + "、".join(name for _, _, _, name in items)


def test_a_driver_limit_is_a_line_at_its_value_in_the_still_chart_and_none_without_one() -> None:
    root = parsed(still.svg([sample(T0 + i, 2 * GiB, budget=None, driver_limit=LIMIT) for i in range(60)]))
    bottom, top_px = still.HEIGHT - still.BOTTOM, still.TOP
    limit = points(lines(root)[COLOUR["driverLimit"]])
    assert len(limit) == 2 and limit[0][1] == limit[1][1]  # a flat line, its two ends
    assert (bottom - limit[0][1]) / (bottom - top_px) == pytest.approx(1 / 1.08, abs=0.01)  # it sets the scale
    assert "driver limit" in [t.text for t in root.iter(SVG + "text")]
    free = parsed(still.svg([sample(T0 + i, 2 * GiB, budget=None) for i in range(60)]))
    assert COLOUR["driverLimit"] not in lines(free) and "driver limit" not in [t.text for t in free.iter(SVG + "text")]
