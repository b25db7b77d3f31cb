"""The shipped Prometheus files (jupyter_gpumem/hub/prometheus/): promtool checks the configurations and tests
the rules and alerts (tests/hub/rules_test.yml); Debian's prometheus, configured by the shipped prometheus.yml,
discovers 120 simulated servers from the targets the service writes (file_sd) and scrapes each one."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
from pathlib import Path

import pytest
from fleet import ADMIN_TOKEN, GiB, kinds
from hub_fixtures import running_fleet
from server_fixtures import eventually, free_port, http, stop

import jupyter_gpumem.hub

SHIPPED = Path(jupyter_gpumem.hub.__file__).parent / "prometheus"
SERVERS = 120
FAULTS = {"404": 5, "hung": 5}


def configured(tmp_path: Path, name: str, targets: Path | None = None, interval: str = "30s") -> Path:
    """A shipped configuration with this test's token file, targets file and interval, next to its rules."""
    (tmp_path / "token").write_text(ADMIN_TOKEN)
    shutil.copy(SHIPPED / "rules.yml", tmp_path / "rules.yml")
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


def test_prometheus_discovers_and_scrapes_every_server_from_the_services_targets(tmp_path: Path) -> None:
    targets = tmp_path / "targets.json"
    env = {"JUPYTER_GPUMEM_HUB_FILE_SD": str(targets), "JUPYTER_GPUMEM_HUB_INTERVAL_S": "1"}
    faults = ",".join(f"{k}={v}" for k, v in FAULTS.items())
    healthy = [u for u, k in kinds(SERVERS, FAULTS) if k == "healthy"]
    with running_fleet(tmp_path / "fleet", SERVERS, faults, env):
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
        try:
            deadline, found = time.monotonic() + 60, []
            while time.monotonic() < deadline:
                time.sleep(1)
                try:
                    found = query(url, "jupyter_gpumem_kernel_memory_used_bytes")
                except OSError:
                    continue
                if len(found) >= len(healthy):
                    break
            assert sorted(r["metric"]["user"] for r in found) == healthy  # type: ignore[index]
            up = query(url, 'count(up{job="jupyter-gpumem-file-sd"} == 0)')
            assert up and up[0]["value"][1] == str(sum(FAULTS.values())), up  # type: ignore[index]

            # The recording rules, evaluated every second: user number n holds (n % 7) / 2 GiB (fleet.py).
            def by_user() -> dict[str, float]:
                found = query(url, "user:jupyter_gpumem_kernel_memory_used_bytes:sum")
                assert len(found) == len(healthy)
                return {r["metric"]["user"]: float(r["value"][1]) for r in found}  # type: ignore[index]

            held = eventually(by_user, timeout=20)
            assert held == {u: (int(u[1:]) % 7) * GiB / 2 for u in healthy}
        finally:
            stop(process)
            log.close()
