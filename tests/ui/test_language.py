"""JupyterLab in Japanese and in Simplified Chinese (Settings → Language, with the language packs installed): the
GPU Memory sidebar, its table and the status-bar item word in that language, the kernel the sidebar follows words in
it too, and the panel holds at the default 250 px sidebar width. Screenshots at 250 px and 600 px, light and dark, go
to tests/artifacts/sidebar-<language>-<theme>-<width>.png."""

from __future__ import annotations

import json

import pytest
from checks import layout
from labserver import ARTIFACTS, SCENARIOS, Lab, looks, open_notebook, open_sidebar, run_cell
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

# What the page shows in each language with sidebar.scenario (this kernel holds 3174 MiB of an A100) after
# `%gpumem fraction=0.5 framework=tensorflow`, TensorFlow not imported: 3.1 of a 20.0 GiB budget, not in force.
# The words are the catalogue's (jupyter_gpumem/locale); the figures and units are the same in every language.
SHOWN = {
    "ja_JP": {
        "tag": "ja-JP",
        "title": "GPU メモリ",
        "headline": "予算 20.0 GiB 中 3.1 GiB (15%、未適用)",
        "header": ["PID", "名前", "ユーザー", "MiB", "CPU %"],
        "badge": "このカーネル",
        "policy": "ポリシー: fraction=0.5 framework=tensorflow — 「import tensorflow」の完了時に適用",
        "tooltip": [
            "予算 20.0 GiB 中 3.1 GiB (15%、未適用)",
            "TensorFlow の上限 19.5 GiB + CUDA とライブラリ用の確保分 500 MiB (推定)",
            "GPU 0 · NVIDIA A100-SXM4-40GB · 40.0 GiB 中 16.1 GiB 使用中",
            "このサーバーで GPU メモリを使っているカーネルはありません",
            "クリックすると GPU メモリのパネルを開きます。",
        ],
    },
    "zh_CN": {
        "tag": "zh-CN",
        "title": "GPU 显存",
        "headline": "3.1 / 20.0 GiB 预算（15%，未生效）",
        "header": ["PID", "名称", "用户", "MiB", "CPU %"],
        "badge": "此内核",
        "policy": "策略：fraction=0.5 framework=tensorflow — 在“import tensorflow”完成时生效",
        "tooltip": [
            "3.1 / 20.0 GiB 预算（15%，未生效）",
            "TensorFlow 上限 19.5 GiB + 为 CUDA 和库预留 500 MiB（估算）",
            "GPU 0 · NVIDIA A100-SXM4-40GB · 已用 16.1 GiB / 40.0 GiB",
            "此服务器上没有内核占用显存",
            "点击打开 GPU 显存面板。",
        ],
    },
}

HEADER = """() => [...document.querySelectorAll('#jupyter-gpumem-panel .jp-GpuMem-processes thead th')]
  .filter(th => th.getClientRects().length > 0).map(th => th.textContent.trim())"""


def choose_language(lab: Lab, locale: str) -> None:
    """Settings → Language, as JupyterLab writes it: the user settings file, read when the page loads."""
    settings = lab.root.parent / "settings" / "@jupyterlab" / "translation-extension" / "plugin.jupyterlab-settings"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"locale": locale}))


@pytest.mark.parametrize("locale", list(SHOWN))
def test_in_japanese_and_chinese_the_sidebar_the_status_bar_and_the_kernel_word_in_that_language_and_fit_250_px(
    page: Page, lab: Lab, locale: str
) -> None:
    shown = SHOWN[locale]
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
    for theme, width, where in looks(page):
        page.wait_for_function(
            """() => { const gd = document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-plot');
                       return gd._fullLayout?.width === gd.parentNode.clientWidth; }""",
            timeout=10_000,
        )
        got = layout(page)
        for box in got["scrollers"]:  # the panel, its content, the table's box, the toolbar
            assert box["scrollWidth"] <= box["clientWidth"], f"{locale}, {where}: {box}"
        assert got["toolbarHeight"] <= 33, f"{locale}, {where}: the toolbar wrapped"
        assert got["rowHeights"] == [24] * rows, f"{locale}, {where}: a row wrapped: {got['rowHeights']}"
        header = page.evaluate(HEADER)
        assert header == (shown["header"] if width > 250 else [shown["header"][i] for i in (1, 3, 4)]), where
        panel.screenshot(path=ARTIFACTS / f"sidebar-{locale}-{theme}-{width}.png")
