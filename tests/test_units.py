"""The one place figures become text: sizes as nvidia-smi prints them or as the sidebar shows them, and
idle times as people say them, wherever they are shown."""

from __future__ import annotations

from jupyter_gpumem.hub.rows import Row
from jupyter_gpumem.hub.summary import texts
from jupyter_gpumem.units import (
    GiB,
    MiB,
    against_budget,
    budget_level,
    format_duration,
    format_gib_or_mib,
    format_mib,
    format_percent,
    format_tenth,
    format_total,
    parse_bytes,
    parse_duration,
)


def test_sizes_are_nvidia_smis_mib_or_the_sidebars_gib_or_mib_and_na_is_not_zero():
    assert [format_mib(v) for v in (None, 0, 380 * MiB, 8192 * MiB)] == ["N/A", "0 MiB", "380 MiB", "8192 MiB"]
    figures = [format_gib_or_mib(v) for v in (None, 0, 504 * MiB, GiB - 1, 8192 * MiB)]
    assert figures == ["N/A", "0 MiB", "504 MiB", "1024 MiB", "8.0 GiB"]  # format/number.ts formatBytes, the same


def test_a_figure_exactly_half_way_rounds_up_wherever_it_is_shown():
    # docs/numbers.md: 2.25 GiB read 2.2 in Python and 2.3 in the sidebar, 157 of 200 MiB 78% and 79%
    assert format_gib_or_mib(9 * GiB // 4) == "2.3 GiB"
    assert format_gib_or_mib(9 * GiB // 4 - 1) == "2.2 GiB"
    assert [format_mib(5 * MiB // 2), format_mib(5 * MiB // 2 - 1), format_gib_or_mib(5 * MiB // 2)] == [
        "3 MiB", "2 MiB", "3 MiB",
    ]  # fmt: skip
    assert format_percent(157 * MiB, 200 * MiB) == "79%"
    assert format_percent(157 * MiB - 1, 200 * MiB) == "78%"
    assert against_budget(9 * GiB // 4, 4 * GiB) == ("2.3", "4.0", "GiB")
    assert against_budget(157 * MiB, 200 * MiB) == ("157", "200", "MiB")
    assert format_total(89 * GiB // 4) == "22784 MiB (22.3 GiB)"
    assert [format_tenth(12.25), format_tenth(0.15), format_tenth(98.2)] == ["12.3", "0.1", "98.2"]


def test_a_petabyte_is_counted_to_the_byte():
    # 20 x bytes and 200 x bytes pass 2**53 here: the tenth and the percent are decided by one byte
    assert format_gib_or_mib(10**15) == "931322.6 GiB"
    assert format_gib_or_mib(2**50 + GiB // 4) == "1048576.3 GiB"
    assert format_gib_or_mib(2**50 + GiB // 4 - 1) == "1048576.2 GiB"
    assert format_percent(2**50 // 200 * 157, 2**50 // 200 * 200) == "79%"
    assert format_percent(2**50 // 200 * 157 - 1, 2**50 // 200 * 200) == "78%"


def test_the_colour_is_decided_on_the_bytes_not_on_the_rounded_words():
    budget = 1000 * MiB
    assert budget_level(budget * 9 // 10 - 1, budget) == "ok"  # reads 90%, under the warning threshold
    assert budget_level(budget * 9 // 10, budget) == "warn"
    assert budget_level(budget, budget) == "warn"  # 100%: at the budget, not over it
    assert budget_level(budget + 1, budget) == "error"  # also reads 100%: one byte over is over
    assert format_percent(budget + 1, budget) == "100%"
    assert budget_level(0, 0) == "error"  # a budget of nothing is over at once
    assert [budget_level(0, 1), budget_level(1, 1), budget_level(2, 1)] == ["ok", "warn", "error"]  # nor is 1 byte


def test_unknown_is_na_and_zero_and_one_byte_are_figures():
    assert [format_gib_or_mib(None), format_mib(None), format_percent(None, GiB), format_percent(GiB, 0)] == [
        "N/A", "N/A", "N/A", "N/A",
    ]  # fmt: skip
    assert [format_gib_or_mib(0), format_gib_or_mib(1), format_mib(1), format_percent(1, 200)] == [
        "0 MiB", "0 MiB", "0 MiB", "1%",
    ]  # fmt: skip


def test_durations_read_as_people_say_them() -> None:
    assert [format_duration(s) for s in (2.4, 59, 60, 30 * 60, 119 * 60, 120 * 60, 125 * 60)] == [
        "2 s", "59 s", "1 min", "30 min", "119 min", "2 h", "2 h 5 min",
    ]  # fmt: skip
    # half way goes up, and the unit follows the rounded figure: never "60 s" or "120 min"
    assert [format_duration(s) for s in (2.5, 59.5, 90, 119.5 * 60)] == ["3 s", "1 min", "2 min", "2 h"]


def test_sizes_and_spans_are_read_with_or_without_a_space_and_nothing_is_refused():
    assert [parse_bytes("1.5 GiB"), parse_bytes("512MiB"), parse_bytes("4 GB"), parse_bytes("6")] == [
        3 * GiB // 2, 512 * MiB, 4 * 10**9, None,
    ]  # fmt: skip
    assert [parse_duration(0.5), parse_duration("0.5s"), parse_duration("15 min"), parse_duration("2h")] == [
        0.5, 0.5, 900.0, 7200.0,
    ]  # fmt: skip
    assert [parse_duration(0), parse_duration("0s"), parse_duration(-5), parse_duration("1e999s")] == [None] * 4


def test_the_hubs_page_says_an_idle_time_as_the_cullers_notice_says_it() -> None:
    row = Row("alice", "", "k1", "reporting", 0, "GPU-1", GiB, None, False, None, None, None, False, "idle", 1800.0)
    assert texts(row)["idle_text"] == "30 min"  # the hub page shows the service's text (hub/page.html)
