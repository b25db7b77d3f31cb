"""The languages have one source, the folders of jupyter_gpumem/locale/ (docs/contributing.md, "Add a language"):
every surface and test reads them from there, and a list kept by hand anywhere else fails here."""

from __future__ import annotations

import ast
import json
import re
import subprocess
from pathlib import Path

import pytest
from babel import localedata
from babel.messages.plurals import get_plural
from golden_cases import GOLDEN
from golden_cases import LANGUAGES as GOLDEN_LANGUAGES

from jupyter_gpumem import i18n
from jupyter_gpumem.i18n import build, extract

ROOT = Path(__file__).parents[2]
LOCALE = ROOT / "jupyter_gpumem" / "locale"
LANGUAGES = build.languages(LOCALE)
PLURAL_RULES = ROOT / "tests" / "fixtures" / "plural_rules.json"


def spellings(language: str) -> set[str]:
    """A language as code names it: the catalogue's ``ja_JP`` and JupyterLab's BCP 47 ``ja-JP``."""
    return {language, language.replace("_", "-")}


SPELLED = {spelling: language for language in LANGUAGES for spelling in spellings(language)}


def python_files() -> list[Path]:
    skip = {"labextension", "static", "node_modules", "__pycache__", "generated"}
    folders = [ROOT / "jupyter_gpumem", ROOT / "tests", ROOT / "benchmarks"]
    found = [p for folder in folders for p in folder.rglob("*.py") if not skip & set(p.parts)]
    return sorted([*found, ROOT / "hatch_build.py"])


def typescript_files() -> list[Path]:
    folders = [ROOT / "labextension" / "src", ROOT / "labextension" / "scripts", ROOT / "tests" / "ts"]
    return sorted(p for folder in folders for p in folder.rglob("*") if p.suffix in (".ts", ".mjs", ".js"))


def language_collections(path: Path) -> list[tuple[int, list[str]]]:
    """Each literal tuple, list, set or dict (its keys) in a Python file that names two languages or more."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        items = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
        if not isinstance(node, ast.Tuple | ast.List | ast.Set | ast.Dict) or items is None:
            continue
        named = [SPELLED[i.value] for i in items if isinstance(i, ast.Constant) and i.value in SPELLED]
        if len(set(named)) >= 2:
            found.append((node.lineno, named))
    return found


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_ARRAY = re.compile(r"\[([^\[\]]*)\]")
_STRING = re.compile(r"""['"]([A-Za-z_-]+)['"]""")


def test_a_language_is_a_folder_of_locale_and_each_list_of_them_reads_it():
    assert LANGUAGES, "jupyter_gpumem/locale/ has no language"
    assert list(extract.LANGUAGES) == LANGUAGES  # the catalogues jlpm i18n:extract updates (or makes)
    assert list(GOLDEN_LANGUAGES) == LANGUAGES  # the golden words of every surface
    assert sorted(p.name for p in GOLDEN.iterdir() if p.is_dir()) == LANGUAGES
    assert sorted(i18n.available()) == LANGUAGES  # built: what gettext (and, as .json, JupyterLab) reads
    for language in LANGUAGES:
        assert (LOCALE / language / "LC_MESSAGES" / "jupyter_gpumem.po").is_file(), language


def test_a_new_folder_is_a_new_language_and_nothing_else_is(tmp_path: Path):
    for name in ("ko_KR", "ja_JP", "__pycache__", ".hidden"):
        (tmp_path / name).mkdir()
    (tmp_path / "jupyter_gpumem.pot").write_text("")
    assert build.languages(tmp_path) == ["ja_JP", "ko_KR"]


@pytest.mark.parametrize("path", python_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_python_module_lists_the_languages_by_hand(path: Path):
    """No literal names two languages, in the package or in a test: each reads locale/ (build.languages). A test's
    expected words per language come from the language's .po, the built catalogues or the golden fixtures
    `python tests/golden_cases.py` writes for each language, so a new language is its .po and generated files."""
    found = [f"{path.relative_to(ROOT)}:{line} lists languages {named}" for line, named in language_collections(path)]
    assert found == [], "read build.languages"


def test_each_language_gets_its_jupyterlab_language_pack_from_ci_setup_not_from_a_hand_list(tmp_path: Path):
    """JupyterLab serves a locale, ours included, only with its language pack (docs/i18n-plumbing.md, section 1):
    .ci/setup installs one per folder of locale/ (ja_JP: jupyterlab-language-pack-ja-JP), and the test extras name
    none by hand."""
    from jupyterlab_server.translation_utils import get_language_pack

    for language in LANGUAGES:
        pack, problem = get_language_pack(language)
        assert "jupyterlab" in pack, f"no JupyterLab language pack for {language} ({problem}): run .ci/setup"
    assert "jupyterlab-language-pack-" not in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    packs = tmp_path / "packs"
    script = (ROOT / ".ci" / "setup").read_text(encoding="utf-8")
    loop = script[script.index("packs=()") : script.index("done\n", script.index("packs=()")) + len("done\n")]
    # .ci/setup's own loop, run as it runs there: the packages it hands to pip with the test extras.
    subprocess.run(
        ["bash", "-c", f'set -euo pipefail\n{loop}printf "%s\\n" "${{packs[@]}}" > {packs}'], cwd=ROOT, check=True
    )
    assert packs.read_text().split() == [f"jupyterlab-language-pack-{lang.replace('_', '-')}" for lang in LANGUAGES]


@pytest.mark.parametrize("path", typescript_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_typescript_module_lists_the_languages_by_hand(path: Path):
    code = _COMMENT.sub("", path.read_text(encoding="utf-8"))
    for array in _ARRAY.finditer(code):
        named = [SPELLED[s] for s in _STRING.findall(array.group(1)) if s in SPELLED]
        assert len(set(named)) < 2, f"{path.relative_to(ROOT)} lists languages {named}: read them from locale/"


def test_the_plural_rules_the_sidebar_is_tested_with_are_every_rule_babel_writes():
    """tests/ts/catalogue.test.ts words every rule of tests/fixtures/plural_rules.json as JupyterLab's Gettext does,
    without eval: any language babel makes a catalogue for (its Plural-Forms from CLDR) needs no table of ours."""
    written = set()
    for locale in localedata.locale_identifiers():
        try:
            written.add(str(get_plural(locale)))
        except (ValueError, KeyError):  # a locale babel knows no plural rule for
            continue
    fixture = json.loads(PLURAL_RULES.read_text(encoding="utf-8"))
    assert fixture == sorted(written), "regenerate tests/fixtures/plural_rules.json from babel's rules"
    for language in LANGUAGES:
        rule = build.read(LOCALE / language / "LC_MESSAGES" / "jupyter_gpumem.po").plural_forms
        assert rule in fixture, f"{language}: {rule}"
