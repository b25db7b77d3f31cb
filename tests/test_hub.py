"""The jupyter-gpumem JupyterHub service in a real JupyterHub (tests/hub_fixtures.py): configurable-http-proxy,
SimpleLocalProcessSpawner (every user's server runs as this test's Unix user: with LocalProcessSpawner and
real Unix users made by useradd, the spawn fails with "Permission denied" on the test's Python, which lives
under /root, mode 0700, on the test machines), per-group settings
from a pre_spawn_hook, and Debian's prometheus scraping the service's one /metrics.

The scene, set up once for the module: alice is in group "students" (budget 2 GiB, ceiling a quarter of
a GPU), gpuadmin is the hub's admin. Alice's server starts a kernel that loads jupyter_gpumem from its
IPython profile; the scenario then gives that kernel 3 GiB on GPU 0, over its budget.
"""

from __future__ import annotations

import json
import re
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hub_fixtures import ADMIN_TOKEN, PROMETHEUS_TOKEN, Hub, running_hub
from server_fixtures import eventually, http, prometheus_query, running_prometheus, wait_for

from jupyter_gpumem.hub import group_settings
from jupyter_gpumem.model import Device, GpuProcess, Snapshot
from jupyter_gpumem.server import GpumemServer
from jupyter_gpumem.server.api import encode
from jupyter_gpumem.server.metrics import rows
from jupyter_gpumem.server.view import KernelSource, make_view
from jupyter_gpumem.units import GiB

pytestmark = pytest.mark.server

GPU0 = "GPU-5e5e5e5e-0000-4000-8000-000000000000"
KERNEL_CONFIG = 'c.InteractiveShellApp.extensions = ["jupyter_gpumem"]\n'
GROUPS = {"students": ["alice"], "staff": ["gpuadmin"]}
GRAFANA = Path(__file__).resolve().parent.parent / "docs" / "grafana" / "jupyter-gpumem-hub.json"
POLICIES = {"students": {"limit": "2GiB", "max_fraction": "0.25"}, "staff": {"max_limit": "30GiB"}}


def scenario(pid: int) -> str:
    return f"""driver version=550.54.15 cuda=12040
gpu name="NVIDIA A100-SXM4-40GB" uuid={GPU0} total=40960MiB used=9000MiB util=42 cc=8.0
proc gpu=0 pid={pid} used=3072MiB name=python
proc gpu=0 pid=7001 used=4096MiB name="train.py --secret-flag"
proc gpu=0 pid=7002 used=1024MiB name=python
"""


@dataclass
class Scene:
    hub: Hub
    kernel_id: str
    pid: int


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory, standin_dir: Path) -> Iterator[Scene]:
    base = tmp_path_factory.mktemp("hub")
    with running_hub(base, standin_dir, scenario(1), KERNEL_CONFIG, GROUPS, POLICIES) as hub:
        hub.start_server("alice")
        status, body = http(f"{hub.url}/user/alice/api/kernels", ADMIN_TOKEN, "POST", {"name": "python3"})
        assert status == 201, (status, body)
        kernel_id = json.loads(body)["id"]

        def reporting() -> dict[str, Any] | None:
            status, body = hub.user_get("alice", "/api/gpumem/v1")
            kernels = json.loads(body)["kernels"] if status == 200 else []
            return next((k for k in kernels if k["id"] == kernel_id and k["status"] == "reporting"), None)

        kernel = wait_for(reporting, 90, "alice's kernel to report to her server")
        hub.run_cell("alice", kernel_id, "x = 1")  # the server has seen it busy, then idle
        hub.scenario.write_text(scenario(kernel["pid"]))
        yield Scene(hub, kernel_id, kernel["pid"])


def service_rows(hub: Hub, token: str = ADMIN_TOKEN) -> list[dict[str, Any]]:
    status, body = http(f"{hub.url}/services/gpumem/api/rows", token)
    assert status == 200, (status, body)
    return list(json.loads(body)["rows"])


def alices_row(scene: Scene) -> dict[str, Any]:
    rows = [r for r in service_rows(scene.hub) if r["user"] == "alice" and r["kernel_id"] == scene.kernel_id]
    assert [r["gpu_uuid"] for r in rows] == [GPU0], rows
    return rows[0]


def test_the_service_shows_alices_kernel_over_her_groups_budget_with_its_ceiling(scene: Scene) -> None:
    row = eventually(lambda: alices_row(scene), timeout=60)
    assert (row["server"], row["status"], row["used_bytes"], row["budget_bytes"]) == ("", "reporting", 3 * GiB, 2 * GiB)
    assert row["over_budget"] is True
    # The group's settings reached the spawned server's kernel through the pre_spawn_hook's environment.
    assert (row["ceiling_fraction"], row["ceiling_bytes"], row["limit_kind"]) == (0.25, None, "cooperative")


def idle_row(scene: Scene) -> dict[str, Any]:
    row = alices_row(scene)
    assert row["execution_state"] == "idle" and row["idle_s"] is not None, row
    return row


def test_an_idle_kernel_holding_memory_shows_how_long_it_has_been_idle(scene: Scene) -> None:
    first = eventually(lambda: idle_row(scene), timeout=60)

    def longer() -> dict[str, Any]:
        row = idle_row(scene)
        assert row["idle_s"] > first["idle_s"] + 1, (row, first)
        return row

    later = eventually(longer, timeout=30)
    assert later["used_bytes"] == 3 * GiB


def _fail() -> None:
    raise AssertionError("not yet")


def test_the_admin_page_lists_users_and_a_non_admin_is_refused(scene: Scene) -> None:
    eventually(lambda: alices_row(scene), timeout=60)
    status, page = http(f"{scene.hub.url}/services/gpumem/", ADMIN_TOKEN)
    assert status == 200
    text = page.decode()
    assert "<title>GPU memory by user</title>" in text
    row = re.search(r"<tr class=over>(.*?)</tr>", text)
    assert row is not None, text
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", row.group(1))
    assert cells[0:2] == ["alice", "(default)"] and cells[3:7] == ["0", "3072 MiB", "2048 MiB", "yes"], cells
    assert cells[7:9] == ["25%", "cooperative"], cells
    alice = scene.hub.token_for("alice")
    assert http(f"{scene.hub.url}/services/gpumem/", alice)[0] == 403
    assert http(f"{scene.hub.url}/services/gpumem/metrics", alice)[0] == 403
    admin = scene.hub.token_for("gpuadmin")
    assert http(f"{scene.hub.url}/services/gpumem/", admin)[0] == 200


def test_a_browser_without_a_login_is_sent_through_the_hubs_oauth(scene: Scene) -> None:
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    with pytest.raises(urllib.error.HTTPError) as answer:
        opener.open(f"{scene.hub.url}/services/gpumem/", timeout=30)
    assert answer.value.code == 302
    location = answer.value.headers["Location"]
    assert "/hub/api/oauth2/authorize" in location and "client_id=service-gpumem" in location, location


def test_prometheus_scrapes_every_users_kernels_from_the_services_one_target(scene: Scene, tmp_path: Path) -> None:
    eventually(lambda: alices_row(scene), timeout=60)
    status, text = http(f"{scene.hub.url}/services/gpumem/metrics", PROMETHEUS_TOKEN)
    assert status == 200
    assert http(f"{scene.hub.url}/services/gpumem/", PROMETHEUS_TOKEN)[0] == 403  # the page is for admins
    lint = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, timeout=60)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    target = scene.hub.url.removeprefix("http://")
    with running_prometheus(tmp_path, target, PROMETHEUS_TOKEN, metrics_path="/services/gpumem/metrics") as url:
        query = "jupyter_gpumem_hub_kernel_memory_used_bytes"
        result = eventually(lambda: prometheus_query(url, query) or _fail(), timeout=60)
        labels = result[0]["metric"]
        assert (labels["user"], labels["kernel_id"], labels["gpu_uuid"]) == ("alice", scene.kernel_id, GPU0)
        assert float(result[0]["value"][1]) == 3 * GiB
        over = prometheus_query(url, "jupyter_gpumem_hub_kernel_over_budget == 1")
        assert [r["metric"]["user"] for r in over] == ["alice"]
        # Every query of the Grafana dashboard (docs/grafana/) runs; Grafana itself is not installable here.
        dashboard = json.loads(GRAFANA.read_text())
        answers = {
            p["title"]: prometheus_query(url, t["expr"].replace("> 600", "> 0"))
            for p in dashboard["panels"]
            for t in p["targets"]
        }
        assert {title: len(result) for title, result in answers.items()} == {
            "GPU memory by user": 1,
            "Budget by user": 1,
            "Kernels over budget": 1,
            "Memory used / budget": 1,
            "Idle kernels holding GPU memory": 1,
            "Servers the service cannot read": 1,
        }
        assert float(answers["Memory used / budget"][0]["value"][1]) == 1.5
        assert float(answers["Servers the service cannot read"][0]["value"][1]) == 0


def test_a_ceiling_is_the_lowest_of_the_users_groups_and_other_settings_the_first_groups() -> None:
    policies = {"a": {"limit": "4GiB", "max_fraction": "0.5"}, "b": {"limit": "8GiB", "max_fraction": "25%"}}
    assert group_settings(["b", "a"], policies) == {
        "JUPYTER_GPUMEM_LIMIT": "4GiB",
        "JUPYTER_GPUMEM_MAX_FRACTION": "25%",
    }
    assert group_settings(["c"], policies) == {}


def test_under_a_hub_other_users_processes_are_one_aggregate_by_default(scene: Scene) -> None:
    def others() -> dict[str, Any]:
        status, body = scene.hub.user_get("alice", "/api/gpumem/v1")
        assert status == 200
        gpu = json.loads(body)["gpus"][0]
        assert gpu["other_processes"] == 2, gpu
        return dict(gpu)

    gpu = eventually(others, timeout=60)
    assert (gpu["other_bytes"], gpu["other_users"], gpu["other_process_list"]) == (5 * GiB, None, None)
    status, text = scene.hub.user_get("alice", "/metrics")
    assert status == 200
    samples = [line for line in text.decode().splitlines() if not line.startswith("#")]
    assert not [line for line in samples if "other_user" in line]
    assert not [line for line in samples if "7001" in line or "secret" in line]


def privacy_view(privacy: Any) -> Any:
    """alice's kernel (PID 4242) and three other processes: two of bob's, one the host does not show."""
    processes = (
        GpuProcess(4242, GPU0, 3 * GiB, "compute", "python", "alice", None, False),
        GpuProcess(7001, GPU0, 4 * GiB, "compute", "train.py --secret", "bob", None, False),
        GpuProcess(7002, GPU0, 1 * GiB, "compute", "python", "bob", None, False),
        GpuProcess(7003, GPU0, 2 * GiB, "compute", "python", None, None, False),
    )
    device = Device(0, GPU0, "NVIDIA A100-SXM4-40GB", total_bytes=40 * GiB, used_bytes=10 * GiB, processes=processes)
    snapshot = Snapshot(taken_at=1000.0, own_pid=-1, devices=(device,), driver_version="550.54.15")
    return make_view(snapshot, [KernelSource("k1", 4242, None)], now=1000.0, stale_after_s=30, privacy=privacy)


def test_privacy_names_sums_other_processes_per_user_and_list_adds_pids_never_command_lines() -> None:
    aggregate, names, listed = (
        json.loads(encode(privacy_view(p), 1.0))["gpus"][0] for p in ("aggregate", "names", "list")
    )
    assert (aggregate["other_processes"], aggregate["other_bytes"]) == (3, 7 * GiB)
    assert (aggregate["other_users"], aggregate["other_process_list"]) == (None, None)
    assert names["other_users"] == [
        {"user": None, "processes": 1, "used_bytes": 2 * GiB},
        {"user": "bob", "processes": 2, "used_bytes": 5 * GiB},
    ]
    assert names["other_process_list"] is None
    assert listed["other_process_list"] == [
        {"pid": 7001, "user": "bob", "used_bytes": 4 * GiB},
        {"pid": 7002, "user": "bob", "used_bytes": 1 * GiB},
        {"pid": 7003, "user": None, "used_bytes": 2 * GiB},
    ]
    for privacy in ("aggregate", "names", "list"):
        body = encode(privacy_view(privacy), 1.0).decode()
        assert "secret" not in body and "train.py" not in body
    by_user = {
        r[1]: r[2] for r in rows(privacy_view("names")) if r[0] == "jupyter_gpumem_gpu_other_user_memory_used_bytes"
    }
    assert by_user == {(GPU0, "0", "bob"): 5 * GiB, (GPU0, "0", ""): 2 * GiB}
    assert not [r for r in rows(privacy_view("aggregate")) if "other_user" in r[0]]


def test_privacy_defaults_to_aggregate_and_follows_its_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JUPYTER_GPUMEM_PRIVACY", raising=False)
    assert GpumemServer().privacy == "aggregate"
    monkeypatch.setenv("JUPYTER_GPUMEM_PRIVACY", "names")
    assert GpumemServer().privacy == "names"
    monkeypatch.setenv("JUPYTER_GPUMEM_PRIVACY", "everything")  # not a choice: the private default
    assert GpumemServer().privacy == "aggregate"
