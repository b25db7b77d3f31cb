"""Builds what Python and JupyterLab read from the committed catalogues, with babel only (no Node):

- ``locale/<ll_CC>/LC_MESSAGES/jupyter_gpumem.mo``, which gettext reads (``jupyter_gpumem.i18n``);
- ``locale/<ll_CC>/LC_MESSAGES/jupyter_gpumem.json``, which jupyterlab_server serves to the sidebar through the
  ``jupyterlab.locale`` entry point: a ``""`` header (domain, language as a BCP 47 tag, plural forms, version), each
  message a list of its forms, a context joined to its msgid with U+0004, and a one-form plural padded with ``""``
  (JupyterLab's gettext.js takes a plural only from a list of more than one element).

Untranslated and fuzzy messages are left out of both, so English shows for them. Both files are build outputs,
never committed: the wheel's build hook (hatch_build.py), ``jlpm build:i18n`` and the tests (tests/conftest.py) run
``build``. Self-contained (the standard library and babel), as the build hook loads this file by its path.

    python jupyter_gpumem/i18n/build.py     # from a checkout: the version is package.json's
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from babel.messages.catalog import Catalog
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

DOMAIN = "jupyter_gpumem"
CONTEXT_SEPARATOR = "\x04"


def languages(locale_dir: Path) -> list[str]:
    """The languages, one folder each under ``locale/`` ("ja_JP", "zh_CN"): the one list of them. A new folder is a
    new language (``jlpm i18n:extract`` makes its ``.po``); everything that lists languages reads it from here."""
    return sorted(p.name for p in locale_dir.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def sources(locale_dir: Path) -> list[Path]:
    """The committed catalogues, one ``.po`` per language."""
    return sorted(locale_dir.glob(f"*/LC_MESSAGES/{DOMAIN}.po"))


def outputs(po: Path) -> tuple[Path, Path]:
    """The ``.mo`` and ``.json`` built from ``po``."""
    return po.with_suffix(".mo"), po.with_suffix(".json")


def stale(locale_dir: Path) -> bool:
    """Whether a built file is missing or older than its ``.po``."""
    return any(
        not out.is_file() or out.stat().st_mtime < po.stat().st_mtime
        for po in sources(locale_dir)
        for out in outputs(po)
    )


def read(po: Path) -> Catalog:
    with po.open("rb") as f:
        return read_po(f, locale=po.parent.parent.name, domain=DOMAIN)


def jed(catalog: Catalog, language: str, version: str) -> dict[str, Any]:
    """The catalogue as JupyterLab's translation manager reads it (docs/i18n-plumbing.md, section 1)."""
    data: dict[str, Any] = {
        "": {
            "domain": DOMAIN,
            "language": language.replace("_", "-"),
            "plural_forms": catalog.plural_forms,
            "version": version,
        }
    }
    for message in catalog:
        if not message.id or message.fuzzy:
            continue
        forms = list(message.string) if isinstance(message.string, tuple | list) else [message.string]
        if not all(forms):
            continue  # untranslated: JupyterLab shows the English
        singular = message.id[0] if isinstance(message.id, tuple | list) else message.id
        key = f"{message.context}{CONTEXT_SEPARATOR}{singular}" if message.context else singular
        if message.pluralizable and len(forms) < 2:
            forms.append("")
        data[key] = forms
    return data


def build(locale_dir: Path, version: str) -> list[Path]:
    """Writes the ``.mo`` and ``.json`` of every ``.po`` under ``locale_dir``; returns the files written."""
    written = []
    for po in sources(locale_dir):
        catalog = read(po)
        mo, js = outputs(po)
        with mo.open("wb") as f:
            write_mo(f, catalog, use_fuzzy=False)
        text = json.dumps(jed(catalog, po.parent.parent.name, version), ensure_ascii=False, indent=1)
        js.write_text(text + "\n", encoding="utf-8")
        written += [mo, js]
    return written


def checkout_version(root: Path) -> str:
    """The version of a checkout, package.json's (the package's version source, [tool.hatch.version])."""
    return str(json.loads((root / "package.json").read_text(encoding="utf-8"))["version"])


if __name__ == "__main__":
    ROOT = Path(__file__).resolve().parents[2]
    for path in build(ROOT / "jupyter_gpumem" / "locale", checkout_version(ROOT)):
        print(f"build:i18n: {path.relative_to(ROOT)}", file=sys.stderr)
