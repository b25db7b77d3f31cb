"""Which language the admin page is served in: the browser's ``Accept-Language`` (RFC 9110 §12.5.4), read here.

Neither tornado's ``get_browser_locale`` (Chrome's Japanese ``ja,en-US;q=0.9`` reads en_US: bare ``ja`` is no
locale of its) nor babel's ``negotiate_locale`` (bare ``zh`` and ``zh-Hans-CN`` read nothing) picks right from what
browsers send (docs/i18n-plumbing.md, section 5). So: the tags by q-value, the first that has a catalogue
(``i18n.locale_for``) wins; an English tag before it, or nothing that fits, is English.
"""

from __future__ import annotations

import re

from jupyter_gpumem import i18n

_TAG = re.compile(r"[A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*|\*")
_Q = re.compile(r"q=(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)", re.IGNORECASE)
MOST = 32  # a header's first languages; a browser sends a handful


def choose(accept_language: str | None) -> str:
    """The catalogue the page is worded from: "ja_JP", "zh_CN" or "en". Any header, malformed or none, is
    a language (English for what cannot be read), never an error."""
    tags: list[tuple[float, int, str]] = []
    for i, item in enumerate((accept_language or "").split(",")[:MOST]):
        tag, *params = (part.strip() for part in item.split(";"))
        q = [p for p in params if p[:2].lower() == "q="]
        if not _TAG.fullmatch(tag) or len(q) > 1 or (q and not _Q.fullmatch(q[0])):
            continue  # this language cannot be read; the others still can
        weight = float(q[0][2:]) if q else 1.0
        if weight > 0:
            tags.append((-weight, i, tag.lower()))
    traditional = False
    for _, _, tag in sorted(tags):
        primary = tag.split("-")[0]
        if primary == "en":
            return i18n.ENGLISH
        language = i18n.locale_for(tag) if tag != "*" else i18n.ENGLISH
        if primary == "zh" and language == i18n.ENGLISH:
            # zh-TW, zh-HK, zh-Hant: a reader of Traditional Chinese, whose browser adds a bare "zh" after it.
            traditional = True
        elif language != i18n.ENGLISH and not (traditional and tag == "zh"):
            return language
    return i18n.ENGLISH


def tag(language: str) -> str:
    """The BCP 47 tag of a catalogue, for ``<html lang>``: "ja-JP", "zh-CN", "en"."""
    return language.replace("_", "-")
