"""The GPU Memory sidebar end to end: a real JupyterLab server, a real kernel, the stand-in NVML and
Debian's chromium (Playwright)."""

from __future__ import annotations

import re
import time
import urllib.request

import pytest
from labserver import (
    ARTIFACTS,
    KERNEL_IDLE,
    SCENARIOS,
    TOKEN,
    Lab,
    open_notebook,
    open_sidebar,
    run_cell,
    write_notebook,
)
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def wait_for_saved_layout(lab: Lab, text: str) -> None:
    """JupyterLab saves the layout a moment after it changes; a reload before that restores the old one."""
    for _ in range(100):
        with urllib.request.urlopen(f"{lab.url}/lab/api/workspaces/default?token={TOKEN}") as response:
            if text in response.read().decode():
                return
        time.sleep(0.1)
    raise AssertionError(f"the saved workspace never mentioned {text}")


def rows(page: Page) -> list[list[str]]:
    """The process table, read in one go (the panel rebuilds it on every sample)."""
    return page.evaluate(
        """() => [...document.querySelectorAll('#jupyter-gpumem-panel .jp-GpuMem-processes tbody tr')]
             .map(row => [...row.querySelectorAll('td')].map(td => td.textContent))"""
    )


def last_point(page: Page, trace: int) -> float:
    return float(
        page.evaluate(
            "i => { const y = document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-chart').data[i].y;"
            " return y[y.length - 1]; }",
            trace,
        )
    )


def test_sidebar_streams_budget_processes_and_follows_the_scenario_and_a_restart(page: Page, lab: Lab) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    open_notebook(
        page,
        lab,
        "budget.ipynb",
        ["%load_ext jupyter_gpumem\n%gpumem fraction=0.5 framework=tensorflow", "import os; os.getpid()"],
    )
    assert "recorded" in run_cell(page, 0)
    pid = run_cell(page, 1).strip()

    open_sidebar(page)
    panel = page.locator("#jupyter-gpumem-panel")
    headline = panel.locator(".jp-GpuMem-headline")
    # Recorded, waiting for `import tensorflow`: the budget is not in force yet, and the headline says so.
    expect(headline).to_have_text("3.1 of 20.0 GiB budget (15%, not in force)")
    # An A100 (compute 8.0) with TensorFlow: 500 MiB set aside for the CUDA context and libraries.
    expect(panel.locator(".jp-GpuMem-breakdown")).to_have_text(
        "TensorFlow limit 19.5 GiB + 500 MiB set aside for CUDA and libraries (estimated)"
    )
    expect(panel.locator(".jp-GpuMem-reason")).to_be_hidden()
    expect(panel.locator(".jp-GpuMem-banner")).to_contain_text("SIMULATED GPU")
    expect(panel.locator(".jp-GpuMem-device")).to_have_text("GPU 0 · NVIDIA A100-SXM4-40GB · 16.1 GiB of 40.0 GiB used")
    table = rows(page)
    assert table == [
        ["31337", "python3", "", "12000 MiB", "N/A"],
        [pid, "python (this kernel)", table[1][2], "3174 MiB", table[1][4]],
        ["31338", "<img src=x onerror=alert(1)>", "", "1024 MiB", "N/A"],
    ]
    assert panel.locator("img").count() == 0 and dialogs == []  # the hostile name stayed text
    panel.locator("th[data-key='pid']").click()  # sortable: PID, descending first, then ascending
    expect(panel.locator("th[data-key='pid']")).to_have_attribute("aria-sort", "descending")
    panel.locator("th[data-key='pid']").click()
    expect(panel.locator("th[data-key='pid']")).to_have_attribute("aria-sort", "ascending")
    pids = [r[0] for r in rows(page)]
    assert pids == sorted(pids, key=int) and len(pids) == 3
    expect(panel.locator("tr.jp-GpuMem-self")).to_have_count(1)
    assert last_point(page, 0) == pytest.approx(3174 / 1024)
    assert last_point(page, 3) == pytest.approx(20.0)  # the budget line

    # The other GPU, through the selector.
    panel.locator("select.jp-GpuMem-select").select_option(label="GPU 1: NVIDIA T4")
    expect(headline).to_have_text(re.compile(r"^0(\.0)? of 7\.5 GiB budget \(0%, not in force\)$"))
    panel.locator("select.jp-GpuMem-select").select_option(label="GPU 0: NVIDIA A100-SXM4-40GB")

    # The driver reports more: the headline, the table and the chart follow.
    text = (SCENARIOS / "sidebar.scenario").read_text()
    lab.set_scenario(text.replace("used=3174MiB", "used=18944MiB").replace("used=16500MiB", "used=32270MiB"))
    expect(headline).to_have_text("18.5 of 20.0 GiB budget (93%, not in force)")
    expect(headline).to_have_attribute("data-level", "warn")
    page.wait_for_function(
        "() => { const y = document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-chart').data[0].y;"
        " return y[y.length - 1] > 18; }"
    )
    lab.set_scenario(text.replace("used=3174MiB", "used=21504MiB").replace("used=16500MiB", "used=34830MiB"))
    expect(headline).to_have_text("21.0 of 20.0 GiB budget (105%, not in force)")
    expect(headline).to_have_attribute("data-level", "error")
    # Why, in the panel and as a mark on the chart: 21504 MiB held, 19980 MiB for the allocator.
    reason = (
        "CUDA context + cuDNN/cuBLAS: 1524 MiB outside TensorFlow's limit, 1024 MiB more than the 500 MiB set aside"
    )
    expect(panel.locator(".jp-GpuMem-reason")).to_have_text(f"Over budget: {reason}")
    page.wait_for_function(
        "() => document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-chart').data[5].x.length === 1"
    )
    mark = page.evaluate("() => document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-chart').data[5]")
    assert (mark["name"], mark["text"], mark["y"]) == ("over budget", [reason], [pytest.approx(21.0)])
    ARTIFACTS.mkdir(exist_ok=True)
    panel.screenshot(path=ARTIFACTS / "sidebar-over-budget.png")

    # Restart: the sidebar says so, then streams from the new kernel (which has no policy).
    lab.set_scenario(text)
    page.evaluate(
        """() => { window.gpumemStatuses = [];
          const node = document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-status');
          new MutationObserver(() => window.gpumemStatuses.push(node.textContent))
            .observe(node, { childList: true, characterData: true, subtree: true }); }"""
    )
    page.evaluate("() => { void window.jupyterapp.commands.execute('kernelmenu:restart'); }")  # awaits the dialog
    page.locator(".jp-Dialog .jp-mod-accept").click()
    # What a framework takes without a budget is the kernel's phrase (`takes`), shown as it is.
    expect(headline).to_have_text(re.compile(r"^3\.1 GiB used by this kernel; no budget set — \S"))
    assert "Kernel restarted — reconnecting…" in page.evaluate("() => window.gpumemStatuses")
    new_pid = next(r for r in rows(page) if r[1] == "python (this kernel)")[0]
    assert new_pid != pid

    # Light and dark screenshots (tests/artifacts/), colours re-read from the theme.
    light = page.evaluate(
        "() => document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-chart')._fullLayout.paper_bgcolor"
    )
    panel.screenshot(path=ARTIFACTS / "sidebar-light.png")
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', { theme: 'JupyterLab Dark' })")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'")
    page.wait_for_function(
        "light => document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-chart')._fullLayout.paper_bgcolor !== light",
        arg=light,
    )
    panel.screenshot(path=ARTIFACTS / "sidebar-dark.png")
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', { theme: 'JupyterLab Light' })")
    assert dialogs == []


def test_the_palette_opens_the_sidebar_and_a_reload_restores_it_streaming(page: Page, lab: Lab) -> None:
    open_notebook(page, lab, "reload.ipynb", ["1 + 1"])
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:activate-command-palette')")
    page.keyboard.type("Show GPU Memory")
    page.keyboard.press("Enter")
    panel = page.locator("#jupyter-gpumem-panel")
    expect(panel.locator(".jp-GpuMem-headline")).to_contain_text("no budget set")
    wait_for_saved_layout(lab, '"current": "jupyter-gpumem"')
    page.goto(f"{lab.url}/lab/tree/reload.ipynb?token={TOKEN}")
    page.wait_for_function(KERNEL_IDLE, timeout=90_000)
    expect(panel).to_be_visible()
    expect(panel.locator(".jp-GpuMem-headline")).to_contain_text("no budget set")
    expect(panel.locator(".jp-GpuMem-processes tbody tr")).to_have_count(3)


def test_a_kernel_without_jupyter_gpumem_gets_the_pip_command(page: Page, lab: Lab) -> None:
    hide = (
        "import sys\n"
        "class NotInstalled:  # from now on `import jupyter_gpumem` fails here as if it were not installed\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'jupyter_gpumem':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.modules.pop('jupyter_gpumem', None)\n"
        "sys.meta_path.insert(0, NotInstalled())"
    )
    open_notebook(page, lab, "missing.ipynb", [hide])
    run_cell(page, 0)
    open_sidebar(page)
    panel = page.locator("#jupyter-gpumem-panel")
    expect(panel.locator(".jp-GpuMem-status")).to_contain_text("jupyter-gpumem is not installed in this kernel")
    expect(panel.locator(".jp-GpuMem-pip")).to_have_text("%pip install jupyter-gpumem")


def test_the_sidebar_follows_the_active_notebook_and_survives_closing_it(page: Page, lab: Lab) -> None:
    write_notebook(lab.root / "first.ipynb", ["import os; os.getpid()"])
    open_notebook(page, lab, "second.ipynb", ["import os; os.getpid()"])
    second_pid = run_cell(page, 0).strip()
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:open', { path: 'first.ipynb' })")
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.context?.path === 'first.ipynb'"
        " && window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle'",
        timeout=90_000,
    )
    first_pid = run_cell(page, 0).strip()
    open_sidebar(page)
    panel = page.locator("#jupyter-gpumem-panel")
    kernel_label = panel.locator(".jp-GpuMem-kernel")
    this_kernel = panel.locator("tr.jp-GpuMem-self td").first
    expect(kernel_label).to_contain_text("first.ipynb")
    expect(this_kernel).to_have_text(first_pid)

    page.locator('.lm-DockPanel-tabBar .lm-TabBar-tab:has-text("second.ipynb")').click()
    expect(kernel_label).to_contain_text("second.ipynb")
    expect(this_kernel).to_have_text(second_pid)

    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:open', { path: 'first.ipynb' })")
    expect(kernel_label).to_contain_text("first.ipynb")
    page.evaluate("() => { void window.jupyterapp.commands.execute('application:close-all'); }")
    for _ in range(2):  # both notebooks have unsaved outputs
        page.locator(".jp-Dialog button:has-text('Discard')").click()
    expect(kernel_label).to_have_text("Open a notebook to see its kernel’s GPU memory.")
    expect(panel.locator(".jp-GpuMem-body")).to_be_hidden()
