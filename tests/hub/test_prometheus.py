"""The shipped Prometheus files (jupyter_gpumem/hub/prometheus/): promtool checks the configurations and tests
the rules and alerts (tests/hub/rules_test.yml); Debian's prometheus, configured by the shipped prometheus.yml,
discovers 120 simulated servers from the targets the service writes (file_sd) and scrapes each one."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fleet import ADMIN_TOKEN, GiB, kinds
from hub_fixtures import Fleet, running_fleet, running_service
from server_fixtures import eventually, free_port, http, stop

import jupyter_gpumem.hub

SHIPPED = Path(jupyter_gpumem.hub.__file__).parent / "prometheus"
SERVERS = 120
FAULTS = {"404": 5, "hung": 5}
KIND = dict(kinds(SERVERS, FAULTS))
HEALTHY = sorted(u for u, k in KIND.items() if k == "healthy")
FLEET_DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "jupyter-gpumem-fleet.json"


def configured(tmp_path: Path, name: str, targets: Path | None = None, interval: str = "30s") -> Path:
    """A shipped configuration with this test's token file, targets file and interval, next to its rules (both files:
    promtool check config checks them too)."""
    (tmp_path / "token").write_text(ADMIN_TOKEN)
    for rules in ("rules.yml", "report-rules.yml"):  # the configurations' rule_files
        shutil.copy(SHIPPED / rules, tmp_path / rules)
    text = (SHIPPED / name).read_text().replace("/etc/prometheus/jupyterhub-token", str(tmp_path / "token"))
    text = text.replace("/var/lib/jupyter-gpumem/targets.json", str(targets or tmp_path / "targets.json"))
    (tmp_path / name).write_text(text.replace("30s", interval))
    return tmp_path / name


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=60)


def test_promtool_finds_the_file_sd_configuration_and_its_rules_valid(tmp_path: Path) -> None:
    checked = promtool("check", "config", str(configured(tmp_path, "prometheus.yml")))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_kubernetes_configuration_is_valid(tmp_path: Path) -> None:
    checked = promtool("check", "config", str(configured(tmp_path, "kubernetes.yml")))
    if "field kubernetes_sd_configs not found" in checked.stdout + checked.stderr:
        pytest.skip("this promtool is built without Kubernetes discovery (Debian's is); upstream's has it")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_rules_and_alerts_pass_promtools_tests(tmp_path: Path) -> None:
    configured(tmp_path, "prometheus.yml")
    shutil.copy(Path(__file__).with_name("rules_test.yml"), tmp_path / "rules_test.yml")
    tested = promtool("test", "rules", str(tmp_path / "rules_test.yml"))
    assert tested.returncode == 0, tested.stdout + tested.stderr


def query(url: str, expr: str) -> list[dict[str, object]]:
    status, body = http(f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
    assert status == 200, body
    return list(json.loads(body)["data"]["result"])


@dataclass
class Scraped:
    """The fleet and its polling service, Debian's prometheus scraping it from the service's targets, and a
    second service reading that Prometheus (``JUPYTER_GPUMEM_HUB_PROMETHEUS_URL``)."""

    fleet: Fleet
    prometheus: str  # its URL
    process: subprocess.Popen[bytes]
    service: str  # the second service's prefix URL


@pytest.fixture(scope="module")
def scraped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scraped]:
    tmp_path = tmp_path_factory.mktemp("scraped")
    targets = tmp_path / "targets.json"
    env = {"JUPYTER_GPUMEM_HUB_FILE_SD": str(targets), "JUPYTER_GPUMEM_HUB_INTERVAL_S": "1"}
    faults = ",".join(f"{k}={v}" for k, v in FAULTS.items())
    with running_fleet(tmp_path / "fleet", SERVERS, faults, env) as fleet:
        config = configured(tmp_path, "prometheus.yml", targets, interval="1s")
        config.write_text(config.read_text().replace("scrape_timeout: 10s", "scrape_timeout: 1s"))
        port = free_port()
        log = (tmp_path / "prometheus.log").open("w")
        process = subprocess.Popen(
            ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        reading = {"JUPYTER_GPUMEM_HUB_PROMETHEUS_URL": url, "JUPYTER_GPUMEM_HUB_INTERVAL_S": "1",
                   "JUPYTER_GPUMEM_HUB_DEADLINE_S": "1"}  # fmt: skip
        try:
            with running_service(tmp_path, fleet.url, reading, "from-prometheus") as (service, _):
                yield Scraped(fleet, url, process, service)
        finally:
            stop(process)
            log.close()


def test_prometheus_discovers_and_scrapes_every_server_from_the_services_targets(scraped: Scraped) -> None:
    url = scraped.prometheus
    deadline, found = time.monotonic() + 60, []
    while time.monotonic() < deadline:
        time.sleep(1)
        try:
            found = query(url, "jupyter_gpumem_kernel_memory_used_bytes")
        except OSError:
            continue
        if len(found) >= len(HEALTHY):
            break
    assert sorted(r["metric"]["user"] for r in found) == HEALTHY  # type: ignore[index]

    def not_scraped() -> None:
        up = query(url, 'count(up{job="jupyter-gpumem-file-sd"} == 0)')
        assert up and up[0]["value"][1] == str(sum(FAULTS.values())), up  # type: ignore[index]

    eventually(not_scraped, timeout=20)

    # The recording rules, evaluated every second: user number n holds (n % 7) / 2 GiB (fleet.py).
    def by_user() -> dict[str, float]:
        found = query(url, "user:jupyter_gpumem_kernel_memory_used_bytes:sum")
        assert len(found) == len(HEALTHY)
        return {r["metric"]["user"]: float(r["value"][1]) for r in found}  # type: ignore[index]

    held = eventually(by_user, timeout=20)
    assert held == {u: (int(u[1:]) % 7) * GiB / 2 for u in HEALTHY}


def get(url: str) -> dict[str, Any]:
    status, body = http(url, ADMIN_TOKEN)
    assert status == 200, (status, body[:300])
    return dict(json.loads(body))


FIGURES = ("kernel_id", "gpu_index", "gpu_uuid", "used_bytes", "budget_bytes", "over_budget", "ceiling_fraction",
           "ceiling_bytes", "limit_kind", "limit_hard", "status", "used_text", "budget_text",
           "ceiling_text")  # fmt: skip


def figures(data: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Each healthy user's rows as the page has them, with the figures both readings carry."""
    found: dict[str, list[dict[str, Any]]] = {}
    for row in data["rows"]:
        if row["problem"] is None and row["kernel_id"] is not None:
            found.setdefault(row["user"], []).append({f: row[f] for f in FIGURES})
    return found


def test_the_page_read_from_prometheus_shows_every_healthy_user_with_the_polls_figures(scraped: Scraped) -> None:
    def complete() -> dict[str, Any]:
        data = get(f"{scraped.service}api/rows")
        assert sorted(figures(data)) == HEALTHY
        assert len({r["user"] for r in data["rows"]}) == SERVERS  # the failing ones too, once scraped
        return data

    from_prometheus = eventually(complete, timeout=60)
    polled = get(f"{scraped.fleet.service}api/rows")
    assert figures(from_prometheus) == figures(polled)
    assert from_prometheus["source"] == {"prometheus": scraped.prometheus, "problem": None, "problem_said": None}

    # The summary is the same code's, on the same rows and GPUs (16 users a node share its GPUs); the idle time
    # is the one figure the servers' metrics do not carry.
    def without_idle(part: dict[str, Any]) -> dict[str, Any]:
        return {**part, "top": [{k: v for k, v in t.items() if not k.startswith("idle")} for t in part["top"]]}

    for part in ("over_budget", "users"):
        assert without_idle(from_prometheus["summary"][part]) == without_idle(polled["summary"][part]), part
    assert from_prometheus["summary"]["gpus"] == polled["summary"]["gpus"]
    assert all(r["idle_s"] is None for r in from_prometheus["rows"])
    # The servers Prometheus cannot scrape are each a row saying so, under their user.
    failing = {r["user"]: r["problem"] for r in from_prometheus["rows"] if r["problem"]}
    assert sorted(failing) == sorted(u for u, k in KIND.items() if k != "healthy")
    assert all("Prometheus could not scrape" in why for why in failing.values()), failing
    assert from_prometheus["poll"]["answered"] == len(HEALTHY)


def test_reading_from_prometheus_the_service_serves_only_the_users_groups(scraped: Scraped) -> None:
    """No figure Prometheus has from the servers themselves: only what it cannot have, each user's groups."""
    status, body = http(f"{scraped.service}metrics", ADMIN_TOKEN)
    names = {line.split("{")[0].split(" ")[0] for line in body.decode().splitlines() if not line.startswith("#")}
    assert status == 200 and names <= {"jupyter_gpumem_hub_user_group_info", ""}, names
    assert http(f"{scraped.fleet.service}metrics", ADMIN_TOKEN)[0] == 200


def test_the_grafana_panels_of_the_recording_rules_run_against_prometheus(scraped: Scraped) -> None:
    dashboard = json.loads(FLEET_DASHBOARD.read_text())
    assert dashboard["title"] and dashboard["panels"]

    def answers() -> dict[str, int]:
        found = {
            p["title"]: sum(len(query(scraped.prometheus, t["expr"])) for t in p["targets"])
            for p in dashboard["panels"]
        }
        assert all(found.values()), found  # the recording rules, once evaluated
        return found

    assert eventually(answers, timeout=30) == {
        "GPU memory by user": len(HEALTHY),
        "Budget by user": len(HEALTHY),
        "Kernels over budget": 1,
        "Fleet GPU memory: used and total": 2,
        "Servers Prometheus cannot scrape": 1,
    }


def test_a_prometheus_that_stops_is_one_sentence_and_the_last_rows_stay_marked_stale(scraped: Scraped) -> None:
    def complete() -> None:
        assert sorted(figures(get(f"{scraped.service}api/rows"))) == HEALTHY

    eventually(complete, timeout=60)
    stop(scraped.process)  # the last test of this module: the fixture's Prometheus is gone after it

    def stale() -> dict[str, Any]:
        data = get(f"{scraped.service}api/rows")
        assert data["source"]["problem"], data["source"]
        return data

    data = eventually(stale, timeout=20)
    assert data["source"]["problem"].startswith(f"Prometheus at {scraped.prometheus} cannot be read: it cannot be")
    assert sorted(figures({"rows": [{**r, "problem": None} for r in data["rows"]]})) == HEALTHY
    assert all(r["stale_since"] is not None for r in data["rows"])
