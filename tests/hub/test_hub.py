"""The jupyter-gpumem JupyterHub service in a real JupyterHub (tests/hub_fixtures.py): configurable-http-proxy,
LocalProcessSpawner with two real Unix users made by useradd for this module (removed with their homes at
its end, also when it fails), per-group settings from a pre_spawn_hook, and Debian's prometheus scraping the
service's one /metrics. The users' servers and kernels run from a Python environment every user can read.

The scene, set up once for the module: gpumemstudent is in group "students" (budget 2 GiB, ceiling a quarter
of a GPU), gpumemstaff in group "staff" (ceiling 0.9 of a GPU), gpuadmin is the hub's admin (no server).
Each user's server starts a kernel that loads jupyter_gpumem from its environment's IPython configuration;
the scenario then gives the student's kernel 3 GiB on GPU 0 (over its budget), the staff user's kernel
4 GiB, and a process of no user here 1 GiB. Both kernels see each other's process in the driver's list,
owned by another Unix user: what one user may learn of the other is tested here.
"""

from __future__ import annotations

import json
import pwd
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest
from hub_fixtures import ADMIN_TOKEN, PROMETHEUS_TOKEN, ROOT, Hub, run_user, running_hub, shared_directory, unix_users
from playwright.sync_api import Locator, Page, expect, sync_playwright
from server_fixtures import eventually, http, prometheus_query, running_prometheus, wait_for

from jupyter_gpumem.gpu.model import Device, GpuProcess, Snapshot
from jupyter_gpumem.hub import group_settings
from jupyter_gpumem.server import GpumemServer
from jupyter_gpumem.server.figures import KernelSource, make_figures
from jupyter_gpumem.server.handlers import encode
from jupyter_gpumem.server.metrics import rows
from jupyter_gpumem.units import GiB

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ui"))
from labserver import ARTIFACTS, launch_chromium

pytestmark = pytest.mark.server

GPU0 = "GPU-5e5e5e5e-0000-4000-8000-000000000000"
KERNEL_CONFIG = 'c.InteractiveShellApp.extensions = ["jupyter_gpumem"]\n'
STUDENT, STAFF = run_user("gpumemstudent"), run_user("gpumemstaff")  # Unix users made for this module
GROUPS = {"students": [STUDENT], "staff": [STAFF]}
GRAFANA = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "jupyter-gpumem-hub.json"
POLICIES = {"students": {"limit": "2GiB", "max_fraction": "0.25"}, "staff": {"max_fraction": "0.9"}}
CONNECT = "import jupyter_gpumem; jupyter_gpumem._connect_sidebar(interval_s=0.5, history_s=60)"


def scenario(student: int, staff: int) -> str:
    """The staff user's process is named as its host process is (python), so the student's kernel and server
    take it for what it is, a process of another Unix user, and not another PID namespace's."""
    return f"""driver version=550.54.15 cuda=12040
gpu name="NVIDIA A100-SXM4-40GB" uuid={GPU0} total=40960MiB used=9000MiB util=42 cc=8.0
proc gpu=0 pid={student} used=3072MiB name=python
proc gpu=0 pid={staff} used=4096MiB name="python train.py --secret-flag"
proc gpu=0 pid=7002 used=1024MiB name=python
"""


@dataclass
class Scene:
    hub: Hub
    kernel_ids: dict[str, str]  # user -> the id of their kernel
    pids: dict[str, int]  # user -> their kernel's PID

    @property
    def kernel_id(self) -> str:
        return self.kernel_ids[STUDENT]

    def processes_of(self, user: str) -> set[int]:
        """The PIDs of every process the user runs now (their server and kernel among them)."""
        uid = pwd.getpwnam(user).pw_uid
        return {p.pid for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real == uid}


def reporting(hub: Hub, user: str, kernel_id: str) -> Callable[[], dict[str, Any] | None]:
    """The kernel's entry in its server's /api/gpumem/v1 once it reports there."""

    def check() -> dict[str, Any] | None:
        status, body = hub.user_get(user, "/api/gpumem/v1")
        kernels = json.loads(body)["kernels"] if status == 200 else []
        return next((k for k in kernels if k["id"] == kernel_id and k["status"] == "reporting"), None)

    return check


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory, standin_dir: Path) -> Iterator[Scene]:
    base = tmp_path_factory.mktemp("hub")
    with (
        unix_users([STUDENT, STAFF]),
        shared_directory(standin_dir, KERNEL_CONFIG) as shared,
        running_hub(base, shared, scenario(7000, 7001), GROUPS, POLICIES) as hub,
    ):
        for user in (STUDENT, STAFF):
            hub.start_server(user)
        for user in (STUDENT, STAFF):
            hub.wait_for_server(user)
        kernel_ids: dict[str, str] = {}
        for user in (STUDENT, STAFF):
            status, body = http(f"{hub.url}/user/{user}/api/kernels", ADMIN_TOKEN, "POST", {"name": "python3"})
            assert status == 201, (status, body)
            kernel_ids[user] = json.loads(body)["id"]
        pids: dict[str, int] = {}
        for user, kernel_id in kernel_ids.items():
            pids[user] = wait_for(reporting(hub, user, kernel_id), 90, f"{user}'s kernel to report")["pid"]
            hub.run_cell(user, kernel_id, "x = 1")  # the server has seen it busy, then idle
        hub.set_scenario(scenario(pids[STUDENT], pids[STAFF]))
        yield Scene(hub, kernel_ids, pids)


def service_rows(hub: Hub, token: str = ADMIN_TOKEN) -> list[dict[str, Any]]:
    status, body = http(f"{hub.url}/services/gpumem/api/rows", token)
    assert status == 200, (status, body)
    return list(json.loads(body)["rows"])


def row_of(scene: Scene, user: str) -> dict[str, Any]:
    rows = [r for r in service_rows(scene.hub) if r["user"] == user and r["kernel_id"] == scene.kernel_ids[user]]
    assert [r["gpu_uuid"] for r in rows] == [GPU0], rows
    return rows[0]


def students_row(scene: Scene) -> dict[str, Any]:
    row = row_of(scene, STUDENT)
    assert row["used_bytes"] == 3 * GiB, row  # the scenario with the kernels' own PIDs is in force
    return row


def test_each_users_server_and_kernel_run_as_their_own_unix_user(scene: Scene) -> None:
    for user in (STUDENT, STAFF):
        kernel = psutil.Process(scene.pids[user])
        server = kernel.parent()  # the single-user server that started it
        assert server is not None
        assert (kernel.username(), server.username()) == (user, user)
        assert server.cwd() == pwd.getpwnam(user).pw_dir


def test_the_service_shows_the_students_kernel_over_their_groups_budget_with_its_ceiling(scene: Scene) -> None:
    row = eventually(lambda: students_row(scene), timeout=60)
    assert (row["server"], row["status"], row["used_bytes"], row["budget_bytes"]) == ("", "reporting", 3 * GiB, 2 * GiB)
    assert row["over_budget"] is True
    # The group's settings reached the spawned server's kernel through the pre_spawn_hook's environment.
    assert (row["ceiling_fraction"], row["ceiling_bytes"], row["limit_kind"]) == (0.25, None, "cooperative")
    staff = eventually(lambda: row_of(scene, STAFF), timeout=60)
    assert (staff["used_bytes"], staff["ceiling_fraction"], staff["over_budget"]) == (4 * GiB, 0.9, False), staff


def idle_row(scene: Scene) -> dict[str, Any]:
    row = students_row(scene)
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


def test_the_admin_page_lists_users_and_a_non_admin_is_refused(scene: Scene) -> None:
    eventually(lambda: students_row(scene), timeout=60)
    status, page = http(f"{scene.hub.url}/services/gpumem/", ADMIN_TOKEN)
    assert status == 200
    # The page renders the JSON (tests/hub/test_page.py drives it in chromium); the JSON has both users.
    assert "<title>GPU memory by user</title>" in page.decode() and 'fetch("api/rows?"' in page.decode()
    summary = json.loads(http(f"{scene.hub.url}/services/gpumem/api/rows", ADMIN_TOKEN)[1])["summary"]
    assert [u["user"] for u in summary["users"]["top"]] == [STAFF, STUDENT]
    assert [k["user"] for k in summary["over_budget"]["top"]] == [STUDENT]
    student = scene.hub.token_for(STUDENT)
    assert http(f"{scene.hub.url}/services/gpumem/", student)[0] == 403
    assert http(f"{scene.hub.url}/services/gpumem/metrics", student)[0] == 403
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
    eventually(lambda: students_row(scene), timeout=60)
    eventually(lambda: row_of(scene, STAFF), timeout=60)
    status, text = http(f"{scene.hub.url}/services/gpumem/metrics", PROMETHEUS_TOKEN)
    assert status == 200
    assert http(f"{scene.hub.url}/services/gpumem/", PROMETHEUS_TOKEN)[0] == 403  # the page is for admins
    lint = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, timeout=60)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    target = scene.hub.url.removeprefix("http://")

    def by_user(url: str, query: str, users: int) -> dict[str, dict[str, Any]]:
        result = {r["metric"]["user"]: r for r in prometheus_query(url, query)}
        assert len(result) == users, result
        return result

    with running_prometheus(tmp_path, target, PROMETHEUS_TOKEN, metrics_path="/services/gpumem/metrics") as url:
        query = "jupyter_gpumem_hub_kernel_memory_used_bytes"
        used = eventually(lambda: by_user(url, query, 2), timeout=60)
        labels = used[STUDENT]["metric"]
        assert (labels["kernel_id"], labels["gpu_uuid"]) == (scene.kernel_id, GPU0)
        assert (float(used[STUDENT]["value"][1]), float(used[STAFF]["value"][1])) == (3 * GiB, 4 * GiB)
        over = prometheus_query(url, "jupyter_gpumem_hub_kernel_over_budget == 1")
        assert [r["metric"]["user"] for r in over] == [STUDENT]
        # Every query of the Grafana dashboard (docs/grafana/) runs; Grafana itself is not installable here.
        dashboard = json.loads(GRAFANA.read_text())
        answers = {
            p["title"]: prometheus_query(url, t["expr"].replace("> 600", "> 0"))
            for p in dashboard["panels"]
            for t in p["targets"]
        }
        assert {title: len(result) for title, result in answers.items()} == {
            "GPU memory by user": 2,
            "Budget by user": 2,  # the staff user's: their group's ceiling, the budget of a kernel without one
            "Kernels over budget": 1,
            "Memory used / budget": 2,
            "Idle kernels holding GPU memory": 2,
            "Servers the service cannot read": 1,
        }
        ratio = {r["metric"]["user"]: float(r["value"][1]) for r in answers["Memory used / budget"]}
        assert ratio[STUDENT] == 1.5 and ratio[STAFF] < 1, ratio
        assert float(answers["Servers the service cannot read"][0]["value"][1]) == 0


def test_a_ceiling_is_the_lowest_of_the_users_groups_and_other_settings_the_first_groups() -> None:
    policies = {"a": {"limit": "4GiB", "max_fraction": "0.5"}, "b": {"limit": "8GiB", "max_fraction": "25%"}}
    assert group_settings(["b", "a"], policies) == {
        "JUPYTER_GPUMEM_LIMIT": "4GiB",
        "JUPYTER_GPUMEM_MAX_FRACTION": "25%",
    }
    assert group_settings(["c"], policies) == {}


def pids_in(value: Any) -> set[int]:
    """Every number a JSON value gives as a PID (a key naming "pid": pid, own_pid...)."""
    if isinstance(value, dict):
        found = {v for k, v in value.items() if "pid" in k and isinstance(v, int)}
        return found.union(*(pids_in(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(pids_in(v) for v in value))
    return set()


def numbers_in(text: str) -> set[int]:
    """The whole numbers in a text that could be PIDs: not a size, a percentage or part of a version."""
    return {int(n) for n in re.findall(r"(?<![\w.])(\d+)(?![\w.]|\s*(?:[KMGT]i?B\b|%))", text)}


def staffs(scene: Scene) -> tuple[set[int], tuple[str, ...]]:
    """What the student must not learn of the staff user: the PIDs of their processes (their kernel's among
    them), and their name and command line."""
    pids = scene.processes_of(STAFF) | {scene.pids[STAFF]}
    return pids, (STAFF, "secret-flag", "train.py")


def test_under_a_hub_the_students_server_shows_other_users_processes_as_one_aggregate(scene: Scene) -> None:
    def others() -> dict[str, Any]:
        status, body = scene.hub.user_get(STUDENT, "/api/gpumem/v1")
        assert status == 200
        gpu = json.loads(body)["gpus"][0]
        assert gpu["other_processes"] == 2, gpu  # the staff user's kernel and a process of no user here
        return dict(json.loads(body))

    api = eventually(others, timeout=60)
    gpu = api["gpus"][0]
    assert (gpu["other_bytes"], gpu["other_users"], gpu["other_process_list"]) == (5 * GiB, None, None)
    pids, words = staffs(scene)
    assert scene.pids[STUDENT] in pids_in(api)  # PIDs are there to be found: the student's own kernel's
    assert not pids_in(api) & pids, api
    body = json.dumps(api)
    assert not [w for w in words if w in body], body
    status, text = scene.hub.user_get(STUDENT, "/metrics")
    assert status == 200
    samples = [line for line in text.decode().splitlines() if not line.startswith("#")]
    assert not [line for line in samples if "other_user" in line]
    aggregate = [line for line in samples if line.startswith("jupyter_gpumem_gpu_other_processes{")]
    assert aggregate == [f'jupyter_gpumem_gpu_other_processes{{gpu_index="0",gpu_uuid="{GPU0}"}} 2.0'], aggregate
    assert [line for line in samples if f'kernel_id="{scene.kernel_id}"' in line], samples
    labels = [value for line in samples for value in re.findall(r'="([^"]*)"', line)]
    assert not [v for v in labels if v.isdigit() and int(v) in pids], samples
    assert not [line for line in samples if any(w in line for w in words)], samples


def test_a_users_token_opens_their_own_servers_metrics_and_not_another_users(scene: Scene) -> None:
    student = scene.hub.token_for(STUDENT)
    assert scene.hub.user_get(STUDENT, "/metrics", student)[0] == 200
    assert scene.hub.user_get(STAFF, "/metrics", student)[0] == 403
    assert scene.hub.user_get(STAFF, "/api/gpumem/v1", student)[0] == 403


def test_the_students_status_shows_other_users_only_as_a_sum(scene: Scene) -> None:
    student = scene.hub.token_for(STUDENT)
    output = scene.hub.run_cell(STUDENT, scene.kernel_id, "%gpumem status", token=student)
    assert output.error is None, output
    text = output.text
    pids, words = staffs(scene)
    assert str(scene.pids[STUDENT]) in text, text  # its own process is listed
    assert "other users" in text.lower(), text
    assert not numbers_in(text) & pids, text
    assert not [w for w in words if w in text], text


def test_the_students_sidebar_stream_shows_other_users_only_as_a_sum(scene: Scene) -> None:
    student = scene.hub.token_for(STUDENT)
    comm = scene.hub.comm(STUDENT, scene.kernel_id, CONNECT, messages=3, token=student)
    assert comm.opened["type"] == "hello", comm.opened
    pids, words = staffs(scene)
    for message in comm.messages:
        assert message["type"] == "sample", message
        (gpu,) = message["sample"]["gpus"]
        listed = {p["pid"]: p for p in gpu["processes"]}
        assert listed[scene.pids[STUDENT]]["self"] is True, gpu
        assert set(listed) == {scene.pids[STUDENT]}, gpu  # no other process of the student's
        # The staff user's kernel and the process of no user here: counted, not shown.
        assert gpu["others"] == {"processes": 2, "used_bytes": 5 * GiB, "users": None}, gpu
        assert not pids_in(message) & pids, message
    raw = "".join(comm.raw)
    assert not [w for w in words if w in raw], raw


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
    return make_figures(snapshot, [KernelSource("k1", 4242, None)], now=1000.0, stale_after_s=30, privacy=privacy)


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


INLINE_NOTEBOOK = "gpumem-hub-inline.ipynb"  # in the student's home
TAKE_THE_LABEXTENSIONS_MODULE = """() => {
  // What the labextension offers the loader, and the module the loader keeps for the page: the names taken out.
  const ours = k => k === Symbol.for('jupyter-gpumem.inline') || k.description.startsWith('jupyter-gpumem.loader@');
  const keys = Object.getOwnPropertySymbols(globalThis).filter(ours);
  keys.forEach(k => delete globalThis[k]);
  return keys.map(k => k.description).sort();
}"""


@dataclass
class StudentsLab:
    page: Page
    answered: list[tuple[str, int]]  # the path and status of every file the page asked of the static route


@pytest.fixture
def students_lab(scene: Scene) -> Iterator[StudentsLab]:
    """Chromium logged in as the student through the hub's form, JupyterLab open at /user/gpumemstudent-<pid>/lab on
    INLINE_NOTEBOOK with its kernel idle. The notebook, its kernel and the scenario's change go at the end."""
    hub, prefix = scene.hub, f"/user/{STUDENT}/"
    cells = ["%load_ext jupyter_gpumem\nimport os\nos.getpid()", "%gpumem show", "%gpumem show"]
    notebook = {
        "cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": c}
                  for c in cells],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }  # fmt: skip
    contents = f"{hub.url}{prefix}api/contents/{INLINE_NOTEBOOK}"
    status, body = http(contents, ADMIN_TOKEN, "PUT", {"type": "notebook", "content": notebook})
    assert status == 201, (status, body)
    try:
        with sync_playwright() as playwright:
            browser = launch_chromium(playwright)
            try:
                page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
                page.set_default_timeout(30_000)
                answered: list[tuple[str, int]] = []
                # The route under a user's prefix or at the root (not the labextension's files, under lab/extensions/).
                static = re.compile(r"^https?://[^/]+(/(?:user/[^/]+/)?jupyter-gpumem/static/\S*)")
                page.on("response", lambda r: answered.extend((p, r.status) for p in static.findall(r.url)))
                page.goto(f"{hub.url}/hub/login")
                page.locator("#username_input").fill(STUDENT)
                page.locator("#password_input").fill("gpumem-test-password")
                page.locator("#login_submit").click()
                page.wait_for_url(re.compile(re.escape(f"{hub.url}{prefix}")))
                # The notebook's kernel connection, then its kernel idle (the toolbar says idle before a kernel,
                # and a cell run before there is one is dropped).
                with page.expect_websocket(lambda ws: f"{prefix}api/kernels/" in ws.url, timeout=90_000):
                    page.goto(f"{hub.url}{prefix}lab/tree/{INLINE_NOTEBOOK}?reset")
                indicator = page.locator(".jp-NotebookPanel:visible .jp-Notebook-ExecutionIndicator")
                expect(indicator).to_have_attribute("data-status", "idle", timeout=60_000)
                yield StudentsLab(page, answered)
            finally:
                browser.close()
    finally:
        hub.set_scenario(scenario(scene.pids[STUDENT], scene.pids[STAFF]))
        status, sessions = http(f"{hub.url}{prefix}api/sessions", ADMIN_TOKEN)
        for session in json.loads(sessions) if status == 200 else []:
            if session["path"] == INLINE_NOTEBOOK:
                http(f"{hub.url}{prefix}api/sessions/{session['id']}", ADMIN_TOKEN, "DELETE")
        http(contents, ADMIN_TOKEN, "DELETE")


def run_in_lab(page: Page, index: int, timeout_ms: float = 30_000) -> str:
    """Shift+Enter in cell ``index`` of the open notebook; its output's text once it has run."""
    cell = page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-Cell").nth(index)
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    expect(cell.locator(".jp-InputPrompt")).to_have_text(re.compile(r"\[\d+\]:"), timeout=timeout_ms)
    return "".join(cell.locator(".jp-OutputArea-output").all_inner_texts())


def drawn(view: Locator) -> None:
    """The view shows the notebook's kernel against its budget, marks it in the table, and draws its line."""
    expect(view.locator(".jp-GpuMem-headline")).to_have_text("1.0 of 2.0 GiB budget (50%, not in force)")
    expect(view.locator("tr.jp-GpuMem-self .jp-GpuMem-badge")).to_have_text("this kernel")
    expect(view.locator(".jp-GpuMem-plot .scatterlayer .traceown .js-line")).to_have_attribute("d", re.compile("L"))
    expect(view.locator(".jp-GpuMem-source")).to_have_count(0)  # no "view code from the kernel"


@pytest.mark.browser
def test_the_inline_view_works_in_the_students_jupyterlab_behind_the_hubs_prefix(
    scene: Scene, students_lab: StudentsLab
) -> None:
    """The first view takes its module from the labextension the student's environment has (nothing fetched);
    the second, with that module and the loader's page cache taken out of the page, from the server extension's
    static route under /user/gpumemstudent-<pid>/, and draws its chart all the same."""
    page, answered, prefix = students_lab.page, students_lab.answered, f"/user/{STUDENT}/"
    version = json.loads((ROOT / "package.json").read_text())["version"]
    config = page.evaluate("() => JSON.parse(document.getElementById('jupyter-config-data').textContent)")
    assert config["baseUrl"] == prefix  # what the loader resolves the route against
    pid = int(run_in_lab(page, 0).split()[-1])
    # The notebook's kernel holds 1 GiB of the student's 2 GiB budget (their group's, through the spawner).
    used = f"proc gpu=0 pid={pid} used=1024MiB name=python\n"
    scene.hub.set_scenario(scenario(scene.pids[STUDENT], scene.pids[STAFF]) + used)
    run_in_lab(page, 1)
    views = page.locator(".jp-GpuMem-inline")
    drawn(views.first)
    assert answered == []  # the first view's module was the labextension's: nothing from the route
    taken = page.evaluate(TAKE_THE_LABEXTENSIONS_MODULE)
    assert taken == ["jupyter-gpumem.inline", f"jupyter-gpumem.loader@{version}"]
    run_in_lab(page, 2)
    drawn(views.nth(1))
    # The module, plotly's chunk and the styles, each under the user's prefix and found there.
    assert (f"{prefix}jupyter-gpumem/static/inline.js?v={version}", 200) in answered, answered
    assert sorted(re.sub(r"(\?v=.*|-[0-9A-Z]{8}\.js)$", "", p) for p, _ in answered) == [
        f"{prefix}jupyter-gpumem/static/{name}" for name in ("base.css", "chunk", "inline.js", "plotly-basic.min")
    ], answered
    assert {status for _, status in answered} == {200}, answered
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(2).screenshot(path=ARTIFACTS / "hub-inline-view.png")


def test_a_students_fraction_above_their_ceiling_is_refused_and_the_staff_users_accepted(scene: Scene) -> None:
    """Last in this module: the staff user's kernel keeps the budget it is given here."""
    refused = scene.hub.run_cell(STUDENT, scene.kernel_id, "%gpumem fraction=0.5")
    assert "above this server's ceiling of" in refused.text, refused
    staff = scene.kernel_ids[STAFF]
    accepted = scene.hub.run_cell(STAFF, staff, "%gpumem fraction=0.5")
    assert accepted.error is None and "ceiling" not in accepted.text, accepted

    def budgets() -> tuple[int, int]:
        found = (row_of(scene, STUDENT)["budget_bytes"], row_of(scene, STAFF)["budget_bytes"])
        assert found == (2 * GiB, 20 * GiB), found  # half of the 40 GiB GPU; the student's unchanged
        return found

    eventually(budgets, timeout=60)
