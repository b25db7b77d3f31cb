"""JupyterLab in each language of jupyter_gpumem/locale/ (Settings → Language, with its language pack installed): the
GPU Memory sidebar, its table and the status-bar item word in that language, the kernel the sidebar follows words in
it too, and the panel holds at the default 250 px sidebar width. Screenshots at 250 px and 600 px, light and dark, go
to tests/artifacts/sidebar-<language>-<theme>-<width>.png."""

from __future__ import annotations

import json
from typing import Any

import pytest
from checks import layout
from golden_cases import GOLDEN, LANGUAGES, language
from labserver import ARTIFACTS, SCENARIOS, Lab, looks, open_notebook, open_sidebar, run_cell
from playwright.sync_api import Page, expect

from jupyter_gpumem.render import viewtext

pytestmark = pytest.mark.browser

SIDEBAR_GPU = "GPU-5e5e5e5e-0000-4000-8000-000000000001"  # GPU 0 of sidebar.scenario, where this kernel runs


def words(locale: str) -> dict[str, Any]:
    """What the page shows in ``locale`` with sidebar.scenario (this kernel holds 3174 MiB of an A100) after
    `%gpumem fraction=0.5 framework=tensorflow`, TensorFlow not imported: 3.1 of a 20.0 GiB budget, not in force.
    The view's lines are the golden case of that machine and magic (tests/fixtures/golden/<locale>/sidebar.json,
    which a person reads when `python tests/golden_cases.py` rewrites it); the sidebar's own labels are the
    catalogue's words, as the still view takes them. Figures and units are the same in every language."""
    view = json.loads((GOLDEN / locale / "sidebar.json").read_text(encoding="utf-8"))["view"][SIDEBAR_GPU]
    with language(locale):
        return {
            "tag": locale.replace("_", "-"),
            "title": viewtext.lab("GPU Memory"),
            "headline": view["headline"]["text"],
            "header": [viewtext.lab("PID"), viewtext.lab("Name"), viewtext.lab("User"), "MiB", viewtext.lab("CPU %")],
            "badge": viewtext.lab("this kernel"),
            "policy": view["policy"]["text"],
            "tooltip": [
                line
                for line in (
                    view["headline"]["text"],
                    view["note"],
                    view["breakdown"],
                    view["reason"],
                    view["device"],
                    viewtext.lab("No kernel on this server holds GPU memory"),
                    viewtext.lab("Click to open the GPU Memory panel."),
                )
                if line
            ],
        }


HEADER = """() => [...document.querySelectorAll('#jupyter-gpumem-panel .jp-GpuMem-processes thead th')]
  .filter(th => th.getClientRects().length > 0).map(th => th.textContent.trim())"""


def choose_language(lab: Lab, locale: str) -> None:
    """Settings → Language, as JupyterLab writes it: the user settings file, read when the page loads."""
    settings = lab.root.parent / "settings" / "@jupyterlab" / "translation-extension" / "plugin.jupyterlab-settings"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"locale": locale}))


@pytest.mark.parametrize("locale", LANGUAGES)
def test_in_each_language_the_sidebar_the_status_bar_and_the_kernel_word_in_that_language_and_fit_250_px(
    page: Page, lab: Lab, locale: str
) -> None:
    shown = words(locale)
    lab.set_scenario((SCENARIOS / "sidebar.scenario").read_text())
    choose_language(lab, locale)
    open_notebook(
        page,
        lab,
        f"language-{locale}.ipynb",
        [
            "%load_ext jupyter_gpumem\n%gpumem fraction=0.5 framework=tensorflow",
            "import jupyter_gpumem.i18n as i; print(i.language())",
        ],
    )
    assert page.evaluate("() => document.documentElement.lang") == shown["tag"]  # JupyterLab itself is in it
    run_cell(page, 0)
    open_sidebar(page)
    panel = page.locator("#jupyter-gpumem-panel")
    expect(panel.locator(".jp-SidePanel-header h2")).to_have_text(shown["title"])
    expect(panel.locator(".jp-GpuMem-headline")).to_have_text(shown["headline"])
    expect(panel.locator(".jp-GpuMem-policy")).to_have_text(shown["policy"])  # a code's words, from the kernel
    expect(panel.locator("tr.jp-GpuMem-self .jp-GpuMem-badge")).to_have_text(shown["badge"])
    item = page.locator("#jp-main-statusbar .jp-GpuMem-status-item")
    expect(item).to_have_text("GPU 3.1/20.0 GiB")  # figures and units as nvidia-smi's, in every language
    expect(item).to_have_attribute("title", "\n".join(shown["tooltip"]))
    # The sidebar follows this kernel and told it the page's language in its configure.
    assert run_cell(page, 1).strip() == locale

    rows = panel.locator(".jp-GpuMem-processes tbody tr").count()
    assert rows == 3  # this kernel and two others on GPU 0
    for theme, width, where in looks(page):  # plotly has drawn at the new size
        got = layout(page)
        for box in got["scrollers"]:  # the panel, its content, the table's box, the toolbar
            assert box["scrollWidth"] <= box["clientWidth"], f"{locale}, {where}: {box}"
        assert got["toolbarHeight"] <= 33, f"{locale}, {where}: the toolbar wrapped"
        assert got["rowHeights"] == [24] * rows, f"{locale}, {where}: a row wrapped: {got['rowHeights']}"
        header = page.evaluate(HEADER)
        assert header == (shown["header"] if width > 250 else [shown["header"][i] for i in (1, 3, 4)]), where
        panel.screenshot(path=ARTIFACTS / f"sidebar-{locale}-{theme}-{width}.png")
