"""The admin page has two word engines, not three: its words come from the service (hub/page_words.py, in the page's
language) and its script only places them. Read as text, the script has no formatter, plural rule, unit, catalogue or
markup built from data, and no string that is a word; run in Debian's chromium on a poll's JSON full of rows of every
kind, every text the page shows is one the service sent or served."""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import Browser, Route

from jupyter_gpumem import i18n
from jupyter_gpumem.hub import page_words
from jupyter_gpumem.hub.language import tag
from jupyter_gpumem.hub.poll import Poller, PollStats
from jupyter_gpumem.hub.rows import GpuRow, rows_of_server, unreadable
from jupyter_gpumem.hub.service import page, render_rows
from jupyter_gpumem.words import Said

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ui"))
from labserver import browser

__all__ = ["browser"]  # the module's chromium (a fixture, tests/ui/labserver.py)

PAGE_HTML = Path(page_words.__file__).with_name("page.html")
API = Path(__file__).parents[1] / "fixtures" / "api"
NOW = 1763740900.0


def script() -> str:
    """page.html's script without its comments (a comment may say what the script does not do)."""
    text = PAGE_HTML.read_text(encoding="utf-8")
    code = "\n".join(re.findall(r"<script>(.*?)</script>", text, re.DOTALL))
    code = re.sub(r"/\*.*?\*/", "", code, flags=re.DOTALL)
    return re.sub(r"(^|\s)//[^\n]*", r"\1", code)


# What a script that words, pluralises or formats has in it.
FORBIDDEN = {
    r"\bIntl\b": "a locale's formats (Intl.NumberFormat, PluralRules, DateTimeFormat)",
    r"\.toLocale\w*String\b": "a locale's formats",
    r"\.to(?:Fixed|Precision|Exponential)\(": "a figure's digits",
    r"\bpad(?:Start|End)\b": "a figure padded (a clock's)",
    r"\.get(?:UTC)?(?:Hours|Minutes|Seconds|FullYear|Month|Date|Day)\(": "a time of day's figures",
    r"\bMath\.(?:round|floor|ceil|trunc)\b": "a figure rounded",
    r"\b\d*\s*\*?\s*(?:1024|1048576|1073741824)\b|\b[KMGT]i?B\b": "bytes into units",
    r"plural|nplurals|ngettext": "a plural rule",
    r"[!=]==?\s*1\s*\?": "a count's form chosen",
    r"CATALOGUE|WORDS|gettext|\btrans\b|\bt\(|\btn\(": "a catalogue looked up",
    r"\.replace\(\s*/\\\{|\.replaceAll\(": "a template filled in",
    r"`": "text built from a template literal",
    r"innerHTML|outerHTML|insertAdjacentHTML|document\.write": "markup made from the data (names are anyone's)",
}

# Every string the script has is a name it uses (a tag, class, id, attribute, event, header, the API's path) or its
# strictness. A new one is either a new such name, added here, or a word, which page_words words.
NAMES = {
    "", "use strict", "div", "span", "h2", "ol", "li", "tr", "td", "th", "tbody", "card", "big", "big over", "meter",
    "who", "n", "n over", "summary", "filter", "shown", "state", "rows-shown", "refused", "unreachable",
    "[data-slot]", "aria-sort", "ascending", "descending", "none", "click", "input", "visibilitychange",
    'meta[name="xsrf-token"]', "xsrf-token", "X-XSRFToken", "same-origin", "api/rows?", "number",
}  # fmt: skip


@pytest.mark.parametrize("pattern", FORBIDDEN, ids=FORBIDDEN.values())
def test_the_pages_script_has_no_formatter_plural_rule_unit_or_catalogue(pattern: str) -> None:
    assert not re.findall(pattern, script()), FORBIDDEN[pattern]


def test_every_string_in_the_pages_script_is_a_name_never_a_word() -> None:
    strings = {m[0] or m[1] for m in re.findall(r'"((?:[^"\\\n]|\\.)*)"|\'((?:[^\'\\\n]|\\.)*)\'', script())}
    assert strings - NAMES == set()


def fleet_of_every_kind() -> Poller:
    """A poll's rows of every kind a page shows: over budget, idle, on no GPU, a server's row that cannot be read,
    one not answering (stale), one whose driver stalled, limits of every kind, the default and a named server."""
    body = json.loads((API / "body.json").read_text())
    alice = rows_of_server("alice", "", body, NOW)
    bob = [replace(r, limit_hard=True, limit_kind="mig", slice="1g.10gb", driver_limit_bytes=2**33)
           for r in rows_of_server("bob", "gpu", body, NOW)]  # fmt: skip
    hung = Said("not_answering", error=Said("no_answer_within", seconds=0.5))
    carol = [replace(r, stale_since=NOW - 60, problem=hung) for r in rows_of_server("carol", "", body, NOW)]
    dave = [replace(r, driver_stalled_since=NOW - 30) for r in rows_of_server("dave", "", body, NOW)]
    eve = [unreadable("eve", "<b>x</b>", Said("not_installed"))]
    poller = Poller("http://127.0.0.1:1/hub/api", "http://127.0.0.1:1", "token")
    poller.rows = alice + bob + carol + dave + eve
    poller.gpus = [
        GpuRow("GPU-0", 0, "H200", False, 141 * 2**30, 40 * 2**30),
        GpuRow("GPU-1", 1, None, True, None, None),
    ]
    poller.t, poller.stats = NOW, PollStats(NOW, 0.25, 0.01, 1.0, 5, 4, 1, 0)
    return poller


# The texts the page shows (the state line's left out where asked), each as often as it shows it.
SHOWN = """(skip) => {
  const texts = [], walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    if (!n.parentElement.closest(skip || "script, style") && n.textContent.trim()) texts.push(n.textContent);
  }
  return texts;
}"""


@pytest.mark.browser
@pytest.mark.parametrize("language", ["en", *i18n.available()])
def test_every_text_the_page_shows_is_one_the_service_sent(browser: Browser, language: str) -> None:
    words = page_words.Words(language)
    body = render_rows(fleet_of_every_kind(), words)
    data = json.loads(body)
    rows = [r for r in data["rows"] if "alice" in r["shown"]["find"].lower()]  # what the filter below leaves
    # Every text the page shows, each as often as it shows it: the page's own words as served (the state line's
    # replaced; the filter's count, its two figures in their slots) and the JSON's, as the service worded them.
    sent = [data["state"], *re.split(r"\{\w+\}", words.template("{shown} of {total} rows"))]
    sent += [str(len(rows)), str(len(data["rows"]))]
    for card in data["cards"]:
        sent += [card["title"], card["big"], *(text for line in card["lines"] for text in line[:2])]
    sent += [cell for r in rows for cell in r["shown"]["cells"]]
    asked: list[dict[str, list[str]]] = []

    def service(route: Route, answer: bool = True) -> None:  # its page, and its JSON as the page asks for it
        url = urlparse(route.request.url)
        if not url.path.endswith("/api/rows"):
            route.fulfill(body=page(language), content_type="text/html; charset=utf-8")
        elif not answer:
            route.abort()
        else:
            asked.append(parse_qs(url.query))
            route.fulfill(body=body, content_type="application/json")

    tab = browser.new_page()
    try:
        # The page's own words, as served: a service that never answers leaves them (and its state line says so).
        tab.route("http://hub.test/**", lambda route: service(route, answer=False))
        tab.goto("http://hub.test/services/gpumem/")
        tab.locator("#state [data-slot=error]").wait_for(state="attached")
        served = Counter(tab.evaluate(SHOWN, "script, style, #state"))
        tab.close()
        tab = browser.new_page()
        tab.route("http://hub.test/**", service)
        tab.goto("http://hub.test/services/gpumem/")
        tab.wait_for_function("() => document.querySelectorAll('tbody tr').length > 0")
        tab.fill("#filter", "alice")
        shown = tab.evaluate(SHOWN)
        titles = tab.evaluate("() => [...document.querySelectorAll('tbody td')].map(e => e.title)")
        offset = tab.evaluate("() => String(-new Date().getTimezoneOffset())")
    finally:
        tab.close()
    assert asked[0] == {"language": [tag(language)], "utc_offset_min": [offset]}  # its language, the browser's zone
    assert Counter(shown) == served + Counter(t for t in sent if t and t.strip())
    assert Counter(titles) == Counter(cell for r in rows for cell in r["shown"]["cells"])  # a cut cell's tooltip
