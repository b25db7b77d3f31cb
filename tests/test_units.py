"""The one place figures become text: sizes as nvidia-smi prints them or as the sidebar shows them, and
idle times as people say them, wherever they are shown."""

from __future__ import annotations

from jupyter_gpumem.hub.rows import Row
from jupyter_gpumem.hub.summary import texts
from jupyter_gpumem.units import GiB, MiB, format_duration, format_gib_or_mib, format_mib


def test_sizes_are_nvidia_smis_mib_or_the_sidebars_gib_or_mib_and_na_is_not_zero():
    assert [format_mib(v) for v in (None, 0, 380 * MiB, 8192 * MiB)] == ["N/A", "0 MiB", "380 MiB", "8192 MiB"]
    figures = [format_gib_or_mib(v) for v in (None, 0, 504 * MiB, GiB - 1, 8192 * MiB)]
    assert figures == ["N/A", "0 MiB", "504 MiB", "1024 MiB", "8.0 GiB"]  # format.ts formatBytes, the same


def test_durations_read_as_people_say_them() -> None:
    assert [format_duration(s) for s in (2.4, 59, 60, 30 * 60, 119 * 60, 120 * 60, 125 * 60)] == [
        "2 s", "59 s", "1 min", "30 min", "119 min", "2 h", "2 h 5 min",
    ]  # fmt: skip


def test_the_hubs_page_says_an_idle_time_as_the_cullers_notice_says_it() -> None:
    row = Row("alice", "", "k1", "reporting", 0, "GPU-1", GiB, None, False, None, None, None, False, "idle", 1800.0)
    assert texts(row)["idle_text"] == "30 min"  # the hub page shows the service's text (hub/page.html)
