"""The package's layers (docs/architecture.md, [tool.importlinter] in pyproject.toml): rendering never imports
the kernel runtime, the GPU layer imports nothing above it, the words only the wire and the units, the server and
the hub never import the kernel, inside the kernel no part imports the Runtime that owns it or a part above it, and
only gpu.nvml imports pynvml. Checked by import-linter on the real package, and shown to catch a planted violation
in a copy of it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": str(LINT.parent)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_package_keeps_its_layers() -> None:
    result = lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("render/text.py", "from jupyter_gpumem.kernel import control", "Layers"),
        ("gpu/host.py", "from jupyter_gpumem.budget import policy", "Layers"),
        ("server/handlers.py", "from jupyter_gpumem.kernel import publish", "Layers"),
        ("hub/rows.py", "from jupyter_gpumem.server import handlers", "Layers"),
        ("words/__init__.py", "from jupyter_gpumem.gpu import model", "Layers"),
        ("render/html.py", "import pynvml", "pynvml"),
        ("kernel/advisor.py", "from jupyter_gpumem.kernel import stream", "Kernel parts"),
        ("kernel/control.py", "from jupyter_gpumem.kernel.runtime import runtime", "Kernel parts"),
    ],
)
def test_an_import_against_the_layers_is_caught(tmp_path: Path, module: str, line: str, contract: str) -> None:
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(ROOT / "jupyter_gpumem", tmp_path / "jupyter_gpumem", ignore=shutil.ignore_patterns("labextension"))
    target = tmp_path / "jupyter_gpumem" / module
    target.write_text(target.read_text() + f"\n{line}  # planted\n")
    result = lint(tmp_path)
    assert result.returncode != 0
    broken = [row for row in result.stdout.splitlines() if row.endswith("BROKEN")]
    assert len(broken) == 1 and contract in broken[0], result.stdout
