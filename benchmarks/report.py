"""The report (issue 47) at 1,000 users over 30 days: time to the first byte of the page, the JSON and the CSV, and
the service's memory, against baselines in the same run: the figures' PromQL sent straight to the same Prometheus,
both the 5-minute series' alone (the report before the hourly rules) and the report's own (whole hours from the
hourly series, the ends from the 5-minute ones: the least the report costs). Then Prometheus hung: time to the
sentence.

    python benchmarks/report.py --users 1000

The history is tests/hub/report_history.py's (sessions, restarts, gaps, groups), its report-rules.yml series
(5-minute and hourly) backfilled into Debian's prometheus with ``promtool tsdb create-blocks-from openmetrics``; the
service is
``python -m jupyter_gpumem.hub`` reading that Prometheus, in front of the simulated hub (tests/hub/fleet.py).
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "hub")]

import report_history as history  # noqa: E402
from fleet import ADMIN_TOKEN  # noqa: E402
from hub_fixtures import running_fleet  # noqa: E402
from test_report import hung  # noqa: E402

from jupyter_gpumem.hub import report  # noqa: E402

SLOTS = 30 * 288 - 6


def first_byte(url: str, token: str | None = ADMIN_TOKEN) -> tuple[float, float, int, int]:
    """Seconds to the response's first byte (its status line and headers), to its last, its status and size."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
    began = time.monotonic()
    connection.request("GET", parts.path + ("?" + parts.query if parts.query else ""),
                       headers={"Authorization": f"token {token}"} if token else {})  # fmt: skip
    answer = connection.getresponse()
    first = time.monotonic() - began
    body = answer.read()
    connection.close()
    return first, time.monotonic() - began, answer.status, len(body)


def baseline(prometheus: str, days: int) -> float:
    """The 11 queries of the 5-minute series alone straight to Prometheus, one after another: seconds."""
    end = time.time()
    window = f"{days * 86400 * 1000 - 1}ms"
    exprs = [f"{how}_over_time({level}:{series}[{window}])" for level in ("user", "group")
             for series, how, _ in report.FIGURES.values()]  # fmt: skip
    exprs.append(f"max by (user, group) (max_over_time({report.MEMBERSHIP}[{window}]))")
    began = time.monotonic()
    for expr in exprs:
        first_byte(f"{prometheus}/api/v1/query?" + urlencode({"query": expr, "time": end}), None)
    return time.monotonic() - began


def direct(prometheus: str, days: int) -> float:
    """The report's own queries straight to Prometheus, one after another (the service sends the 11 figures' at
    once): the clock, then each figure's hours and ends. Seconds."""
    began = time.monotonic()
    end_ms = round(time.time() * 1000)
    start_ms = end_ms - days * 86400 * 1000
    last = end_ms + report.HOUR_LAG_S * 1000
    query = {"query": f"{report.CLOCK}[{last - start_ms}ms]", "time": f"{last / 1000:.3f}"}
    connection = http.client.HTTPConnection(urlsplit(prometheus).hostname, urlsplit(prometheus).port, timeout=120)
    connection.request("GET", "/api/v1/query?" + urlencode(query))
    answer = json.loads(connection.getresponse().read())
    connection.close()
    clock = [round(float(t) * 1000) for r in answer["data"]["result"] for t, _ in r["values"]]
    plan = report.pieces(start_ms, end_ms, clock)
    exprs = [report.expression(how, level, series, level, plan) for level in ("user", "group")
             for series, how, _ in report.FIGURES.values()]  # fmt: skip
    exprs.append(report.expression("max", "", report.MEMBERSHIP, "user, group", plan))
    for expr in exprs:
        first_byte(f"{prometheus}/api/v1/query?" + urlencode({"query": expr, "time": end_ms / 1000}), None)
    return time.monotonic() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--block", default="24h", help="the backfilled blocks' longest (2h: as promtool leaves them)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gpumem-report-") as directory:
        base = Path(directory)
        began = time.monotonic()
        users = history.make(args.users, SLOTS)
        start = int(time.time()) // 300 * 300 - 300 - SLOTS * 300
        tsdb = history.backfill(users, start, SLOTS, base, args.block)
        blocks = sum(1 for b in tsdb.iterdir() if (b / "meta.json").exists())
        print(
            f"history of {args.users} users, 30 days, backfilled in {time.monotonic() - began:.0f} s "
            f"({blocks} blocks of at most {args.block})",
            flush=True,
        )
        with history.prometheus(tsdb, base / "prometheus.log") as url:
            env = {"JUPYTER_GPUMEM_HUB_PROMETHEUS_URL": url, "JUPYTER_GPUMEM_HUB_INTERVAL_S": "5"}
            with running_fleet(base / "fleet", 4, "", env) as fleet:
                service = psutil.Process(fleet.process.pid)
                rss_before = service.memory_info().rss
                rows: dict[str, list[tuple[float, float, int, int]]] = {}
                # The first request, while the service makes its 30 days' report for the first time.
                rows["report?days=30, the service just started"] = [first_byte(fleet.service + "report?days=30")]
                base_s: list[float] = []
                direct_s: list[float] = []
                for i in range(args.repeat):
                    base_s.append(baseline(url, 30))
                    direct_s.append(direct(url, 30))
                    day = time.strftime("%Y-%m-%d", time.gmtime(time.time() - (i + 2) * 86400))
                    month = time.strftime("%Y-%m-%d", time.gmtime(time.time() - (i + 25) * 86400))
                    for path in ("report?days=30", "report.csv?days=30", "report.json?days=30",
                                 "report?days=30&group=physics", f"report.csv?from={month}&to={day}"):  # fmt: skip
                        key = path if "from" not in path else "report.csv?from=...&to=... (23 days, never kept)"
                        rows.setdefault(key, []).append(first_byte(fleet.service + path))
                rss_after = service.memory_info().rss
        print(f"\nbaseline, 5-minute series alone (11 queries straight to Prometheus, in turn): median "
              f"{statistics.median(base_s):.2f} s")  # fmt: skip
        print(f"the report's queries (clock, 11 queries, hours and ends) straight to Prometheus, in turn: median "
              f"{statistics.median(direct_s):.2f} s")  # fmt: skip
        print("| request | first byte (median, max) | whole answer | size |\n|---|---|---|---|")
        for path, found in rows.items():
            firsts = [f[0] for f in found]
            assert all(f[2] == 200 for f in found), found
            print(f"| {path} | {statistics.median(firsts):.2f} s, {max(firsts):.2f} s "
                  f"| {statistics.median(f[1] for f in found):.2f} s | {found[0][3] / 1e3:.0f} KB |")  # fmt: skip
        print(f"\nservice RSS: {rss_before / 2**20:.0f} MiB before, {rss_after / 2**20:.0f} MiB after")
        with hung() as silent:
            env = {"JUPYTER_GPUMEM_HUB_PROMETHEUS_URL": silent, "JUPYTER_GPUMEM_HUB_REPORT_DEADLINE_S": "10"}
            with running_fleet(base / "hung", 2, "", env) as fleet:
                first, _, status, _ = first_byte(fleet.service + "report.csv?days=30")
        print(f"Prometheus hung: {status} and the sentence after {first:.1f} s (deadline 10 s)")


if __name__ == "__main__":
    main()
