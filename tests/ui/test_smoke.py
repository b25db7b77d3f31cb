"""The browser smoke test: the GPU Memory panel opens and shows the stand-in's figures, and `%gpumem show`
draws the inline view. Part of the browser suite, and what .ci/wheel-test runs against the built wheel
installed in a fresh environment without Node (JUPYTER_GPUMEM_WHEEL_TEST=1 there). On the demo scenario
(realistic names), it also takes the README's screenshot: tests/artifacts/readme.png, copied to
docs/screenshot.png when that is missing or JUPYTER_GPUMEM_DOCS_SCREENSHOT=1."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from labserver import ARTIFACTS, Lab, open_notebook, open_sidebar, run_cell, set_sidebar_width
from playwright.sync_api import Page, expect

import jupyter_gpumem
from jupyter_gpumem import standin

DEMO = Path(standin.__file__).parent / "scenarios" / "demo.scenario"
DOCS = Path(__file__).parents[2] / "docs" / "screenshot.png"

pytestmark = pytest.mark.browser


def test_the_panel_opens_and_the_figures_appear(page: Page, lab: Lab) -> None:
    if os.environ.get("JUPYTER_GPUMEM_WHEEL_TEST"):
        # The installed wheel, not the checkout: this environment's site-packages.
        assert Path(jupyter_gpumem.__file__).is_relative_to(sys.prefix), jupyter_gpumem.__file__
    lab.set_scenario(DEMO.read_text())
    open_notebook(page, lab, "demo.ipynb", ["%load_ext jupyter_gpumem\n%gpumem fraction=0.25", "%gpumem show"])
    run_cell(page, 0)
    open_sidebar(page)
    set_sidebar_width(page, 340)
    panel = page.locator("#jupyter-gpumem-panel")
    expect(panel.locator(".jp-GpuMem-headline")).to_contain_text("of 20.0 GiB budget")
    expect(panel.locator(".jp-GpuMem-processes tbody tr")).to_have_count(3)
    expect(panel.locator(".jp-GpuMem-plot .scatterlayer .traceown .js-line")).to_have_attribute("d", re.compile("L"))
    run_cell(page, 1)
    view = page.locator(".jp-GpuMem-inline")
    expect(view.locator(".jp-GpuMem-headline")).to_contain_text("of 20.0 GiB budget")
    expect(view.locator(".jp-GpuMem-plot .scatterlayer .traceown .js-line")).to_have_attribute("d", re.compile("L"))
    page.wait_for_timeout(2500)  # a few seconds of the chart
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "readme.png")
    if (not DOCS.exists() or os.environ.get("JUPYTER_GPUMEM_DOCS_SCREENSHOT")) and DOCS.parent.is_dir():
        DOCS.write_bytes((ARTIFACTS / "readme.png").read_bytes())
