"""The report (issue 47): Debian's prometheus holds a made-up month of 200 users' history (tests/hub/report_history.py:
restarts, gaps, users in several groups, in none, servers without kernels, releases without the busy state),
backfilled with ``promtool tsdb create-blocks-from openmetrics``; the hub service, reading it, serves the report, and
every figure of its JSON, its page and its CSV must be the generator's own sums. Also: the service's /metrics says
each user's groups (what report-rules.yml's per-group series need); Prometheus down or hung is a sentence, in time.

The history holds report-rules.yml's series as the rules record them (a scrape every 5 minutes holds for its
5 minutes, so each 5-minute sample is its slot's figure; each hourly sample the sum, or the most, of its hour's): the
report reads the whole hours from the hourly series and the ends from the 5-minute ones, and must still give the
5-minute sums. The rules themselves run over the same generator's raw per-kernel series in
tests/hub/test_report_rules.py (a day of 8 users: a month of 200 through ``create-blocks-from rules`` takes minutes),
the figures here are the report's.
"""

from __future__ import annotations

import csv
import io
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import report_history as history
from fleet import ADMIN_TOKEN, groups_of
from hub_fixtures import running_fleet
from server_fixtures import free_port, http

from jupyter_gpumem.hub import report

USERS = 200
SLOTS = 30 * 288 - 6  # 30 days of 5-minute slots, less half an hour: the history lies inside "the last 30 days"
FIGURES = history.FIGURES
GiB = history.GiB


@dataclass
class Served:
    users: list[history.User]
    start: int  # slot 0's time
    service: str  # the service's prefix URL
    prometheus: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("report")
    users = history.make(USERS, SLOTS)
    with history.month(users, SLOTS, base) as (start, url):  # the first sample well inside the last 30 days
        env = {"JUPYTER_GPUMEM_HUB_PROMETHEUS_URL": url, "JUPYTER_GPUMEM_HUB_INTERVAL_S": "1"}
        with running_fleet(base / "fleet", 6, "", env) as fleet:
            yield Served(users, start, fleet.service, url)


def get(url: str, language: str | None = None) -> tuple[int, bytes]:
    if language is None:
        return http(url, ADMIN_TOKEN)
    import urllib.request

    request = urllib.request.Request(
        url, headers={"Authorization": f"token {ADMIN_TOKEN}", "Accept-Language": language}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def slots_in(served: Served, start: float, end: float) -> range:
    """The slots whose 5-minute sample (at the slot's end) the range (start, end] holds."""
    first = max(0, int((start - served.start) // 300))  # at(s) = served.start + (s + 1) * 300 > start
    last = int((end - served.start) // 300) - 1  # at(s) <= end
    return range(first, min(last, SLOTS - 1) + 1)


def close(found: float | None, expected: float | None, tolerance: float = 0.0) -> bool:
    if found is None or expected is None:
        return found is expected
    return abs(found - expected) <= tolerance + 1e-9 * max(1.0, abs(expected))


def check(lines: list[dict[str, Any]], truth: dict[str, history.Truth], members: str) -> None:
    """Every line's figures (numbers and words) are the truth's; N/A exactly where the truth has none."""
    assert sorted(line["name"] for line in lines) == sorted(truth)
    for line in lines:
        expected = truth[line["name"]]
        assert tuple(line[members]) == expected.members, line["name"]
        for name in FIGURES:
            found, want = line["figures"][name], expected.figures[name]
            assert close(found, want), (line["name"], name, found, want)
            text = line["texts"][name]
            if want is None:
                assert text == "N/A", (line["name"], name, text)
            elif name == "peak_bytes":
                assert text == report.figure_text(name, want), (line["name"], text, want)
            else:  # to a tenth, as the page shows it
                assert abs(float(text) - want) <= 0.05 + 1e-9, (line["name"], name, text, want)


def test_the_30_day_report_is_the_generators_sums_in_every_figure(served: Served) -> None:
    status, body = get(served.service + "report.json?days=30")
    assert status == 200, body[:500]
    found = json.loads(body)
    assert slots_in(served, found["range"]["start"], found["range"]["end"]) == range(SLOTS)
    users, groups = history.truth(served.users, range(SLOTS))
    assert len(users) >= 200 and sum(len(t.members) > 1 for t in users.values()) > 20  # several groups
    check(found["users"], users, "groups")
    check(found["groups"], groups, "members")
    # The history has every case of N/A: no kernel at all, no busy state, and 0 that is 0.
    figures = [line["figures"] for line in found["users"]]
    assert any(f["memory_gib_hours"] is None for f in figures)
    assert any(f["idle_gib_hours"] is None and f["memory_gib_hours"] is not None for f in figures)
    assert any(f["over_budget_hours"] == 0 for f in figures)
    assert found["known_groups"] == sorted(groups)


class Tables(HTMLParser):
    """The page's tables: per table, its header and each row's cells' text."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None:
            self.tables[-1][-1].append("".join(self.cell))
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def test_the_page_shows_every_figure_of_the_report(served: Served) -> None:
    status, body = get(served.service + "report?days=30")
    assert status == 200, body[:500]
    page = body.decode()
    parser = Tables()
    parser.feed(page)
    users_table, groups_table = parser.tables
    users, groups = history.truth(served.users, range(SLOTS))
    for table, truth, level in ((users_table, users, "user"), (groups_table, groups, "group")):
        header, *rows = table
        assert header[2:] == [
            report.Words("en")(report.GROUP_OVER_BUDGET if level == "group" and n == "over_budget_hours" else w)
            for n, w in report.FIGURE_WORDS.items()
        ]
        assert sorted(r[0] for r in rows) == sorted(truth)
        for name, members, *texts in rows:
            expected = truth[name]
            assert members == (", ".join(expected.members) if level == "user" else str(len(expected.members)))
            for figure, text in zip(FIGURES, texts, strict=True):
                want = expected.figures[figure]
                if want is None:
                    assert text == "N/A", (name, figure)
                elif figure == "peak_bytes":
                    assert text == report.figure_text(figure, want), (name, text)
                else:
                    assert abs(float(text) - want) <= 0.05 + 1e-9, (name, figure, text, want)
    # The chart's data: the top 10 holders, plotly.js from the service itself.
    assert 'import("./static/" + PLOTLY)' in page and "cdn" not in page.lower()
    module = report.plotly_module()
    assert module is not None and f'const PLOTLY = "{module}"' in page
    status, script = http(served.service + "static/" + module)
    assert status == 200 and len(script) > 500_000


def test_the_csv_has_one_row_per_user_with_the_generators_figures(served: Served) -> None:
    status, body = get(served.service + "report.csv?days=30")
    assert status == 200, body[:500]
    rows = list(csv.reader(io.StringIO(body.decode())))
    assert rows[0] == ["user", "groups", "memory_gib_hours", "idle_gib_hours", "peak_bytes", "over_budget_hours",
                       "gpu_hours"]  # fmt: skip
    users, _ = history.truth(served.users, range(SLOTS))
    assert sorted(r[0] for r in rows[1:]) == sorted(users)
    for name, groups, *figures in rows[1:]:
        expected = users[name]
        assert groups == ";".join(expected.members)
        for figure, text in zip(FIGURES, figures, strict=True):
            want = expected.figures[figure]
            if want is None:
                assert text == "N/A", (name, figure)
            elif figure == "peak_bytes":
                assert int(text) == want
            else:
                assert abs(float(text) - want) <= 0.00005 + 1e-9, (name, figure, text, want)


def test_a_week_of_one_group_is_that_groups_members_over_that_week(served: Served) -> None:
    status, body = get(served.service + "report.json?" + urlencode({"days": 7, "group": "physics"}))
    assert status == 200, body[:500]
    found = json.loads(body)
    slots = slots_in(served, found["range"]["start"], found["range"]["end"])
    assert len(slots) in (7 * 288 - 2, 7 * 288 - 1, 7 * 288), len(slots)  # the history ends 5 minutes ago
    users, groups = history.truth(served.users, slots)
    check(found["users"], {u: t for u, t in users.items() if "physics" in t.members}, "groups")
    check(found["groups"], {"physics": groups["physics"]}, "members")
    # The chart: the group's top holders of the week, each point the GiB they held over its step.
    chart = found["chart"]
    top = sorted(found["users"], key=lambda u: (-(u["figures"]["memory_gib_hours"] or 0), u["name"]))[: report.TOP]
    assert [s["name"] for s in chart["series"]] == [u["name"] for u in top if u["figures"]["memory_gib_hours"]]
    step_h = 1.0  # a week: points an hour apart
    assert len(chart["times"]) in (167, 168)
    for series, line in zip(chart["series"], top, strict=False):
        held = sum(v for v in series["gib"] if v is not None) * step_h
        most = (line["figures"]["peak_bytes"] or 0) / GiB
        # Less an hour at most at each end of the week (the points lie on the hour).
        assert abs(held - line["figures"]["memory_gib_hours"]) <= most * 2 * step_h + 1e-6, series["name"]


def test_two_dates_are_whole_utc_days(served: Served) -> None:
    last = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 86400))
    first = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 3 * 86400))
    status, body = get(served.service + "report.json?" + urlencode({"from": first, "to": last}))
    assert status == 200, body[:500]
    found = json.loads(body)
    assert found["range"]["end"] - found["range"]["start"] == 3 * 86400
    assert time.strftime("%Y-%m-%d", time.gmtime(found["range"]["start"])) == first
    users, _ = history.truth(served.users, slots_in(served, found["range"]["start"], found["range"]["end"]))
    check(found["users"], users, "groups")


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ({"days": "0"}, "0 is not a number of days from 1 to 400."),
        ({"days": "lots"}, "lots is not a number of days from 1 to 400."),
        ({"from": "2026-02-30"}, "2026-02-30 is not a date (YYYY-MM-DD)."),
        # Hostile forms: a digit Python's isdigit() takes but int() refuses, a date whose next day is none, a date
        # the browser's date input would drop: each a sentence, never a server error.
        ({"days": "\u00b2"}, "\u00b2 is not a number of days from 1 to 400."),
        ({"days": "9" * 5000}, f"{'9' * 40} is not a number of days from 1 to 400."),
        ({"from": "9999-12-31"}, "9999-12-31 is not a date (YYYY-MM-DD)."),
        ({"from": "2024-1-1"}, "2024-1-1 is not a date (YYYY-MM-DD)."),
        ({"from": "2026-05-02", "to": "2026-05-01"}, "The first date, 2026-05-02, is after the last one, 2026-05-01."),
    ],
)
def test_a_range_that_is_none_is_refused_with_a_sentence(served: Served, query: dict[str, str], words: str) -> None:
    for path in ("report.json", "report.csv", "report"):
        status, body = get(served.service + path + "?" + urlencode(query))
        assert status == 400 and words in body.decode(), (path, body[:300])


def test_the_report_page_is_in_the_browsers_language(served: Served) -> None:
    status, body = get(served.service + "report?days=1", "ja,en-US;q=0.9")
    assert status == 200
    assert '<html lang="ja-JP">' in body.decode()


def test_the_service_says_each_users_groups_on_its_metrics(served: Served) -> None:
    """Reading from Prometheus, the service's /metrics has the users' groups alone (the fleet's hub API says them)."""
    deadline = time.monotonic() + 30
    while True:
        status, body = http(served.service + "metrics", ADMIN_TOKEN)
        text = body.decode()
        if "jupyter_gpumem_hub_user_group_info{" in text or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert status == 200
    samples = sorted(line for line in text.splitlines() if line and not line.startswith("#"))
    expected = sorted(
        f'jupyter_gpumem_hub_user_group_info{{group="{g}",user="u{i:05d}"}} 1.0' for i in range(6) for g in groups_of(i)
    )
    assert samples == expected


@pytest.fixture
def hung_prometheus() -> Iterator[str]:
    with hung() as url:
        yield url


@contextmanager
def hung() -> Iterator[str]:
    """A port that accepts connections and never answers (also benchmarks/report.py's)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for s in accepted:
            s.close()
        listener.close()


def test_prometheus_down_or_hung_is_the_sentence_within_the_deadline(tmp_path: Path, hung_prometheus: str) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    for url, why in ((down, "it cannot be reached"), (hung_prometheus, "it did not answer within 2 s")):
        env = {"JUPYTER_GPUMEM_HUB_PROMETHEUS_URL": url, "JUPYTER_GPUMEM_HUB_REPORT_DEADLINE_S": "2",
               "JUPYTER_GPUMEM_HUB_DEADLINE_S": "1"}  # fmt: skip
        with running_fleet(tmp_path / why[:10].replace(" ", "-"), 2, "", env) as fleet:
            for path in ("report?days=30", "report.json?days=30", "report.csv?days=30"):
                began = time.monotonic()
                status, body = get(fleet.service + path)
                took = time.monotonic() - began
                assert status == 503, (path, body[:300])
                assert f"Prometheus at {url} cannot be read: {why}" in body.decode(), body[:300]
                assert "check that Prometheus runs" in body.decode()
                assert took < 2 * 2 + 1, took  # the figures' queries, then the chart's: each within the deadline
