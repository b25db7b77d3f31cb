"""A hostile tenant's values (issue 43, findings 1, 2, 5 and 6): each reader answers one sentence or a value within
range, and what it could not read stays that one server's, kernel's or setting's; nothing else changes.

Real parts: the hub service polling a simulated fleet over HTTP (tests/hub/fleet.py, one port as the hub's API and
the proxy), the server extension's real Watcher reading real report files, a real GpumemConfig loading a real
profile file, and the magic on a Controller (controller_fixtures.py)."""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from controller_fixtures import gpumem, make
from hub_fixtures import Fleet, running_fleet
from server_fixtures import http, strict_json
from traitlets.config import Application, Configurable

from jupyter_gpumem import values
from jupyter_gpumem.budget.config import load_config
from jupyter_gpumem.server.watcher import Watcher, publish
from jupyter_gpumem.wire.report import report_path

sys.path.insert(0, str(Path(__file__).parents[1] / "hub"))  # fleet.py, as tests/hub/ imports it
from fleet import ADMIN_TOKEN, HOSTILE

__all__ = ["gpumem", "make"]  # the fixtures

REPORT = Path(__file__).parents[1] / "fixtures" / "report" / "report.json"


# Finding 1: one user's server sends a time of 401 digits, NaN or an array nested 100,000 deep; another runs no kernel.


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    faults = ",".join(f"{kind}=1" for kind in HOSTILE)
    env = {"JUPYTER_GPUMEM_HUB_INTERVAL_S": "0.5", "JUPYTER_GPUMEM_HUB_DEADLINE_S": "2"}
    with running_fleet(tmp_path_factory.mktemp("hostile"), 2 + len(HOSTILE), faults, env) as running:
        yield running


def test_a_hostile_server_is_its_own_row_and_the_hub_goes_on_polling_everyone(fleet: Fleet) -> None:
    seen: dict[float, dict[str, Any]] = {}
    deadline = time.monotonic() + 30
    while len(seen) < 3 and time.monotonic() < deadline:  # three polls, each a new time: the poll is not frozen
        status, text = http(f"{fleet.service}api/rows", ADMIN_TOKEN)
        assert status == 200
        data = strict_json(text)
        if data["t"] is not None:
            seen[data["t"]] = data
        time.sleep(0.2)
    assert len(seen) == 3, f"{len(seen)} polls in 30 s: the hub stopped polling"
    rows: dict[str, list[dict[str, Any]]] = {}
    for row in seen[max(seen)]["rows"]:
        rows.setdefault(row["user"], []).append(row)
    kinds = json.loads(http(f"{fleet.url}/fleet/stats")[1])
    assert set(HOSTILE) <= set(kinds)  # every hostile server was asked
    problems = {user: {r["problem"] for r in found} for user, found in rows.items()}
    healthy = {user for user, found in rows.items() if all(r["kernel_id"] and not r["problem"] for r in found)}
    assert len(healthy) == 2, problems
    assert len(rows) == 2 + len(HOSTILE) - 1  # the server without kernels has no row, and breaks nothing
    hostile = {user: problem for user, problem in problems.items() if user not in healthy}
    assert sorted(p for [p] in map(list, hostile.values())) == sorted(
        [
            f"its /api/gpumem/v1 body is not valid: an integer of 401 digits is beyond {values.LARGEST}",
            "its /api/gpumem/v1 body is not valid: NaN is not a number JSON allows",
            f"its /api/gpumem/v1 body is not valid: not JSON this reader takes: nested deeper than "
            f"{values.MAX_DEPTH} levels",
        ]
    ), hostile
    status, metrics = http(f"{fleet.service}metrics", ADMIN_TOKEN)
    assert status == 200
    up = dict(re.findall(rb'jupyter_gpumem_hub_server_up\{server="",user="([^"]+)"\} ([0-9.]+)', metrics))
    assert {user.decode() for user, value in up.items() if float(value) == 1} == healthy


# Finding 2: one kernel's report file that no reader can use.


def hostile_report(field: str, raw: str, now: float) -> str:
    """The valid report fixture, fresh, with ``raw`` (JSON text, or what passes for it) as its ``field``."""
    data = json.loads(REPORT.read_text())
    data["t"] = data["sample"]["t"] = now
    data[field] = "@@hostile@@"
    return json.dumps(data).replace('"@@hostile@@"', raw)


HOSTILE_REPORTS = {
    "deep": ("oom_errors_total", "[" * 100_000 + "]" * 100_000),
    "nan": ("oom_errors_total", "NaN"),
    "infinity_time": ("t", "Infinity"),
    "future_time": ("t", "4102444800.0"),  # 2100: valid, but ahead of the server's clock
    "big_integer": ("oom_errors_total", "9" * 5000),
    "lone_surrogate": ("package_version", '"0.2.0\\ud800"'),
    "huge_file": ("package_version", '"' + "x" * 400_000 + '"'),
}


def test_a_report_no_reader_can_use_is_that_kernels_alone(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    (runtime / "jupyter-gpumem").mkdir(mode=0o700)
    now = time.time()
    kernels = {}
    for name in ["good", *HOSTILE_REPORTS]:
        connection = runtime / f"kernel-{name}.json"
        text = (
            hostile_report("oom_errors_total", "0", now)
            if name == "good"
            else hostile_report(*HOSTILE_REPORTS[name], now)
        )
        report_path(connection).write_text(text)
        kernels[name] = SimpleNamespace(
            provisioner=SimpleNamespace(pid=os.getpid() if name == "good" else None),
            connection_file=str(connection),
            execution_state="idle",
            last_activity=None,
        )
    manager = SimpleNamespace(list_kernel_ids=lambda: list(kernels), get_kernel=kernels.__getitem__)
    log = logging.getLogger("test_hostile_values")
    watcher = Watcher(manager, interval_s=1.0, stale_after_s=30.0, log=log)
    with caplog.at_level(logging.WARNING, "test_hostile_values"):
        figures = watcher.read()
    status = {kernel.id: kernel.status for kernel in figures.kernels}
    assert status == {"good": "reporting", "future_time": "stale"} | {
        name: "not_reporting" for name in HOSTILE_REPORTS if name != "future_time"
    }
    said = [record.getMessage() for record in caplog.records]
    assert len(said) == len(HOSTILE_REPORTS) - 1, said  # one sentence each; the future time is shown stale
    assert all(len(sentence) < 400 for sentence in said), said
    for name in HOSTILE_REPORTS.keys() - {"future_time"}:
        assert any(f"kernel-{name}.json" in sentence for sentence in said), (name, said)
    strict_json(publish(figures, 1.0).body)  # what the server emits stays JSON


# Finding 5: a bad size in a user's own profile, or the environment, turns no ceiling off.


@pytest.mark.parametrize("size", ["1e309GiB", "infGiB", "nanGiB", "-infGiB", pytest.param(10**400, id="10**400")])
def test_a_size_no_gpu_has_in_a_users_profile_leaves_the_administrators_ceiling(
    size: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    profile = tmp_path / "profile_default"
    profile.mkdir()
    (profile / "ipython_kernel_config.py").write_text(f"c.GpumemConfig.max_limit = {size!r}\n")
    monkeypatch.setenv("JUPYTER_GPUMEM_MAX_LIMIT", "8GiB")
    monkeypatch.setenv("JUPYTER_GPUMEM_LIMIT", "1e309GiB")
    application = Application()  # as IPython loads a kernel's profile; the shell is its child
    application.load_config_file("ipython_kernel_config.py", path=[str(profile)])
    shell = Configurable(parent=application)
    config, _ = load_config(shell)
    ceiling, problems = config.ceiling()
    assert ceiling.max_limit_bytes == 8 * 2**30  # the environment's ceiling holds
    assert len(problems) == 1 and "max_limit" in problems[0], problems
    assert len(problems[0]) < 400
    policy, refused = config.defaults()
    assert policy.limit_bytes is None  # the default budget is refused, in a sentence
    assert len(refused) == 1 and "limit=1e309GiB is not a size" in refused[0], refused


# Finding 6: the magic's arguments.


@pytest.mark.parametrize(
    ("line", "sentence"),
    [
        ("threads=100000", "threads=100000 is not a whole number from 1 to 1024"),
        (f"threads={2**31}", f"threads={2**31} is not a whole number from 1 to 1024"),
        ("intra=0", "intra=0 is not a whole number from 1 to 1024"),
        ("threads=²", "threads=² is not a whole number from 1 to 1024"),
        ("threads=" + "9" * 5000, "threads=99999999999999999999999… is not a whole number from 1 to 1024"),
        ("gpus=²", "gpus=² names no GPU in '²'"),
        ("limit=1e309GiB", "limit=1e309GiB is not a size"),
        ("limit=infGiB", "limit=infGiB is not a size"),
        ("limit=99999TiB", "limit=99999TiB is beyond any GPU's memory (at most 16 TiB)"),
        ("fraction=nan", "fraction=nan is outside (0, 1]"),
        ("fraction=" + "9" * 5000, "fraction=99999999999999999999999… is outside (0, 1]"),
        ("cells ²", "%gpumem cells '²': the count is a whole number from 0 to 10000"),
        ("cells " + "9" * 5000, "%gpumem cells '99999999999999999999999…': the count is a whole number"),
    ],
)
def test_a_number_no_setting_takes_is_one_sentence_and_changes_nothing(gpumem: Any, line: str, sentence: str) -> None:
    gpumem("fraction=0.3 threads=2")
    before = gpumem.control.state
    out, err = gpumem(line)
    assert out == "" and sentence in err and err.count("\n") == 1, err
    assert len(err) < 400
    assert gpumem.control.state is before


def test_every_route_of_the_hub_service_answers_what_a_browser_parses(fleet: Fleet) -> None:
    """Every route make_app serves, asked while hostile servers are polled: JSON answers are JSON a browser's
    JSON.parse takes (no NaN, no Infinity), the JSON worded for the page in its language too."""
    from jupyter_gpumem.hub.prometheus_reader import PrometheusReader
    from jupyter_gpumem.hub.service import make_app

    app = make_app(PrometheusReader("http://127.0.0.1:9"), "/services/gpumem/")  # the routes alone; nothing runs
    served = app.default_router.rules[0].target.rules  # tornado: the application's own rules
    routes = [rule.matcher.regex.pattern.rstrip("$").removeprefix("/services/gpumem/") for rule in served]
    assert routes[:1] == [""] and "api/rows" in routes
    assert "metrics" in routes  # its own groups always; the servers' figures too when it polls them, as here
    checked = []
    for route in routes:
        if route in ("oauth_callback", "static/(.*)"):
            continue  # the hub's login, and the package's own files (plotly.js): no figure
        status, text = http(f"{fleet.service}{route}", ADMIN_TOKEN)
        if route.startswith("report"):
            # No Prometheus to report from (this service polls the servers itself): one sentence, never a figure.
            assert status == 503 and b"Prometheus" in text, (route, status, text[:200])
            if route == "report.json":
                strict_json(text)
        else:
            assert status == 200, (route, status)
        if route == "api/rows":
            strict_json(text)
            strict_json(http(f"{fleet.service}{route}?language=ja-JP&utc_offset_min=540", ADMIN_TOKEN)[1])
        elif route == "":
            assert not re.search(rb"\b(NaN|Infinity)\b", text)
        checked.append(route)
    assert sorted(checked) == ["", "api/rows", "metrics", "report", "report.csv", "report.json"]
