"""The simulated GPU tells one story: on the shipped demo scenario (what `.ci/lab`, Binder and the README's
screenshot run on), the notebook's kernel holds 1.5 GiB of GPU 0 in its own sample, the sidebar's panel and kernel
list, the status bar, the inline view, and the server's /api/gpumem/v1 and /metrics alike."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from labserver import TOKEN, Lab, open_notebook, open_sidebar, run_cell
from playwright.sync_api import Page, expect
from prometheus_client.parser import text_string_to_metric_families
from server_fixtures import eventually

from jupyter_gpumem import standin
from jupyter_gpumem.units import MiB
from jupyter_gpumem.wire.report import report_path

pytestmark = pytest.mark.browser

DEMO = Path(standin.__file__).parent / "scenarios" / "demo.scenario"
GPU0 = "GPU-5151a7ed-0000-4000-8000-000000000000"
HELD = 1536 * MiB  # the demo scenario's `proc gpu=0 pid=kernel used=1536MiB`


def get(lab: Lab, path: str) -> bytes:
    with urllib.request.urlopen(f"{lab.url}{path}?token={TOKEN}", timeout=10) as response:
        return bytes(response.read())


def server_says(lab: Lab, kernel_id: str) -> tuple[int | None, int | None, int | None]:
    """The kernel's pid and its bytes on GPU 0 in the server's JSON API, and in its /metrics."""
    kernel = next(k for k in json.loads(get(lab, "/api/gpumem/v1"))["kernels"] if k["id"] == kernel_id)
    api = next((g["used_bytes"] for g in kernel["gpus"] if g["uuid"] == GPU0), None)
    metrics = next(
        (
            int(s.value)
            for family in text_string_to_metric_families(get(lab, "/metrics").decode())
            for s in family.samples
            if s.name == "jupyter_gpumem_kernel_memory_used_bytes"
            and s.labels.get("kernel_id") == kernel_id
            and s.labels.get("gpu_uuid") == GPU0
        ),
        None,
    )
    return kernel["pid"], api, metrics


def own_sample(connection_file: str) -> Any:
    """The kernel's latest sample of GPU 0 (the one its comm sends the panel), as it reports it to its server."""
    path = report_path(connection_file)
    assert path.exists(), f"the kernel has not reported yet: no {path}"
    report = json.loads(path.read_text())
    return next(g for g in report["sample"]["gpus"] if g["uuid"] == GPU0)


def test_every_surface_gives_the_demo_kernel_the_same_memory(page: Page, lab: Lab) -> None:
    lab.set_scenario(DEMO.read_text())
    whoami = "import os\nfrom ipykernel.connect import get_connection_file\nprint(os.getpid(), get_connection_file())"
    cells = ["%load_ext jupyter_gpumem\n%gpumem fraction=0.25", whoami, "%gpumem show"]
    open_notebook(page, lab, "story.ipynb", cells)
    run_cell(page, 0)
    pid_text, connection_file = run_cell(page, 1).split()
    pid = int(pid_text)
    kernel_id = page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.id")

    def kernel_agrees() -> None:
        sample = own_sample(connection_file)
        assert (sample.get("own_pid"), sample["own_bytes"]) == (pid, HELD)

    def server_agrees() -> None:
        assert server_says(lab, kernel_id) == (pid, HELD, HELD)

    eventually(kernel_agrees)
    eventually(server_agrees)

    expect(page.locator("#jp-main-statusbar .jp-GpuMem-status-item")).to_have_text("GPU 1.5/20.0 GiB")
    open_sidebar(page)
    panel = page.locator("#jupyter-gpumem-panel")
    expect(panel.locator(".jp-GpuMem-headline")).to_have_text("1.5 of 20.0 GiB budget (8%, not in force)")
    expect(panel.locator("tr.jp-GpuMem-self td").first).to_have_text(str(pid))
    expect(panel.locator("tr.jp-GpuMem-self")).to_contain_text("1536")
    rows = panel.locator(".jp-GpuMem-kernels .jp-GpuMem-kernelRow")
    expect(rows).to_have_count(1)
    expect(rows.locator(".jp-GpuMem-badge")).to_have_text("this kernel")
    expect(rows.locator(".jp-GpuMem-kernelMemory")).to_have_text("1.5 GiB")

    run_cell(page, 2)
    view = page.locator(".jp-GpuMem-inline")
    expect(view.locator(".jp-GpuMem-headline")).to_have_text("1.5 of 20.0 GiB budget (8%, not in force)")
    expect(view.locator("tr.jp-GpuMem-self td").first).to_have_text(str(pid))
    expect(view.locator("tr.jp-GpuMem-self")).to_contain_text("1536")
