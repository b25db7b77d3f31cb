"""What every section shares: the repository on sys.path without installing the package, the case runner
(a fresh process per case, with a deadline) and the one shape a section's result has."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MiB = 1024**2
REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "gpu_acceptance.py"
# Pure-Python dependencies of the package copied from a machine that has them (`--vendor`), for a device where
# only the frameworks and nvidia-ml-py are installed. Last on sys.path: whatever the device has wins.
DEPS = REPO / "build" / "gpu-deps"
# Exit statuses of a section: what the JSON's "status" and the process's exit status say.
OK, MISSED, CANNOT_RUN, TIMED_OUT = 0, 1, 2, 3


def prepare() -> None:
    """Make ``import jupyter_gpumem`` work from the working tree: the repository first on sys.path, the copied
    dependencies last, and a stand-in for the version module hatchling generates at build time (ignored by git,
    so absent from a copy of the tree)."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    if DEPS.is_dir() and str(DEPS) not in sys.path:
        sys.path.append(str(DEPS))
    if not (REPO / "jupyter_gpumem" / "_version.py").exists() and "jupyter_gpumem._version" not in sys.modules:
        module = types.ModuleType("jupyter_gpumem._version")
        module.__version__ = module.VERSION = "0+unbuilt"  # type: ignore[attr-defined]
        sys.modules["jupyter_gpumem._version"] = module


def missing_modules() -> list[str]:
    """The modules the package needs at import time that this Python lacks (the frameworks excepted)."""
    prepare()
    missing = []
    for module in ("jupyter_gpumem.kernel.largest", "jupyter_gpumem.kernel.recorder", "jupyter_gpumem.gpu.snapshot"):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as error:
            missing.append(error.name or str(error))
        except Exception as error:  # a dependency that imports but breaks (a copy without its metadata)
            missing.append(f"{module} ({type(error).__name__}: {error})")
    return sorted(set(missing))


@dataclass
class Section:
    """One section's result: a table (strings, as printed), notes under it, and its status with one sentence."""

    name: str
    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    status: int = OK
    sentence: str = ""
    data: list[dict[str, Any]] = field(default_factory=list)  # the cases' raw figures, for the JSON
    wall_s: float = 0.0

    def fail(self, status: int, sentence: str) -> Section:
        self.status = max(self.status, status)
        self.sentence = f"{self.sentence} {sentence}".strip()
        return self


class Deadline:
    """A section's wall-clock cap, shared by its cases."""

    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds
        self.seconds = seconds

    def left(self) -> float:
        return max(0.0, self.end - time.monotonic())


def run_case(kind: str, arguments: dict[str, Any], deadline: Deadline, env: dict[str, str] | None = None) -> dict:
    """``kind``'s case in a fresh Python process (a framework starts clean there), within what is left of the
    section's cap. Its last stdout line is its JSON result; a case that fails says why in ``error``."""
    left = deadline.left()
    if left < 5:
        return {"error": f"not run: the section's {deadline.seconds:.0f} s were spent", "timed_out": True}
    command = [sys.executable, str(SCRIPT), "--case", kind, json.dumps(arguments)]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=left, env={**os.environ, **(env or {})}, cwd=REPO
        )
    except subprocess.TimeoutExpired:
        return {"error": f"stopped after {left:.0f} s: the section's cap", "timed_out": True}
    lines = done.stdout.strip().splitlines()
    try:
        result = json.loads(lines[-1])
    except (IndexError, ValueError):
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"the case ended with status {done.returncode} and no result: {tail}"}
    return result if isinstance(result, dict) else {"error": f"the case printed {result!r}"}


def case_main(kind: str, arguments: str, cases: dict[str, Any]) -> None:
    """In the case's process: run it and print its JSON result as the last line. A case that raises reports the
    exception's first line as its error (the traceback goes to stderr): one broken case leaves the others."""
    import traceback

    try:
        result = cases[kind](**json.loads(arguments))
    except Exception as error:
        traceback.print_exc()
        message = (str(error).strip().splitlines() or [""])[0][:300]
        result = {"error": f"{type(error).__name__}: {message}"}
    print(json.dumps(result), flush=True)


def frameworks_present(names: list[str]) -> list[str]:
    return [n for n in names if importlib.util.find_spec(n) is not None]


def mib(value: int | None) -> str:
    return "N/A" if value is None else f"{value / MiB:,.0f}"


def out_of_memory(error: BaseException) -> bool:
    """PyTorch's or CuPy's OutOfMemoryError, or XLA's RESOURCE_EXHAUSTED (its class moved between JAX releases)."""
    text = str(error)
    return type(error).__name__ == "OutOfMemoryError" or "RESOURCE_EXHAUSTED" in text or "out of memory" in text.lower()
