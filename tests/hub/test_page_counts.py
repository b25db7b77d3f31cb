"""The admin page's counts in Debian's chromium: one message per count, its form chosen by the count and the page's
language (page_words.PLURALS, worded by the service through its catalogue's plural rule): "1 user" and "2 users" in
English, the catalogue's one form in Japanese and Chinese. The served page renders the cards the service words from a
summary as it builds it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser

from jupyter_gpumem.hub.page_words import Words, cards
from jupyter_gpumem.hub.service import page
from jupyter_gpumem.hub.summary import summary

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ui"))
from labserver import browser

__all__ = ["browser"]  # the module's chromium (a fixture, tests/ui/labserver.py)

pytestmark = pytest.mark.browser


def counts(browser: Browser, language: str, users: int, gpus: int, total: bool = False) -> tuple[str, str]:
    """The GPUs' and the users' big figures on the page in ``language``, for a summary with these counts."""
    shown: dict[str, Any] = summary([], [])
    shown["users"]["count"] = users
    shown["gpus"]["count"] = gpus
    if total:
        shown["gpus"].update(total_bytes=80 * 2**30, used_bytes=2**30, total_text="80.0 GiB", used_text="1.0 GiB")
    tab = browser.new_page()
    try:
        tab.route("**/*", lambda route: route.abort())  # the page polls its service: there is none here
        tab.set_content(page(language).decode())
        tab.evaluate(f"renderSummary({json.dumps(cards(Words(language), shown))})")
        big = tab.locator("#summary .big").all_text_contents()
        return big[0], big[3]
    finally:
        tab.close()


def test_english_says_one_user_and_two_users(browser: Browser) -> None:
    assert counts(browser, "en", users=1, gpus=1) == ("1 GPU", "1 user")
    assert counts(browser, "en", users=2, gpus=2) == ("2 GPUs", "2 users")
    assert counts(browser, "en", users=0, gpus=1, total=True) == ("1.0 GiB of 80.0 GiB on 1 GPU", "0 users")


def test_japanese_and_chinese_use_their_catalogues_one_form_for_every_count(browser: Browser) -> None:
    assert counts(browser, "ja_JP", users=1, gpus=2) == ("2 個の GPU", "1 人のユーザー")
    assert counts(browser, "ja_JP", users=250, gpus=1, total=True) == (
        "1 個の GPU で 80.0 GiB 中 1.0 GiB",
        "250 人のユーザー",
    )
    assert counts(browser, "zh_CN", users=2, gpus=1) == ("1 个 GPU", "2 位用户")
