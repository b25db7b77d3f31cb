"""The status-bar item: the active notebook's kernel against its budget without opening anything,
its colours, its tooltip, a click that opens the panel; hidden where there is nothing to show."""

from __future__ import annotations

import pytest
from checks import contrast
from labserver import ARTIFACTS, SCENARIOS, Lab, open_notebook, open_sidebar, run_cell, set_theme, write_notebook
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

SWITCH_TO = """path => window.jupyterapp.commands.execute('docmanager:open', { path })"""
CURRENT_IDLE = """path => window.jupyterapp.shell.currentWidget?.context?.path === path
  && window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle'"""


def switch_to(page: Page, path: str) -> None:
    page.evaluate(SWITCH_TO, path)
    page.wait_for_function(CURRENT_IDLE, arg=path, timeout=90_000)


def test_the_status_bar_shows_the_active_kernel_against_its_budget_and_a_click_opens_the_panel(
    page: Page, lab: Lab
) -> None:
    text = (SCENARIOS / "sidebar.scenario").read_text()
    lab.set_scenario(text)
    open_notebook(page, lab, "status.ipynb", ["%load_ext jupyter_gpumem\n%gpumem fraction=0.5 framework=tensorflow"])
    item = page.locator("#jp-main-statusbar .jp-GpuMem-status-item")
    panel = page.locator("#jupyter-gpumem-panel")
    expect(item).to_have_text("GPU 3.1 GiB")  # streaming before any policy, the panel never opened
    expect(panel).to_be_hidden()
    run_cell(page, 0)
    expect(item).to_have_text("GPU 3.1/20.0 GiB")
    expect(item).to_have_attribute("data-level", "ok")
    # The server sees "pid=self" as its own process, none of its kernels': none of them holds memory there.
    expect(item).to_have_attribute(
        "title",
        "\n".join(
            [
                "3.1 of 20.0 GiB budget (15%, not in force)",
                "TensorFlow limit 19.5 GiB + 500 MiB set aside for CUDA and libraries (estimated)",
                "GPU 0 · NVIDIA A100-SXM4-40GB · 16.1 GiB of 40.0 GiB used",
                "No kernel on this server holds GPU memory",
                "Click to open the GPU Memory panel.",
            ]
        ),
    )
    ARTIFACTS.mkdir(exist_ok=True)
    for level, own, used in (("warn", 18944, 32270), ("error", 21504, 34830)):
        lab.set_scenario(text.replace("used=3174MiB", f"used={own}MiB").replace("used=16500MiB", f"used={used}MiB"))
        expect(item).to_have_attribute("data-level", level)
        for dark in (False, True):
            set_theme(page, dark)
            assert contrast(page, ".jp-GpuMem-status-item") >= 4.5, (level, dark)
            page.locator("#jp-main-statusbar").screenshot(
                path=ARTIFACTS / f"statusbar-{level}-{'dark' if dark else 'light'}.png"
            )
        set_theme(page, False)
    expect(item).to_have_text("GPU 21.0/20.0 GiB")
    item.click()
    expect(panel).to_be_visible()
    expect(panel.locator(".jp-GpuMem-headline")).to_have_text("21.0 of 20.0 GiB budget (105%, not in force)")
    lab.set_scenario(text)


def test_the_status_bar_hides_for_a_kernel_without_jupyter_gpumem_and_for_a_non_python_kernel(
    page: Page, lab: Lab
) -> None:
    lab.set_scenario((SCENARIOS / "sidebar.scenario").read_text())
    item = page.locator("#jp-main-statusbar .jp-GpuMem-status-item")
    open_notebook(page, lab, "python.ipynb", ["1 + 1"])
    expect(item).to_have_text("GPU 3.1 GiB")

    # A real kernel whose environment lacks the package: the panel gives the pip command, the
    # status bar shows nothing.
    open_sidebar(page)
    panel = page.locator("#jupyter-gpumem-panel")
    expect(panel.locator(".jp-GpuMem-headline")).to_have_text("3.1 GiB used by this kernel")
    write_notebook(lab.root / "missing.ipynb", ["1 + 1"], kernel="without-gpumem")
    switch_to(page, "missing.ipynb")
    expect(panel.locator(".jp-GpuMem-status")).to_contain_text("jupyter-gpumem is not installed in this kernel")
    expect(panel.locator(".jp-GpuMem-pip")).to_have_text("%pip install jupyter-gpumem")
    expect(item).to_be_hidden()
    ARTIFACTS.mkdir(exist_ok=True)
    panel.screenshot(path=ARTIFACTS / "sidebar-missing-package.png")

    # A kernel that is not Python: never sent Python, told so, nothing in the status bar.
    write_notebook(lab.root / "echo.ipynb", ["hello"], kernel="echo")
    switch_to(page, "echo.ipynb")
    expect(panel.locator(".jp-GpuMem-status")).to_have_text(
        "GPU memory is not supported for this kernel (echo); it needs a Python kernel."
    )
    expect(item).to_be_hidden()

    # Back to a Python notebook with the package: the item is back.
    switch_to(page, "python.ipynb")
    expect(item).to_have_text("GPU 3.1 GiB")
    expect(item).to_be_visible()
    expect(panel.locator(".jp-GpuMem-headline")).to_have_text("3.1 GiB used by this kernel")
