"""The report with names a hostile user could choose (a JupyterHub user or group name is anything the hub accepts):
the page shows them as text (its tables, its group filter, its chart's legend and hover, which plotly reads as
HTML), the CSV as text a spreadsheet never runs, the JSON as JSON a browser parses; and the tables' first order is
the page's own (largest first, a 0 before N/A). Made from a report as report.py builds it, no Prometheus needed
(tests/hub/test_report.py reads a real one)."""

from __future__ import annotations

import csv
import io
import json
import re

from jupyter_gpumem.hub.report import Line, Range, Report, Words, as_json, chart_data, csv_text, html

LINK = '<a href="https://evil.example">root</a>'
SCRIPT = "<script>alert(1)</script>"
FORMULA = '=HYPERLINK("https://evil.example","open")'
GROUP = "<b>admins</b>"


def figures(memory: float | None) -> dict[str, float | None]:
    return {
        "memory_gib_hours": memory,
        "idle_gib_hours": None,
        "peak_bytes": None,
        "over_budget_hours": 0.0,
        "gpu_hours": None,
    }


def hostile_report() -> Report:
    users = [
        Line(LINK, (GROUP,), figures(None)),
        Line(SCRIPT, (GROUP,), figures(0.0)),
        Line(FORMULA, (), figures(12.5)),
        Line("ana", (GROUP,), figures(3.0)),
    ]
    groups = [Line(GROUP, tuple(u.name for u in users if u.members), figures(3.0))]
    return Report(
        range=Range(1_700_000_000.0, 1_700_086_400.0, 1),
        group=None,
        users=users,
        groups=groups,
        known_groups=[GROUP],
        chart_step_s=3600,
        chart_times=[1_700_003_600.0],
        chart=[(LINK, [1.0]), (SCRIPT, [None])],
    )


def test_hostile_names_are_text_in_the_page_its_filter_and_its_chart() -> None:
    report = hostile_report()
    page = html(report, report.range, None, "en", None).decode()
    assert SCRIPT not in page and LINK not in page and GROUP not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;b&gt;admins&lt;/b&gt;" in page
    # The chart's data, as the page's script hands it to plotly: names escaped, since plotly renders HTML in them.
    names = [s["name"] for s in chart_data(report, Words("en"))["series"]]
    assert names == ['&lt;a href="https://evil.example"&gt;root&lt;/a&gt;', "&lt;script&gt;alert(1)&lt;/script&gt;"]
    assert "</script><script>" not in page.replace(SCRIPT, "")  # no data closes the page's script


def test_a_name_a_spreadsheet_would_run_is_text_in_the_csv() -> None:
    rows = list(csv.reader(io.StringIO(csv_text(hostile_report()))))
    names = [row[0] for row in rows[1:]]
    assert "'" + FORMULA in names and FORMULA not in names
    assert all(not name.startswith(("=", "+", "-", "@")) for name in names)


def test_the_json_is_strict_and_keeps_the_names_as_they_are() -> None:
    found = as_json(hostile_report(), Words("en"))
    text = json.dumps(found, allow_nan=False)  # no NaN or Infinity: a browser's JSON.parse takes it
    assert {u["name"] for u in json.loads(text)["users"]} >= {LINK, SCRIPT, FORMULA}


def test_the_tables_open_largest_first_a_zero_before_na() -> None:
    page = html(hostile_report(), hostile_report().range, None, "en", None).decode()
    users_table = page.split('data-level="user"')[1].split("</table>")[0]
    order = re.findall(r'<tr><td data-v="[^"]*" title="([^"]*)"', users_table)
    assert order == [
        "=HYPERLINK(&quot;https://evil.example&quot;,&quot;open&quot;)",  # 12.5 GiB-hours
        "ana",  # 3.0
        "&lt;script&gt;alert(1)&lt;/script&gt;",  # 0.0: a figure, before N/A
        "&lt;a href=&quot;https://evil.example&quot;&gt;root&lt;/a&gt;",  # N/A
    ]
    # A group's members are a count, sorted as a number by the page.
    groups_table = page.split('data-level="group"')[1].split("</thead>")[0]
    assert re.search(r'<th data-key="members" data-n', groups_table)
