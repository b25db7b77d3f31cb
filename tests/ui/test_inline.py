"""The inline live view (`%gpumem show`) in a real JupyterLab, with and without this package's labextension
(a hub image that only pip-installed the kernel side): the stand-in's figures, moving while a cell is
busy, two views, closing one; and the rich status rendered as a table."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator

import pytest
from labserver import ARTIFACTS, SCENARIOS, Lab, open_notebook, run_cell, running_lab
from playwright.sync_api import Page, expect
from test_language import words

from jupyter_gpumem import i18n

pytestmark = pytest.mark.browser

BUDGET = "%load_ext jupyter_gpumem\n%gpumem fraction=0.5 framework=tensorflow"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def grow(lab: Lab, own_mib: int, sleep_s: float) -> str:
    """A cell that makes this kernel hold ``own_mib`` on GPU 0 in the stand-in's scenario, then sleeps."""
    text = (SCENARIOS / "sidebar.scenario").read_text()
    text = text.replace("pid=self used=3174MiB", f"pid=self used={own_mib}MiB")
    text = text.replace("used=16500MiB", f"used={16500 - 3174 + own_mib}MiB", 1)
    return (
        "import time\nfrom pathlib import Path\nfrom jupyter_gpumem import standin\n"
        f"standin.write_scenario(Path({str(lab.scenario)!r}), {text!r})\ntime.sleep({sleep_s})"
    )


@pytest.fixture(scope="module")
def bare_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab without jupyter-gpumem's labextension: only ipywidgets' and anywidget's."""
    scenario = (SCENARIOS / "sidebar.scenario").read_text()
    with running_lab(tmp_path_factory.mktemp("bare"), scenario, disabled=("jupyter-gpumem",)) as lab:
        yield lab


def chart_points(page: Page, view: int = 0) -> int:
    """How many points this kernel's line has in the view's chart (plotly's, as the sidebar's)."""
    return int(
        page.evaluate(
            """i => {
              const gd = document.querySelectorAll('.jp-GpuMem-inline')[i]?.querySelector('.jp-GpuMem-plot');
              return gd?._fullData?.find(t => t.uid === 'own')?.x.length ?? 0;
            }""",
            view,
        )
    )


def check_inline_view(page: Page, lab: Lab, name: str, screenshot: str) -> None:
    lab.set_scenario((SCENARIOS / "sidebar.scenario").read_text())
    open_notebook(page, lab, name, [BUDGET, "%gpumem show", grow(lab, 6000, 6), "%gpumem show", grow(lab, 8000, 4)])
    run_cell(page, 0)
    run_cell(page, 1)
    # The sidebar's own rendering (view.ts), in the cell's output.
    view = page.locator(".jp-GpuMem-inline").first
    headline = view.locator(".jp-GpuMem-headline")
    expect(headline).to_have_text("3.1 of 20.0 GiB budget (15%, not in force)")
    expect(view.locator(".jp-GpuMem-own")).to_have_text(re.compile(r"^Exact"))
    expect(view.locator(".jp-GpuMem-banner")).to_contain_text("SIMULATED GPU")
    expect(view.locator(".jp-GpuMem-device")).to_have_text("GPU 0 · NVIDIA A100-SXM4-40GB · 16.1 GiB of 40.0 GiB used")
    rows = view.locator(".jp-GpuMem-processes tbody tr")
    expect(rows).to_have_count(3)
    expect(view.locator("tr.jp-GpuMem-self .jp-GpuMem-badge")).to_have_text("this kernel")
    expect(view.locator(".jp-GpuMem-processes")).to_contain_text("<img src=x onerror=alert(1)>")
    assert view.locator("img").count() == 0
    # As in the sidebar: the lines with figures (TensorFlow has not started; the device total is a note).
    # The chart is plotly's, loaded with the view's own module (no labextension needed), and fills from the
    # history the kernel replays and the samples after it.
    expect(view.locator(".jp-GpuMem-legendItem")).to_have_text(["this kernel", "others", "budget"])
    page.wait_for_function("() => document.querySelector('.jp-GpuMem-inline .jp-GpuMem-collecting')?.hidden")
    expect(view.locator(".jp-GpuMem-plot .scatterlayer .traceown .js-line")).to_have_attribute("d", re.compile("L"))
    # The busy cell: the kernel grows to 6000 MiB and the cell sleeps; the view moves before it ends.
    cell = page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-Cell").nth(2)
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    expect(headline).to_have_text("5.9 of 20.0 GiB budget (29%, not in force)", timeout=5_000)
    expect(cell.locator(".jp-InputPrompt")).to_have_text("[*]:")  # still running
    before = chart_points(page)
    page.wait_for_timeout(1500)
    assert chart_points(page) > before  # the chart grows too, not only the text
    expect(view.locator(".jp-GpuMem-live")).to_have_text(re.compile(r"live · \d\d:\d\d:\d\d · every 1 s"))
    expect(cell.locator(".jp-InputPrompt")).to_have_text(re.compile(r"\[\d+\]:"), timeout=15_000)
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(1).screenshot(path=ARTIFACTS / screenshot)
    # A second view shares the sampler; stopping the first leaves its picture, the second moves on.
    run_cell(page, 3)
    expect(page.locator(".jp-GpuMem-inline")).to_have_count(2)
    second = page.locator(".jp-GpuMem-inline").nth(1)
    expect(second.locator(".jp-GpuMem-headline")).to_contain_text("5.9 of 20.0 GiB budget")
    # The second view's chart starts from the replayed history, not empty (drawn in a frame after its headline,
    # once plotly's chunk is in: waited for, not read at once).
    page.wait_for_function(
        """() => (document.querySelectorAll('.jp-GpuMem-inline')[1]?.querySelector('.jp-GpuMem-plot')
                    ?._fullData?.find(t => t.uid === 'own')?.x.length ?? 0) > 2""",
        timeout=10_000,
    )
    view.get_by_role("button", name="Stop").click()
    # Stopped, it leaves the recorded history as a plotly figure (plotly's own renderer), the headline above it.
    # Waited for longer than an expect's 5 s: the kernel builds the figure and its SVG, then the page loads plotly's
    # renderer (plotly.js, megabytes, not loaded before on this page) and draws it: more than 5 s in a fresh clone's
    # run beside another.
    still = page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(1).locator(".jp-RenderedPlotly")
    expect(still.locator(".gtitle")).to_contain_text(
        "5.9 of 20.0 GiB budget (29%, not in force) · stopped at", timeout=30_000
    )
    expect(still.locator(".legendtext").first).to_have_text("this kernel")
    expect(page.locator(".jp-GpuMem-inline")).to_have_count(1)
    cell = page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-Cell").nth(4)  # busy again: 8000 MiB
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    live = page.locator(".jp-GpuMem-inline .jp-GpuMem-headline")
    expect(live).to_contain_text("7.8 of 20.0 GiB budget", timeout=8_000)
    expect(still.locator(".gtitle")).to_contain_text("5.9 of 20.0 GiB budget")  # it stays still
    # Scrolled out of view, the live view does nothing while its samples come (no change in its DOM, no redraw
    # of its chart); back in view it draws them.
    plot = "document.querySelector('.jp-GpuMem-inline .jp-GpuMem-plot')"
    page.set_viewport_size({"width": 1400, "height": 320})
    page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(0).scroll_into_view_if_needed()
    page.wait_for_function(f"() => {plot}.getBoundingClientRect().top > innerHeight")
    page.wait_for_timeout(500)
    page.evaluate(
        f"""() => {{
          const gd = {plot}; gd.draws = 0; gd.on('plotly_afterplot', () => gd.draws++);
          window.viewChanges = 0;
          new MutationObserver(m => {{ window.viewChanges += m.length; }})
            .observe(document.querySelector('.jp-GpuMem-inline'), {{ subtree: true, childList: true,
              characterData: true, attributes: true }});
        }}"""
    )
    shown = page.locator(".jp-GpuMem-inline .jp-GpuMem-live").text_content()
    page.wait_for_timeout(3_000)
    assert page.evaluate(f"() => [{plot}.draws, window.viewChanges]") == [0, 0]
    page.locator(".jp-GpuMem-inline .jp-GpuMem-chart").scroll_into_view_if_needed()
    page.wait_for_function(f"() => {plot}.draws > 0")
    assert page.locator(".jp-GpuMem-inline .jp-GpuMem-live").text_content() != shown  # the samples that came
    page.set_viewport_size({"width": 1400, "height": 900})


@pytest.fixture(scope="module")
def kernel_only_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab with neither jupyter-gpumem's labextension nor its server extension: as VS Code or Colab, only
    the kernel has the view's code."""
    scenario = (SCENARIOS / "sidebar.scenario").read_text()
    with running_lab(
        tmp_path_factory.mktemp("kernel-only"),
        scenario,
        disabled=("jupyter-gpumem",),
        server_disabled=("jupyter_gpumem.server",),
    ) as lab:
        yield lab


def fetched(page: Page) -> list[str]:
    """The paths of the inline view's files the page fetches from now on (the server extension's static route)."""
    paths: list[str] = []
    route = re.compile(r"^https?://[^/]+(/jupyter-gpumem/static/\S*)")
    page.on("request", lambda request: paths.extend(route.findall(request.url)))
    return paths


def test_inline_view_in_jupyterlab_with_the_labextension(page: Page, lab: Lab) -> None:
    """The view's module and plotly come from the labextension the page already has: nothing fetched for it."""
    paths = fetched(page)
    check_inline_view(page, lab, "inline.ipynb", "inline-view-light.png")
    expect(page.locator('.jp-SideBar [data-id="jupyter-gpumem-panel"]')).to_have_count(1)
    assert paths == []
    expect(page.locator(".jp-GpuMem-source")).to_have_count(0)


def test_inline_view_in_jupyterlab_without_the_labextension(page: Page, bare_lab: Lab) -> None:
    """The module from the server extension's static route, once for both views: the entry, plotly's chunk and
    the styles."""
    paths = fetched(page)
    check_inline_view(page, bare_lab, "bare.ipynb", "inline-view-without-labextension.png")
    expect(page.locator('.jp-SideBar [data-id="jupyter-gpumem-panel"]')).to_have_count(0)  # really without it
    assert sorted(re.sub(r"(\?v=.*|-[0-9A-Z]{8}\.js)$", "", p) for p in paths) == [
        "/jupyter-gpumem/static/base.css",
        "/jupyter-gpumem/static/chunk",
        "/jupyter-gpumem/static/inline.js",
        "/jupyter-gpumem/static/plotly-basic.min",
    ]
    expect(page.locator(".jp-GpuMem-source")).to_have_count(0)


def test_inline_view_with_only_the_kernel_says_what_its_code_costs(page: Page, kernel_only_lab: Lab) -> None:
    """No route to the module: one 404, then the kernel sends it over the view's comm, once for the page; the
    view works as well and says what that cost."""
    paths = fetched(page)
    check_inline_view(page, kernel_only_lab, "kernel.ipynb", "inline-view-kernel-only.png")
    assert [p.split("?")[0] for p in paths] == ["/jupyter-gpumem/static/inline.js"]  # tried once, not found
    expect(page.locator(".jp-GpuMem-source")).to_have_text(
        re.compile(r"^view code from the kernel: 1\.\d MB a page \(no jupyter-gpumem server extension here\)$")
    )


def japanese_kernel(lab: Lab) -> str:
    """A kernelspec of this lab's whose kernel runs in Japanese (LANGUAGE=ja_JP), as a Japanese hub image's would."""
    folder = lab.root.parent / "share" / "kernels" / "python3-ja"  # JUPYTER_PATH: read at each kernel start
    folder.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (ja_JP)",
        "language": "python",
        "env": {"LANGUAGE": "ja_JP"},
    }
    (folder / "kernel.json").write_text(json.dumps(spec))
    return "python3-ja"


@pytest.mark.parametrize("where", ["bare_lab", "kernel_only_lab"])
def test_without_the_labs_translator_a_japanese_kernels_view_words_in_japanese(
    page: Page, where: str, request: pytest.FixtureRequest
) -> None:
    """Where the page has no JupyterLab translator for the view (the module from the server's route, or from the
    kernel as in VS Code or Colab), the view asks the kernel for its language's catalogue and words from it."""
    lab: Lab = request.getfixturevalue(where)
    lab.set_scenario((SCENARIOS / "sidebar.scenario").read_text())
    ja = i18n.translation("ja_JP")
    open_notebook(page, lab, f"ja-{where}.ipynb", [BUDGET, "%gpumem show"], kernel=japanese_kernel(lab))
    run_cell(page, 0)
    run_cell(page, 1)
    view = page.locator(".jp-GpuMem-inline").first
    shown = words("ja_JP")
    expect(view.locator(".jp-GpuMem-headline")).to_have_text(shown["headline"])
    expect(view.locator("tr.jp-GpuMem-self .jp-GpuMem-badge")).to_have_text(shown["badge"])
    expect(view.get_by_role("button", name=ja.gettext("Stop"))).to_have_count(1)
    live = ja.gettext("live · %1 · every %2").replace("%1", r"\d\d:\d\d:\d\d").replace("%2", "1 s")
    expect(view.locator(".jp-GpuMem-live")).to_have_text(re.compile(f"^{live}$"))
    expect(view.locator(".jp-GpuMem-legendItem").first).to_have_text(ja.pgettext("chart", "this kernel"))
    assert page.evaluate("() => document.documentElement.lang") in ("en", "en-US", "")  # the page itself: English
    if where == "kernel_only_lab":
        cost = ja.gettext("view code from the kernel: %1 a page (no jupyter-gpumem server extension here)")
        assert cost != "view code from the kernel: %1 a page (no jupyter-gpumem server extension here)"
        expect(view.locator(".jp-GpuMem-source")).to_have_text(re.compile("^" + re.escape(cost).replace("%1", ".+")))


def test_with_the_labs_translator_the_interfaces_language_wins_over_the_kernels(page: Page, lab: Lab) -> None:
    """JupyterLab in English, its kernel in Japanese: the view is worded by the lab's translator, in English."""
    lab.set_scenario((SCENARIOS / "sidebar.scenario").read_text())
    open_notebook(page, lab, "ja-kernel-en-lab.ipynb", [BUDGET, "%gpumem show"], kernel=japanese_kernel(lab))
    run_cell(page, 0)
    run_cell(page, 1)
    view = page.locator(".jp-GpuMem-inline").first
    expect(view.locator(".jp-GpuMem-headline")).to_have_text("3.1 of 20.0 GiB budget (15%, not in force)")
    expect(view.get_by_role("button", name="Stop")).to_have_count(1)


def test_rich_status_is_a_table_with_this_kernel_marked_and_the_hostile_name_as_text(page: Page, lab: Lab) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    lab.set_scenario((SCENARIOS / "sidebar.scenario").read_text())
    open_notebook(page, lab, "status.ipynb", ["%load_ext jupyter_gpumem\n%gpumem status", "import os; os.getpid()"])
    run_cell(page, 0)
    pid = run_cell(page, 1).strip()
    table = page.locator(".jp-GpuMem-output table.jp-GpuMem-processes").first
    rows = table.locator("tbody tr")
    expect(rows).to_have_count(3)
    cells = [[c.strip() for c in r.locator("td").all_inner_texts()] for r in rows.all()]
    assert cells[0][:3] == ["41337", "N/A", "12000 MiB"]
    assert cells[1][0] == pid and cells[1][2] == "3174 MiB" and cells[1][5].startswith("python")
    assert cells[2][5] == "<img src=x onerror=alert(1)>"
    expect(table.locator("tr.jp-GpuMem-self")).to_have_count(1)
    assert page.locator(".jp-GpuMem-output img").count() == 0 and dialogs == []
    expect(page.locator(".jp-GpuMem-output .jp-GpuMem-memory").first).to_have_text(
        "memory 16500 MiB used of 40960 MiB (40.0 GiB) (40%) · 24460 MiB free · utilisation 71%"
    )


def test_a_stopped_views_chart_stays_interactive_after_its_kernel_is_gone(page: Page, lab: Lab) -> None:
    lab.set_scenario((SCENARIOS / "sidebar.scenario").read_text())
    cells = [
        BUDGET,
        "import jupyter_gpumem, time\nview = jupyter_gpumem.show()\ndisplay(view)\ntime.sleep(4)\nview.close()",
    ]
    open_notebook(page, lab, "stopped.ipynb", cells)
    run_cell(page, 0)
    run_cell(page, 1, timeout_ms=20_000)
    expect(page.locator(".jp-RenderedPlotly")).to_have_count(1)
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")
    # JupyterLab's "Export as HTML" (File > Save and Export Notebook As > HTML) is the server's nbconvert, where
    # the still HTML outranks plotly's mimetype: the chart is its SVG, this kernel's line and the budget drawn.
    export = page.context.new_page()
    export.goto(f"{lab.url}/nbconvert/html/stopped.ipynb?download=false", referer=f"{lab.url}/lab")  # as the menu
    chart = export.locator(".jp-GpuMem-still svg")
    expect(chart).to_have_count(1)
    expect(chart.locator('path[stroke-dasharray="6 4"]')).to_have_count(2)  # the budget, and its legend's swatch
    assert chart.bounding_box()["width"] > 400  # type: ignore[index]
    expect(export.locator(".jp-RenderedHTMLCommon").filter(has_text="Stopped at")).to_have_count(1)
    ARTIFACTS.mkdir(exist_ok=True)
    chart.screenshot(path=ARTIFACTS / "inline-view-exported.png")
    export.close()
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.shutdown()")
    page.goto(lab.notebook_url("stopped.ipynb"))  # opened again: the kernel that drew it is gone
    plot = page.locator(".jp-RenderedPlotly")
    expect(plot).to_be_visible(timeout=30_000)
    # plotly's renderer shows the picture it saved in the notebook first, then the live figure under the pointer.
    plot.hover()
    expect(plot.locator(".legendtext")).to_have_text(["this kernel", "others", "budget"], timeout=20_000)
    box = plot.locator(".nsewdrag").first.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] * 0.02, box["y"] + box["height"] / 2)  # the seconds it ran: at the left
    expect(plot.locator(".hoverlayer")).to_contain_text(re.compile(r"\d\d:\d\d:\d\d"))  # unified hover, to the second
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(1).screenshot(path=ARTIFACTS / "inline-view-stopped.png")


def test_a_live_view_saved_with_its_widget_state_shows_its_last_picture_without_its_kernel(
    page: Page, lab: Lab
) -> None:
    """JupyterLab's "Save Widget State Automatically": the view keeps its last sample and its chart's series,
    decimated, in its widget state (set in the browser only); opened again without its kernel, it shows that
    picture and says it is not live, instead of "Collecting…" for ever."""
    settings = lab.root.parent / "settings" / "@jupyter-widgets" / "jupyterlab-manager" / "plugin.jupyterlab-settings"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text('{"saveState": true}')
    lab.set_scenario((SCENARIOS / "sidebar.scenario").read_text())
    open_notebook(page, lab, "saved-live.ipynb", [BUDGET, "%gpumem show"])
    run_cell(page, 0)
    run_cell(page, 1)
    view = page.locator(".jp-GpuMem-inline")
    expect(view.locator(".jp-GpuMem-headline")).to_have_text("3.1 of 20.0 GiB budget (15%, not in force)")
    page.wait_for_timeout(6_500)  # the saved picture is brought up to date every 5 s
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")
    state = json.loads((lab.root / "saved-live.ipynb").read_text())["metadata"]["widgets"]
    [saved] = [m["state"]["_window"] for m in state[WIDGET_STATE]["state"].values() if "_window" in m["state"]]
    assert saved["message"]["type"] == "sample" and 2 <= len(saved["series"]["t"]) <= 200
    assert len(json.dumps(saved)) < 20_000 and "_esm" not in json.dumps(saved)
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.shutdown()")
    page.goto(lab.notebook_url("saved-live.ipynb"))
    # A whole JupyterLab loads again, and the widget manager restores the saved state once the notebook's new kernel
    # session settles: under CI's load that took longer than expect's 5 s (one failure in a clean-clone run).
    # @jupyter-widgets/jupyterlab-manager races itself here: when the new kernel connects it marks the manager
    # restored (from the kernel, which has no widgets) while the notebook's saved state may still be loading; a view
    # that has waited its 2 s for the model by then says "model not found" for good (seen once, in a fresh clone's
    # run under load). The user's way out, a reload, is the test's, once.
    upstream = page.get_by_text("Error displaying widget: model not found")
    expect(view.locator(".jp-GpuMem-headline").or_(upstream)).to_be_visible(timeout=30_000)
    if upstream.is_visible():
        page.reload()
    expect(view.locator(".jp-GpuMem-headline")).to_have_text(
        "3.1 of 20.0 GiB budget (15%, not in force)", timeout=30_000
    )
    expect(view.locator(".jp-GpuMem-live")).to_have_text(
        re.compile(r"^saved at \d\d:\d\d:\d\d · not live: its kernel is not running this view$")
    )
    expect(view.locator(".jp-GpuMem-plot .scatterlayer .traceown .js-line")).to_have_attribute("d", re.compile("L"))
    expect(view.locator("tr.jp-GpuMem-self")).to_have_count(1)
    expect(view.get_by_role("button", name="Stop")).to_be_hidden()
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(1).screenshot(path=ARTIFACTS / "inline-view-saved.png")
    settings.unlink()
