"""The catalogue (jupyter_gpumem/words/en.json) words every code the wire carries, with exactly the values its
producer sends, into the English the sentence fields beside the codes carry."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, get_args

import pytest

from jupyter_gpumem.wire.generated import comm_v1
from jupyter_gpumem.words import CATALOGUE, JOINS, PLACEHOLDER, Said, word_wire

PACKAGE = Path(__file__).parents[2] / "jupyter_gpumem"
FIXTURES = Path(__file__).parents[1] / "fixtures" / "protocol"
# The wire's codes, as the schema's generators made them from the catalogue (tests/wire/test_generated.py).
CODES = list(get_args(comm_v1.Code))


def produced() -> dict[str, set[frozenset[str]]]:
    """Every ``Said("code", name=...)`` in the package: the code, and each set of value names it is made with."""
    found: dict[str, set[frozenset[str]]] = {}
    for path in set(PACKAGE.rglob("*.py")) - {PACKAGE / "words" / "__init__.py"}:  # there, Said remade from a copy
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            # A Said, or a code the hub page's words word in place (page_words.py: ``words.code("code", ...)``).
            if not isinstance(node, ast.Call) or not node.args:
                continue
            said = isinstance(node.func, ast.Name) and node.func.id == "Said"
            if said or (isinstance(node.func, ast.Attribute) and node.func.attr == "code"):
                code = node.args[0]
                assert isinstance(code, ast.Constant), f"{path}:{node.lineno}: a code is a literal"
                names = frozenset(k.arg for k in node.keywords if k.arg is not None)
                found.setdefault(code.value, set()).add(names)
    return found


def test_every_code_of_the_schema_has_words_and_every_template_a_code() -> None:
    assert sorted(CODES) == sorted(k for k in CATALOGUE if not k.startswith("join_"))
    assert sorted(k for k in CATALOGUE if k.startswith("join_")) == sorted(f"join_{j}" for j in JOINS)


def test_every_code_is_sent_with_exactly_the_values_its_words_name() -> None:
    found = produced()
    assert sorted(found) == sorted(CODES)  # none made up at a producer, none left unsent
    for code, calls in found.items():
        named = {m.group(1) for m in PLACEHOLDER.finditer(CATALOGUE[code])}
        for names in calls:
            # A value named only for another value's format (``now`` for a ``:clock``) may be sent besides.
            assert named <= names <= named | {"now"}, f"{code}: sends {sorted(names)}, its words name {sorted(named)}"


def test_a_code_off_the_wire_reads_as_the_sentence_beside_it() -> None:
    pairs: list[tuple[str, Any]] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            pairs.extend((value[k[: -len("_said")]], v) for k, v in value.items() if k.endswith("_said") and v)
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for path in FIXTURES.glob("*.json"):
        walk(json.loads(path.read_text()))
    assert len(pairs) >= 5
    for sentence, said in pairs:
        assert word_wire(said) == sentence


def test_numbers_stay_numbers_on_the_wire_and_are_formatted_in_words() -> None:
    said = Said("over_outside", outside_bytes=504 * 2**20, framework="TensorFlow")
    assert said.wire() == {"code": "over_outside", "values": {"outside_bytes": 528482304, "framework": "TensorFlow"}}
    assert said == "CUDA context + cuDNN/cuBLAS: 504 MiB outside TensorFlow's limit"


def test_an_error_text_is_data_even_when_it_looks_like_a_placeholder() -> None:
    assert Said("nvml_not_started", error="{error} <b>") == (
        "NVML could not start ({error} <b>), so there is no GPU to show. The kernel works as usual."
    )


def test_a_value_the_words_need_and_the_producer_left_out_is_a_programming_error() -> None:
    with pytest.raises(KeyError):
        Said("own_matched", pid=12)


def test_the_sidebars_fixture_of_every_code_is_worded_by_this_catalogue():
    """tests/ts/words.test.ts holds the TypeScript wording to tests/fixtures/words/every_code.json: Python's words
    of every code. A template changed here must change that fixture too, or the two languages drift unseen."""
    script = Path(__file__).parents[1] / "fixtures" / "words" / "every_code.py"
    done = subprocess.run(
        [sys.executable, str(script), "--check"], env={**os.environ, "TZ": "UTC"}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_a_whole_float_reads_as_the_integer_the_sidebar_shows() -> None:
    assert Said("no_answer_within", seconds=3000000.0) == "no answer within 3000000 s"
    assert Said("no_answer_within", seconds=2.5) == "no answer within 2.5 s"


def test_a_value_the_sidebar_cannot_word_is_refused_here_too_and_an_unknown_size_reads_na() -> None:
    for code, values in (
        ("no_answer_within", {"seconds": None}),
        ("not_answering_since", {"since": None, "error": "timeout"}),
        ("idle_warning", {"held_bytes": 1, "idle_s": None}),
        ("own_matched", {"pid": True, "framework": "TensorFlow"}),
    ):
        with pytest.raises(TypeError):
            Said(code, **values)  # type: ignore[arg-type]
    assert Said("over_outside", outside_bytes=None, framework="JAX") == (  # type: ignore[arg-type]
        "CUDA context + cuDNN/cuBLAS: N/A outside JAX's limit"
    )
