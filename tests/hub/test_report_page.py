"""The report page in Debian's chromium: a month of 40 users' history (tests/hub/report_history.py) in Debian's
prometheus, the service in front of it; the chart drawn by the package's own plotly.js, the tables sorted by a click,
light, dark and Japanese; screenshots in tests/artifacts/ (hub-report-light.png, -dark, -ja)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import report_history as history
from fleet import ADMIN_TOKEN
from hub_fixtures import Fleet, running_fleet
from playwright.sync_api import Browser, Page

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ui"))
from labserver import ARTIFACTS, browser

__all__ = ["browser"]  # the module's chromium (a fixture, tests/ui/labserver.py)

pytestmark = pytest.mark.browser
USERS = 40
SLOTS = 30 * 288 - 6


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    base = tmp_path_factory.mktemp("report-page")
    users = history.make(USERS, SLOTS)
    with history.month(users, SLOTS, base) as (_, url):
        env = {"JUPYTER_GPUMEM_HUB_PROMETHEUS_URL": url}
        with running_fleet(base / "fleet", 4, "", env) as running:
            yield running


def open_report(browser: Browser, fleet: Fleet, dark: bool = False, locale: str | None = None) -> Page:
    context = browser.new_context(
        viewport={"width": 1280, "height": 1000},
        color_scheme="dark" if dark else "light",
        extra_http_headers={"Authorization": f"token {ADMIN_TOKEN}"},
        **({"locale": locale} if locale else {}),
    )
    page = context.new_page()
    page.goto(fleet.service + "report?days=30")
    page.wait_for_selector("#chart .main-svg", timeout=60_000)  # plotly drew it
    return page


def memory_column(page: Page) -> list[float | None]:
    values = page.eval_on_selector_all(
        "table[data-level=user] tbody tr", "rows => rows.map(r => r.cells[2].dataset.v ?? null)"
    )
    return [None if v is None else float(v) for v in values]


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_the_report_draws_its_chart_and_sorts_its_tables(browser: Browser, fleet: Fleet, dark: bool) -> None:
    page = open_report(browser, fleet, dark)
    assert page.locator("#chart .scatterlayer .trace").count() == 10  # the top 10 holders
    first = memory_column(page)
    known = [v for v in first if v is not None]
    assert known == sorted(known, reverse=True) and first[: len(known)] == known  # largest first, N/A last
    page.screenshot(path=str(ARTIFACTS / f"hub-report-{'dark' if dark else 'light'}.png"), full_page=False)
    page.click("table[data-level=user] th[data-key=memory_gib_hours]")  # descending -> ascending
    again = memory_column(page)
    known = [v for v in again if v is not None]
    assert known == sorted(known) and again[: len(known)] == known
    page.context.close()


def test_a_japanese_browser_gets_the_report_in_japanese(browser: Browser, fleet: Fleet) -> None:
    page = open_report(browser, fleet, locale="ja-JP")
    assert page.get_attribute("html", "lang") == "ja-JP"
    page.screenshot(path=str(ARTIFACTS / "hub-report-ja.png"))
    page.context.close()
