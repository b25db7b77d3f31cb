"""The report rules (jupyter_gpumem/hub/prometheus/report-rules.yml, issue 47): promtool checks them and runs unit
tests written here (input series, the figures they must give), and Debian's prometheus has them backfilled over
history that predates them with the command docs/hub.md gives (``promtool tsdb create-blocks-from rules``).

The unit tests' scene, minute by minute (a sample each minute stands for that minute; a series ends with its
staleness marker, as Prometheus writes one when a kernel is gone or a scrape fails):

- alice (group physics): kernel k1 holds 4 GiB on GPU-A from 5 to 65 min; idle, busy from 25, idle again from 45;
  over its budget from 15 to 35. Its own figure (exact) is the same memory and must not count twice.
- bob (physics and chemistry): k2 holds 2 GiB on GPU-A (busy), k3 1 GiB on GPU-B (idle), from 5 to 35; then his
  server restarts: no scrape from 35 to 40 (stale), and k4 holds 2 GiB on GPU-A (idle) from 40 to 65.
- carol (chemistry): k5 in a container, on GPU-B: the driver lists none of its processes, its own figure
  (estimated) says 1 GiB, from 5 to 65, busy.
- dave (no group): k6 holds 1 GiB on GPU-C from 5 to 65, idle.
- erin (chemistry): k7, idle, on GPU-C where the driver lists its process with 0 bytes: it holds no GPU.
- The hub's service is scraped twice (two jobs): alice's membership must not count twice.
"""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import time
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
import report_history as made_up
import yaml
from server_fixtures import http

import jupyter_gpumem.hub

SHIPPED = Path(jupyter_gpumem.hub.__file__).parent / "prometheus"
RULES = "report-rules.yml"
GiB = 2**30
MIN = 60  # seconds
SERVER = {"job": "jupyter-gpumem-file-sd", "instance": "hub.example.org:443", "server": ""}
NAMES = (
    "user:jupyter_gpumem_kernel_memory_used_bytes:avg5m",
    "user:jupyter_gpumem_kernel_idle_memory_used_bytes:avg5m",
    "user:jupyter_gpumem_kernel_memory_used_bytes:max5m",
    "user:jupyter_gpumem_kernel_over_budget:avg5m",
    "user:jupyter_gpumem_gpus_held:avg5m",
    "group:jupyter_gpumem_kernel_memory_used_bytes:avg5m",
    "group:jupyter_gpumem_kernel_idle_memory_used_bytes:avg5m",
    "group:jupyter_gpumem_kernel_memory_used_bytes:max5m",
    "group:jupyter_gpumem_kernel_over_budget:avg5m",
    "group:jupyter_gpumem_gpus_held:avg5m",
    "user_group:jupyter_gpumem_hub_user_group_info:max5m",
)
HOURLY = (
    "jupyter_gpumem_report_hour",
    *(f"{level}:jupyter_gpumem_{name}"
      for level in ("user", "group")
      for name in ("kernel_memory_used_bytes:sum1h", "kernel_idle_memory_used_bytes:sum1h", "kernel_over_budget:sum1h",
                   "gpus_held:sum1h", "kernel_memory_used_bytes:max1h")),
    "user_group:jupyter_gpumem_hub_user_group_info:max1h",
)  # fmt: skip


def promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("promtool")
    assert binary, "Debian's prometheus package provides promtool: apt-get install prometheus (.ci/setup does)"
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def timeline(*pieces: tuple[int, float | None], end: int) -> str:
    """promtool's values, a sample a minute: each piece (from minute, value) lasts until the next one; None is no
    sample. From ``end`` on, the staleness marker (a sample of ``"stale"``)."""
    words: list[str] = []
    starts = [start for start, _ in pieces]
    assert starts == sorted(starts), pieces
    for (start, value), until in zip(pieces, [*starts[1:], end], strict=True):
        n = until - start
        if n > 0:
            words.append(f"_x{n}" if value is None else f"{value:.17g}x{n - 1}")
    return " ".join([*words, "stale"])


def held(start: int, end: int, value: float) -> str:
    return timeline((0, None), (start, value), end=end)


def selector(name: str, **labels: str) -> str:
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def kernel(user: str, kernel_id: str, gpu: str | None = None, **more: str) -> dict[str, str]:
    labels = {**SERVER, "user": user, "kernel_id": kernel_id}
    if gpu is not None:
        labels |= {"gpu_uuid": f"GPU-{gpu}", "gpu_index": str("ABC".index(gpu))}
    return labels | more


def scene() -> list[dict[str, str]]:
    used, own = "jupyter_gpumem_kernel_memory_used_bytes", "jupyter_gpumem_kernel_own_memory_bytes"
    busy, over = "jupyter_gpumem_kernel_busy", "jupyter_gpumem_kernel_over_budget"
    series = [
        # alice
        (used, kernel("alice", "k1", "A"), held(5, 65, 4 * GiB)),
        (own, kernel("alice", "k1", "A", source="exact"), held(5, 65, 4 * GiB)),
        (busy, kernel("alice", "k1"), timeline((0, None), (5, 0), (25, 1), (45, 0), end=65)),
        (over, kernel("alice", "k1", "A"), timeline((0, None), (5, 0), (15, 1), (35, 0), end=65)),
        # bob, before and after his server's restart
        (used, kernel("bob", "k2", "A"), held(5, 35, 2 * GiB)),
        (busy, kernel("bob", "k2"), held(5, 35, 1)),
        (over, kernel("bob", "k2", "A"), held(5, 35, 0)),
        (used, kernel("bob", "k3", "B"), held(5, 35, GiB)),
        (busy, kernel("bob", "k3"), held(5, 35, 0)),
        (used, kernel("bob", "k4", "A"), held(40, 65, 2 * GiB)),
        (busy, kernel("bob", "k4"), held(40, 65, 0)),
        # carol, in a container: only the kernel's own figure
        (own, kernel("carol", "k5", "B", source="estimated"), held(5, 65, GiB)),
        (busy, kernel("carol", "k5"), held(5, 65, 1)),
        # dave, in no group
        (used, kernel("dave", "k6", "C"), held(5, 65, GiB)),
        (busy, kernel("dave", "k6"), held(5, 65, 0)),
        # erin: idle, 0 bytes
        (used, kernel("erin", "k7", "C"), held(5, 65, 0)),
        (busy, kernel("erin", "k7"), held(5, 65, 0)),
    ]
    hub = {"job": "jupyter-gpumem-hub", "instance": "hub.example.org:443"}
    members = [("alice", "physics"), ("bob", "physics"), ("bob", "chemistry"), ("carol", "chemistry"),
               ("erin", "chemistry"), ("dave", "")]  # fmt: skip
    for user, group in members:
        if group:
            labels = {**hub, "user": user, "group": group}
            series.append(("jupyter_gpumem_hub_user_group_info", labels, "1x70"))
    # A second job scraping the same service: the rules must count each membership once.
    series.append(("jupyter_gpumem_hub_user_group_info", {**hub, "job": "another", "user": "alice", "group": "physics"},
                   "1x70"))  # fmt: skip
    return [{"series": selector(name, **labels), "values": values} for name, labels, values in series]


# The report's figures (docs/hub.md), over the 70 minutes, each a query of the recorded series at 70 min.
REPORT = {
    "GiB-hours": "sum_over_time({}:jupyter_gpumem_kernel_memory_used_bytes:avg5m[70m]) / 12 / 2^30",
    "idle GiB-hours": "sum_over_time({}:jupyter_gpumem_kernel_idle_memory_used_bytes:avg5m[70m]) / 12 / 2^30",
    "peak GiB": "max_over_time({}:jupyter_gpumem_kernel_memory_used_bytes:max5m[70m]) / 2^30",
    "hours over budget": "sum_over_time({}:jupyter_gpumem_kernel_over_budget:avg5m[70m]) / 12",
    "GPU-hours": "sum_over_time({}:jupyter_gpumem_gpus_held:avg5m[70m]) / 12",
}
# What the scene above must give, worked out by hand from it (minutes / 60 = hours).
EXPECTED: dict[str, dict[str, dict[str, float]]] = {
    "user": {
        "GiB-hours": {
            "alice": 4 * 60 / 60,
            "bob": (3 * 30 + 2 * 25) / 60,
            "carol": 60 / 60,
            "dave": 60 / 60,
            "erin": 0,
        },
        # carol: always busy, 0 (not N/A: her server said so)
        "idle GiB-hours": {
            "alice": 4 * (20 + 20) / 60,
            "bob": (1 * 30 + 2 * 25) / 60,
            "carol": 0,
            "dave": 60 / 60,
            "erin": 0,
        },
        "peak GiB": {"alice": 4, "bob": 3, "carol": 1, "dave": 1, "erin": 0},
        "hours over budget": {"alice": 20 / 60, "bob": 0},
        # erin: 0 bytes on her GPU, 0 GPU-hours (not N/A)
        "GPU-hours": {"alice": 60 / 60, "bob": (2 * 30 + 1 * 25) / 60, "carol": 60 / 60, "dave": 60 / 60, "erin": 0},
    },
    "group": {
        "GiB-hours": {"physics": (240 + 140) / 60, "chemistry": (140 + 60) / 60},
        "idle GiB-hours": {"physics": (160 + 80) / 60, "chemistry": 80 / 60},
        "peak GiB": {"physics": 4 + 3, "chemistry": 3 + 1},
        "hours over budget": {"physics": 20 / 60, "chemistry": 0},
        "GPU-hours": {"physics": (60 + 85) / 60, "chemistry": (85 + 60) / 60},
    },
}


def report_tests(expected: dict[str, dict[str, dict[str, float]]] = EXPECTED) -> list[dict[str, Any]]:
    return [
        {
            "expr": REPORT[figure].format(level),
            "eval_time": "70m",
            "exp_samples": [{"labels": selector("", **{level: who}), "value": value} for who, value in by.items()],
        }
        for level, figures in expected.items()
        for figure, by in figures.items()
    ]


def sample(name: str, value: float, **labels: str) -> dict[str, Any]:
    return {"labels": selector(name, **labels), "value": value}


# Single 5-minute windows ([t - 5m, t], 11 samples 30 s apart in promtool, where evaluations fall on the minute).
WINDOWS: list[tuple[str, str, list[tuple[str, float]]]] = [
    ("user:jupyter_gpumem_kernel_memory_used_bytes:avg5m", "10m", [("alice", 4 * GiB), ("bob", 3 * GiB),
                                                                   ("carol", GiB), ("dave", GiB), ("erin", 0)]),
    # The first sample of each kernel is the window's last one: 1 of 11.
    ("user:jupyter_gpumem_kernel_memory_used_bytes:avg5m", "5m", [("alice", 4 * GiB / 11), ("bob", 3 * GiB / 11),
                                                                  ("carol", GiB / 11), ("dave", GiB / 11),
                                                                  ("erin", 0)]),
    # bob's restart: 10 of 11 samples before it, then none; then k4's first sample, 1 of 11.
    ("user:jupyter_gpumem_kernel_memory_used_bytes:avg5m{user='bob'}", "35m", [("bob", 3 * GiB * 10 / 11)]),
    ("user:jupyter_gpumem_kernel_memory_used_bytes:avg5m{user='bob'}", "40m", [("bob", 2 * GiB / 11)]),
    ("user:jupyter_gpumem_kernel_over_budget:avg5m{user='alice'}", "20m", [("alice", 1)]),
    # alice goes busy at 25 min: 10 of 11 samples idle; no idle memory in [25, 30] (0: she was busy); idle again at
    # 45: 1 of 11.
    ("user:jupyter_gpumem_kernel_idle_memory_used_bytes:avg5m{user='alice'}", "25m", [("alice", 4 * GiB * 10 / 11)]),
    ("user:jupyter_gpumem_kernel_idle_memory_used_bytes:avg5m{user='alice'}", "30m", [("alice", 0)]),
    ("user:jupyter_gpumem_kernel_idle_memory_used_bytes:avg5m{user='alice'}", "45m", [("alice", 4 * GiB / 11)]),
]  # fmt: skip


def window_tests() -> list[dict[str, Any]]:
    tests = []
    for expr, at, values in WINDOWS:
        name = expr.split("{")[0]
        tests.append({"expr": expr, "eval_time": at, "exp_samples": [sample(name, v, user=u) for u, v in values]})
    return tests


def unit_tests(tests: list[dict[str, Any]]) -> dict[str, Any]:
    """promtool's test file: the scene, evaluated every 5 minutes as the rules' group is."""
    return {
        "rule_files": [RULES],
        "evaluation_interval": "5m",
        "tests": [{"interval": "1m", "input_series": scene(), "promql_expr_test": tests}],
    }


def run_unit_tests(tmp_path: Path, tests: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    shutil.copy(SHIPPED / RULES, tmp_path / RULES)
    (tmp_path / "report_rules_test.yml").write_text(yaml.safe_dump(unit_tests(tests), sort_keys=False))
    return promtool("test", "rules", "report_rules_test.yml", cwd=tmp_path)


def test_promtool_checks_the_report_rules() -> None:
    checked = promtool("check", "rules", str(SHIPPED / RULES))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(NAMES) + len(HOURLY)} rules found" in checked.stdout
    groups = yaml.safe_load((SHIPPED / RULES).read_text())["groups"]
    assert [(g["name"], g["interval"]) for g in groups] == [("jupyter-gpumem-report", "5m"),
                                                            ("jupyter-gpumem-report-hourly", "1h")]  # fmt: skip
    assert tuple(r["record"] for r in groups[0]["rules"]) == NAMES
    assert tuple(r["record"] for r in groups[1]["rules"]) == HOURLY


def test_the_report_rules_give_each_users_and_groups_figures(tmp_path: Path) -> None:
    tested = run_unit_tests(tmp_path, report_tests())
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_each_5_minute_window_counts_the_part_of_it_a_kernel_was_seen(tmp_path: Path) -> None:
    tested = run_unit_tests(tmp_path, window_tests())
    assert tested.returncode == 0, tested.stdout + tested.stderr


# The hourly rules, at the scene's first hour (60 min): the 5-minute samples of (-5, 55] min, each worked out by hand
# from the scene (in 5-minute windows; a kernel's first or last sample in a window counts 1 or 10 of its 11).
# alice: 4 GiB from 5 min: 1/11 at 5, then 10 windows in full; the window at 60 is the next hour's.
HOUR_1 = [
    ("jupyter_gpumem_report_hour", {}, 1),
    ("user:jupyter_gpumem_kernel_memory_used_bytes:sum1h", {"user": "alice"}, 4 * GiB * (1 / 11 + 10)),
    # bob: 3 GiB 1/11 at 5, in full at 10 to 30, 10/11 at 35 (the restart); 2 GiB 1/11 at 40, in full at 45 to 55.
    ("user:jupyter_gpumem_kernel_memory_used_bytes:sum1h", {"user": "bob"},
     3 * GiB * (1 / 11 + 5 + 10 / 11) + 2 * GiB * (1 / 11 + 3)),
    ("user:jupyter_gpumem_kernel_memory_used_bytes:max1h", {"user": "bob"}, 3 * GiB),
    # alice over budget from 15 to 35: 1/11 at 15, 1 at 20 to 30, 10/11 at 35: 4 windows, 20 minutes.
    ("user:jupyter_gpumem_kernel_over_budget:sum1h", {"user": "alice"}, 4),
    ("group:jupyter_gpumem_kernel_memory_used_bytes:sum1h", {"group": "physics"},
     4 * GiB * (1 / 11 + 10) + 3 * GiB * (1 / 11 + 5 + 10 / 11) + 2 * GiB * (1 / 11 + 3)),
    ("group:jupyter_gpumem_kernel_memory_used_bytes:max1h", {"group": "physics"}, 7 * GiB),
    ("user_group:jupyter_gpumem_hub_user_group_info:max1h", {"user": "bob", "group": "chemistry"}, 1),
]  # fmt: skip


def hour_tests(hour: list[tuple[str, dict[str, str], float]] = HOUR_1) -> list[dict[str, Any]]:
    return [
        {"expr": selector(name, **labels), "eval_time": "60m", "exp_samples": [sample(name, value, **labels)]}
        for name, labels, value in hour
    ]


# The report's way (hub/report.py): the whole hour from the hourly series, the rest of the 70 minutes, (55, 70], from
# the 5-minute ones, each piece labelled apart and added (or their most): the same figures, worked out above.
HOURS_AND_ENDS = {
    "GiB-hours": ("sum", "kernel_memory_used_bytes:sum1h", "kernel_memory_used_bytes:avg5m", " / 12 / 2^30"),
    "idle GiB-hours": ("sum", "kernel_idle_memory_used_bytes:sum1h", "kernel_idle_memory_used_bytes:avg5m",
                       " / 12 / 2^30"),
    "peak GiB": ("max", "kernel_memory_used_bytes:max1h", "kernel_memory_used_bytes:max5m", " / 2^30"),
    "hours over budget": ("sum", "kernel_over_budget:sum1h", "kernel_over_budget:avg5m", " / 12"),
    "GPU-hours": ("sum", "gpus_held:sum1h", "gpus_held:avg5m", " / 12"),
}  # fmt: skip


def hours_and_ends_tests() -> list[dict[str, Any]]:
    tests = []
    for level, figures in EXPECTED.items():
        for figure, by in figures.items():
            how, hourly, steps, scale = HOURS_AND_ENDS[figure]
            expr = (f'{how} by ({level}) (label_replace({how}_over_time({level}:jupyter_gpumem_{hourly}[1ms] @ 3600), '
                    f'"piece", "hour", "", "") or label_replace({how}_over_time({level}:jupyter_gpumem_{steps}'
                    f'[14m59s999ms] @ 4200), "piece", "end", "", "")){scale}')  # fmt: skip
            found = [{"labels": selector("", **{level: w}), "value": v} for w, v in by.items()]
            tests.append({"expr": expr, "eval_time": "70m", "exp_samples": found})
    return tests


def test_the_hourly_rules_add_each_hours_5_minute_samples(tmp_path: Path) -> None:
    tested = run_unit_tests(tmp_path, hour_tests())
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_a_wrong_hour_fails_the_unit_tests(tmp_path: Path) -> None:
    """With the window at 60 min counted in the hour it ends (the hour not 5 minutes behind), alice's hour is wrong."""
    wrong = [(n, labels, 4 * GiB * (1 / 11 + 11) if labels == {"user": "alice"} and n.endswith("sum1h") and
              "memory" in n else v) for n, labels, v in HOUR_1]  # fmt: skip
    tested = run_unit_tests(tmp_path, hour_tests(wrong))
    assert tested.returncode != 0 and "FAILED" in tested.stdout + tested.stderr


def test_the_hours_and_the_ends_give_the_5_minute_figures(tmp_path: Path) -> None:
    tested = run_unit_tests(tmp_path, hours_and_ends_tests())
    assert tested.returncode == 0, tested.stdout + tested.stderr


@pytest.mark.parametrize(
    ("level", "figure", "who", "wrong"),
    [
        ("user", "GiB-hours", "alice", 8.0),  # her own figure counted again
        ("user", "idle GiB-hours", "alice", 4.0),  # all of it, busy or not
        ("user", "GiB-hours", "bob", 3.0),  # his old kernels carried through the restart
        ("user", "GPU-hours", "erin", 1.0),  # a GPU where she holds 0 bytes
        ("group", "GiB-hours", "physics", (480 + 140) / 60),  # alice's membership, scraped twice, counted twice
        ("group", "peak GiB", "physics", 4 + 3 + 1),  # one more GiB than they ever held at once
    ],
)
def test_a_wrong_figure_fails_the_unit_tests(tmp_path: Path, level: str, figure: str, who: str, wrong: float) -> None:
    """The unit tests can fail: with one figure changed to what a mistake in the rules would give."""
    changed = {lv: {f: dict(by) for f, by in figures.items()} for lv, figures in EXPECTED.items()}
    changed[level][figure][who] = wrong
    tested = run_unit_tests(tmp_path, report_tests(changed))
    assert tested.returncode != 0
    assert "FAILED" in tested.stdout + tested.stderr


def test_the_shipped_configurations_load_the_report_rules_beside_the_alerts() -> None:
    for name in ("prometheus.yml", "kubernetes.yml"):
        assert yaml.safe_load((SHIPPED / name).read_text())["rule_files"] == ["rules.yml", RULES], name


# Backfill: Debian's prometheus holds two hours of history written before the rules existed (blocks made with
# promtool tsdb create-blocks-from openmetrics); the command docs/hub.md gives evaluates the rules over it, its
# blocks are moved into Prometheus's data directory, and the report's figures are then there for that history.
HISTORY_S = 2 * 3600
STEP_S = 30


def history(start: int) -> str:
    """OpenMetrics text: a scrape every 30 s for two hours (and 10 minutes past them). alice holds 4 GiB on GPU-A,
    idle for the first hour and busy for the second, over budget for the first 30 minutes; bob holds 2 GiB, idle,
    in the second hour only (no sample before: the kernel did not exist); both are in group physics."""
    lines: dict[str, list[str]] = {}

    def add(name: str, labels: dict[str, str], t: int, value: float) -> None:
        lines.setdefault(name, []).append(f"{selector(name, **labels)} {value:.17g} {t}")

    for t in range(start, start + HISTORY_S + 10 * MIN + 1, STEP_S):
        minute = (t - start) // MIN
        add("jupyter_gpumem_kernel_memory_used_bytes", kernel("alice", "k1", "A"), t, 4 * GiB)
        add("jupyter_gpumem_kernel_busy", kernel("alice", "k1"), t, 0 if minute < 60 else 1)
        add("jupyter_gpumem_kernel_over_budget", kernel("alice", "k1", "A"), t, 1 if minute < 30 else 0)
        if minute >= 60:
            add("jupyter_gpumem_kernel_memory_used_bytes", kernel("bob", "k2", "A"), t, 2 * GiB)
            add("jupyter_gpumem_kernel_busy", kernel("bob", "k2"), t, 0)
        for user in ("alice", "bob"):
            hub = {"job": "jupyter-gpumem-hub", "instance": "hub.example.org:443", "user": user, "group": "physics"}
            add("jupyter_gpumem_hub_user_group_info", hub, t, 1)
    text = "".join(f"# TYPE {name} gauge\n" + "\n".join(samples) + "\n" for name, samples in lines.items())
    return text + "# EOF\n"


def query(url: str, expr: str, at: float) -> dict[str, float]:
    status, body = http(f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": expr, "time": at}))
    assert status == 200, body
    found = json.loads(body)["data"]["result"]
    return {key(r["metric"]): float(r["value"][1]) for r in found}


def recorded(url: str, name: str, at: float) -> dict[str, list[tuple[float, float]]]:
    """Every sample of a recorded series in the three hours before ``at``, by its user or group."""
    query = urllib.parse.urlencode({"query": f"{name}[3h]", "time": at})
    status, body = http(f"{url}/api/v1/query?{query}")
    assert status == 200, body
    found = json.loads(body)["data"]["result"]
    return {key(r["metric"]): [(t, float(v)) for t, v in r["values"]] for r in found}


def key(labels: dict[str, str]) -> str:
    """A series by its user or group ("physics,alice" for a membership), as ``query`` keys the rule's answer."""
    return ",".join(v for k, v in sorted(labels.items()) if k != "__name__")


def test_the_documented_backfill_records_the_report_for_history_before_the_rules(tmp_path: Path) -> None:
    if shutil.which("prometheus") is None:
        pytest.fail("Debian's prometheus is needed for this test: apt-get install prometheus (.ci/setup does)")
    start = (int(time.time()) // 3600 - 4) * 3600  # four hours ago, on the hour: history Prometheus never evaluated
    end = start + HISTORY_S
    tsdb, log = tmp_path / "tsdb", tmp_path / "prometheus.log"
    (tmp_path / "history.om").write_text(history(start))
    made = promtool("tsdb", "create-blocks-from", "openmetrics", str(tmp_path / "history.om"), str(tsdb))
    assert made.returncode == 0, made.stdout + made.stderr
    config = tmp_path / "prometheus.yml"
    config.write_text(json.dumps({"global": {"evaluation_interval": "30s"}}))  # no rules yet: they come later
    shutil.copy(SHIPPED / RULES, tmp_path / RULES)
    rules = {r["record"]: r["expr"] for r in yaml.safe_load((SHIPPED / RULES).read_text())["groups"][0]["rules"]}

    with made_up.prometheus(tsdb, log, config=config) as url:
        assert query(url, "count(jupyter_gpumem_kernel_memory_used_bytes)", end) == {"": 2}
        assert all(recorded(url, name, end) == {} for name in NAMES)  # not recorded: the rules are new
        # docs/hub.md's command, with this test's times, URL and output directory.
        backfill = promtool("tsdb", "create-blocks-from", "rules", f"--start={start}", f"--end={end}", f"--url={url}",
                            f"--output-dir={tmp_path / 'backfill'}", RULES, cwd=tmp_path)  # fmt: skip
        assert backfill.returncode == 0, backfill.stdout + backfill.stderr
    blocks = [b for b in (tmp_path / "backfill").iterdir() if (b / "meta.json").exists()]
    assert blocks, list((tmp_path / "backfill").iterdir())
    for block in blocks:
        shutil.move(str(block), tsdb / block.name)

    with made_up.prometheus(tsdb, log, config=config) as url:
        found = {name: recorded(url, name, end + 3600) for name in NAMES}
        # Every 5 minutes over the history, at the group's own offset in each 5 minutes (as Prometheus evaluates it).
        times = [t for t, _ in found["user:jupyter_gpumem_kernel_memory_used_bytes:avg5m"]["alice"]]
        assert start <= times[0] < start + 5 * MIN and end - 5 * MIN < times[-1] <= end, (start, times)
        assert [round(b - a, 3) for a, b in itertools.pairwise(times)] == [5 * MIN] * (len(times) - 1), times
        # Each sample is what the rule gives at its time, as Prometheus evaluates it on the same history.
        for name, by in found.items():
            for t in times:
                assert {who: dict(samples).get(t) for who, samples in by.items()} == {
                    who: query(url, rules[name], t).get(who) for who in by
                }, (name, t)
        # alice's GiB-hours in the last hour (its 12 windows, each after her first sample): 4 GiB for an hour.
        last_hour = "sum_over_time(user:jupyter_gpumem_kernel_memory_used_bytes:avg5m[59m]) / 12 / 2^30"
        assert query(url, last_hour, times[-1])["alice"] == 4.0
        # The second pass (docs/hub.md): the same command, now that the 5-minute series are there for the hourly rules.
        second = promtool("tsdb", "create-blocks-from", "rules", f"--start={start}", f"--end={end}", f"--url={url}",
                          f"--output-dir={tmp_path / 'backfill-2'}", RULES, cwd=tmp_path)  # fmt: skip
        assert second.returncode == 0, second.stdout + second.stderr
    for block in [b for b in (tmp_path / "backfill-2").iterdir() if (b / "meta.json").exists()]:
        shutil.move(str(block), tsdb / block.name)
    with made_up.prometheus(tsdb, log, config=config) as url:
        # The 5-minute series recorded twice: the same samples, merged, each once.
        assert recorded(url, NAMES[0], end + 3600) == found[NAMES[0]]
        clock = [t for t, _ in recorded(url, "jupyter_gpumem_report_hour", end + 3600)[""]]
        assert clock and all(b - a == 3600 for a, b in itertools.pairwise(clock)), clock
        for name in HOURLY[1:]:
            five = name.replace(":sum1h", ":avg5m").replace(":max1h", ":max5m")
            hourly = recorded(url, name, end + 3600)
            for who, samples in found[five].items():
                for t in clock:  # each hour: its 5-minute samples of (t - 65m, t - 5m], added or their most
                    within = [v for at, v in samples if t - 65 * MIN < at <= t - 5 * MIN]
                    total = (max if name.endswith("max1h") else sum)(within) if within else None
                    assert dict(hourly.get(who, [])).get(t) == total, (name, who, t)

    # By hand, each window that lies in one stretch of the history (minutes from its start): alice holds 4 GiB
    # throughout, idle before 60 and over budget before 30; bob holds 2 GiB, idle, from 60; both in physics.
    def windows(name: str, who: str, after: int, before: int) -> set[float]:
        first, last = start + after * MIN, start + before * MIN
        return {v for t, v in found[name].get(who, []) if first <= t - 5 * MIN and t < last}

    user, group = "user:jupyter_gpumem_", "group:jupyter_gpumem_"
    assert windows(user + "kernel_memory_used_bytes:avg5m", "alice", 0, 120) == {4 * GiB}
    assert windows(user + "kernel_idle_memory_used_bytes:avg5m", "alice", 0, 60) == {4 * GiB}
    assert windows(user + "kernel_idle_memory_used_bytes:avg5m", "alice", 60, 120) == {0}  # busy: 0, not absent
    assert windows(user + "kernel_over_budget:avg5m", "alice", 0, 30) == {1}
    assert windows(user + "kernel_over_budget:avg5m", "alice", 30, 120) == {0}
    assert windows(user + "kernel_memory_used_bytes:avg5m", "bob", 0, 60) == set()
    assert windows(user + "kernel_memory_used_bytes:max5m", "bob", 60, 120) == {2 * GiB}
    assert windows(user + "gpus_held:avg5m", "bob", 60, 120) == {1}
    assert windows(group + "kernel_memory_used_bytes:avg5m", "physics", 60, 120) == {6 * GiB}
    assert windows(group + "kernel_idle_memory_used_bytes:avg5m", "physics", 60, 120) == {2 * GiB}
    assert windows(group + "kernel_memory_used_bytes:max5m", "physics", 60, 120) == {6 * GiB}
    assert windows(group + "kernel_over_budget:avg5m", "physics", 60, 120) == {0}
    assert windows(group + "gpus_held:avg5m", "physics", 60, 120) == {2}
    membership = "user_group:jupyter_gpumem_hub_user_group_info:max5m"
    assert windows(membership, "physics,alice", 0, 120) == windows(membership, "physics,bob", 0, 120) == {1}


# The rules over the servers' own series, against the made-up history the report's test holds (its recorded series
# written by tests/hub/report_made_up.py, not by the rules): a day of 8 users (restarts, gaps, second kernels, a user
# in a container, one whose server says nothing of busy, one without kernels, users in several groups), their raw
# series scraped every 30 s, in Debian's prometheus read with a lookback under 30 s (so a series ends where the
# generator's does, as its staleness marker would end it); each rule's expression evaluated at its own steps (a range
# query at the 5-minute steps; an hourly rule with the 5-minute rule it reads as a subquery, at the hours).
# A window of 5 minutes (t - 5m, t] takes its 11 readings 30 s apart from t - 5m to t: 10 in its slot, the 11th the
# next slot's first scrape. So each 5-minute sample is (10 × the slot's figure + the next slot's) / 11 (the most of
# the two for a peak), the rounding of one step; and every hour the sum (or the most) of those.
CROSS_USERS, CROSS_SLOTS = 8, 288


def expected_windows(users: list[made_up.User], start: int) -> dict[str, dict[str, dict[float, float]]]:
    """Per 5-minute rule, per user or group (a membership: "group,user"), its sample at each step, from the
    generator's recorded figures."""
    per, by_group = made_up._by_slot(users)
    found: dict[str, dict[str, dict[float, float]]] = {}
    for level, rows_of in (("user", per), ("group", by_group)):
        for index, series in enumerate(made_up.RECORDED.values()):
            into = found.setdefault(f"{level}:{series}", {})
            for who, rows in rows_of.items():
                for s in range(-1, CROSS_SLOTS):
                    a, b = (rows[x][index] if x in rows and rows[x][index] >= 0 else None for x in (s, s + 1))
                    if a is None and b is None:
                        continue
                    t = float(start + (s + 1) * made_up.SLOT_S)
                    peak = series.endswith(":max5m")
                    value = max(v for v in (a, b) if v is not None) if peak else (10 * (a or 0) + (b or 0)) / 11
                    into.setdefault(who, {})[t] = value
    into = found.setdefault(made_up.MEMBERSHIP, {})
    for u in users:
        for group in u.groups:
            for s in range(-1, CROSS_SLOTS):
                if s in u.up or s + 1 in u.up:
                    into.setdefault(f"{group},{u.name}", {})[float(start + (s + 1) * made_up.SLOT_S)] = 1
    return found


def expected_hours(windows: dict[str, dict[str, dict[float, float]]], hours: range) -> dict[str, dict[str, dict]]:
    """Per hourly rule, each hour's 5-minute samples of (t - 65m, t - 5m], added or their most."""
    found: dict[str, dict[str, dict[float, float]]] = {}
    for name, by in windows.items():
        hourly = name.replace(":avg5m", ":sum1h").replace(":max5m", ":max1h")
        for who, samples in by.items():
            for t in hours:
                within = [v for at, v in samples.items() if t - 65 * MIN < at <= t - 5 * MIN]
                if within:
                    total = max(within) if hourly.endswith(":max1h") else sum(within)
                    found.setdefault(hourly, {}).setdefault(who, {})[float(t)] = total
    return found


def ranged(url: str, expr: str, first: float, last: float, step: int) -> dict[str, dict[float, float]]:
    query = urllib.parse.urlencode({"query": expr, "start": first, "end": last, "step": step})
    status, body = http(f"{url}/api/v1/query_range?{query}")
    assert status == 200, body[:500]
    return {key(r["metric"]): {float(t): float(v) for t, v in r["values"]} for r in json.loads(body)["data"]["result"]}


def same(found: dict[str, dict[float, float]], expected: dict[str, dict[float, float]], name: str) -> None:
    assert sorted(found) == sorted(expected), name
    for who, samples in expected.items():
        assert sorted(found[who]) == sorted(samples), (name, who)
        for t, value in samples.items():
            assert abs(found[who][t] - value) <= 1e-9 * max(1.0, abs(value)), (name, who, t, found[who][t], value)


def test_the_rules_over_the_servers_series_give_the_generators_recorded_series(tmp_path: Path) -> None:
    users = made_up.make(CROSS_USERS, CROSS_SLOTS)
    kernels = [k for u in users for k in u.kernels]
    assert any(not u.kernels for u in users) and any(not u.busy_known for u in users) and len(kernels) > 20
    start = (int(time.time()) // 86400 - 3) * 86400  # a day three days ago, on midnight
    (tmp_path / "raw.om").write_text("".join(made_up.raw(users, start, range(CROSS_SLOTS))))
    made = promtool("tsdb", "create-blocks-from", "openmetrics", str(tmp_path / "raw.om"), str(tmp_path / "tsdb"))
    assert made.returncode == 0, made.stdout + made.stderr
    groups = yaml.safe_load((SHIPPED / RULES).read_text())["groups"]
    five = {r["record"]: r["expr"] for r in groups[0]["rules"]}
    windows = expected_windows(users, start)
    first, last = start, start + CROSS_SLOTS * made_up.SLOT_S
    hours = range(first + (made_up.HOUR_AT - first) % 3600, last + 3600, 3600)
    with made_up.prometheus(tmp_path / "tsdb", tmp_path / "prometheus.log", "--query.lookback-delta=29s") as url:
        for name, expr in five.items():
            same(ranged(url, expr, first, last, made_up.SLOT_S), windows[name], name)
        expected = expected_hours(windows, hours)
        for rule in groups[1]["rules"][1:]:
            name, expr = rule["record"], rule["expr"]
            read = next(n for n in five if f"{n}[" in expr)
            expr = expr.replace(f"{read}[59m59s999ms]", f"({five[read]})[59m59s999ms:5m]")
            same(ranged(url, expr, hours[0], hours[-1], 3600), expected[name], name)
