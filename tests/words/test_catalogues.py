"""The Japanese and Chinese catalogues (docs/i18n-plumbing.md): the template holds what the sources say now, each
language's .po holds exactly its messages with their placeholders, what the build makes of them is what gettext and
JupyterLab read, and the kernel words its codes in the language it is told, English where a catalogue is silent."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from babel.messages.catalog import Catalog, Message
from babel.messages.plurals import get_plural
from babel.messages.pofile import write_po

from jupyter_gpumem import i18n, words
from jupyter_gpumem.i18n import build, extract
from jupyter_gpumem.words import CATALOGUE, Said, catalogue, word

ROOT = Path(__file__).parents[2]
LOCALE = ROOT / "jupyter_gpumem" / "locale"
EXTRACTOR = ROOT / "labextension" / "scripts" / "i18n-extract.mjs"
LANGUAGES = tuple(build.languages(LOCALE))  # a folder each under locale/: never listed by hand
PLACEHOLDERS = re.compile(r"%\d+|\{\w+(?::\w+)?\}")  # the sidebar's %1, a code's {name} and {name:spec}

# The entries each .po translates already (the translator fills the rest): a code with a placeholder and a plural.
JA_NO_POOL = "{framework} はここではまだメモリプールを確保していません"
ZH_NO_POOL = "{framework} 在此尚未占用内存池"


def typescript_messages(tmp_path: Path, source: Path | None = None) -> subprocess.CompletedProcess[str]:
    out = tmp_path / "typescript.json"
    return subprocess.run(
        ["node", str(EXTRACTOR), str(out), *([str(source)] if source else [])],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def po(language: str) -> Catalog:
    return extract.read(LOCALE / language / "LC_MESSAGES" / "jupyter_gpumem.po", language)


def translated(catalog: Catalog) -> Iterator[Message]:
    return (m for m in catalog if m.id and extract.translated(m))


def placeholders(text: str | tuple[str, ...] | list[str]) -> set[str]:
    texts = [text] if isinstance(text, str) else list(text)
    return {p for t in texts for p in PLACEHOLDERS.findall(t)}


@pytest.fixture
def restore_language() -> Iterator[None]:
    """Leaves the process in its environment's language, whatever a test chose."""
    yield
    i18n.use_language(None)


def test_the_template_holds_exactly_the_messages_the_sources_have_now(tmp_path: Path) -> None:
    """A message added, changed or removed in the sidebar, Python or en.json without `jlpm i18n:extract` fails
    here. Locations are not compared: a line moved is not a new message."""
    done = typescript_messages(tmp_path)
    assert done.returncode == 0, done.stderr
    fresh = extract.template(json.loads((tmp_path / "typescript.json").read_text(encoding="utf-8")))
    committed = extract.read(extract.TEMPLATE)
    assert extract.keys(committed) == extract.keys(fresh), "stale: run `jlpm i18n:extract`" + str(
        sorted(map(str, extract.keys(committed) ^ extract.keys(fresh)))
    )
    assert {(code, template) for code, template in CATALOGUE.items()} <= extract.keys(committed)


def test_every_schema_string_jupyterlab_server_translates_is_in_the_template_and_translated() -> None:
    """What the server asks of the domain for the Settings editor, by its own walk of each schema (pgettext with the
    context of the selector that matched), is what extraction finds, and each language translates it."""
    from jupyterlab_server.translation_utils import translator

    asked: list[tuple[str, str]] = []

    class Recording:  # the server's bundle for our domain, as its walk calls it
        def pgettext(self, context: str, message: str) -> str:
            asked.append((context, message))
            return message

    for path in sorted(extract.SCHEMAS.glob("*.json")):
        schema = json.loads(path.read_text(encoding="utf-8"))
        assert schema["jupyter.lab.internationalization"]["domain"] == "jupyter_gpumem", path
        translator._translate_schema_strings(Recording(), schema)
    assert ("schema", "GPU Memory") in asked and ("settings", "Sampling interval (seconds)") in asked
    assert sorted(asked) == sorted((context, msgid) for _, msgid, context in extract.schemas())
    assert set(asked) <= extract.keys(extract.read(extract.TEMPLATE))
    for language in LANGUAGES:
        catalog = po(language)
        untranslated = [key for key in asked if not extract.translated(catalog.get(key[1], key[0]))]
        assert untranslated == [], language


def test_the_extractor_takes_literals_wherever_they_are_and_refuses_anything_else(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "a.ts").write_text(
        "export const a = (trans: any, n: number) => [\n"
        "  f(trans.__('nested %1', g(trans.__('deeper')))),\n"
        "  trans._n('%1 kernel', '%1 kernels', n, n),\n"
        "  trans._p('chart', 'budget'),\n"
        "  trans.__('joined ' + 'literal'),\n"
        "  trans.__(`template`)\n"
        "];\n"
    )
    done = typescript_messages(tmp_path, source)
    assert done.returncode == 0, done.stderr
    found = json.loads((tmp_path / "typescript.json").read_text(encoding="utf-8"))
    assert [{k: v for k, v in m.items() if k != "file"} for m in found] == [
        {"line": 2, "msgid": "nested %1"},
        {"line": 2, "msgid": "deeper"},
        {"line": 3, "msgid": "%1 kernel", "msgid_plural": "%1 kernels"},
        {"line": 4, "msgctxt": "chart", "msgid": "budget"},
        {"line": 5, "msgid": "joined literal"},
        {"line": 6, "msgid": "template"},
    ]
    (source / "b.ts").write_text("export const b = (trans: any, s: string) => trans.__(s) + trans._p(s, 'x');\n")
    done = typescript_messages(tmp_path, source)
    assert done.returncode == 1
    assert "b.ts:1: __(…) needs string literals, not s" in done.stderr
    assert "b.ts:1: _p(…) needs string literals, not s" in done.stderr


def test_python_strings_in_the_gettext_keywords_are_extracted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "jupyter_gpumem"
    (package / "render").mkdir(parents=True)
    (package / "render" / "m.py").write_text(
        "from jupyter_gpumem.i18n import gettext as _, ngettext, pgettext\n"
        "x = _('GPU memory')\ny = ngettext('%(n)d GPU', '%(n)d GPUs', 2)\nz = pgettext('chart', 'budget')\n"
    )
    monkeypatch.setattr(extract, "PACKAGE", package)
    assert {(m[0], m[1]) for m in ((loc, msgid) for loc, msgid, _ in extract.python())} == {
        (("jupyter_gpumem/render/m.py", 2), "GPU memory"),
        (("jupyter_gpumem/render/m.py", 3), ("%(n)d GPU", "%(n)d GPUs")),
        (("jupyter_gpumem/render/m.py", 4), "budget"),
    }


@pytest.mark.parametrize("language", LANGUAGES)
def test_each_language_has_every_message_of_the_template_and_no_other(language: str) -> None:
    assert extract.keys(po(language)) == extract.keys(extract.read(extract.TEMPLATE))
    assert not po(language).obsolete


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_translation_keeps_exactly_its_placeholders(language: str) -> None:
    wrong = [
        f"{m.context or ''}|{m.id}: {m.string}"
        for m in translated(po(language))
        if placeholders(m.string) != placeholders(m.id)
    ]
    assert wrong == []


@pytest.mark.parametrize("language", LANGUAGES)
def test_each_language_has_its_cldr_plural_rule_and_that_many_forms_in_every_plural(language: str) -> None:
    """Japanese and Chinese have one form, French three (CLDR: one, many, other): babel's rule for the language,
    which `jlpm i18n:extract` wrote, and as many forms in each translated plural message."""
    catalog = po(language)
    rule = get_plural(language)
    assert catalog.plural_forms == rule.plural_forms
    wrong = [m.id for m in translated(catalog) if m.pluralizable and len(m.string) != rule.num_plurals]
    assert wrong == []


def test_the_built_json_is_what_jupyterlab_reads(tmp_path: Path) -> None:
    """A one-form plural padded with "" (gettext.js ignores a plural list of one), a context joined with U+0004,
    the header JupyterLab merges by; untranslated and fuzzy messages left out, so English shows for them."""
    catalog = Catalog(locale="ja_JP", domain="jupyter_gpumem", fuzzy=False)
    catalog.add(("%1 process", "%1 processes"), ("プロセス %1 個",))
    catalog.add("budget", "予算", context="chart")
    catalog.add("GPU Memory", "GPU メモリ")
    catalog.add("not yet", "")
    catalog.add("unsure", "不確か", flags=["fuzzy"])
    folder = tmp_path / "ja_JP" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    with (folder / "jupyter_gpumem.po").open("wb") as f:
        write_po(f, catalog)
    assert build.stale(tmp_path)
    build.build(tmp_path, "9.8.7")
    assert not build.stale(tmp_path)
    assert json.loads((folder / "jupyter_gpumem.json").read_text(encoding="utf-8")) == {
        "": {
            "domain": "jupyter_gpumem",
            "language": "ja-JP",
            "plural_forms": "nplurals=1; plural=0;",
            "version": "9.8.7",
        },
        "%1 process": ["プロセス %1 個", ""],
        "chart\u0004budget": ["予算"],
        "GPU Memory": ["GPU メモリ"],
    }
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import gettext, sys; t = gettext.translation('jupyter_gpumem', sys.argv[1], ['ja_JP']);"
            "print(t.ngettext('%1 process', '%1 processes', 3), t.pgettext('chart', 'budget'), t.gettext('unsure'))",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["プロセス", "%1", "個", "予算", "unsure"]


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_checkouts_built_catalogues_are_those_of_its_po_files(language: str) -> None:
    folder = LOCALE / language / "LC_MESSAGES"
    assert not build.stale(LOCALE)  # tests/conftest.py built them
    built: dict[str, Any] = json.loads((folder / "jupyter_gpumem.json").read_text(encoding="utf-8"))
    assert built == build.jed(po(language), language, build.checkout_version(ROOT))
    assert built[""]["language"] == language.replace("_", "-")


@pytest.mark.parametrize(
    ("tag", "language"),
    [
        ("ja-JP", "ja_JP"),
        ("ja", "ja_JP"),
        ("zh-CN", "zh_CN"),
        ("zh-Hans-CN", "zh_CN"),
        ("zh", "zh_CN"),
        ("zh-TW", "en"),
        ("zh-Hant", "en"),
        ("en", "en"),
        ("en-US", "en"),
        ("de-DE", "en"),
        ("", "en"),
    ],
)
def test_a_language_tag_from_jupyterlab_picks_its_catalogue_or_english(
    tag: str, language: str, restore_language: None
) -> None:
    i18n.use_language(tag)
    assert i18n.language() == language


def test_the_kernel_words_a_code_in_the_language_it_is_told_and_english_where_untranslated(
    restore_language: None,
) -> None:
    english = word("own_no_pool", {"framework": "PyTorch"})
    assert english == "PyTorch holds no pool here yet"
    i18n.use_language("ja-JP")
    assert word("own_no_pool", {"framework": "PyTorch"}) == JA_NO_POOL.format(framework="PyTorch")
    assert catalogue("ja_JP")["own_no_pool"] == JA_NO_POOL
    i18n.use_language("zh-CN")
    assert word("own_no_pool", {"framework": "JAX"}) == ZH_NO_POOL.format(framework="JAX")
    assert i18n.ngettext("%1 process", "%1 processes", 1) == "%1 个进程"
    i18n.use_language("en")
    assert word("own_no_pool", {"framework": "PyTorch"}) == english
    assert catalogue() is CATALOGUE


def test_a_said_stays_english_on_the_wire_and_is_worded_in_the_language_in_use(restore_language: None) -> None:
    i18n.use_language("ja-JP")
    said = Said("own_no_pool", framework="TensorFlow")
    assert said == "TensorFlow holds no pool here yet"  # the sentence field readers of 0.1 get
    assert said.words() == JA_NO_POOL.format(framework="TensorFlow")
    nested = Said("over_not_in_force", why=Said("not_in_force_yet", framework="JAX"))
    assert nested == "the policy is not in force: it applies when JAX is imported"
    assert word("over_not_in_force", {"why": Said("own_no_pool", framework="JAX")}).endswith(
        JA_NO_POOL.format(framework="JAX")
    )


@pytest.mark.parametrize(
    ("env", "language"),
    [
        ({"LANG": "ja_JP.UTF-8"}, "ja_JP"),
        ({"LANG": "zh_CN.UTF-8"}, "zh_CN"),
        ({"LANGUAGE": "zh:en", "LANG": "C.UTF-8"}, "zh_CN"),
        ({"LC_ALL": "ja_JP.UTF-8", "LANG": "zh_CN.UTF-8"}, "ja_JP"),
        ({"LANG": "zh_TW.UTF-8"}, "en"),
        ({"LANG": "C.UTF-8"}, "en"),
        ({}, "en"),
    ],
)
def test_a_process_left_alone_words_in_its_locale(env: dict[str, str], language: str) -> None:
    code = (
        "from jupyter_gpumem import i18n; from jupyter_gpumem.words import word; "
        "print(i18n.language()); print(word('own_no_pool', {'framework': 'PyTorch'}))"
    )
    clean = {k: v for k, v in os.environ.items() if k not in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")}
    done = subprocess.run(
        [sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True, check=True
    )
    expected = catalogue(language)["own_no_pool"]  # "en": the English catalogue
    assert done.stdout.splitlines() == [language, expected.format(framework="PyTorch")]


def test_none_goes_back_to_the_environments_language(restore_language: None, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    i18n.use_language("ja-JP")
    i18n.use_language(None)
    assert i18n.language() == "zh_CN"
    monkeypatch.setenv("LANG", "C.UTF-8")
    i18n.use_language(None)
    assert i18n.language() == "en"


def test_a_code_its_catalogue_leaves_fuzzy_is_worded_in_english(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, restore_language: None
) -> None:
    """The real Japanese catalogue with one code marked fuzzy (what a changed English template becomes after
    `jlpm i18n:extract`): that code falls back to English, the others stay Japanese."""
    catalog = po("ja_JP")
    gpu_lost = catalog.get(CATALOGUE["own_gpu_lost"], "own_gpu_lost")
    assert gpu_lost is not None and extract.translated(gpu_lost)
    gpu_lost.flags.add("fuzzy")
    folder = tmp_path / "ja_JP" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    extract.write(folder / "jupyter_gpumem.po", catalog)
    build.build(tmp_path, "0")
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path)
    words._translated.cache_clear()  # a language's code map is kept for the process's life
    try:
        i18n.use_language("ja-JP")
        assert i18n.language() == "ja_JP"
        assert word("own_gpu_lost", {}) == CATALOGUE["own_gpu_lost"]
        assert word("own_no_pool", {"framework": "PyTorch"}) == JA_NO_POOL.format(framework="PyTorch")
    finally:
        words._translated.cache_clear()


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_message_of_the_template_is_translated_and_none_is_fuzzy(language: str) -> None:
    """Issue 37's completeness: a message extracted and not yet translated (or changed, so marked fuzzy) fails
    here by its context and msgid; translate it in the .po (/tmp/h/translate.py's tables are where ours came from)."""
    catalog = po(language)
    missing = []
    for context, msgid in sorted(extract.keys(extract.read(extract.TEMPLATE)), key=str):
        message = catalog.get(msgid[0] if isinstance(msgid, tuple) else msgid, context)
        if message is None or not extract.translated(message):
            missing.append(f"{context or ''}|{msgid}")
    assert missing == []


# The sidebar's main lines (docs/glossary.md): the title, the headline against a budget, the breakdown, the note
# without a budget, the process table's header, the status bar's item and tooltip, the kernel list's header. English
# here, the reference; each language's words are its .po's, and what a reader sees of them in each surface is in the
# golden fixtures (tests/fixtures/golden/<language>/, the sidebar's own case in sidebar.json).
MAIN_LINES: tuple[str | tuple[str, str], ...] = (
    "GPU Memory",
    "%1 of %2 %3 budget (%4)",
    "%1 used by this kernel",
    "No budget set — %1",
    "%1 limit %2 + %3 set aside for CUDA and libraries (%4)",
    "Processes on this GPU",
    "Name",
    "User",
    "%1 process",
    "GPU %1/%2 %3",
    "Click to open the GPU Memory panel.",
    "Kernels on this server (%1)",
    ("chart", "budget"),
)
WORD = re.compile(r"[A-Za-z]{2,}")


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_sidebars_main_lines_are_served_in_the_languages_own_words(language: str) -> None:
    """What JupyterLab serves for each main line is the .po's translation, read with babel: there, not empty, and
    not the English where the English is a phrase (a single word such as "Name" may be the same in a language; a
    line of figures such as "GPU %1/%2 %3" is the same in every language)."""
    built = json.loads((LOCALE / language / "LC_MESSAGES" / "jupyter_gpumem.json").read_text(encoding="utf-8"))
    catalog = po(language)
    for key in MAIN_LINES:
        context, msgid = key if isinstance(key, tuple) else (None, key)
        message = catalog.get(msgid, context)
        assert message is not None and extract.translated(message), f"{language}: {key} is not translated"
        english = message.id[0] if isinstance(message.id, tuple) else message.id
        translation = message.string[0] if isinstance(message.string, tuple | list) else message.string
        served = built.get(msgid if context is None else f"{context}\u0004{msgid}")
        assert served is not None and served[0] == translation != "", f"{language}: {key} served as {served}"
        if len(WORD.findall(PLACEHOLDERS.sub("", english))) >= 2:
            assert translation != english, f"{language}: {key} is still the English"
