"""A driver that stalls, seen in a real JupyterLab: the sidebar, the status bar and the kernel's own status say
since when it has not answered, the cell that asks returns at once, and everything picks up when it answers again.
Screenshots at the default 250 px (light and dark) and 600 px in tests/artifacts/."""

from __future__ import annotations

import re
import time

import pytest
from labserver import ARTIFACTS, SCENARIOS, Lab, open_notebook, open_sidebar, run_cell, set_sidebar_width, set_theme
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

SENTENCE = re.compile(
    r"^The NVIDIA driver has not answered since \d\d:\d\d:\d\d \(for \d+ s\); figures are from then\.$"
)

# The followed kernel's recorded series on the GPU shown: this kernel's figure and the device total, newest last.
SERIES = """() => {
  const channel = [...window.jupyterapp.shell.widgets('right')]
    .find(w => w.id === 'jupyter-gpumem-panel').kernels.current;
  const series = channel.history.series(channel.gpu);
  return { own: series.own.slice(-3).map(v => Number.isNaN(v) ? null : v), total: series.total.slice(-1)[0] };
}"""


def test_a_stalled_driver_is_said_everywhere_never_holds_a_cell_and_recovery_is_picked_up(page: Page, lab: Lab) -> None:
    scenario = (SCENARIOS / "sidebar.scenario").read_text()
    open_notebook(page, lab, "stalled.ipynb", ["%load_ext jupyter_gpumem\n%gpumem fraction=0.5", "%gpumem status"])
    assert "recorded" in run_cell(page, 0)
    open_sidebar(page)
    set_sidebar_width(page, 250)
    panel = page.locator("#jupyter-gpumem-panel")
    headline = panel.locator(".jp-GpuMem-headline")
    stalled = panel.locator(".jp-GpuMem-stalled")
    item = page.locator("#jp-main-statusbar .jp-GpuMem-status-item")
    expect(headline).to_have_text(re.compile(r"of 20\.0 GiB budget"))
    expect(stalled).to_be_hidden()

    try:
        lab.set_scenario(scenario + "driver stall=1\n")
        expect(stalled).to_have_text(SENTENCE, timeout=10_000)
        expect(panel.locator(".jp-GpuMem-body")).to_have_class(re.compile("jp-mod-stalled"))
        expect(headline).to_have_text(re.compile(r"of 20\.0 GiB budget"))  # the last figures stay on show, dimmed
        expect(item).to_have_attribute("data-level", "stale")
        assert SENTENCE.match((item.get_attribute("title") or "").split("\n")[0])
        # The chart stops where the driver last answered: this kernel's line has a gap, the device total does not.
        page.wait_for_function("() => { const s = (" + SERIES + ")(); return s.own[s.own.length - 1] === null; }")
        assert page.evaluate(SERIES)["total"] > 0

        started = time.monotonic()
        out = run_cell(page, 1, timeout_ms=10_000)  # the kernel's own status, asked while the driver is stalled
        took = time.monotonic() - started
        assert "has not answered since" in out and "figures are from then" in out
        assert took < 6, f"%gpumem status took {took:.1f} s under a stalled driver"

        ARTIFACTS.mkdir(exist_ok=True)
        page.wait_for_timeout(1500)  # a few stalled samples: the gap shows on the chart
        for dark in (False, True):
            set_theme(page, dark)
            panel.screenshot(path=ARTIFACTS / f"sidebar-stalled-250-{'dark' if dark else 'light'}.png")
        set_theme(page, False)
        set_sidebar_width(page, 600)
        panel.screenshot(path=ARTIFACTS / "sidebar-stalled-600-light.png")
    finally:
        lab.set_scenario(scenario)

    # It answers again: the sentence goes, the figures are live, the line goes on after its gap.
    expect(stalled).to_be_hidden(timeout=10_000)
    expect(panel.locator(".jp-GpuMem-body")).not_to_have_class(re.compile("jp-mod-stalled"))
    expect(item).not_to_have_attribute("data-level", "stale")
    page.wait_for_function("() => { const s = (" + SERIES + ")(); return s.own[s.own.length - 1] !== null; }")
    set_sidebar_width(page, 250)
    page.wait_for_timeout(1500)
    panel.screenshot(path=ARTIFACTS / "sidebar-stalled-recovered-250.png")
