"""Notebook 7 (the `notebook` package), a real server and Debian's chromium: the GPU Memory sidebar loads in
its right panel (no ILabShell there, no status bar) and the inline view works in its notebooks, its module from
the labextension or, with the labextension disabled, from the server extension's static route."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from labserver import ARTIFACTS, SCENARIOS, Lab, open_notebook, run_cell, running_lab
from playwright.sync_api import Page, expect
from test_inline import BUDGET, fetched, grow

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def notebook7(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    scenario = (SCENARIOS / "sidebar.scenario").read_text()
    with running_lab(tmp_path_factory.mktemp("nb7"), scenario, app="notebook") as lab:
        yield lab


@pytest.fixture(scope="module")
def bare_notebook7(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """Notebook 7 without jupyter-gpumem's labextension, its server extension running."""
    scenario = (SCENARIOS / "sidebar.scenario").read_text()
    with running_lab(
        tmp_path_factory.mktemp("nb7-bare"), scenario, app="notebook", disabled=("jupyter-gpumem",)
    ) as lab:
        yield lab


def test_the_sidebar_opens_in_notebook_7s_right_panel_and_streams(page: Page, notebook7: Lab) -> None:
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" and "gpumem" in m.text else None)
    open_notebook(page, notebook7, "sidebar7.ipynb", [BUDGET])
    assert "/notebooks/" in page.url  # Notebook 7's own page, not JupyterLab
    assert page.evaluate("() => window.jupyterapp.name") == "Jupyter Notebook"
    run_cell(page, 0)
    # The palette command (also in View → Right Sidebar), as a user would run it.
    assert page.evaluate("() => window.jupyterapp.commands.hasCommand('jupyter-gpumem:open')")
    page.evaluate("() => window.jupyterapp.commands.execute('jupyter-gpumem:open')")
    panel = page.locator("#jupyter-gpumem-panel")
    expect(panel).to_be_visible()
    assert page.evaluate(
        "() => !!document.getElementById('jupyter-gpumem-panel').closest('#jp-right-stack, .jp-SidePanel-right')"
        " || window.jupyterapp.shell.widgets('right').some(w => w.id === 'jupyter-gpumem-panel')"
    )
    expect(panel.locator(".jp-GpuMem-headline")).to_have_text("3.1 of 20.0 GiB budget (15%, not in force)")
    expect(panel.locator(".jp-GpuMem-banner")).to_contain_text("SIMULATED GPU")
    expect(panel.locator("tr.jp-GpuMem-self .jp-GpuMem-badge")).to_have_text("this kernel")
    expect(panel.locator(".jp-GpuMem-plot svg.main-svg").first).to_be_attached()  # plotly's chunk loaded
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "notebook7-sidebar.png")
    assert errors == []


def check_inline_view(page: Page, notebook7: Lab, name: str) -> None:
    """A view in a Notebook 7 notebook: the stand-in's figures and chart, moving while a cell sleeps."""
    notebook7.set_scenario((SCENARIOS / "sidebar.scenario").read_text())
    open_notebook(page, notebook7, name, [BUDGET, "%gpumem show", grow(notebook7, 6000, 5)])
    assert "/notebooks/" in page.url and page.evaluate("() => window.jupyterapp.name") == "Jupyter Notebook"
    run_cell(page, 0)
    run_cell(page, 1)
    view = page.locator(".jp-GpuMem-inline").first
    headline = view.locator(".jp-GpuMem-headline")
    expect(headline).to_have_text("3.1 of 20.0 GiB budget (15%, not in force)")
    expect(view.locator(".jp-GpuMem-plot .scatterlayer .traceown .js-line")).to_have_attribute("d", re.compile("L"))
    cell = page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-Cell").nth(2)
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    expect(headline).to_contain_text("5.9 of 20.0 GiB budget (29%, not in force)", timeout=5_000)
    expect(cell.locator(".jp-InputPrompt")).to_have_text("[*]:")  # still running
    expect(cell.locator(".jp-InputPrompt")).to_have_text(re.compile(r"\[\d+\]:"), timeout=15_000)
    expect(view.locator(".jp-GpuMem-source")).to_have_count(0)  # no "view code from the kernel"


def test_the_inline_view_works_in_notebook_7_and_moves_while_a_cell_sleeps(page: Page, notebook7: Lab) -> None:
    """The view's module and plotly are the labextension's, already in the page: nothing fetched for them."""
    paths = fetched(page)
    check_inline_view(page, notebook7, "inline7.ipynb")
    assert page.evaluate("() => window.jupyterapp.hasPlugin('jupyter-gpumem:inline')")
    assert paths == []


def test_the_inline_view_in_notebook_7_without_the_labextension_comes_from_the_servers_route(
    page: Page, bare_notebook7: Lab
) -> None:
    """The module from the server extension's static route, resolved against Notebook 7's base URL: the entry,
    plotly's chunk and the styles, once."""
    paths = fetched(page)
    check_inline_view(page, bare_notebook7, "bare7.ipynb")
    assert not page.evaluate("() => window.jupyterapp.hasPlugin('jupyter-gpumem:inline')")  # really without it
    assert sorted(re.sub(r"(\?v=.*|-[0-9A-Z]{8}\.js)$", "", p) for p in paths) == [
        "/jupyter-gpumem/static/base.css",
        "/jupyter-gpumem/static/chunk",
        "/jupyter-gpumem/static/inline.js",
        "/jupyter-gpumem/static/plotly-basic.min",
    ]
