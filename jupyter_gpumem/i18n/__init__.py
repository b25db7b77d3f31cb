"""The language the kernel words its output in, and gettext on the package's catalogues (docs/i18n-plumbing.md).

The catalogues are ``locale/<ll_CC>/LC_MESSAGES/jupyter_gpumem.mo``, built from the committed ``.po`` files
(``i18n/build.py``); English is the code's own words and the fallback for any message a catalogue lacks or leaves
untranslated. The language is the kernel's locale as gettext reads it (``LANGUAGE``, ``LC_ALL``, ``LC_MESSAGES``,
``LANG``) until ``use_language`` names one: JupyterLab's, which the sidebar sends as a BCP 47 tag.

Only the standard library's gettext at run time: babel builds the ``.mo`` files, it is never imported here.
"""

from __future__ import annotations

import gettext as _gettext
from pathlib import Path

DOMAIN = "jupyter_gpumem"
LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"
ENGLISH = "en"

# Traditional Chinese is not Simplified: zh-TW, zh-HK, zh-MO and zh-Hant* read English, not zh_CN.
_TRADITIONAL = {"hant", "tw", "hk", "mo"}

# (language, translation) in use; None until first asked, and after use_language(None): the environment then.
_current: tuple[str, _gettext.NullTranslations] | None = None


def available() -> list[str]:
    """The languages with a built catalogue ("ja_JP", "zh_CN"), English not among them."""
    return sorted(p.parent.parent.name for p in LOCALE_DIR.glob(f"*/LC_MESSAGES/{DOMAIN}.mo"))


def locale_for(tag: str) -> str:
    """The catalogue a BCP 47 tag (JupyterLab's ``ja-JP``, a browser's ``zh-Hans-CN``) or a POSIX locale
    (``ja_JP.UTF-8``) reads: one of ``available()``, or "en" where none fits."""
    parts = [p.lower() for p in tag.replace("_", "-").split(".")[0].split("@")[0].split("-") if p]
    if not parts:
        return ENGLISH
    built = available()
    if parts[0] == "zh":
        return "zh_CN" if "zh_CN" in built and not _TRADITIONAL & set(parts[1:]) else ENGLISH
    same_language = [name for name in built if name.split("_")[0].lower() == parts[0]]
    exact = [name for name in same_language if name.lower() == "_".join(parts[:2])]
    return (exact or same_language or [ENGLISH])[0]


def _translation(language: str) -> _gettext.NullTranslations:
    if language == ENGLISH:
        return _gettext.NullTranslations()
    return _gettext.translation(DOMAIN, LOCALE_DIR, languages=[language], fallback=True)


def _from_environment() -> tuple[str, _gettext.NullTranslations]:
    found = _gettext.find(DOMAIN, LOCALE_DIR)  # LANGUAGE, LC_ALL, LC_MESSAGES, LANG, as gettext reads them
    language = Path(found).parent.parent.name if found else ENGLISH
    return language, _translation(language)


def _in_use() -> tuple[str, _gettext.NullTranslations]:
    global _current
    if _current is None:
        _current = _from_environment()
    return _current


def translation(language: str | None = None) -> _gettext.NullTranslations:
    """The gettext translation of ``language`` ("ja_JP"; None: the one in use); English's has no messages."""
    return _in_use()[1] if language is None else _translation(language)


def language() -> str:
    """The language in use: "en", "ja_JP" or "zh_CN"."""
    return _in_use()[0]


def use_language(tag: str | None) -> None:
    """Word from now on in ``tag``'s language (a BCP 47 tag from JupyterLab: "ja-JP", "zh-CN", "en"); English
    where no catalogue fits it. None goes back to the kernel's locale, read again from the environment now."""
    global _current
    if tag is None:
        _current = _from_environment()
    else:
        language = locale_for(tag)
        _current = language, _translation(language)


def gettext(message: str) -> str:
    """``message`` in the language in use; itself where the catalogue has no translation."""
    return translation().gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """The form for ``n`` in the language in use (Japanese and Chinese have one; English two)."""
    return translation().ngettext(singular, plural, n)


def pgettext(context: str, message: str) -> str:
    """``message`` in ``context`` (a catalogue code, for the words of codes) in the language in use."""
    return translation().pgettext(context, message)
