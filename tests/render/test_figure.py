"""The kernel's history as a plotly figure (``jupyter_gpumem.figure()``, the picture a stopped inline view
leaves): the live chart's traces, names and order (tests/fixtures/chart/traces.json, which the TypeScript tests
check against the live chart too), its scales and marks, peaks kept; and the history's series themselves."""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any

import plotly.graph_objects as go
import pytest
from conftest import FIXTURES

from jupyter_gpumem.render.figure import bundle, figure
from jupyter_gpumem.render.history import History, decimate, y_top
from jupyter_gpumem.units import GiB, MiB, parse_duration

TRACES = json.loads((FIXTURES / "chart" / "traces.json").read_text())
S1 = dict(json.loads((FIXTURES / "protocol" / "sample.json").read_text())["sample"])
LOST = dict(json.loads((FIXTURES / "protocol" / "sample_lost_gpu.json").read_text())["sample"])
T0 = 1_763_740_800.0
# The hard limit the NVIDIA driver enforces on the kernel's cgroup, as the kernel sends it (test_kernel_shapes.py).
LIMIT = {"hard_bytes": 6 * GiB, "soft_bytes": None, "used_bytes": 1536 * MiB, "cgroup": "/hub/a"}


def sample(t: float, own: int | None, budget: int | None = 4 * GiB, used: int | None = 6 * GiB, **gpu: Any) -> Any:
    """S1's GPU 1 at time ``t``: this kernel holding ``own``, TensorFlow's allocator a little less."""
    fields = {
        **S1["gpus"][1],
        "own_bytes": own,
        "budget_bytes": budget,
        "used_bytes": used,
        "framework_bytes": None if own is None else own - 256 * MiB,
        "over_reason": "CUDA context outside the limit",
        "processes": [],
        **gpu,
    }
    return {**S1, "t": t, "framework": "TensorFlow", "gpus": [fields]}


def names(fig: go.Figure) -> list[str]:
    return [trace.name for trace in fig.data if trace.showlegend is not False]


def test_the_traces_are_the_live_charts_in_its_order_and_words() -> None:
    history = [
        sample(T0 + i, 2 * GiB + i * MiB, budget=10 * GiB, used=3 * GiB, driver_limit=LIMIT) for i in range(60)
    ]  # the driver's 6 GiB below the device's 8: it binds
    fig = figure(history)
    assert names(fig) == [name for _, name in TRACES["traces"]]
    own = fig.data[0]
    assert own.line.color == "#1976d2" and own.fill == "tozeroy"
    dashes = ["solid", "dot", "solid", "dash", "solid", "solid"]  # chart.json's
    assert [trace.line.dash for trace in fig.data] == dashes
    assert fig.layout.hovermode == "x unified" and fig.layout.xaxis.hoverformat == "%H:%M:%S"


def test_an_hours_history_keeps_its_peaks_at_one_point_per_column_and_the_total_above_is_a_note() -> None:
    history = [sample(T0 + i, 2 * GiB, used=30 * GiB) for i in range(3600)]
    history[1234] = sample(T0 + 1234, int(3.5 * GiB), used=30 * GiB)  # a one-second spike
    fig = figure(history, window_s=3600)
    own = fig.data[0]
    assert len(own.x) <= 600 and max(own.y) == pytest.approx(3.5)  # in GiB, the spike kept
    assert "device total" not in names(fig)  # 8 GiB above a scale that ends at the budget's 4.3 GiB
    assert [a.text for a in fig.layout.annotations] == ["device total 8.0 GiB ↑"]
    assert fig.layout.yaxis.range == pytest.approx((0, 4 * 1.08)) and fig.layout.yaxis.title.text == "GiB"
    start, end = fig.layout.xaxis.range
    assert (start, end) == (datetime.fromtimestamp(T0), datetime.fromtimestamp(T0 + 3599))


def test_a_short_history_spans_two_minutes_and_a_window_cuts_a_long_one() -> None:
    short = figure([sample(T0 + i, GiB) for i in range(20)])
    assert short.layout.xaxis.range == (datetime.fromtimestamp(T0), datetime.fromtimestamp(T0 + 120))
    long = figure([sample(T0 + i, GiB) for i in range(600)], window_s=300)
    assert long.layout.xaxis.range == (datetime.fromtimestamp(T0 + 299), datetime.fromtimestamp(T0 + 599))
    assert min(long.data[0].x) >= datetime.fromtimestamp(T0 + 299)


def test_each_over_budget_episode_is_one_mark_with_its_reason_on_hover() -> None:
    owns = [3, 4.1, 4.2, None, 3.9, 3, 5, 5]
    history = [sample(T0 + i, None if own is None else int(own * GiB)) for i, own in enumerate(owns)]
    fig = figure(history)
    [marks] = [trace for trace in fig.data if trace.mode == "markers"]
    assert [x.timestamp() for x in marks.x] == [T0 + 1, T0 + 6]
    assert marks.y == pytest.approx((4.1, 5.0))
    clock = datetime.fromtimestamp(T0 + 1).strftime("%H:%M:%S")
    assert marks.hovertext[0] == f"Over budget from {clock}: CUDA context outside the limit"
    assert marks.showlegend is False
    assert fig.data[0].y[3] is None  # N/A is a gap, never 0


def test_without_a_budget_there_is_no_budget_trace_and_the_scale_follows_this_kernel() -> None:
    fig = figure([sample(T0 + i, 300 * MiB, budget=None, used=2 * GiB) for i in range(10)])
    assert "budget" not in names(fig)
    assert fig.layout.yaxis.title.text == "MiB" and fig.layout.yaxis.range[1] == pytest.approx(324)


@pytest.mark.parametrize(
    ("samples", "gpu", "said"),
    [
        ([], None, "No GPU memory recorded yet"),
        ([{**S1, "problem": "The NVIDIA driver is not loaded."}], None, "The NVIDIA driver is not loaded."),
        ([{**S1, "gpus": []}], None, "The NVIDIA driver is loaded but reports no GPUs."),
        ([sample(T0, GiB)], None, "Collecting…"),
        ([sample(T0, GiB), sample(T0 + 1, GiB)], 7, "No GPU 7 here: the GPUs are 1 (or their uuids)."),
        ([LOST, {**LOST, "t": LOST["t"] + 1}], 1, "This GPU is lost: no figures until it is reset."),
    ],
)
def test_with_nothing_to_draw_the_figure_says_why(samples: list[Any], gpu: int | None, said: str) -> None:
    fig = figure(samples, gpu)
    assert not fig.data
    [note] = fig.layout.annotations
    assert note.text.startswith(said)


def test_a_gpu_is_chosen_by_index_or_uuid_and_host_strings_stay_as_written() -> None:
    history = [
        sample(T0 + i, int((4 + i) * GiB), name="A10 \u202e<b>gnp", over_reason="<a href=x>why</a>") for i in range(3)
    ]
    uuid = S1["gpus"][1]["uuid"]
    assert figure(history, 1).layout.title.text == figure(history, uuid).layout.title.text
    assert figure(history, 1).layout.title.text == "GPU 1 · A10 \\u202e&lt;b&gt;gnp — this kernel's GPU memory"
    [marks] = [trace for trace in figure(history).data if trace.mode == "markers"]
    assert marks.hovertext[0].endswith(": &lt;a href=x&gt;why&lt;/a&gt;")


def test_a_subtitle_goes_under_the_title_as_written() -> None:
    fig = figure([sample(T0 + i, GiB) for i in range(3)], subtitle="1.0 of 4.0 GiB budget <25%> · stopped at 16:00")
    assert fig.layout.title.text.endswith("<br><sup>1.0 of 4.0 GiB budget &lt;25%&gt; · stopped at 16:00</sup>")


def test_the_output_bundle_is_plotlys_mimetype_with_a_quiet_mode_bar() -> None:
    data = bundle(figure([sample(T0 + i, GiB) for i in range(3)]))["application/vnd.plotly.v1+json"]
    assert {"data", "layout", "config"} <= set(data) and data["config"]["displaylogo"] is False
    assert len(json.dumps(data, default=str)) < 1_500_000


def test_one_over_budget_mark_per_episode_and_na_is_a_gap_not_zero() -> None:
    history = History(3600)
    owns = [3 * GiB, 4 * GiB + MiB, 4 * GiB + 2 * MiB, None, 3.9 * GiB, 3 * GiB, 5 * GiB]
    for i, own in enumerate(owns):
        history.push(sample(1000.0 + i, None if own is None else int(own)))
    series = history.series(S1["gpus"][1]["uuid"])
    assert series is not None
    # Over at 1001, N/A and 97% do not end it; below 95% (1005) does; over again at 1006.
    assert [m.t for m in series.marks] == [1001.0, 1006.0]
    assert math.isnan(series.values["own"][3]) and series.values["others"][3] == 6 * GiB


def test_decimation_keeps_every_peak_and_the_scale_follows_this_kernel_not_the_device() -> None:
    t = [float(i) for i in range(3600)]
    own = [2.0 * GiB] * 3600
    own[1234] = 3.5 * GiB  # a one-second spike
    own[2000:2010] = [math.nan] * 10  # N/A for ten seconds
    dt, values = decimate(t, {"own": own}, 10.0)
    assert len(dt) == 360 and max(v for v in values["own"] if not math.isnan(v)) == 3.5 * GiB
    assert math.isnan(values["own"][200])  # an all-N/A bucket stays a gap
    nothing = [math.nan] * 3600
    assert y_top({"own": own, "framework": nothing, "budget": [4.0 * GiB] * 3600, "others": own}) == 4 * GiB * 1.08


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("15min", 900.0), ("90s", 90.0), ("1h", 3600.0), ("2 h", 7200.0), ("1d", 86400.0), (30, 30.0), ("45", 45.0)],
)
def test_a_window_is_read_as_people_write_it(text: str | int, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "-5min", "0", "15 parsecs", "nan", "inf", True, -3])
def test_a_window_that_is_no_time_span_is_refused(text: Any) -> None:
    assert parse_duration(text) is None


def test_each_cell_in_view_is_a_band_whose_hover_names_it() -> None:
    history = [sample(T0 + i, GiB) for i in range(60)]
    history[20] = {
        **history[20],
        "cells": [{"count": None, "line": "train(<b>)", "start_t": T0 + 10, "end_t": None, "error": False}],
    }
    history[30] = {
        **history[30],
        "cells": [{"count": 7, "line": "train(<b>)", "start_t": T0 + 10, "end_t": T0 + 30, "error": True}],
    }
    history[50] = {
        **history[50],
        "cells": [{"count": None, "line": "more()", "start_t": T0 + 45, "end_t": None, "error": False}],
    }
    fig = figure(history)
    cells = fig.data[0]  # drawn first: its area under the lines
    assert (cells.name, cells.fill, cells.showlegend, fig.layout.shapes) == ("cells", "tozeroy", False, ())
    gaps = [i for i, x in enumerate(cells.x) if x is None]
    bands = [(cells.x[a + 1], cells.x[b - 1]) for a, b in zip([-1, *gaps], gaps, strict=False)]
    times = [datetime.fromtimestamp(T0 + s) for s in (10, 30, 45, 59)]
    assert bands == [(times[0], times[1]), (times[2], times[3])]  # ended; running up to the last sample
    # The hover names the cell at every sample it spans, as the live chart's does.
    first = [x for x, h in zip(cells.x, cells.hovertext, strict=True) if h == "[7] train(&lt;b&gt;) (error)"]
    assert first == [datetime.fromtimestamp(T0 + s) for s in range(10, 31)]
    assert [h for h in cells.hovertext if h].count("[*] more()") == 15
    assert "cells" not in names(fig)


def test_a_stalled_drivers_samples_are_a_gap_in_the_lines_not_a_flat_stretch() -> None:
    history = [sample(T0 + i, 2 * GiB) for i in range(10)]
    history += [{**sample(T0 + i, 2 * GiB), "stalled_since": T0 + 9} for i in range(10, 20)]  # its last figures
    history += [sample(T0 + i, 3 * GiB) for i in range(20, 30)]  # it answers again
    series = History(100)
    for s in history:
        series.push(s)
    values = series.series(S1["gpus"][1]["uuid"])
    assert values is not None
    own, total = values.values["own"], values.values["total"]
    assert all(math.isnan(v) for v in own[10:20]) and not any(math.isnan(v) for v in own[:10] + own[20:])
    assert all(math.isnan(v) for v in values.values["framework"][10:20] + values.values["others"][10:20])
    assert not any(math.isnan(v) for v in total)  # the device's size does not stall
    fig = figure(history)
    assert fig.data[0].y[-1] == pytest.approx(3.0) and any(y is None or math.isnan(y) for y in fig.data[0].y)


def lines_of(fig: go.Figure) -> dict[str, Any]:
    return {trace.name: trace for trace in fig.data if trace.showlegend is not False}


def test_a_driver_limit_is_a_line_at_its_value_that_sets_the_scale_without_a_budget_and_none_without_one() -> None:
    limited = figure([sample(T0 + i, 2 * GiB, budget=None, driver_limit=LIMIT) for i in range(60)])
    line = lines_of(limited)["driver limit"]
    assert set(line.y) == {6.0} and (line.line.color, line.line.dash, line.line.width) == ("#f57c00", "solid", 2)
    assert limited.layout.yaxis.range[1] == pytest.approx(6 * 1.08)  # the limit stands in for a budget (chart/scale.ts)
    free = figure([sample(T0 + i, 2 * GiB, budget=None) for i in range(60)])
    assert "driver limit" not in lines_of(free) and free.layout.yaxis.range[1] == pytest.approx(2 * 1.08)


def test_a_driver_limit_is_drawn_only_where_it_binds_and_reaches_under_the_scale() -> None:
    # Set partway: a gap before it, as the live chart's NaN.
    later = [sample(T0 + i, 2 * GiB, budget=None, driver_limit=LIMIT if i >= 30 else None) for i in range(60)]
    y = lines_of(figure(later))["driver limit"].y
    assert y[:30] == (None,) * 30 and set(y[30:]) == {6.0}
    # At or above the device's 8 GiB it limits nothing: no line, and the scale follows this kernel.
    loose = figure(
        [sample(T0 + i, 2 * GiB, budget=None, driver_limit={**LIMIT, "hard_bytes": 8 * GiB}) for i in range(60)]
    )
    assert "driver limit" not in lines_of(loose) and loose.layout.yaxis.range[1] == pytest.approx(2 * 1.08)
    # Above a 4 GiB budget's scale: the budget's line says what binds this kernel, the limit stays off the chart.
    above = figure([sample(T0 + i, 2 * GiB, driver_limit=LIMIT) for i in range(60)])
    assert "driver limit" not in lines_of(above) and above.layout.yaxis.range[1] == pytest.approx(4 * 1.08)
