"""The Settings editor's words for GPU Memory (labextension/schema/plugin.json) in each language of locale/.

jupyterlab_server (2.28) translates a schema in the locale of Settings → Language, but only from a language pack's
own catalogues (translation_utils.TranslationBundle: "TODO: Need to handle packages that provide their own .mo
files"), so it serves ours in English. The page words it instead: the schema asks for a settings-registry transform
("jupyter.lab.transform") and the sidebar's plugin gives one that words the same strings, in the same contexts, from
this package's catalogue (format/settings.ts). Checked in a real JupyterLab with the language packs: the editor
lists GPU Memory and shows its settings in the language (in English in an English lab), a value the user set, or sets
there, reaches the kernel, and a page that opens with the editor lists it too."""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

import pytest
from golden_cases import LANGUAGES, language
from jupyterlab_server.translation_utils import get_language_pack
from labserver import ARTIFACTS, SCENARIOS, TOKEN, Lab, open_notebook, open_sidebar, run_cell
from playwright.sync_api import Page, expect
from test_language import choose_language

from jupyter_gpumem.i18n import pgettext

pytestmark = pytest.mark.browser  # a real JupyterLab server, as the browser tests start it

PLUGIN = "jupyter-gpumem:plugin"
LAB_OWN = "@jupyterlab/apputils-extension:themes"
ENGLISH = {"lab": "Theme", "title": "GPU Memory", "interval": "Sampling interval (seconds)"}


def worded(locale: str) -> dict[str, str]:
    """The editor's words in ``locale``: JupyterLab's own schema title (the theme plugin's) from its language pack,
    which must be installed, and GPU Memory's from our catalogue, in the contexts jupyterlab_server's walk of the
    schema gives them ("schema" for the title, "settings" for a field's)."""
    if locale == "en":
        return ENGLISH
    pack, problem = get_language_pack(locale)
    assert "jupyterlab" in pack, f"no language pack for {locale}: {problem}"
    with language(locale):
        return {
            "lab": pack["jupyterlab"]["schema\u0004" + ENGLISH["lab"]][0],
            "title": pgettext("schema", ENGLISH["title"]),
            "interval": pgettext("settings", ENGLISH["interval"]),
        }


def schema(lab: Lab, plugin: str) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{lab.url}/lab/api/settings/{plugin}", headers={"Authorization": f"token {TOKEN}"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.load(answer)["schema"]


@pytest.mark.parametrize("locale", LANGUAGES)
def test_the_server_translates_schemas_in_the_language_and_ours_names_its_domain(lab: Lab, locale: str) -> None:
    choose_language(lab, locale)
    assert schema(lab, LAB_OWN)["title"] == worded(locale)["lab"]  # the language is in force for schemas
    ours = schema(lab, PLUGIN)
    assert ours["jupyter.lab.internationalization"] == {"selectors": [], "domain": "jupyter_gpumem"}


INTERVAL = """async () => {
  // The notebook's kernel, wherever the Settings editor puts the focus.
  const notebook = [...window.jupyterapp.shell.widgets('main')].find(widget => widget.sessionContext);
  const kernel = notebook.sessionContext.session.kernel;
  const code = 'from jupyter_gpumem.kernel.runtime import runtime\\n'
    + 'print(runtime().stream.sampler.interval_s)';
  let text = '';
  const future = kernel.requestExecute({ code });
  future.onIOPub = m => { if (m.header.msg_type === 'stream') text += m.content.text; };
  await future.done;
  return text.trim();
}"""


def kernel_samples_every(page: Page, interval_s: float) -> None:
    """The followed kernel's sampling interval becomes ``interval_s`` within 20 s: the setting reached the kernel.

    Polled with evaluate, which awaits the kernel's answer, so that a failure says the interval the kernel last
    answered."""
    deadline = time.monotonic() + 20
    while (seen := page.evaluate(INTERVAL)) != str(interval_s):
        assert time.monotonic() < deadline, f"the kernel samples every {seen} s, not {interval_s} s"
        page.wait_for_timeout(500)


@pytest.mark.parametrize("locale", [*LANGUAGES, "en"])
def test_the_settings_editor_shows_gpu_memorys_settings_in_the_language_and_they_still_reach_the_kernel(
    page: Page, lab: Lab, locale: str
) -> None:
    words = worded(locale)
    choose_language(lab, locale)
    # What the server serves: English (see above), which the page words.
    assert schema(lab, PLUGIN)["title"] == "GPU Memory"
    ours = lab.root.parent / "settings" / "jupyter-gpumem" / "plugin.jupyterlab-settings"
    ours.parent.mkdir(parents=True, exist_ok=True)
    ours.write_text(json.dumps({"intervalSeconds": 2}))
    lab.set_scenario((SCENARIOS / "sidebar.scenario").read_text())
    open_notebook(page, lab, f"settings-{locale}.ipynb", ["%load_ext jupyter_gpumem"])
    run_cell(page, 0)
    open_sidebar(page)  # the sidebar's follower configures the kernel with the settings
    kernel_samples_every(page, 2.0)  # the user's value came through the transform to the follower

    # The sidebar's settings button opens the editor searching for GPU Memory's title, in the language.
    page.locator('#jupyter-gpumem-panel [data-jp-item-name="settings"]').click()
    page.locator(".jp-PluginList").get_by_text(words["title"], exact=True).click()
    form = page.locator(".jp-SettingsPanel")
    expect(form.get_by_text(words["interval"], exact=True)).to_be_visible(timeout=20_000)

    # An edit in the editor is saved (the registry fetches the plugin again through the transform) and reaches
    # the kernel; the editor keeps its words.
    field = form.locator('input[id$="_intervalSeconds"]')
    expect(field).to_have_value("2")
    field.fill("3")
    kernel_samples_every(page, 3.0)
    # The editor saves the whole form, defaults included.
    assert json.loads(ours.read_text()) == {"intervalSeconds": 3, "historyMinutes": 15}
    expect(form.get_by_text(words["interval"], exact=True)).to_be_visible()
    expect(page.locator(".jp-PluginList").get_by_text(words["title"], exact=True)).to_be_visible()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / f"settings-{locale}.png")

    # A page that opens with the editor (restored from the workspace, as JupyterLab saves it): the editor may list
    # the plugins before this package's plugin gives the transform, and lists GPU Memory once it has.
    workspaces = lab.root.parent / "workspaces"
    deadline = time.monotonic() + 20
    while not any("setting-editor" in saved.read_text() for saved in workspaces.glob("*")):
        assert time.monotonic() < deadline, "JupyterLab did not save the workspace with the Settings editor"
        page.wait_for_timeout(250)
    page.goto(f"{lab.url}/lab?token={TOKEN}")
    expect(page.locator(".jp-PluginList").get_by_text(words["title"], exact=True)).to_be_visible(timeout=30_000)
    expect(page.locator(".jp-SettingsPanel").get_by_text(words["interval"], exact=True)).to_be_visible()
