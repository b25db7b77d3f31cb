"""The admin page in the browser's language: Accept-Language as Chrome, Firefox and Safari send it picks Japanese,
Simplified Chinese or English (docs/i18n-plumbing.md, section 5's table), and the page served with it carries that
language's words for the codes and for its own words, English wherever a catalogue leaves a message untranslated.
The JSON stays English. The served pages come from a real service in front of a small simulated fleet."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import quote

import pytest
from fleet import ADMIN_TOKEN
from hub_fixtures import Fleet, running_fleet

from jupyter_gpumem import i18n
from jupyter_gpumem.hub import page_words
from jupyter_gpumem.hub.language import choose
from jupyter_gpumem.hub.service import PAGE_MESSAGE, PAGE_TEMPLATE, page
from jupyter_gpumem.i18n import extract
from jupyter_gpumem.words import CATALOGUE, catalogue, word_wire

PAGE_HTML = Path(page_words.__file__).with_name("page.html")


@pytest.mark.parametrize(
    ("header", "language"),
    [
        ("ja,en-US;q=0.9,en;q=0.8", "ja_JP"),  # Chrome set to Japanese: a bare "ja" first
        ("ja-JP", "ja_JP"),
        ("ja-jp,en;q=0.5", "ja_JP"),  # Safari's case
        ("zh-CN,zh;q=0.9", "zh_CN"),
        ("zh", "zh_CN"),
        ("zh-Hans-CN", "zh_CN"),
        ("zh-Hans", "zh_CN"),
        ("zh-SG,en;q=0.5", "zh_CN"),
        ("de;q=0.9, ja;q=0.1", "ja_JP"),  # no German: the next one the reader reads
        ("en;q=0.5, ja;q=0.8", "ja_JP"),  # q-values, not the order, rank them
        ("en-US,ja;q=0.9", "en"),  # English asked for first
        ("ja;q=0.5, zh-CN;q=0.5", "ja_JP"),  # equal q: the header's order
        ("zh-CN;q=0, ja;q=0.1", "ja_JP"),  # q=0 means not this one
    ],
)
def test_the_browsers_language_picks_the_catalogue(header: str, language: str) -> None:
    assert choose(header) == language


@pytest.mark.parametrize(
    "header",
    [
        "zh-TW,zh;q=0.9,en;q=0.8",  # Traditional Chinese, with the bare "zh" Chrome adds: not Simplified
        "zh-HK",
        "zh-Hant-TW,zh;q=0.5",
        "zh-MO",
        "de-DE,fr;q=0.9",
        "*",
        "en",
        "",
        None,
    ],
)
def test_traditional_chinese_and_languages_without_a_catalogue_read_english(header: str | None) -> None:
    assert choose(header) == "en"


@pytest.mark.parametrize(
    "header",
    [
        ";;;,,q=",
        "ja;q=2",
        "ja;q=abc",
        "ja;q=0.5;q=0.9",
        "j@p@n",
        "ja_JP.UTF-8",
        "ja;" + "q=" * 5000,
        "\x00ja",
        "日本語",
    ],
)
def test_a_malformed_header_reads_english_and_is_never_an_error(header: str) -> None:
    assert choose(header) == "en"


def test_a_malformed_language_is_passed_over_for_the_next() -> None:
    assert choose("ja;q=x, zh-CN;q=0.5") == "zh_CN"
    assert choose("xx-@@, ja") == "ja_JP"


def test_every_word_the_page_shows_is_a_message_the_extractor_finds() -> None:
    in_html = set(PAGE_MESSAGE.findall(PAGE_HTML.read_text(encoding="utf-8"))) - {"lang"}
    assert in_html <= set(page_words.MESSAGES)
    # Every other message is worded by page_words itself (a column's title, or named where it is worded).
    source = Path(page_words.__file__).read_text(encoding="utf-8")
    titles = {c.title for c in page_words.COLUMNS}
    unused = [m for m in page_words.MESSAGES if m not in in_html | titles and source.count(json.dumps(m)) < 2]
    assert unused == []
    found = {msgid for (file, _), msgid, _ in extract.python() if file == "jupyter_gpumem/hub/page_words.py"}
    assert found == set(page_words.MESSAGES) | set(page_words.PLURALS)


def test_the_japanese_page_carries_japanese_words_and_one_script_for_every_language() -> None:
    html = page("ja_JP").decode()
    ja = i18n.translation("ja_JP")
    assert '<html lang="ja-JP">' in html
    assert f"<title>{ja.gettext('GPU memory by user')}</title>" in html
    assert f'placeholder="{ja.gettext("Filter: user, server, kernel, problem")}"' in html
    headers = re.findall(r"<th[^>]*>([^<]*)</th>", html)
    assert headers == [ja.gettext(c.title) for c in page_words.COLUMNS] != [c.title for c in page_words.COLUMNS]
    refused = ja.gettext("The service answered {status}; reload the page to log in again.")
    assert page_words.slots(refused) in html and '<span data-slot="status"></span>' in page_words.slots(refused)
    # The script is the template's, as it is, in every language: nothing is inlined into it to word with.
    for language in ("en", *i18n.available()):
        assert page(language).decode().split("<script>")[1] == PAGE_TEMPLATE.split("<script>")[1]


def test_the_english_page_is_the_template_with_its_english_words() -> None:
    html = page("en").decode()
    assert '<html lang="en">' in html and "<title>GPU memory by user</title>" in html
    assert "{{" not in html and "<!--COLUMNS-->" not in html
    assert re.findall(r"<th[^>]*>([^<]*)</th>", html) == [c.title for c in page_words.COLUMNS]
    assert '<th data-key="used_bytes" class="n" aria-sort="descending" title="Used">Used</th>' in html


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    with running_fleet(
        tmp_path_factory.mktemp("language"), 3, "404=1", {"JUPYTER_GPUMEM_HUB_INTERVAL_S": "1"}
    ) as running:
        yield running


def served(url: str, accept_language: str | None) -> tuple[bytes, dict[str, str]]:
    headers = {"Authorization": f"token {ADMIN_TOKEN}"}
    if accept_language is not None:
        headers["Accept-Language"] = accept_language
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as response:
        return response.read(), dict(response.headers)


def test_the_service_serves_the_page_in_the_browsers_language(fleet: Fleet) -> None:
    english, headers = served(fleet.service, None)
    assert english == page("en") and headers["Vary"] == "Accept-Language"
    japanese, headers = served(fleet.service, "ja,en-US;q=0.9")
    assert japanese == page("ja_JP") != english and headers["Vary"] == "Accept-Language"
    assert served(fleet.service, "zh-Hans-CN")[0] == page("zh_CN")
    for header in ("zh-TW,zh;q=0.9,en;q=0.8", "en-US", "q=;;", ""):
        assert served(fleet.service, header)[0] == english, header


def test_the_json_stays_english_whatever_the_browsers_language(fleet: Fleet) -> None:
    body, headers = served(fleet.service + "api/rows", "ja,en-US;q=0.9")
    assert "Vary" not in headers
    data = json.loads(body)
    said = [r for r in data["rows"] if r["problem_said"]]
    assert said  # the server without jupyter-gpumem
    for row in said:  # the sentence beside the code, and the note the page would show: English
        assert row["problem"] == word_wire(row["problem_said"], CATALOGUE) == row["shown"]["cells"][-1]
    assert data["language"] == "en" and data["state"].startswith(("Read at", "Not read yet."))


def in_zone(t: float, minutes: int) -> str:
    return datetime.fromtimestamp(t, timezone(timedelta(minutes=minutes))).strftime("%H:%M:%S")


def test_the_json_the_page_asks_for_is_worded_in_its_language_at_its_browsers_offset(fleet: Fleet) -> None:
    rows = fleet.service + "api/rows?language={}&utc_offset_min={}"
    for _ in range(30):  # until the service has read the servers once
        data = json.loads(served(rows.format("ja-JP", 540), None)[0])
        if data["t"] is not None:
            break
        time.sleep(0.5)
    assert data["language"] == "ja_JP"
    assert data["state"].startswith(f"{in_zone(data['t'], 540)} に読み取り:"), data["state"]
    [row] = [r for r in data["rows"] if r["problem_said"]]
    assert row["shown"]["cells"][-1] == word_wire(row["problem_said"], catalogue("ja_JP")) != row["problem"]
    assert row["shown"]["cells"][1] == i18n.translation("ja_JP").gettext("(default)")
    # The Limit column says the limit's kind in the page's language, never its code.
    limits = {r["shown"]["cells"][8] for r in data["rows"] if r["limit_kind"] == "cooperative"}
    assert limits == {i18n.translation("ja_JP").gettext("cooperative")} != {"cooperative"}, limits
    chinese = json.loads(served(rows.format("zh-Hans-CN", -300), None)[0])
    assert chinese["language"] == "zh_CN" and in_zone(chinese["t"], -300) in chinese["state"]
    # Whatever else a request says: English, and this machine's time for an offset no zone has.
    for language, offset in (("xx-@@", "abc"), ("zh-TW", "541"), ("<b>", "99999")):
        other = json.loads(served(rows.format(quote(language), offset), None)[0])
        clock = time.strftime("%H:%M:%S", time.localtime(other["t"]))
        assert other["language"] == "en" and other["state"].startswith(f"Read at {clock}"), other["state"]
