"""The message template (``locale/jupyter_gpumem.pot``) and the update of each language's ``.po`` from it: a
developer's step, ``jlpm i18n:extract``, which needs Node for the TypeScript half and is never part of a build.

Five sources, one domain:

- the sidebar's messages, found by ``labextension/scripts/i18n-extract.mjs`` (the TypeScript compiler's parse of
  every ``__``, ``_n``, ``_p``, ``_np`` call) and handed here as a JSON list;
- the words of each GPU line the wire schema declares (``x-line`` in ``wire/schemas/comm.v1.json``), which both
  surfaces word from generated data, with no context;
- Python's, ``pybabel extract``'s way (babel's Python extractor) with the keywords ``_``, ``gettext``,
  ``ngettext`` and ``pgettext`` of ``jupyter_gpumem.i18n``, and ``N_`` (frameworks/base.py: marked, not translated);
- every code of ``words/en.json``: the code as the context, its English template as the msgid;
- the settings schemas' titles and descriptions (``labextension/schema/*.json``), in the contexts jupyterlab_server
  asks them in (``schema``, ``settings``).

Then babel's update merges the template into each ``.po``: translations kept, a changed message marked fuzzy,
one no longer found dropped.

    python -m jupyter_gpumem.i18n.extract build/i18n-typescript.json
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from babel.messages.catalog import Catalog, Message
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po, write_po

from jupyter_gpumem.i18n.build import DOMAIN, checkout_version, languages

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "jupyter_gpumem"
LOCALE_DIR = PACKAGE / "locale"
TEMPLATE = LOCALE_DIR / f"{DOMAIN}.pot"
CODES = PACKAGE / "words" / "en.json"
LANGUAGES = languages(LOCALE_DIR)  # one folder per language: a new folder is a new language, its .po made here
# N_: a phrase made at import (frameworks/base.py), translated where it is shown.
KEYWORDS: dict[str, Any] = {"_": None, "gettext": None, "N_": None, "ngettext": (1, 2), "pgettext": ((1, "c"), 2)}

Location = tuple[str, int]
Found = tuple[Location, str | tuple[str, ...], str | None]  # where, msgid (or singular and plural), context


def typescript(messages: list[dict[str, Any]]) -> Iterator[Found]:
    """The messages i18n-extract.mjs found: ``{"file", "line", "msgid", "msgid_plural"?, "msgctxt"?}``."""
    for m in messages:
        msgid = (m["msgid"], m["msgid_plural"]) if m.get("msgid_plural") is not None else m["msgid"]
        yield (m["file"], m["line"]), msgid, m.get("msgctxt")


# The kernel's HTML templates (render/templates/*.j2) call the same keywords: jinja2's own babel extractor reads
# them, with the extensions and whitespace settings render/html.py's environment uses.
TEMPLATE_OPTIONS = {"extensions": "jinja2.ext.i18n", "trim_blocks": "true", "lstrip_blocks": "true"}


def python() -> Iterator[Found]:
    """The package's literal ``_``/``gettext``/``ngettext``/``pgettext`` calls, in its Python (i18n's own pass
    variables and are skipped) and in its jinja2 templates."""
    skip = {"labextension", "static", "i18n", "__pycache__"}
    for filename, line, msgid, _comments, context in extract_from_dir(
        PACKAGE,
        method_map=[("**.py", "python"), ("**/templates/**.j2", "jinja2.ext:babel_extract")],
        options_map={"**/templates/**.j2": TEMPLATE_OPTIONS},
        keywords=KEYWORDS,
        callback=None,
        strip_comment_tags=True,
        directory_filter=lambda path: Path(path).name not in skip,
    ):
        yield (f"jupyter_gpumem/{Path(filename).as_posix()}", line), msgid, context


def codes() -> Iterator[Found]:
    """Every code of the English catalogue, its template as the msgid, the code as its context."""
    text = CODES.read_text(encoding="utf-8")
    lines = {m.group(1): text.count("\n", 0, m.start()) + 1 for m in re.finditer(r'^\s*"(\w+)":', text, re.M)}
    for code, template in json.loads(text).items():
        yield (CODES.relative_to(ROOT).as_posix(), lines[code]), template, code


WIRE_SCHEMAS = PACKAGE / "wire" / "schemas"
LINE = "x-line"


def lines() -> Iterator[Found]:
    """The words of each line a wire schema declares on a field (``"x-line": {"words": …}``, docs/protocol.md "A
    field's line"): the sidebar and the inline view word them from the generated data, calls no extractor sees."""

    def walk(node: Any) -> Iterator[str]:
        if isinstance(node, dict):
            if isinstance(node.get(LINE), dict):
                yield node[LINE]["words"]
            for value in node.values():
                yield from walk(value)
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)

    for path in sorted(WIRE_SCHEMAS.glob("*.json")):
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(ROOT).as_posix()
        for words in walk(json.loads(text)):
            at = text.find(json.dumps(words, ensure_ascii=False))
            yield (where, text.count("\n", 0, max(at, 0)) + 1), words, None


SCHEMAS = ROOT / "labextension" / "schema"
SCHEMA_I18N = "jupyter.lab.internationalization"
# What jupyterlab_server translates in a settings schema and the context it asks each string in
# (translation_utils.DEFAULT_SCHEMA_SELECTORS; a schema's own `selectors` add paths in the context "schema"), in the
# domain the schema names: the Settings editor's titles and descriptions. tests/words checks this against
# jupyterlab_server's own walk.
SCHEMA_SELECTORS = {
    "properties/.*/title": "settings",
    "properties/.*/description": "settings",
    "definitions/.*/properties/.*/title": "settings",
    "definitions/.*/properties/.*/description": "settings",
    "title": "schema",
    "description": "schema",
    r"jupyter\.lab\.setting-icon-label": "settings",
    r"jupyter\.lab\.menus/.*/label": "menu",
    r"jupyter\.lab\.toolbars/.*/label": "toolbar",
}


def schema_strings(schema: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(context, string) of each string jupyterlab_server translates in ``schema``, walked as it walks it: a path of
    keys, a list's dicts as ``key[i]``, the first matching selector giving the context."""
    own = schema.get(SCHEMA_I18N, {}).get("selectors", [])
    patterns = [(re.compile(f"^/{s}$"), c) for s, c in SCHEMA_SELECTORS.items()]
    patterns += [(re.compile(f"^/{s}$"), "schema") for s in own]

    def walk(value: dict[str, Any], prefix: str) -> Iterator[tuple[str, str]]:
        for key, item in value.items():
            path = f"{prefix}/{key}"
            if isinstance(item, str):
                context = next((c for pattern, c in patterns if pattern.fullmatch(path)), None)
                if context is not None:
                    yield context, item
            elif isinstance(item, dict):
                yield from walk(item, path)
            elif isinstance(item, list):
                for i, element in enumerate(item):
                    if isinstance(element, dict):
                        yield from walk(element, f"{path}[{i}]")

    yield from walk(schema, "")


def schemas() -> Iterator[Found]:
    """The labextension's settings schemas' strings (labextension/schema/*.json), each of which must name this
    domain in ``jupyter.lab.internationalization``, or jupyterlab_server looks for it in JupyterLab's own."""
    for path in sorted(SCHEMAS.glob("*.json")):
        text = path.read_text(encoding="utf-8")
        schema = json.loads(text)
        where = path.relative_to(ROOT).as_posix()
        domain = schema.get(SCHEMA_I18N, {}).get("domain")
        if domain != DOMAIN:
            raise SystemExit(f'{where}: "{SCHEMA_I18N}" must name the domain "{DOMAIN}", not {domain!r}')
        for context, string in schema_strings(schema):
            at = text.find(json.dumps(string, ensure_ascii=False))
            yield (where, text.count("\n", 0, max(at, 0)) + 1), string, context


def template(ts_messages: list[dict[str, Any]], creation_date: datetime | None = None) -> Catalog:
    """The message template from the five sources, in their order (the sidebar's, the declared lines', Python's, the
    codes, the settings schemas)."""
    catalog = Catalog(
        domain=DOMAIN,
        project="jupyter-gpumem",
        version=checkout_version(ROOT),
        copyright_holder="jupyter-gpumem contributors",
        msgid_bugs_address="https://github.com/jupyter-gpumem/jupyter-gpumem/issues",
        creation_date=creation_date,
        charset="utf-8",
    )
    sources = (
        (typescript(ts_messages), False),
        (lines(), False),
        (python(), True),
        (codes(), False),
        (schemas(), False),
    )
    for source, python_format in sources:
        for location, msgid, context in source:
            message = catalog.get(msgid[0] if isinstance(msgid, tuple) else msgid, context)
            if message is None:
                message = catalog.add(msgid, locations=[location], context=context)
            elif location not in message.locations:
                message.locations.append(location)
            if not python_format:  # %1 and {name} are not Python's %-format, whatever babel's guess
                message.flags.discard("python-format")
    return catalog


def keys(catalog: Catalog) -> set[tuple[str | None, str | tuple[str, ...]]]:
    """(context, msgid) of each message; a plural's msgid is (singular, plural)."""
    return {(m.context, tuple(m.id) if isinstance(m.id, tuple | list) else m.id) for m in catalog if m.id}


def translated(message: Message) -> bool:
    """Whether every form of a message has its words, and they are not fuzzy."""
    forms = message.string if isinstance(message.string, tuple | list) else (message.string,)
    return all(forms) and not message.fuzzy


def read(path: Path, locale: str | None = None) -> Catalog:
    with path.open("rb") as f:
        return read_po(f, locale=locale, domain=DOMAIN)


def write(path: Path, catalog: Catalog) -> None:
    with path.open("wb") as f:
        write_po(f, catalog, ignore_obsolete=True, include_previous=False)


def main(ts_json: Path) -> None:
    found = json.loads(ts_json.read_text(encoding="utf-8"))
    pot = template(found)
    if TEMPLATE.is_file():  # the same messages keep the old date, so an unchanged .pot stays byte for byte
        old = read(TEMPLATE)
        if keys(old) == keys(pot) and [m.locations for m in old] == [m.locations for m in pot]:
            pot = template(found, old.creation_date if isinstance(old.creation_date, datetime) else None)
    TEMPLATE.parent.mkdir(parents=True, exist_ok=True)
    write(TEMPLATE, pot)
    print(f"i18n:extract: {len(pot)} messages in {TEMPLATE.relative_to(ROOT)}", file=sys.stderr)
    for language in LANGUAGES:
        po_path = LOCALE_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.po"
        if po_path.is_file():
            po = read(po_path, language)
        else:  # pybabel init's way: a new language's catalogue, every message untranslated
            po = Catalog(
                locale=language,
                domain=DOMAIN,
                project=pot.project,
                version=pot.version,
                copyright_holder=pot.copyright_holder,
                msgid_bugs_address=pot.msgid_bugs_address,
                charset="utf-8",
                fuzzy=False,
            )
            po_path.parent.mkdir(parents=True, exist_ok=True)
        po.update(pot, update_creation_date=True)
        write(po_path, po)
        done = sum(1 for m in po if m.id and translated(m))
        print(f"i18n:extract: {po_path.relative_to(ROOT)}: {done} of {len(po)} translated", file=sys.stderr)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
