"""The soak's count of what reaches the sidebar (benchmarks/soak.py) starts after a page load, when the channel has
already taken samples: it asks the kernel to replay them. A channel asked to stream while its own request is still
on its way does nothing, so an ask that came in that moment (the page's hello and first sample had come, its reply
not yet) brought no replay, and what the channel took before the counter never counted: one sample, a kernel's
first, the loss issue 45 found about once in ten runs. The ask now waits for a hello that comes after the counter."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from labserver import Lab, open_notebook, open_sidebar, run_cell
from playwright.sync_api import Page

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))

import soak

pytestmark = pytest.mark.browser

LATEST = f"() => {soak.PANEL}.kernels.current.history.latest.t"
# The page's own request on its way (not awaited), and the soak's ask in the same turn: it finds that request pending.
ASK_WHILE_ON_ITS_WAY = f"async () => {{ {soak.PANEL}.kernels.current.start(); return await ({soak.RECONNECT})(); }}"
HELLOS = "() => window.gpumemSoak.hellos"


def test_the_soaks_replay_comes_after_its_counter_even_while_the_pages_own_request_is_on_its_way(
    page: Page, lab: Lab
) -> None:
    open_notebook(page, lab, "replay.ipynb", ["%load_ext jupyter_gpumem"])
    run_cell(page, 0)
    open_sidebar(page)
    page.wait_for_function(soak.STREAMING_SINCE, arg=0)
    before_counter = page.evaluate(LATEST)
    assert page.evaluate(soak.COUNT) is True  # the channel took samples before the counter: a replay is needed

    on_its_way = page.evaluate(ASK_WHILE_ON_ITS_WAY)

    assert page.evaluate(HELLOS) >= 1, "the ask returned before a hello came"
    counted = {t for t, _ in page.evaluate(soak.TAKE)}
    assert before_counter in counted, f"the sample at {before_counter} from before the counter was not replayed"
    assert on_its_way is True, "the soak did not see the page's request on its way"
