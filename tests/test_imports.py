"""Every module of the package imports what it needs at its top, where import-linter (tests/test_layers.py) sees it:
an import inside a function hides a dependency, and with it a cycle, from the layers' check and from the reader. The
exceptions are the lazy loads listed here, of packages that are optional, platform-bound or costly for a process
that never uses them (the server and the hub import this package too); never one of our own modules."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "jupyter_gpumem"

LAZY = {
    "tensorflow": "read only once the notebook has imported it: importing it here would start what the import "
    "watch waits for",
    "torch": "its memory tracker (torch.distributed._tools.mem_tracker), loaded at the first largest_batch that "
    "counts a PyTorch step on the CPU; torch itself is read from sys.modules, once the notebook has imported it",
    "plotly": "optional (the `view` extra): figure() says what to install when it is missing",
    "ipykernel": "only a kernel has a connection file; the server and the hub, which import this package too, "
    "never pay for ipykernel's import",
    "jinja2": "imported at the first HTML output, not when the extension loads: most of render/html.py's cost",
    "markupsafe": "jinja2's, loaded with it",
    "fastjsonschema": "each reader compiles its schema on first use; most processes never read another's JSON",
    "pwd": "Unix only: without Unix users (Windows) the import fails and this_user() says so",
}


def function_level_imports(source: str) -> list[tuple[int, str]]:
    """(line, imported module) of each import inside a function or method; a relative one keeps its dots."""
    found = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Import):
                found += [(node.lineno, alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                found.append((node.lineno, "." * node.level + (node.module or "")))
    return found


# The one import of our own inside a function: the package's root hands out the names a notebook uses from
# kernel/notebook.py on first use (its __getattr__), because the server, the hub and IPython's extension manager
# all import the root and only a kernel needs the runtime behind those names (IPython, ipywidgets, anywidget).
ROOT_LOAD = ("jupyter_gpumem/__init__.py", "jupyter_gpumem.kernel")


def refused(imported: str, module: str = "") -> bool:
    if (module, imported) == ROOT_LOAD:
        return False
    top = imported.split(".")[0]
    return imported.startswith(".") or top == "jupyter_gpumem" or top not in LAZY


def package_imports() -> dict[str, list[tuple[int, str]]]:
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "labextension" not in path.parts:
            modules[str(path.relative_to(PACKAGE.parent))] = function_level_imports(path.read_text())
    return modules


def test_no_module_imports_inside_a_function_but_the_listed_lazy_loads() -> None:
    wrong = [
        f"{module}:{line}: {imported}"
        for module, found in package_imports().items()
        for line, imported in found
        if refused(imported, module)
    ]
    assert wrong == [], "imports inside functions (move them to the module's top, or list a lazy load in LAZY):\n" + (
        "\n".join(wrong)
    )


def test_every_listed_lazy_load_is_still_made() -> None:
    made = {imported.split(".")[0] for found in package_imports().values() for _, imported in found}
    assert set(LAZY) <= made, f"listed but no longer imported lazily: {sorted(set(LAZY) - made)}"


def test_an_import_of_our_own_inside_a_function_is_caught_even_beside_a_lazy_load() -> None:
    planted = """
def show():
    import plotly.graph_objects
    from jupyter_gpumem.kernel import stream
    from . import widget
    import tensorflow
    import json
"""
    found = [imported for _, imported in function_level_imports(planted) if refused(imported)]
    assert found == ["jupyter_gpumem.kernel", ".", "json"]


def test_importing_the_package_loads_no_kernel_runtime() -> None:
    """The server and the hub import the package's root: it must not bring IPython's shell, ipywidgets or the
    kernel's runtime with it."""
    code = "import sys, jupyter_gpumem; print(sorted(m for m in sys.modules if m.startswith(KERNELISH)))"
    kernelish = ("jupyter_gpumem.kernel", "ipywidgets", "anywidget", "IPython")
    found = subprocess.run(
        [sys.executable, "-c", f"KERNELISH = {kernelish!r}; {code}"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert found == "[]"
