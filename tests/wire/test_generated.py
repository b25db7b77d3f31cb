"""The Python types of every wire format are generated from its JSON Schema (jupyter_gpumem/wire/schemas/) by
datamodel-code-generator, into jupyter_gpumem/wire/generated/: TypedDicts named by each definition's ``title``,
enums as Literal, a field the schema requires (what the first release sent, docs/protocol.md) a plain key and any
other NotRequired. Nothing is kept in step by hand; this test fails when the committed modules are not what the
schemas generate now, and says the command that writes them: ``python tests/wire/test_generated.py --write``.

Two things are made before the generator reads the schemas (``prepared``), as labextension/scripts/schema.mjs makes
them for TypeScript: a reference to one of the GPU's shared fields (comm.v1.json ``$defs/gpu_fields``) is replaced by
the field's definition, so each shape's type names its fields' own types (not an alias per field), and the codes
(``$defs/code``) are the catalogue's, jupyter_gpumem/words/en.json, the one list of them: a code added there is a
value of ``Code`` once this is run again.

The generator lives here, beside its check, as the releases' fixtures do (``test_releases.py --freeze``): only a
maintainer who changed a schema runs it, with the ``test`` extra installed, and the wheel ships its output only."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[2]
SCHEMAS = ROOT / "jupyter_gpumem" / "wire" / "schemas"
GENERATED = ROOT / "jupyter_gpumem" / "wire" / "generated"
COMMAND = "python tests/wire/test_generated.py --write"
BIN = Path(sys.executable).parent
CATALOGUE = ROOT / "jupyter_gpumem" / "words" / "en.json"
FIELDS = "gpu_fields"  # comm.v1.json's shared GPU fields: definitions of fields, not a shape


def codes() -> list[str]:
    """Every code, in the catalogue's order: its keys but the joins' (``join_or``…), which word lists, not codes."""
    return [k for k in json.loads(CATALOGUE.read_text(encoding="utf-8")) if not k.startswith("join_")]


def prepared(schemas: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The schema files (by name) as the generator reads them: each reference to a shared field replaced by its
    definition (with the references in it made to its file), the shared fields' definition gone, and the codes
    the catalogue's."""

    def inline(node: Any, file: str) -> Any:
        if isinstance(node, list):
            return [inline(item, file) for item in node]
        if not isinstance(node, dict):
            return node
        target, _, pointer = node.get("$ref", "").partition("#/$defs/")
        if pointer.startswith(f"{FIELDS}/$defs/"):
            there = target or file
            field = schemas[there]["$defs"][FIELDS]["$defs"][pointer.rpartition("/")[2]]
            # The site's own words and default come first: what the field means there, and its absence.
            return {**inline(elsewhere(field, there, file), file), **{k: v for k, v in node.items() if k != "$ref"}}
        return {key: inline(value, file) for key, value in node.items()}

    def elsewhere(node: Any, there: str, file: str) -> Any:
        if isinstance(node, list):
            return [elsewhere(item, there, file) for item in node]
        if not isinstance(node, dict):
            return node
        return {
            k: (there + v if k == "$ref" and v.startswith("#") and there != file else elsewhere(v, there, file))
            for k, v in node.items()
        }

    out = {name: inline(schema, name) for name, schema in schemas.items()}
    for schema in out.values():
        schema.get("$defs", {}).pop(FIELDS, None)
        if "code" in schema.get("$defs", {}):
            code = schema["$defs"]["code"]
            schema["$defs"]["code"] = {"title": code["title"], "enum": codes(), "description": code["description"]}
    return out


LINE = "x-line"  # a SampleGpu property's sidebar line: {"words": msgid with %1 for the figure, "format": how}
LINES_MODULE = "gpu_lines.py"


def declared_lines(comm: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(field, words, format) of each SampleGpu property that declares its line (``x-line``), in the schema's
    order, the order both surfaces show them in. A line declared anywhere else is refused: no surface shows it."""
    shape = comm["$defs"]["gpu"]["properties"]
    lines = [(field, node[LINE]["words"], node[LINE]["format"]) for field, node in shape.items() if LINE in node]

    def stray(node: Any, where: str) -> Iterator[str]:
        if isinstance(node, list):
            for i, item in enumerate(node):
                yield from stray(item, f"{where}/{i}")
        elif isinstance(node, dict):
            for key, value in node.items():
                at = f"{where}/{key}"
                if key == LINE and not re.fullmatch(r"/\$defs/gpu/properties/\w+/x-line", at):
                    yield at
                yield from stray(value, at)

    misplaced = list(stray(comm, ""))
    if misplaced:
        raise ValueError(f"comm.v1.json: a line is declared on a SampleGpu property only, not at {misplaced}")
    return lines


def lines_module(comm: dict[str, Any]) -> str:
    """``generated/gpu_lines.py``: the declared lines as data, for render/viewtext.py to word."""
    lines = declared_lines(comm)

    def literal(values: Iterator[str]) -> str:
        return f"Literal[{', '.join(sorted({json.dumps(v) for v in values}))}]"

    rows = "".join(f"    GpuLine({field!r}, {words!r}, {fmt!r}),\n" for field, words, fmt in lines)
    return (
        f"# Generated from wire/schemas/comm.v1.json (SampleGpu's {LINE}) by `{COMMAND}`: do not edit.\n"
        '"""The GPU\'s lines that its schema declares (docs/protocol.md, "A field\'s line"): a SampleGpu field shown,\n'
        "where it is not null, as its words with the figure, formatted as ``format`` says, in place of ``%1``. Each\n"
        "surface words them through its own catalogue and formatter (render/viewtext.py; format/panel.ts from\n"
        'labextension/src/wire/lines.ts), in this order."""\n\n'
        "from __future__ import annotations\n\nfrom typing import Literal, NamedTuple\n\n"
        f"GpuLineField = {literal(f for f, _, _ in lines)}\n"
        f"GpuLineFormat = {literal(f for _, _, f in lines)}\n\n\n"
        "class GpuLine(NamedTuple):\n"
        "    field: GpuLineField  # the SampleGpu key, as on the wire\n"
        "    words: str  # the message (its msgid): %1 is the figure\n"
        "    format: GpuLineFormat  # how the figure is worded\n\n\n"
        f"GPU_LINES: tuple[GpuLine, ...] = (\n{rows})\n"
    )


def header(schema: str) -> str:
    codes = " (its codes from words/en.json)" if schema == "comm.v1.json" else ""
    return f"# Generated from wire/schemas/{schema}{codes} by `{COMMAND}`: do not edit.\n"


def generate(into: Path) -> None:
    """Writes the generated modules into ``into``, as they are to be committed."""
    with tempfile.TemporaryDirectory() as scratch:
        # The schemas' folder is also a Python package; the generator reads every file of a folder it is given.
        schemas = Path(scratch) / "schemas"
        schemas.mkdir()
        files = {p.name: json.loads(p.read_text(encoding="utf-8")) for p in sorted(SCHEMAS.glob("*.json"))}
        for name, schema in prepared(files).items():
            (schemas / name).write_text(json.dumps(schema, indent=2, ensure_ascii=False), encoding="utf-8")
        subprocess.run(
            [
                BIN / "datamodel-codegen",
                *("--input", schemas, "--input-file-type", "jsonschema", "--output", into),
                *("--output-model-type", "typing.TypedDict", "--target-python-version", "3.10"),
                *("--enum-field-as-literal", "all", "--use-title-as-name"),
                *("--use-schema-description", "--use-field-description", "--disable-timestamp", "--no-formatters"),
            ],
            check=True,
            capture_output=True,
        )
    for module in into.glob("*.py"):
        # The generator's own header names its input folder, a scratch one: each module names its schema instead.
        lines = module.read_text().splitlines(keepends=True)
        body = "".join(lines[next((i for i, line in enumerate(lines) if not line.startswith("#")), len(lines)) :])
        schema = module.stem.replace("_v", ".v") + ".json"
        module.write_text(header(schema if module.stem != "__init__" else "*.json") + body)
    comm = json.loads((SCHEMAS / "comm.v1.json").read_text(encoding="utf-8"))
    (into / LINES_MODULE).write_text(lines_module(comm), encoding="utf-8")
    # Formatted as the project's own code is (pyproject.toml's line length and import order).
    config = ("--config", ROOT / "pyproject.toml")
    subprocess.run([BIN / "ruff", "check", "--fix-only", "--quiet", *config, into], check=True)
    subprocess.run([BIN / "ruff", "format", "--quiet", *config, into], check=True)
    shutil.rmtree(into / ".ruff_cache", ignore_errors=True)


def modules(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.glob("*.py"))}


def test_the_python_wire_types_are_what_the_schemas_generate(tmp_path: Path) -> None:
    generate(tmp_path)
    assert modules(GENERATED) == modules(tmp_path), f"the generated wire types are stale: run {COMMAND}"


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(f"usage: {COMMAND}")
    shutil.rmtree(GENERATED, ignore_errors=True)
    GENERATED.mkdir()
    generate(GENERATED)
