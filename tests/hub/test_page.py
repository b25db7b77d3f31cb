"""The admin page at 250 users in Debian's chromium: the summary first, a filter, a sortable table updated in
place from the service's JSON (no reload), light and dark. The service runs in front of the simulated fleet
(tests/hub/fleet.py); screenshots are left in the test's directory (page-light.png, page-dark.png)."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fleet import ADMIN_TOKEN
from hub_fixtures import Fleet, running_fleet, running_service
from playwright.sync_api import Browser, Page
from server_fixtures import free_port

from jupyter_gpumem._version import __version__

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ui"))
from labserver import ARTIFACTS, browser

__all__ = ["browser"]  # the module's chromium (a fixture, tests/ui/labserver.py)

pytestmark = pytest.mark.browser
USERS = 250


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    env = {"JUPYTER_GPUMEM_HUB_INTERVAL_S": "1", "JUPYTER_GPUMEM_HUB_DEADLINE_S": "0.5"}
    faults = "hung=3,404=2,malformed=2,stops=2"
    with running_fleet(tmp_path_factory.mktemp("page"), USERS, faults, env) as running:
        yield running


def open_page(browser: Browser, fleet: Fleet, dark: bool) -> Page:
    context = browser.new_context(
        viewport={"width": 1440, "height": 900},
        color_scheme="dark" if dark else "light",
        extra_http_headers={"Authorization": f"token {ADMIN_TOKEN}"},
    )
    page = context.new_page()
    page.goto(fleet.service)
    page.wait_for_function("() => document.querySelectorAll('tbody tr').length > 0", timeout=30_000)
    return page


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_the_summary_comes_first_and_fits_on_one_screen(
    browser: Browser, fleet: Fleet, dark: bool, tmp_path: Path
) -> None:
    page = open_page(browser, fleet, dark)
    titles = page.locator("#summary h2").all_text_contents()
    assert titles == [
        "GPUs",
        "Kernels over budget",
        "Idle kernels holding memory",
        "Users by memory held",
        "Servers by release",
    ]
    answering = page.locator("#summary .card").nth(0).locator("li").first.inner_text()
    releases = page.locator("#summary .card").nth(4).locator("li").all_inner_texts()
    # Every server of this fleet runs this release: all those read are counted under it.
    assert answering.startswith("answering servers\n") and int(answering.split("\n")[1]) > 0
    assert releases == [f"{__version__}\n{answering.split(chr(10))[1]}"], (releases, answering)
    assert page.evaluate("() => document.getElementById('summary').getBoundingClientRect().bottom") < 900
    assert page.locator("#summary .big").nth(3).text_content() == f"{USERS} users"
    background = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
    assert (background == "rgb(17, 17, 17)") == dark, background
    page.screenshot(path=str(tmp_path / f"page-{'dark' if dark else 'light'}.png"))
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#summary").screenshot(path=ARTIFACTS / f"hub-summary-{'dark' if dark else 'light'}.png")
    page.context.close()


def test_the_filter_and_the_sort_work_on_every_row(browser: Browser, fleet: Fleet) -> None:
    page = open_page(browser, fleet, dark=False)
    page.fill("#filter", "u00012")
    users = page.locator("tbody tr td:first-child").all_text_contents()
    assert users and set(users) == {"u00012"}
    page.fill("#filter", "")
    used = "() => [...document.querySelectorAll('tbody tr')].map(r => r.children[4].textContent)"
    largest = page.evaluate(used)  # the page opens sorted by memory, largest first
    assert len(largest) >= USERS and largest[0] == "3072 MiB", largest[:5]
    page.locator("th", has_text="Used").click()  # again: smallest first, the unknown before 0
    smallest = page.evaluate(used)
    assert smallest[0] == "" and "0 MiB" in smallest and smallest[-1] == "3072 MiB", smallest[:5]
    assert page.locator("th", has_text="Used").get_attribute("aria-sort") == "ascending"
    page.context.close()


def test_the_table_is_updated_in_place_without_reloading_the_page(browser: Browser, fleet: Fleet) -> None:
    page = open_page(browser, fleet, dark=False)
    page.evaluate("() => { window.sameDocument = true; }")
    first = page.text_content("#state")
    page.wait_for_function("first => document.getElementById('state').textContent !== first", arg=first, timeout=15_000)
    assert page.evaluate("() => window.sameDocument === true")  # a reload would have dropped it
    assert page.locator("tr.stale").count() >= 2  # the servers that answered once, then hung: kept, marked
    # Worded here from the rows' codes (not_answering, no_answer_within) and the catalogue the page is served with.
    notes = page.locator("tr.stale td:last-child").all_text_contents()
    stale = re.compile(r"not answering since \d\d:\d\d:\d\d \(no answer within 0\.5 s\)")
    assert notes and all(stale.fullmatch(n) for n in notes), notes
    page.context.close()


def test_a_prometheus_that_cannot_be_read_is_one_sentence_at_the_top(
    browser: Browser, fleet: Fleet, tmp_path: Path
) -> None:
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    env = {"JUPYTER_GPUMEM_HUB_PROMETHEUS_URL": dead, "JUPYTER_GPUMEM_HUB_INTERVAL_S": "1"}
    with running_service(tmp_path, fleet.url, env, "from-prometheus") as (service, _):
        context = browser.new_context(extra_http_headers={"Authorization": f"token {ADMIN_TOKEN}"})
        page = context.new_page()
        page.goto(service)
        state = page.locator("#state")
        state.filter(has_text="cannot be read").wait_for(timeout=30_000)
        assert state.inner_text().startswith(f"Prometheus at {dead} cannot be read: it cannot be reached")
        assert state.inner_text().endswith("The rows below are its last figures; check that Prometheus runs.")
        context.close()


COLUMN_MESSAGES = ["User", "Server", "Kernel", "GPU", "Used", "Budget", "Over budget", "Ceiling", "Limit", "Idle for",
                   "Note"]  # fmt: skip
CARD_MESSAGES = ["GPUs", "Kernels over budget", "Idle kernels holding memory", "Users by memory held",
                 "Servers by release"]  # fmt: skip
# What overflows: a heading or a header cut or wrapped, a card wider than its box, a row taller than one line, the page
# wider than the window. A card's big figure may take two lines (the GPUs' does in English at this width).
OVERFLOW = """() => {
  const wrapped = e => e.getBoundingClientRect().height > 2 * parseFloat(getComputedStyle(e).fontSize);
  const cut = [...document.querySelectorAll('#summary h2, #summary .big, th')]
    .filter(e => e.scrollWidth > e.clientWidth + 1 || (wrapped(e) && !e.matches('.big'))).map(e => e.textContent);
  const cards = [...document.querySelectorAll('#summary .card')].filter(e => e.scrollWidth > e.clientWidth + 1)
    .map(e => e.querySelector('h2').textContent);
  const tall = [...document.querySelectorAll('tbody tr, #summary li')]
    .filter(wrapped).length;
  return {cut, cards, tall, wide: document.documentElement.scrollWidth > innerWidth};
}"""


def test_a_japanese_browser_gets_the_page_in_japanese_and_it_fits_at_250_users(browser: Browser, fleet: Fleet) -> None:
    from jupyter_gpumem import i18n

    ja = i18n.translation("ja_JP").gettext  # the catalogue as it is now: English where not translated yet
    context = browser.new_context(
        locale="ja-JP",  # Accept-Language: ja-JP
        viewport={"width": 1440, "height": 900},
        extra_http_headers={"Authorization": f"token {ADMIN_TOKEN}"},
    )
    page = context.new_page()
    page.goto(fleet.service)
    page.wait_for_function("() => document.querySelectorAll('tbody tr').length > 0", timeout=30_000)
    assert page.evaluate("() => [navigator.language, document.documentElement.lang]") == ["ja-JP", "ja-JP"]
    assert page.locator("th").all_text_contents() == [ja(m) for m in COLUMN_MESSAGES]
    assert page.locator("#summary h2").all_text_contents() == [ja(m) for m in CARD_MESSAGES]
    assert page.locator("#filter").get_attribute("placeholder") == ja("Filter: user, server, kernel, problem")
    assert page.locator("#filter").get_attribute("aria-label") == ja("Filter rows")
    assert page.title() == ja("GPU memory by user")
    # Every word of the page in Japanese (the service words its state line, cards and cells in the page's language),
    # at 250 users: nothing cut, wrapped or wider.
    page.locator("#state").filter(has_text="に読み取り").wait_for(timeout=15_000)
    assert page.locator("th").nth(8).text_content() == ja(COLUMN_MESSAGES[8])
    assert not re.search(r"[A-Za-z]", page.locator("#shown").text_content() or "A")  # "250 行中 250 行"
    assert page.evaluate(OVERFLOW) == {"cut": [], "cards": [], "tall": 0, "wide": False}
    assert page.evaluate("() => document.getElementById('summary').getBoundingClientRect().bottom") < 900
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "hub-page-ja.png")
    context.close()
