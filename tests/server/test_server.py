"""The server extension (jupyter_gpumem.server) in a real `jupyter server` with real kernels, on the
stand-in NVML: /metrics, /api/gpumem/v1, promtool, and Debian's prometheus scraping it with the token.

The scene, set up once for the module: kernels A and B load jupyter_gpumem at start (the IPython
profile lists it, with a 3 GiB budget and a ceiling of half of each GPU, as a hub image would); B then
asks for 2 GiB, A's cell dies of a GPU out-of-memory error; kernel C (kernelspec "plain") does not load
it. The scenario is then rewritten with their real PIDs.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from server_fixtures import TOKEN, Server, eventually, prometheus_query, running_prometheus, running_server, wait_for

from jupyter_gpumem import __version__
from jupyter_gpumem.gpu.model import Device, GpuProcess, Snapshot
from jupyter_gpumem.server.figures import KernelSource, make_figures
from jupyter_gpumem.server.metrics import GpumemCollector, rows
from jupyter_gpumem.units import GiB, MiB
from jupyter_gpumem.wire.report import REPORT

pytestmark = pytest.mark.server

REPORT_FIXTURE = Path(__file__).parents[1] / "fixtures" / "report" / "report.json"  # a valid report file

GPU0 = "GPU-5e5e5e5e-0000-4000-8000-000000000000"
GPU1 = "GPU-5e5e5e5e-0000-4000-8000-000000000001"
KERNEL_CONFIG = """
c.InteractiveShellApp.extensions = ["jupyter_gpumem"]
c.GpumemConfig.limit = "3GiB"
c.GpumemConfig.max_fraction = 0.5
"""
JAX_OOM = """
class XlaRuntimeError(RuntimeError):  # what jaxlib raises; recognised by its name and message alone
    pass
raise XlaRuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1003520000 bytes.")
"""


def scenario(a: int, b: int, c: int, *, b_used: str = "1000MiB", marker: int = 9000, extra: str = "") -> str:
    """Two GPUs: A on both, B and C on GPU 0, another user's job on each. ``marker`` (GPU 0's used MiB)
    tells one scenario's readings from another's."""
    return f"""driver version=550.54.15 cuda=12040
gpu name="NVIDIA A100-SXM4-40GB" uuid={GPU0} total=40960MiB used={marker}MiB util=42 cc=8.0
gpu name="NVIDIA A100-SXM4-40GB" uuid={GPU1} total=40960MiB used=1500MiB util=7 cc=8.0
proc gpu=0 pid={a} used=3500MiB name=python
proc gpu=1 pid={a} used=500MiB name=python
proc gpu=0 pid={b} used={b_used} name=python
proc gpu=0 pid={c} used=700MiB name=python
proc gpu=0 pid=7001 used=3000MiB name=train.py
proc gpu=1 pid=7002 used=1000MiB name="<img src=x onerror=alert(1)>"
{extra}"""


@dataclass
class Scene:
    server: Server
    a: str  # kernel ids
    b: str
    c: str
    pids: dict[str, int]

    def use(self, marker: int, **kwargs: Any) -> dict[str, Any]:
        """Rewrite the scenario with the kernels' PIDs and wait until the server shows it: the JSON API's answer."""
        self.server.set_scenario(scenario(*(self.pids[k] for k in (self.a, self.b, self.c)), marker=marker, **kwargs))
        return wait_for(
            lambda: (view := self.server.api())["gpus"][0]["used_bytes"] == marker * MiB and view,
            30,
            "the server to read the new scenario",
        )


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory, standin_dir: Path) -> Iterator[Scene]:
    base = tmp_path_factory.mktemp("server")
    with running_server(
        base, standin_dir, scenario(1001, 1002, 1003), KERNEL_CONFIG, arguments=("--GpumemServer.interval_s=0.25",)
    ) as server:
        if server.get("/api/gpumem/v1")[0] == 404:
            pytest.fail(
                "The jupyter-gpumem server extension is not enabled: its jupyter-config file comes with the "
                "package, so reinstall it (.ci/setup does)."
            )
        a, b, c = server.start_kernel(), server.start_kernel(), server.start_kernel("plain")
        # The last line: the first cell also shows the configured defaults.
        pids = {k: int(server.execute(k, "import os; print(os.getpid())")[0].split()[-1]) for k in (a, b, c)}
        assert server.execute(b, "%gpumem limit=2GiB")[1] is None
        assert server.execute(a, JAX_OOM)[1] == "XlaRuntimeError"
        yield Scene(server, a, b, c, pids)


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """jupyter-gpumem's samples in a /metrics text, by name and labels."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        if family.name.startswith("jupyter_gpumem_")
        for s in family.samples
    }


def gpu(uuid: str) -> dict[str, str]:
    return {"gpu_uuid": uuid, "gpu_index": uuid[-1]}


def expected_samples(scene: Scene, b_used_gpu0: float | None = 1000 * MiB) -> dict[Any, float]:
    """The scene's figures, as /metrics must give them. None: no sample."""
    a, b, c = scene.a, scene.b, scene.c
    rows: list[tuple[str, dict[str, str], float | None]] = [
        ("jupyter_gpumem_nvml_up", {}, 1),
        ("jupyter_gpumem_driver_answering", {}, 1),
        ("jupyter_gpumem_reading_age_seconds", {}, 0),
        ("jupyter_gpumem_gpu_info", {**gpu(GPU0), "name": "NVIDIA A100-SXM4-40GB"}, 1),
        ("jupyter_gpumem_gpu_info", {**gpu(GPU1), "name": "NVIDIA A100-SXM4-40GB"}, 1),
        ("jupyter_gpumem_gpu_lost", gpu(GPU0), 0),
        ("jupyter_gpumem_gpu_lost", gpu(GPU1), 0),
        ("jupyter_gpumem_gpu_memory_total_bytes", gpu(GPU0), 40 * GiB),
        ("jupyter_gpumem_gpu_memory_total_bytes", gpu(GPU1), 40 * GiB),
        ("jupyter_gpumem_gpu_memory_used_bytes", gpu(GPU0), 9000 * MiB),
        ("jupyter_gpumem_gpu_memory_used_bytes", gpu(GPU1), 1500 * MiB),
        ("jupyter_gpumem_gpu_utilization_ratio", gpu(GPU0), 0.42),
        ("jupyter_gpumem_gpu_utilization_ratio", gpu(GPU1), 0.07),
        ("jupyter_gpumem_gpu_other_processes", gpu(GPU0), 1),
        ("jupyter_gpumem_gpu_other_processes", gpu(GPU1), 1),
        ("jupyter_gpumem_gpu_other_processes_memory_used_bytes", gpu(GPU0), 3000 * MiB),
        ("jupyter_gpumem_gpu_other_processes_memory_used_bytes", gpu(GPU1), 1000 * MiB),
        ("jupyter_gpumem_kernel_reporting", {"kernel_id": a}, 1),
        ("jupyter_gpumem_kernel_reporting", {"kernel_id": b}, 1),
        ("jupyter_gpumem_kernel_reporting", {"kernel_id": c}, 0),
        ("jupyter_gpumem_kernel_oom_errors_total", {"kernel_id": a}, 1),
        ("jupyter_gpumem_kernel_oom_errors_total", {"kernel_id": b}, 0),
        ("jupyter_gpumem_kernel_ceiling_ratio", {"kernel_id": a}, 0.5),
        ("jupyter_gpumem_kernel_ceiling_ratio", {"kernel_id": b}, 0.5),
        # Each kernel idle once its cells have run (its idle time, changing every reading, is checked on its own).
        ("jupyter_gpumem_kernel_busy", {"kernel_id": a}, 0),
        ("jupyter_gpumem_kernel_busy", {"kernel_id": b}, 0),
        ("jupyter_gpumem_kernel_busy", {"kernel_id": c}, 0),
    ]
    per_gpu = [  # kernel, GPU, memory, budget, over budget
        (a, GPU0, 3500 * MiB, 3 * GiB),
        (a, GPU1, 500 * MiB, 3 * GiB),
        (b, GPU0, b_used_gpu0, 2 * GiB),
        (c, GPU0, 700 * MiB, None),
    ]
    for kernel, uuid, used, budget in per_gpu:
        labels = {"kernel_id": kernel, **gpu(uuid)}
        rows.append(("jupyter_gpumem_kernel_memory_used_bytes", labels, used))
        rows.append(("jupyter_gpumem_kernel_budget_bytes", labels, budget))
        over = None if used is None or budget is None else int(used > budget)
        rows.append(("jupyter_gpumem_kernel_over_budget", labels, over))
        if kernel != c:  # the reporting kernels see their own PID in NVML's list: exact, and %gpumem's limit
            rows.append(("jupyter_gpumem_kernel_own_memory_bytes", {**labels, "source": "exact"}, used))
            rows.append(("jupyter_gpumem_kernel_limit_info", {**labels, "kind": "cooperative", "hard": "false"}, 1))
    return {(name, frozenset(labels.items())): value for name, labels, value in rows if value is not None}


CHANGING = ("jupyter_gpumem_info", "jupyter_gpumem_read_timestamp_seconds", "jupyter_gpumem_kernel_idle_seconds")


def figures_only(found: dict[Any, float]) -> dict[Any, float]:
    """Without the samples that change every reading (checked on their own)."""
    return {k: v for k, v in found.items() if k[0] not in CHANGING}


@pytest.mark.kernel  # the scene's kernels are real: started by the server
def test_metrics_and_api_give_each_kernels_figures_by_kernel_id(scene: Scene) -> None:
    scene.use(marker=9000)

    def metrics_match() -> dict[Any, float]:
        found = samples(scene.server.metrics())
        assert figures_only(found) == expected_samples(scene)
        return found

    found = eventually(metrics_match)  # the kernels rewrite their reports within a second or so
    view = scene.server.api()
    info = {k: v for k, v in found.items() if k[0] == "jupyter_gpumem_info"}
    assert info == {
        (
            "jupyter_gpumem_info",
            frozenset({"version": __version__, "driver_version": "550.54.15", "simulated": "true"}.items()),
        ): 1
    }
    assert abs(found[("jupyter_gpumem_read_timestamp_seconds", frozenset())] - time.time()) < 5
    idle = {dict(k[1])["kernel_id"]: v for k, v in found.items() if k[0] == "jupyter_gpumem_kernel_idle_seconds"}
    assert set(idle) == {scene.a, scene.b, scene.c} and all(0 <= s < 600 for s in idle.values()), idle

    kernels = {k["id"]: k for k in view["kernels"]}
    assert set(kernels) == {scene.a, scene.b, scene.c}
    assert {k: (v["pid"], v["status"]) for k, v in kernels.items()} == {
        scene.a: (scene.pids[scene.a], "reporting"),
        scene.b: (scene.pids[scene.b], "reporting"),
        scene.c: (scene.pids[scene.c], "not_reporting"),
    }
    assert kernels[scene.b]["policy"] == "limit=2GiB" and kernels[scene.b]["policy_state"] == "recorded"
    assert kernels[scene.a]["ceiling"] == {"max_fraction": 0.5, "max_limit_bytes": None}
    assert kernels[scene.c]["ceiling"] == {"max_fraction": None, "max_limit_bytes": None}
    rows = {
        (kernel_id, g["uuid"]): (
            g["used_bytes"],
            g["budget_bytes"],
            g["over_budget"],
            g["in_force"],
            g["framework_bytes"],
        )
        for kernel_id, k in kernels.items()
        for g in k["gpus"]
    }
    assert rows == {
        (scene.a, GPU0): (3500 * MiB, 3 * GiB, True, False, None),
        (scene.a, GPU1): (500 * MiB, 3 * GiB, False, False, None),
        (scene.b, GPU0): (1000 * MiB, 2 * GiB, False, False, None),
        (scene.c, GPU0): (700 * MiB, None, None, False, None),
    }
    assert [
        (g["uuid"], g["used_bytes"], g["utilization_percent"], g["other_processes"], g["other_bytes"])
        for g in view["gpus"]
    ] == [
        (GPU0, 9000 * MiB, 42, 1, 3000 * MiB),
        (GPU1, 1500 * MiB, 7, 1, 1000 * MiB),
    ]
    assert (view["version"], view["driver_version"], view["simulated"]) == (1, "550.54.15", str(scene.server.scenario))


@pytest.mark.kernel
def test_memory_the_driver_cannot_tell_gives_no_sample_not_zero(scene: Scene) -> None:
    na = "proc gpu=1 pid=7003 used=na name=other\n"
    view = scene.use(b_used="na", marker=9100, extra=na)
    found = samples(scene.server.metrics())
    b_gpu0 = frozenset({"kernel_id": scene.b, **gpu(GPU0)}.items())
    assert ("jupyter_gpumem_kernel_memory_used_bytes", b_gpu0) not in found
    assert ("jupyter_gpumem_kernel_over_budget", b_gpu0) not in found
    assert found[("jupyter_gpumem_kernel_budget_bytes", b_gpu0)] == 2 * GiB  # what the kernel says still shows
    a_gpu0 = frozenset({"kernel_id": scene.a, **gpu(GPU0)}.items())
    assert found[("jupyter_gpumem_kernel_memory_used_bytes", a_gpu0)] == 3500 * MiB
    gpu1 = frozenset(gpu(GPU1).items())
    assert found[("jupyter_gpumem_gpu_other_processes", gpu1)] == 2
    assert ("jupyter_gpumem_gpu_other_processes_memory_used_bytes", gpu1) not in found  # a partial sum is no total
    (b,) = [k for k in view["kernels"] if k["id"] == scene.b]
    assert [(g["uuid"], g["used_bytes"], g["budget_bytes"], g["over_budget"]) for g in b["gpus"]] == [
        (GPU0, None, 2 * GiB, None)
    ]
    assert (view["gpus"][1]["other_processes"], view["gpus"][1]["other_bytes"]) == (2, None)


@pytest.mark.kernel
def test_without_the_token_metrics_and_api_are_refused(scene: Scene) -> None:
    for path in ("/metrics", "/api/gpumem/v1"):
        assert scene.server.get(path, token=None)[0] == 403
        assert scene.server.get(path, token="not-the-token")[0] == 403
        assert scene.server.get(path)[0] == 200


@pytest.mark.kernel
def check_with_promtool(text: str) -> None:
    """Debian's promtool accepts ``text`` as Prometheus metrics."""
    promtool = shutil.which("promtool")
    assert promtool, "Debian's prometheus package provides promtool: apt-get install prometheus (.ci/setup does)"
    result = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_accepts_the_metrics(scene: Scene) -> None:
    scene.use(marker=9200)
    text = scene.server.metrics()
    ours = "".join(
        line + "\n"
        for line in text.splitlines()
        if line.startswith("jupyter_gpumem_") or line.startswith(("# HELP jupyter_gpumem_", "# TYPE jupyter_gpumem_"))
    )
    assert "jupyter_gpumem_kernel_memory_used_bytes{" in ours
    check_with_promtool(ours)  # jupyter_server's own metrics are not ours to lint (its kernel gauge ends in _total)


@pytest.mark.kernel
def test_prometheus_scrapes_each_kernels_series_with_the_token(scene: Scene, tmp_path: Path) -> None:
    scene.use(marker=9300)
    target = scene.server.url.removeprefix("http://")
    with running_prometheus(tmp_path / "prometheus", target, TOKEN, interval_s=1) as prometheus:
        up = wait_for(lambda: prometheus_query(prometheus, 'up{job="jupyter"}'), 60, "a first scrape")
        wait_for(
            lambda: prometheus_query(prometheus, "jupyter_gpumem_kernel_oom_errors_total"), 60, "the kernels' series"
        )
        assert [r["value"][1] for r in up] == ["1"]  # the scrape was let in: the bearer token is the server's token

        def series(query: str) -> dict[tuple[str, ...], float]:
            return {
                tuple(r["metric"].get(label, "") for label in ("kernel_id", "gpu_uuid")): float(r["value"][1])
                for r in prometheus_query(prometheus, query)
            }

        assert series("jupyter_gpumem_kernel_memory_used_bytes") == {
            (scene.a, GPU0): 3500 * MiB,
            (scene.a, GPU1): 500 * MiB,
            (scene.b, GPU0): 1000 * MiB,
            (scene.c, GPU0): 700 * MiB,
        }
        assert series("jupyter_gpumem_kernel_budget_bytes") == {
            (scene.a, GPU0): 3 * GiB,
            (scene.a, GPU1): 3 * GiB,
            (scene.b, GPU0): 2 * GiB,
        }
        assert series("jupyter_gpumem_kernel_over_budget == 1") == {(scene.a, GPU0): 1}
        assert series("jupyter_gpumem_kernel_oom_errors_total") == {(scene.a, ""): 1, (scene.b, ""): 0}
        assert series("jupyter_gpumem_gpu_other_processes_memory_used_bytes") == {
            ("", GPU0): 3000 * MiB,
            ("", GPU1): 1000 * MiB,
        }


@pytest.mark.kernel
def test_a_stale_report_is_said_so_and_reports_of_unknown_kernels_are_ignored(scene: Scene) -> None:
    scene.use(marker=9400)
    pid = scene.pids[scene.c]
    report = {**json.loads(REPORT_FIXTURE.read_text()), "pid": pid, "t": time.time() - 300,
              "ceiling": {"max_fraction": 0.3, "max_limit_bytes": None}}  # fmt: skip
    stale, unknown = scene.server.report(scene.c), scene.server.report("not-a-kernel-of-this-server")
    stale.parent.mkdir(mode=0o700, exist_ok=True)
    stale.write_text(json.dumps(report))
    unknown.write_text(json.dumps({**report, "t": time.time() + 3600, "pid": 7001}))
    try:
        view = wait_for(
            lambda: (v := scene.server.api()) and any(k["status"] == "stale" for k in v["kernels"]) and v,
            30,
            "kernel C's report to be read",
        )
        (c,) = [k for k in view["kernels"] if k["id"] == scene.c]
        assert c["status"] == "stale" and c["report_age_s"] >= 300
        assert c["ceiling"] == {"max_fraction": None, "max_limit_bytes": None}  # an old report's figures are not shown
        assert [(g["uuid"], g["used_bytes"], g["budget_bytes"]) for g in c["gpus"]] == [(GPU0, 700 * MiB, None)]
        assert {k["id"] for k in view["kernels"]} == {scene.a, scene.b, scene.c}
        assert view["gpus"][0]["other_processes"] == 1  # pid 7001 stays another user's: no kernel of ours
        found = samples(scene.server.metrics())
        assert found[("jupyter_gpumem_kernel_reporting", frozenset({"kernel_id": scene.c}.items()))] == 0
    finally:
        stale.unlink()
        unknown.unlink()


def test_a_reports_allocator_figures_become_metrics_that_promtool_accepts() -> None:
    """Allocator figures need a framework on a real GPU, which the stand-in cannot give: the Figures is made
    here from a snapshot and a report as the server's thread would read them. On GPU 1 the driver lists no
    process of the kernel (as in a container whose PIDs the driver does not see): its framework's figures
    show, its memory does not (not 0)."""
    gpu0, gpu1, gpu2 = (
        Device(index=i, uuid=uuid, name="NVIDIA A100-SXM4-40GB", total_bytes=40 * GiB, used_bytes=9 * GiB)
        for i, uuid in enumerate((GPU0, GPU1, "GPU-5e5e5e5e-0000-4000-8000-000000000002"))
    )
    gpu0 = replace(gpu0, processes=(GpuProcess(4242, GPU0, 5 * GiB, "compute", "python", None, None, False),))
    snapshot = Snapshot(taken_at=1000.0, own_pid=1, devices=(gpu0, gpu1, gpu2), driver_version="550.54.15")
    template = json.loads(REPORT_FIXTURE.read_text())
    said = {**template["sample"]["gpus"][0], "uuid": GPU0, "budget_bytes": 4 * GiB, "in_force": True,
            "pool_bytes": 3 * GiB, "pool_known": True, "framework_bytes": 2 * GiB, "framework_peak_bytes": 3 * GiB,
            "overhead_bytes": 512 * MiB, "overhead_source": "measured"}  # fmt: skip
    on_gpu1 = {**said, "uuid": GPU1, "framework_bytes": GiB}
    on_gpu2 = {
        **template["sample"]["gpus"][0],
        "uuid": gpu2.uuid,
        "budget_bytes": 4 * GiB,
        "in_force": True,
        "pool_bytes": 3 * GiB,
    }  # not started there
    # In a container the kernel attributes its memory on GPU 1 itself (matched), and MPS holds it hard there.
    on_gpu1.update(own_bytes=int(1.6 * GiB), own_source="matched", limit_kind="mps", limit_hard=True)
    said.update(own_bytes=5 * GiB, own_source="exact", limit_kind="cooperative", limit_hard=False)
    sample = {**template["sample"], "framework": "TensorFlow", "framework_started": True,
              "gpus": [said, on_gpu1, on_gpu2]}  # fmt: skip
    report = {**template, "pid": 4242, "t": 999.0, "oom_errors_total": 2,
              "ceiling": {"max_fraction": None, "max_limit_bytes": 20 * GiB}, "sample": sample}  # fmt: skip
    assert REPORT.problem(report) is None  # as the server's thread would have read it
    view = make_figures(snapshot, [KernelSource("k1", 4242, report)], now=1000.0, stale_after_s=30)
    assert [(g.uuid, g.used_bytes, g.budget_bytes, g.over_budget, g.framework_bytes) for g in view.kernels[0].gpus] == [
        (GPU0, 5 * GiB, 4 * GiB, True, 2 * GiB),
        (GPU1, None, 4 * GiB, None, GiB),
    ]  # fmt: skip
    registry = CollectorRegistry()
    registry.register(GpumemCollector(lambda: rows(view)))
    text = generate_latest(registry).decode()
    found = samples(text)
    labels = frozenset({"kernel_id": "k1", **gpu(GPU0)}.items())
    assert found[("jupyter_gpumem_kernel_allocator_used_bytes", labels)] == 2 * GiB
    assert found[("jupyter_gpumem_kernel_allocator_pool_bytes", labels)] == 3 * GiB
    assert found[("jupyter_gpumem_kernel_over_budget", labels)] == 1
    on_gpu1_labels = frozenset({"kernel_id": "k1", **gpu(GPU1)}.items())
    assert found[("jupyter_gpumem_kernel_allocator_used_bytes", on_gpu1_labels)] == GiB
    assert ("jupyter_gpumem_kernel_memory_used_bytes", on_gpu1_labels) not in found
    assert found[("jupyter_gpumem_kernel_own_memory_bytes", on_gpu1_labels | {("source", "matched")})] == int(1.6 * GiB)
    assert found[("jupyter_gpumem_kernel_own_memory_bytes", labels | {("source", "exact")})] == 5 * GiB
    assert found[("jupyter_gpumem_kernel_limit_info", on_gpu1_labels | {("kind", "mps"), ("hard", "true")})] == 1
    assert found[("jupyter_gpumem_kernel_limit_info", labels | {("kind", "cooperative"), ("hard", "false")})] == 1
    assert found[("jupyter_gpumem_kernel_ceiling_bytes", frozenset({"kernel_id": "k1"}.items()))] == 20 * GiB
    assert found[("jupyter_gpumem_kernel_oom_errors_total", frozenset({"kernel_id": "k1"}.items()))] == 2
    check_with_promtool(text)


def test_a_kernels_mig_slice_and_driver_limit_reach_the_api_the_metrics_and_the_hubs_rows() -> None:
    """What a kernel on a shared GPU reports (issue 44) on every surface after it: the server's API body (checked
    against its schema), its /metrics (promtool), and the hub's row of that body."""
    from jupyter_gpumem.hub.rows import rows_of_server
    from jupyter_gpumem.hub.summary import texts
    from jupyter_gpumem.server.handlers import encode

    device = Device(index=0, uuid=GPU0, name="NVIDIA A100-SXM4-40GB", total_bytes=40 * GiB, used_bytes=9 * GiB)
    device = replace(device, processes=(GpuProcess(4242, GPU0, 1536 * MiB, "compute", "python", None, None, False),))
    snapshot = Snapshot(taken_at=1000.0, own_pid=1, devices=(device,), driver_version="615.10")
    template = json.loads(REPORT_FIXTURE.read_text())
    said = {
        **template["sample"]["gpus"][0],
        "uuid": GPU0,
        "budget_bytes": 2432 * MiB,
        "slice": {"uuid": "MIG-1d7f3b29-6a4e-5c81-9f02-b8e45a7c3d16", "name": "NVIDIA A100-SXM4-40GB MIG 1g.5gb",
                  "profile": "1g.5gb", "total_bytes": 4864 * MiB, "used_bytes": 1536 * MiB, "gpu_instance_id": 7},
        "driver_limit": {"hard_bytes": 6144 * MiB, "soft_bytes": None, "used_bytes": 1536 * MiB, "cgroup": "/hub/a"},
    }  # fmt: skip
    report = {**template, "pid": 4242, "t": 999.0, "sample": {**template["sample"], "gpus": [said]}}
    assert REPORT.problem(report) is None
    view = make_figures(snapshot, [KernelSource("k1", 4242, report)], now=1000.0, stale_after_s=30)
    body = json.loads(encode(view, 1.0))
    (row,) = body["kernels"][0]["gpus"]
    assert (row["slice"], row["driver_limit_bytes"], row["memory_shared"]) == ("1g.5gb", 6144 * MiB, False)
    registry = CollectorRegistry()
    registry.register(GpumemCollector(lambda: rows(view)))
    text = generate_latest(registry).decode()
    found = samples(text)
    labels = frozenset({"kernel_id": "k1", **gpu(GPU0)}.items())
    assert found[("jupyter_gpumem_kernel_driver_limit_bytes", labels)] == 6144 * MiB
    assert found[("jupyter_gpumem_kernel_mig_slice_info", labels | {("profile", "1g.5gb")})] == 1
    check_with_promtool(text)
    (hub_row,) = rows_of_server("alice", "", body, now=1000.0)
    assert (hub_row.slice, hub_row.driver_limit_bytes) == ("1g.5gb", 6144 * MiB)
    assert texts(hub_row)["driver_limit_text"] == "6144 MiB"
