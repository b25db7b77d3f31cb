"""Every kernel of the server in the sidebar: two notebooks' real kernels hold stand-in memory (the
scenario names their PIDs, as the driver would); the list names both notebooks, largest first, with
their budgets and idle times and the active one marked; Shut down asks JupyterLab's dialog and ends
only the chosen kernel; the status bar's tooltip counts them. Screenshots at 250 and 600 px, light
and dark, go to tests/artifacts/."""

from __future__ import annotations

import json
import re
import urllib.request
from typing import Any

import pytest
from checks import contrast
from labserver import (
    ARTIFACTS,
    TOKEN,
    Lab,
    looks,
    open_notebook,
    open_sidebar,
    run_cell,
    write_notebook,
)
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

# A name a notebook may have, that would be markup if it were ever set as HTML.
HOSTILE = "beta <img src=x onerror=alert(1)>.ipynb"
OPEN = """path => window.jupyterapp.commands.execute('docmanager:open', { path })"""
CURRENT_IDLE = """path => window.jupyterapp.shell.currentWidget?.context?.path === path
  && window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle'"""
POLICY = "%load_ext jupyter_gpumem\n%gpumem fraction=0.25 framework=tensorflow"


def get(lab: Lab, path: str) -> Any:
    with urllib.request.urlopen(f"{lab.url}{path}?token={TOKEN}", timeout=10) as response:
        return json.load(response)


def scenario(pids: dict[str, int]) -> str:
    """One A100: alpha's kernel holds 3000 MiB, beta's 1200 MiB, another user's job 5000 MiB."""
    return (
        "driver version=550.54.15 cuda=12040\n"
        'gpu name="NVIDIA A100-SXM4-40GB" uuid=GPU-5e5e5e5e-0000-4000-8000-000000000001 total=40960MiB '
        "cc=8.0 used=9200MiB util=40\n"
        f"proc gpu=0 pid={pids['alpha.ipynb']} used=3000MiB name=python\n"
        f"proc gpu=0 pid={pids[HOSTILE]} used=1200MiB name=python\n"
        "proc gpu=0 pid=41337 used=5000MiB name=python3\n"
    )


ROWS = """() => [...document.querySelectorAll('#jupyter-gpumem-panel .jp-GpuMem-kernelRow')].map(row => {
  const q = s => row.querySelector(s);
  const name = q('.jp-GpuMem-kernelName');
  const memory = q('.jp-GpuMem-kernelMemory');
  const line = q('.jp-GpuMem-kernelLine').getBoundingClientRect();
  const text = node => {
    const r = document.createRange();
    r.selectNodeContents(node);
    return r.getBoundingClientRect();
  };
  return {
    id: row.dataset.kernelId,
    name: name.textContent,
    elements: name.children.length,
    cut: name.scrollWidth > name.clientWidth,
    memory: memory.textContent,
    memoryRight: Math.abs(memory.getBoundingClientRect().right - text(memory).right) <= 1,
    detail: q('.jp-GpuMem-kernelDetail').textContent,
    badge: q('.jp-GpuMem-badge').hidden ? '' : q('.jp-GpuMem-badge').textContent,
    lineHeight: Math.round(line.height),
    inside: line.right <= row.getBoundingClientRect().right + 0.5,
    scrolls: row.scrollWidth > row.clientWidth,
  };
})"""


def test_the_sidebar_lists_every_kernel_of_the_server_and_shut_down_ends_the_chosen_one(page: Page, lab: Lab) -> None:
    lab.set_scenario(scenario({"alpha.ipynb": 4194301, HOSTILE: 4194302}))  # the same GPU; no PID of theirs yet
    open_notebook(page, lab, "alpha.ipynb", [POLICY])
    assert "recorded" in run_cell(page, 0)
    write_notebook(lab.root / HOSTILE, [POLICY])
    page.evaluate(OPEN, HOSTILE)
    page.wait_for_function(CURRENT_IDLE, arg=HOSTILE, timeout=90_000)
    assert "recorded" in run_cell(page, 0)

    # The kernels' PIDs, from the server's own API and sessions: the stand-in lists them as the driver would.
    sessions = {s["path"]: s["kernel"]["id"] for s in get(lab, "/api/sessions")}
    pid_of = {k["id"]: k["pid"] for k in get(lab, "/api/gpumem/v1")["kernels"]}
    ids = {path: sessions[path] for path in ("alpha.ipynb", HOSTILE)}
    lab.set_scenario(scenario({path: pid_of[kid] for path, kid in ids.items()}))

    open_sidebar(page)
    panel = page.locator("#jupyter-gpumem-panel")
    section = panel.locator(".jp-GpuMem-kernels")
    expect(section.locator(".jp-GpuMem-kernelsTitle")).to_have_text("Kernels on this server (2)")
    rows = section.locator(".jp-GpuMem-kernelRow")
    # Largest first, each by its notebook's name, its memory as nvidia-smi counts it.
    expect(rows.locator(".jp-GpuMem-kernelName")).to_have_text(["alpha.ipynb", HOSTILE], timeout=30_000)
    expect(rows.locator(".jp-GpuMem-kernelMemory")).to_have_text(["2.9 GiB", "1.2 GiB"])
    # Both ran their cell a moment ago: a budget of a quarter of 40 GiB, idle some seconds.
    for i in range(2):
        expect(rows.nth(i).locator(".jp-GpuMem-kernelDetail")).to_have_text(
            re.compile(r"^budget 10\.0 GiB · idle \d+ s$")
        )
    got = page.evaluate(ROWS)
    assert [r["id"] for r in got] == [ids["alpha.ipynb"], ids[HOSTILE]]
    assert [r["badge"] for r in got] == ["", "this kernel"]  # the active notebook's kernel
    assert got[1]["elements"] == 0, "the notebook's name was set as HTML"
    assert page.locator("#jupyter-gpumem-panel img").count() == 0
    assert rows.nth(1).locator(".jp-GpuMem-kernelName").get_attribute("title") == f"{HOSTILE} (kernel {ids[HOSTILE]})"

    # The status bar's tooltip: how many kernels hold how much.
    item = page.locator("#jp-main-statusbar .jp-GpuMem-status-item")
    expect(item).to_have_attribute(
        "title", re.compile(r"\n2 kernels on this server hold 4\.1 GiB of GPU memory\nClick to open")
    )

    # Narrow and wide, light and dark: one 24 px line a kernel, nothing scrolls sideways, figures right-aligned.
    for theme, width, where in looks(page):
        got = page.evaluate(ROWS)
        assert [r["lineHeight"] for r in got] == [24, 24], where
        assert all(r["inside"] and not r["scrolls"] and r["memoryRight"] for r in got), f"{where}: {got}"
        assert got[1]["cut"] == (width == 250), f"{where}: the long name is cut only where it must be"
        assert contrast(page, ".jp-GpuMem-kernelDetail") >= 4.5, where
        section.scroll_into_view_if_needed()
        panel.screenshot(path=ARTIFACTS / f"kernels-{theme}-{width}.png")

    # The section folds away under its header and comes back.
    header = section.locator(".jp-GpuMem-kernelsHeader")
    header.click()
    expect(header).to_have_attribute("aria-expanded", "false")
    expect(rows.first).to_be_hidden()
    header.click()
    expect(header).to_have_attribute("aria-expanded", "true")
    expect(rows).to_have_count(2)
    expect(rows.first).to_be_visible()

    # Shut down asks first: Cancel leaves the kernel running.
    alpha = rows.nth(0)
    alpha.locator(".jp-GpuMem-kernelShutDown").click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text("Shut down kernel?")
    expect(dialog).to_contain_text("Shut down the kernel of “alpha.ipynb”?")
    dialog.locator(".jp-Dialog-button.jp-mod-reject").click()
    expect(dialog).to_be_hidden()
    page.wait_for_timeout(2500)  # more than one poll
    assert ids["alpha.ipynb"] in {k["id"] for k in get(lab, "/api/kernels")}
    expect(rows).to_have_count(2)

    # Accepted: that kernel ends, the other runs on, and the list follows.
    alpha.locator(".jp-GpuMem-kernelShutDown").click()
    expect(dialog).to_contain_text("alpha.ipynb")
    dialog.locator(".jp-Dialog-button.jp-mod-warn").click()
    expect(rows.locator(".jp-GpuMem-kernelName")).to_have_text([HOSTILE], timeout=15_000)
    running = {k["id"] for k in get(lab, "/api/kernels")}
    assert ids["alpha.ipynb"] not in running and ids[HOSTILE] in running
    expect(section.locator(".jp-GpuMem-kernelsTitle")).to_have_text("Kernels on this server (1)")
    expect(item).to_have_attribute("title", re.compile(r"\n1 kernel on this server holds 1\.2 GiB of GPU memory\n"))
