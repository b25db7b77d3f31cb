"""The Python types of every wire format are generated from its JSON Schema (jupyter_gpumem/wire/schemas/) by
datamodel-code-generator, into jupyter_gpumem/wire/generated/: TypedDicts named by each definition's ``title``,
enums as Literal, a field the schema requires (what the first release sent, docs/protocol.md) a plain key and any
other NotRequired. Nothing is kept in step by hand; this test fails when the committed modules are not what the
schemas generate now, and says the command that writes them: ``python tests/wire/test_generated.py --write``.

The generator lives here, beside its check, as the releases' fixtures do (``test_releases.py --freeze``): only a
maintainer who changed a schema runs it, with the ``test`` extra installed, and the wheel ships its output only."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).parents[2]
SCHEMAS = ROOT / "jupyter_gpumem" / "wire" / "schemas"
GENERATED = ROOT / "jupyter_gpumem" / "wire" / "generated"
COMMAND = "python tests/wire/test_generated.py --write"
BIN = Path(sys.executable).parent


def header(schema: str) -> str:
    return f"# Generated from wire/schemas/{schema} by `{COMMAND}`: do not edit.\n"


def generate(into: Path) -> None:
    """Writes the generated modules into ``into``, as they are to be committed."""
    with tempfile.TemporaryDirectory() as scratch:
        # The schemas' folder is also a Python package; the generator reads every file of a folder it is given.
        schemas = Path(scratch) / "schemas"
        schemas.mkdir()
        for schema in sorted(SCHEMAS.glob("*.json")):
            shutil.copy(schema, schemas)
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
