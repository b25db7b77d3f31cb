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
    set_sidebar_width,
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


GiB = 1024**3


# While the panel says the kernel is restarting, what it shows: dimmed figures, no row marked as
# this kernel's (that PID is the old kernel's), no error colour; and whether the chart said
# "Collecting…" before the new kernel's second sample.
# The over-budget marks on the panel's chart: the hover text of each (plotly's trace "marks").
MARKS = """(() => document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-plot')._fullData
  ?.find(t => t.uid === 'marks')?.hovertext ?? [])()"""

WATCH_RESTART = """() => {
  const panel = document.getElementById('jupyter-gpumem-panel');
  window.gpumemRestart = { statuses: [], whileRestarting: [], collecting: false };
  new MutationObserver(() => {
    const status = panel.querySelector('.jp-GpuMem-status');
    const text = status.hidden ? '' : status.textContent;
    const seen = window.gpumemRestart;
    if (seen.statuses[seen.statuses.length - 1] !== text) seen.statuses.push(text);
    if (text === 'Kernel restarted — reconnecting…') {
      const body = panel.querySelector('.jp-GpuMem-body');
      seen.whileRestarting.push({
        stale: body.classList.contains('jp-mod-stale'),
        opacity: Number(getComputedStyle(body).opacity),
        selfRows: panel.querySelectorAll('tr.jp-GpuMem-self').length,
        // the followed kernel's view; the server's kernel list keeps marking the restarting kernel (same id)
        badges: [...panel.querySelectorAll('.jp-GpuMem-content .jp-GpuMem-badge')]
          .filter(b => b.getClientRects().length).length,
        headlineColour: getComputedStyle(panel.querySelector('.jp-GpuMem-headline')).color,
        textColour: getComputedStyle(panel.querySelector('.jp-GpuMem-content')).color,
      });
    }
    const collecting = panel.querySelector('.jp-GpuMem-collecting');
    if (!collecting.hidden && collecting.textContent === 'Collecting…') seen.collecting = true;
  }).observe(panel, { subtree: true, childList: true, characterData: true, attributes: true });
}"""


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
    set_sidebar_width(page, 600)  # every column shown
    panel = page.locator("#jupyter-gpumem-panel")
    expect(panel.locator(".jp-SidePanel-header h2")).to_have_text("GPU Memory")  # shown in capitals by CSS
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
    expect(panel.locator("tr.jp-GpuMem-self .jp-GpuMem-badge")).to_have_text("this kernel")
    table = rows(page)
    assert table == [
        ["41337", "python3", "N/A", "12000", "N/A"],
        [pid, "pythonthis kernel", table[1][2], "3174", table[1][4]],
        ["41338", "<img src=x onerror=alert(1)>", "N/A", "1024", "N/A"],
    ]
    assert panel.locator("img").count() == 0 and dialogs == []  # the hostile name stayed text
    panel.locator("th[data-key='pid']").click()  # sortable: PID, descending first, then ascending
    expect(panel.locator("th[data-key='pid']")).to_have_attribute("aria-sort", "descending")
    panel.locator("th[data-key='pid']").press("Enter")  # and from the keyboard
    expect(panel.locator("th[data-key='pid']")).to_have_attribute("aria-sort", "ascending")
    pids = [r[0] for r in rows(page)]
    assert pids == sorted(pids, key=int) and len(pids) == 3
    expect(panel.locator("tr.jp-GpuMem-self")).to_have_count(1)
    plot = panel.locator(".jp-GpuMem-plot")
    # The y axis reaches the budget (20 GiB), not the device's 40 GiB, which is a note at the top (once the
    # chart has drawn: plotly is loaded the first time a chart shows).
    expect(plot).to_have_attribute("data-y-top", re.compile(r"^\d"), timeout=15_000)
    assert 20 * GiB <= float(plot.get_attribute("data-y-top") or 0) < 40 * GiB
    expect(panel.locator(".jp-GpuMem-totalNote")).to_have_text("device total 40.0 GiB ↑")

    # The other GPU, through the toolbar's GPU choice.
    choice = panel.locator(".jp-SidePanel-toolbar .jp-HTMLSelect select")
    choice.select_option(label="GPU 1: NVIDIA T4")
    expect(headline).to_have_text(re.compile(r"^0(\.0)? of 7\.5 GiB budget \(0%, not in force\)$"))
    choice.select_option(label="GPU 0: NVIDIA A100-SXM4-40GB")

    # The driver reports more: the headline, the table and the chart follow.
    text = (SCENARIOS / "sidebar.scenario").read_text()
    lab.set_scenario(text.replace("used=3174MiB", "used=18944MiB").replace("used=16500MiB", "used=32270MiB"))
    expect(headline).to_have_text("18.5 of 20.0 GiB budget (93%, not in force)")
    expect(headline).to_have_attribute("data-level", "warn")
    lab.set_scenario(text.replace("used=3174MiB", "used=21504MiB").replace("used=16500MiB", "used=34830MiB"))
    expect(headline).to_have_text("21.0 of 20.0 GiB budget (105%, not in force)")
    expect(headline).to_have_attribute("data-level", "error")
    # Why, in the panel (the kernel's phrase, as it is) and as a mark on the chart.
    expect(panel.locator(".jp-GpuMem-reason")).to_have_text(re.compile(r"^Over budget: \S"))
    reason = (panel.locator(".jp-GpuMem-reason").text_content() or "").removeprefix("Over budget: ")
    page.wait_for_function(MARKS + ".length === 1")
    hover = page.evaluate(MARKS)[0].replace("<br>", " ")  # cut into lines that fit the chart's hover
    assert re.fullmatch(rf"Over budget from \d\d:\d\d:\d\d: {re.escape(reason)}", hover), hover
    ARTIFACTS.mkdir(exist_ok=True)
    panel.locator("th[data-key='pid']").blur()
    panel.screenshot(path=ARTIFACTS / "sidebar-over-budget.png")

    # Restart: the old kernel's figures are dimmed and its PID no longer marked while the sidebar
    # reconnects; then it streams from the new kernel (which has no policy).
    lab.set_scenario(text)
    page.evaluate(WATCH_RESTART)
    page.evaluate("() => { void window.jupyterapp.commands.execute('kernelmenu:restart'); }")  # awaits the dialog
    page.locator(".jp-Dialog .jp-mod-accept").click()
    expect(panel.locator(".jp-GpuMem-status")).to_have_text("Kernel restarted — reconnecting…")
    panel.screenshot(path=ARTIFACTS / "sidebar-restarting.png")
    expect(headline).to_have_text("3.1 GiB used by this kernel")
    expect(panel.locator(".jp-GpuMem-budgetNote")).to_have_text(re.compile(r"^No budget set — \S"))
    seen = page.evaluate("() => window.gpumemRestart")
    assert "Kernel restarted — reconnecting…" in seen["statuses"]
    assert seen["whileRestarting"], "the panel never rendered while restarting"
    for state in seen["whileRestarting"]:
        assert state["stale"] and state["opacity"] < 0.6, state
        assert state["selfRows"] == 0 and state["badges"] == 0, state
        assert state["headlineColour"] == state["textColour"], state  # no red 105% for a dead kernel
    assert seen["collecting"], "the new kernel's chart never said Collecting… before its second sample"
    expect(panel.locator("tr.jp-GpuMem-self")).to_have_count(1)  # the new kernel's row, once the table has it
    new_pid = next(r for r in rows(page) if r[1] == "pythonthis kernel")[0]
    assert new_pid != pid
    expect(panel.locator(".jp-GpuMem-body")).not_to_have_class(re.compile("jp-mod-stale"))
    page.wait_for_function(MARKS + ".length === 0")  # a new stream: the old episode is gone
    assert dialogs == []


def test_a_restart_this_page_did_not_ask_for_is_said_as_a_restart_and_streams_from_the_new_kernel(
    page: Page, lab: Lab
) -> None:
    # Another tab, the REST API or `jupyter` on the command line restarts the kernel: this page's kernel connection
    # hears only the new process's status on iopub (a new session id). Before, the sidebar said nothing until its
    # stall watchdog's 5 s ("no figures for …"), and only then asked the new kernel to stream.
    open_notebook(page, lab, "elsewhere.ipynb", ["import os; os.getpid()"])
    pid = run_cell(page, 0).strip()
    open_sidebar(page)
    panel = page.locator("#jupyter-gpumem-panel")
    expect(panel.locator("tr.jp-GpuMem-self td").first).to_have_text(pid)
    page.evaluate(WATCH_RESTART)
    kernel_id = page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.id")
    request = urllib.request.Request(f"{lab.url}/api/kernels/{kernel_id}/restart?token={TOKEN}", b"{}", method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        assert response.status == 200
    expect(panel.locator("tr.jp-GpuMem-self td").first).not_to_have_text(pid, timeout=30_000)
    expect(panel.locator(".jp-GpuMem-body")).not_to_have_class(re.compile("jp-mod-stale"))
    seen = page.evaluate("() => window.gpumemRestart")
    assert "Kernel restarted — reconnecting…" in seen["statuses"], seen["statuses"]


def test_the_palette_opens_the_sidebar_and_a_reload_restores_it_streaming(page: Page, lab: Lab) -> None:
    open_notebook(page, lab, "reload.ipynb", ["1 + 1"])
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:activate-command-palette')")
    page.keyboard.type("Show GPU Memory")
    page.keyboard.press("Enter")
    panel = page.locator("#jupyter-gpumem-panel")
    expect(panel.locator(".jp-GpuMem-budgetNote")).to_contain_text("No budget set")
    wait_for_saved_layout(lab, '"current": "jupyter-gpumem"')
    page.goto(f"{lab.url}/lab/tree/reload.ipynb?token={TOKEN}")
    page.wait_for_function(KERNEL_IDLE, timeout=90_000)
    expect(panel).to_be_visible()
    expect(panel.locator(".jp-GpuMem-budgetNote")).to_contain_text("No budget set")
    expect(panel.locator(".jp-GpuMem-processes tbody tr")).to_have_count(3)

    # The toolbar: reconnect starts a new stream (a new hello), settings opens this extension's settings.
    page.evaluate(
        "() => { window.gpumemHellos = 0; const channel = [...window.jupyterapp.shell.widgets('right')]"
        ".find(w => w.id === 'jupyter-gpumem-panel').kernels.current; const receive = channel.receive.bind(channel);"
        " channel.receive = data => { if (data?.type === 'hello') window.gpumemHellos++; receive(data); }; }"
    )
    panel.get_by_title("Reconnect to the kernel (restart the GPU memory stream)").click()
    page.wait_for_function("() => window.gpumemHellos === 1")
    expect(panel.locator(".jp-GpuMem-processes tbody tr")).to_have_count(3)
    panel.get_by_title("GPU Memory settings").click()
    editor = page.locator("#setting-editor")
    expect(editor).to_be_visible()
    expect(editor).to_contain_text("Sampling interval (seconds)")


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
    expect(page.locator(".jp-GpuMem-status-item")).to_be_hidden()
    expect(panel.locator(".jp-GpuMem-body")).to_be_hidden()
