"""Mutation testing: plant small bugs in a module, one at a time, and count those the fast unit tests catch.

    python benchmarks/mutation.py                        # the eight modules below, target 90%
    python benchmarks/mutation.py policy plan --verbose  # some modules; a line per mutant as it runs
    python benchmarks/mutation.py oom --target 95 --jobs 2

Prints, per module, the mutants killed of those planted (and the percentage), then every survivor as
``path:line: before -> after``; exits 1 when a module is below ``--target`` percent, 2 when the unmutated
tests fail to start. Not in CI: the eight modules (about 1,400 mutants) took 33 minutes on a busy 2-core
machine with ``--jobs 1`` (the default, as the machines are shared): ``oom`` alone 15 (its constants run
every test that reads them, TensorFlow's included), ``plan`` under a minute, ``policy`` about a minute and a
half; the traced baseline run adds 20 to 30 seconds.

How it works. The tree is copied first (``jupyter_gpumem/``, ``tests/``, ``pyproject.toml``), so edits made
while it runs do not mix into it, and the stand-in ``libnvidia-ml.so.1`` is built once; the script then
runs itself again on it, exactly as ``tests/conftest.py`` would (it sees the build variable and does not
re-run). One traced run of every fast unit test (``-m "not kernel and not browser"``) records which test
executes which line of the modules. Each mutant is then a forked child of a process that has already
imported pytest and the heavy third-party packages: the child serves the mutated module from memory (an
import hook ahead of the file), and runs pytest on the tests that execute the mutated line, fastest
first, stopping at the first failure. A failure, an error or a timeout kills the mutant; a mutant on a
line no test executes survives without a run. A mutant outside any function (a constant, a default, a
decorator) runs against every test that executes the module or whose file imports it.

The mutations are modelled on mutmut's (numbers n -> n+1, strings s -> "XXsXX", True <-> False,
comparisons ``<`` <-> ``<=``, ``==`` <-> ``!=``, ``is`` <-> ``is not``, ``in`` <-> ``not in``, arithmetic
``+`` <-> ``-``, ``*`` <-> ``/``, ``//`` and ``%`` -> ``/``, ``and`` <-> ``or``, ``not x`` -> ``x``, an
assignment's value -> None, ``break`` <-> ``continue``, a lambda's body -> None) plus ``min`` <-> ``max`` and
``any`` <-> ``all`` calls. Not mutated: docstrings, annotations (strings under ``from __future__ import
annotations``), the literal text of f-strings (their ``{expressions}`` are), type aliases (``X = Literal[...]``,
``Callable[...]``, ...), TypeVars and ``if TYPE_CHECKING:`` blocks; decorators are not removed. ``EQUIVALENT``
lists the survivors judged to change nothing a user or a caller can tell, each with why; they are shown, and
left out of the percentage.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import pickle
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "jupyter_gpumem"
MODULES = ("policy", "plan", "nvml", "budget", "overhead", "oom", "config", "control")
MARKS = "not kernel and not browser"
_SNAPSHOT_VARIABLE = "JUPYTER_GPUMEM_MUTATION_SNAPSHOT"
_BUILD_VARIABLE = "JUPYTER_GPUMEM_TEST_STANDIN_DIR"  # tests/conftest.py: set means "already on the stand-in"

_FROZEN = (
    "frozen=False: nothing in the package assigns to or hashes these objects (it would raise, and the suite "
    "passes), so only the guard against future code goes"
)
_TARGETS = (
    "choice.targets returns either the imported frameworks only, or (none imported) the installed ones: "
    "all and any of them are imported alike"
)
# (module, the source line stripped, the change as printed) -> why the mutant changes nothing a user or a caller
# can tell. "In practice": it differs only for an input named in the reason, which cannot occur.
EQUIVALENT: dict[tuple[str, str, str], str] = {
    (
        "control",
        "self.state = self._state(Policy(), None, every, all(a.imported() for a in every))  # load_defaults plans",
        "all((a.imported() for a in every)) -> any((a.imported() for a in every))",
    ): _TARGETS,
    (
        "control",
        "together = all(a.imported() for a in adapters)  # several imported: they share the budget",
        "all((a.imported() for a in adapters)) -> any((a.imported() for a in adapters))",
    ): _TARGETS,
    (
        "control",
        "together = all(a.imported() for a in adapters)",
        "all((a.imported() for a in adapters)) -> any((a.imported() for a in adapters))",
    ): _TARGETS,
    (
        "control",
        "decided = len(adapters) == 1 or any(a.imported() for a in adapters)",
        "any((a.imported() for a in adapters)) -> all((a.imported() for a in adapters))",
    ): _TARGETS,
    ("control", 'print("\\n".join(self._apply(self._state(state.policy, plan, [adapter], True))))', "True -> False"): (
        "with one framework, 'together' changes no word: a single name is joined by neither 'and' nor 'or'"
    ),
    ("policy", "@dataclass(frozen=True)", "True -> False"): _FROZEN,
    ("plan", "@dataclass(frozen=True)", "True -> False"): _FROZEN,
    ("budget", "@dataclass(frozen=True)", "True -> False"): _FROZEN,
    ("overhead", "@dataclass(frozen=True)", "True -> False"): _FROZEN,
    ("oom", "@dataclass(frozen=True)", "True -> False"): _FROZEN,
    ("policy", "if size <= 0:", "0 -> 1"): (
        "in practice: differs only for a limit of exactly one byte (limit=0.000001MB)"
    ),
    (
        "plan",
        "self.max_fraction is None or self.max_limit_bytes <= int(self.max_fraction * total_bytes)",
        "self.max_limit_bytes <= int(self.max_fraction * total_bytes) -> "
        "self.max_limit_bytes < int(self.max_fraction * total_bytes)",
    ): "at a tie both caps bind at the same figure, so naming either one's origin is true",
    ("overhead", 'return self._measured.get(uuid or "")', "'' -> 'XXXX'"): (
        "a GPU without a UUID is looked up under a key no GPU has: '' and 'XXXX' alike"
    ),
    ("overhead", 'pool = pools.get(device.uuid or "")', "'' -> 'XXXX'"): (
        "a GPU without a UUID is looked up under a key no GPU has: '' and 'XXXX' alike"
    ),
    ("overhead", 'own = device.listed_own_bytes if owns is None else owns.get(device.uuid or "")', "'' -> 'XXXX'"): (
        "a GPU without a UUID is looked up under a key no GPU has: '' and 'XXXX' alike"
    ),
    ("overhead", "if amount > self._remembered().get(key, 0):", "0 -> 1"): (
        "in practice: differs only for an overhead of exactly one byte; NVML counts whole pages"
    ),
    ("overhead", "entries[key] = max(amount, entries.get(key, 0))", "0 -> 1"): (
        "amount is own - pool with own > pool, so at least 1: max(amount, 0) == max(amount, 1)"
    ),
    (
        "overhead",
        '_replace(self.path, {"format": CACHE_FORMAT, "overhead_bytes": entries, "updated": time.time()})',
        "'updated' -> 'XXupdatedXX'",
    ): "the time of the last write is for people reading the file; nothing reads it back",
    ("overhead", "self._entries = entries", "self._entries = entries -> self._entries = None"): (
        "drops the in-memory copy only: the next use reads the file that was just written"
    ),
    (
        "overhead",
        'handle, temporary = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)',
        "'.tmp' -> 'XX.tmpXX'",
    ): "the name of a temporary file that is renamed over the cache or removed",
    ("overhead", "json.dump(data, out, indent=1, sort_keys=True)", "1 -> 2"): "the JSON's layout only",
    ("overhead", "json.dump(data, out, indent=1, sort_keys=True)", "True -> False"): "the JSON's layout only",
    ("budget", "if pool is None or own is None:", "pool is None or own is None -> pool is None and own is None"): (
        "in practice: over a budget the plan always gave an allocator limit (64 MiB or more with strict=on); "
        "only a 0-byte budget with strict=off shared by two frameworks leaves neither limit nor pool"
    ),
    (
        "oom",
        'message = getattr(error, "message", None) or str(error)',
        "getattr(error, 'message', None) or str(error) -> getattr(error, 'message', None) and str(error)",
    ): "str() of TensorFlow's OpError is its message (with an op, plus a stack trace that no search matches)",
    ("oom", 'message = getattr(error, "message", None) or str(error)', "'message' -> 'XXmessageXX'"): (
        "str() of TensorFlow's OpError is its message (with an op, plus a stack trace that no search matches)"
    ),
}


# ---------------------------------------------------------------------------------------------- mutants


@dataclass
class Point:
    """One place to mutate: what it becomes, where, and a closure that makes the change in the tree."""

    line: int
    end_line: int
    statement_line: int  # first line of the enclosing statement
    in_function: bool  # runs when called (else at import: a constant, a default, a decorator, a class body)
    before: str
    after: str
    apply: Callable[[], None]


_SWAP_COMPARE: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_SWAP_BINARY: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Mod: ast.Div,
    ast.Pow: ast.Mult,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
    ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd,
    ast.BitXor: ast.BitAnd,
}
_SWAP_CALL = {"min": "max", "max": "min", "any": "all", "all": "any"}
_SKIPPED_FIELDS = {"annotation", "returns", "type_comment", "type_params"}
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_GENERICS = {"Literal", "Callable", "Mapping", "Collection", "Sequence", "Iterable", "Iterator", "Union", "Optional"}


def _short(node: ast.AST) -> str:
    text = ast.unparse(node).replace("\n", " ")
    return text if len(text) <= 90 else text[:87] + "..."


def _is_docstring(body: list[ast.stmt], index: int) -> bool:
    node = body[index]
    return (
        index == 0
        and isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _is_type_only(node: ast.AST) -> bool:
    if isinstance(node, ast.If):
        test = node.test
        return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
        )
    if isinstance(node, ast.Assign):  # a type alias or a TypeVar: read by annotations only
        value = node.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            return value.func.id in ("TypeVar", "NewType")
        return isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name) and value.value.id in _GENERICS
    return isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "Literal"


def mutation_points(tree: ast.Module) -> list[Point]:
    """Every mutation of ``tree``, in a fixed order; ``points[k].apply()`` makes the k-th in place (parse
    the source again for each mutant: the points share one tree)."""
    points: list[Point] = []

    def toggle(obj: Any, name: str, value: Any, index: int | None) -> Callable[[], None]:
        """The first call puts ``value`` in ``obj.name`` (or ``obj.name[index]``), the next puts back the original."""
        original = getattr(obj, name) if index is None else getattr(obj, name)[index]
        on = [False]

        def flip() -> None:
            on[0] = not on[0]
            new = value if on[0] else original
            if index is None:
                setattr(obj, name, new)
            else:
                getattr(obj, name)[index] = new

        return flip

    def add(where: Where, shown: Callable[[], ast.AST], flip: Callable[[], None]) -> None:
        before = _short(shown())
        flip()
        after = _short(shown())
        flip()
        node = where.node
        points.append(
            Point(
                node.lineno,
                node.end_lineno or node.lineno,
                where.statement.lineno,
                where.in_function,
                before,
                after,
                flip,
            )
        )

    def replace(where: Where, new: ast.AST) -> None:
        """The node, replaced whole in its parent."""
        parent, name, index = where.parent, where.field, where.index
        assert parent is not None

        def shown() -> ast.AST:
            value = getattr(parent, name)
            return value[index] if index is not None else value  # type: ignore[no-any-return]

        add(where, shown, toggle(parent, name, new, index))

    def change(where: Where, obj: Any, name: str, value: Any, index: int | None = None) -> None:
        """The node, changed in place."""
        add(where, lambda: where.node, toggle(obj, name, value, index))

    def mutate(where: Where) -> None:
        node = where.node
        if isinstance(node, ast.Compare):
            for index, op in enumerate(node.ops):
                if type(op) in _SWAP_COMPARE:
                    change(where, node, "ops", _SWAP_COMPARE[type(op)](), index)
        elif isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _SWAP_BINARY:
            change(where, node, "op", _SWAP_BINARY[type(node.op)]())
        elif isinstance(node, ast.BoolOp):
            change(where, node, "op", ast.Or() if isinstance(node.op, ast.And) else ast.And())
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub, ast.Invert)):
            replace(where, node.operand)
        elif isinstance(node, ast.Constant) and not where.in_fstring:
            value = node.value
            if isinstance(value, bool):
                change(where, node, "value", not value)
            elif isinstance(value, (int, float)):
                change(where, node, "value", value + 1)
            elif isinstance(value, str):
                change(where, node, "value", f"XX{value}XX")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _SWAP_CALL:
            change(where, node.func, "id", _SWAP_CALL[node.func.id])
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            if not (isinstance(node.value, ast.Constant) and node.value.value is None):
                change(where, node, "value", ast.Constant(None))
        elif isinstance(node, ast.Break):
            replace(where, ast.Continue())
        elif isinstance(node, ast.Continue):
            replace(where, ast.Break())
        elif isinstance(node, ast.Lambda) and not (isinstance(node.body, ast.Constant) and node.body.value is None):
            change(where, node, "body", ast.Constant(None))

    def visit(where: Where) -> None:
        node = where.node
        if _is_type_only(node):
            return
        if not isinstance(node, (ast.Module, ast.expr_context, ast.operator, ast.cmpop, ast.boolop, ast.unaryop)):
            mutate(where)
        for name, value in ast.iter_fields(node):
            if name in _SKIPPED_FIELDS:
                continue
            in_function = where.in_function or (isinstance(node, _SCOPES) and name == "body")
            in_fstring = (where.in_fstring or isinstance(node, ast.JoinedStr)) and not isinstance(
                node, ast.FormattedValue
            )
            children = value if isinstance(value, list) else [value]
            for index, child in enumerate(children):
                if not isinstance(child, ast.AST):
                    continue
                if (
                    name == "body"
                    and isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                    and _is_docstring(value, index)
                ):
                    continue
                statement = child if isinstance(child, ast.stmt) else where.statement
                visit(
                    Where(
                        child,
                        node,
                        name,
                        index if isinstance(value, list) else None,
                        statement,
                        in_function,
                        in_fstring,
                    )
                )

    visit(Where(tree, None, "", None, ast.Pass(lineno=1), False, False))
    return points


@dataclass
class Where:
    node: Any
    parent: ast.AST | None
    field: str
    index: int | None
    statement: Any  # the enclosing statement
    in_function: bool
    in_fstring: bool


@dataclass
class Module:
    name: str
    path: Path
    source: str
    points: list[Point] = field(default_factory=list)

    def mutant_code(self, number: int) -> Any:
        tree = ast.parse(self.source, str(self.path))
        points = mutation_points(tree)
        points[number].apply()
        ast.fix_missing_locations(tree)
        return compile(tree, str(self.path), "exec")


# ------------------------------------------------------------------------------------------- the runs


class _MutantLoader(importlib.machinery.SourceFileLoader):
    def __init__(self, fullname: str, path: str, code: Any):
        super().__init__(fullname, path)
        self.code = code

    def get_code(self, fullname: str) -> Any:
        return self.code


class _MutantFinder(importlib.abc.MetaPathFinder):
    def __init__(self, fullname: str, path: Path, code: Any):
        self.fullname, self.path, self.code = fullname, path, code

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self.fullname:
            return None
        return importlib.util.spec_from_file_location(
            fullname, self.path, loader=_MutantLoader(fullname, str(self.path), self.code)
        )


class _Trace:
    """A pytest plugin for the baseline run: which lines of ``files`` each test executes, and its time."""

    def __init__(self, files: set[str]):
        self.files = files
        self.lines: dict[str, set[tuple[str, int]]] = {}
        self.seconds: dict[str, float] = {}
        self.failed: set[str] = set()
        self._current: set[tuple[str, int]] = set()

    def _call(self, frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename in self.files:
            self._current.add((frame.f_code.co_filename, frame.f_lineno))
            return self._line
        return None

    def _line(self, frame: Any, event: str, arg: Any) -> Any:
        self._current.add((frame.f_code.co_filename, frame.f_lineno))
        return self._line

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> Iterator[None]:
        self._current = set()
        threading.settrace(self._call)
        sys.settrace(self._call)
        start = time.perf_counter()
        try:
            yield
        finally:
            sys.settrace(None)
            threading.settrace(None)  # type: ignore[arg-type]
            self.seconds[item.nodeid] = time.perf_counter() - start
            self.lines[item.nodeid] = self._current

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.failed:
            self.failed.add(report.nodeid)


def _pytest_args(snapshot: Path, tests: list[str]) -> list[str]:
    return [
        *tests,
        "-q",
        "-x",
        "-p",
        "no:cacheprovider",
        "-m",
        MARKS,
        "--rootdir",
        str(snapshot),
        "-c",
        str(snapshot / "pyproject.toml"),
        "-o",
        "timeout=60",
    ]


def _child_setup(snapshot: Path, log: Path) -> None:
    """In a forked child: its own process group (a timeout ends its subprocesses too), quiet, and a throwaway
    stand-in directory of links, as tests/conftest.py removes the directory it is given at the end."""
    os.setpgid(0, 0)
    os.chdir(snapshot)
    links = Path(tempfile.mkdtemp(prefix="standin-", dir=snapshot.parent))
    built = snapshot.parent / "standin"
    for name in ("current", "without-v3"):
        (links / name).symlink_to(built / name)
    os.environ[_BUILD_VARIABLE] = str(links)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(fd, 1)
    os.dup2(fd, 2)


def baseline(snapshot: Path, files: set[str]) -> _Trace:
    """Every fast unit test once, traced, in a forked child."""
    result = snapshot.parent / "baseline.pickle"
    log = snapshot.parent / "baseline.log"
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            _child_setup(snapshot, log)
            trace = _Trace(files)
            args = _pytest_args(snapshot, [str(snapshot / "tests")])
            args.remove("-x")
            code = pytest.main(args, plugins=[trace])
            with open(result, "wb") as out:
                pickle.dump((trace.lines, trace.seconds, trace.failed), out)
        finally:
            os._exit(int(code))
    _, status = os.waitpid(pid, 0)
    trace = _Trace(files)
    if result.exists():
        with open(result, "rb") as handle:
            trace.lines, trace.seconds, trace.failed = pickle.load(handle)
    if not trace.seconds:
        print(f"The unmutated tests did not run (status {status}); the end of their output:", file=sys.stderr)
        print(_tail(log), file=sys.stderr)
        raise SystemExit(2)
    return trace


def _tail(log: Path) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(log.read_text(errors="replace").splitlines()[-30:])
    return ""


@dataclass
class Job:
    module: Module
    number: int
    tests: list[str]
    timeout_s: float
    pid: int = 0
    started: float = 0.0


def start(job: Job, snapshot: Path) -> None:
    log = snapshot.parent / f"mutant-{job.module.name}-{job.number}.log"
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            _child_setup(snapshot, log)
            code_object = job.module.mutant_code(job.number)
            sys.meta_path.insert(0, _MutantFinder(f"{PACKAGE}.{job.module.name}", job.module.path, code_object))
            code = pytest.main(_pytest_args(snapshot, job.tests))
        except BaseException:
            code = 3
        finally:
            os._exit(int(code))
    job.pid, job.started = pid, time.monotonic()


def run_all(jobs: list[Job], snapshot: Path, parallel: int, done: Callable[[Job, str], None]) -> None:
    """Run the jobs, ``parallel`` at a time; ``done(job, outcome)`` with outcome killed/survived/timeout."""
    waiting, running = list(jobs), []
    while waiting or running:
        while waiting and len(running) < parallel:
            job = waiting.pop(0)
            start(job, snapshot)
            running.append(job)
        time.sleep(0.005)
        for job in list(running):
            pid, status = os.waitpid(job.pid, os.WNOHANG)
            if pid:
                running.remove(job)
                code = os.waitstatus_to_exitcode(status)
                done(job, "survived" if code == 0 else "killed")
            elif time.monotonic() - job.started > job.timeout_s:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(job.pid, signal.SIGKILL)
                os.waitpid(job.pid, 0)
                running.remove(job)
                done(job, "timeout")


# ------------------------------------------------------------------------------------------- the script


def snapshot_tree(directory: Path) -> Path:
    tree = directory / "tree"
    ignore = shutil.ignore_patterns("__pycache__", "labextension", "artifacts", "ui", "ts", "*.pyc")
    shutil.copytree(ROOT / PACKAGE, tree / PACKAGE, ignore=ignore)
    shutil.copytree(ROOT / "tests", tree / "tests", ignore=ignore)
    shutil.copy2(ROOT / "pyproject.toml", tree / "pyproject.toml")
    return tree


def relaunch_on_standin() -> None:
    """Copy the tree, build the stand-in, and run this script again with the loader pointed at it."""
    directory = Path(tempfile.mkdtemp(prefix="gpumem-mutation-"))
    tree = snapshot_tree(directory)
    sys.path.insert(0, str(tree))
    from jupyter_gpumem import standin

    standin.build(directory / "standin" / "current")
    standin.build(directory / "standin" / "without-v3", without_v3=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER_GPUMEM_")}
    env[_SNAPSHOT_VARIABLE] = str(tree)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        filter(None, [str(directory / "standin" / "current"), env.get("LD_LIBRARY_PATH")])
    )
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # the copy is ours: cached bytecode spares each mutant a compile
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree), env.get("PYTHONPATH")]))  # ahead of the checkout
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


def _preload() -> None:
    """Import what every child would import anyway, once, before forking."""
    for name in (
        "pytest",
        "jupyter_client.manager",
        "pynvml",
        "psutil",
        "traitlets.config",
        "IPython",
        "numpy",
        "comm",
    ):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def importers(snapshot: Path, module: str) -> set[str]:
    """The test files that name the module in an import: their tests may read its constants without
    running a line of it."""
    pattern = re.compile(rf"\b{PACKAGE}\.{module}\b|from {PACKAGE} import [^\n]*\b{module}\b")
    return {f"tests/{path.name}" for path in (snapshot / "tests").glob("*.py") if pattern.search(path.read_text())}


def selected_tests(module: Module, point: Point, trace: _Trace, usable: set[str], files: set[str]) -> list[str]:
    path = str(module.path)
    if point.in_function:
        lines = {(path, n) for n in range(point.line, point.end_line + 1)} | {(path, point.statement_line)}
        tests = {t for t in usable if trace.lines[t] & lines}
    else:  # runs at import: every test that runs the module or whose file imports it
        tests = {t for t in usable if any(f == path for f, _ in trace.lines[t]) or t.split("::")[0] in files}
    return sorted(tests, key=lambda t: (trace.seconds[t], t))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "modules", nargs="*", default=list(MODULES), help=f"modules of {PACKAGE} (default: {' '.join(MODULES)})"
    )
    parser.add_argument("--target", type=float, default=90.0, help="percent of mutants to kill per module (default 90)")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once (default 1: the machines are shared)")
    parser.add_argument("--verbose", action="store_true", help="a line per mutant as it finishes")
    parser.add_argument("--list", action="store_true", help="list the mutants and run nothing")
    options = parser.parse_args()
    for name in options.modules:
        if not (ROOT / PACKAGE / f"{name}.py").is_file():
            parser.error(f"{PACKAGE}/{name}.py does not exist")
    if options.list:
        for name in options.modules:
            path = ROOT / PACKAGE / f"{name}.py"
            points = mutation_points(ast.parse(path.read_text(), str(path)))
            for point in points:
                print(f"{PACKAGE}/{name}.py:{point.line}: {point.before} -> {point.after}")
            print(f"{name}: {len(points)} mutants")
        return 0

    if not os.environ.get(_SNAPSHOT_VARIABLE):
        relaunch_on_standin()
    snapshot = Path(os.environ[_SNAPSHOT_VARIABLE])
    if importlib.util.find_spec(PACKAGE).origin != str(snapshot / PACKAGE / "__init__.py"):  # type: ignore[union-attr]
        sys.exit(f"{PACKAGE} would not be imported from the copy {snapshot}")
    os.environ[_BUILD_VARIABLE] = "set per child"
    began = time.monotonic()
    try:
        return _run(options, snapshot, began)
    finally:
        shutil.rmtree(snapshot.parent, ignore_errors=True)


def _run(options: argparse.Namespace, snapshot: Path, began: float) -> int:
    modules = []
    for name in options.modules:
        path = snapshot / PACKAGE / f"{name}.py"
        source = path.read_text()
        modules.append(Module(name, path, source, mutation_points(ast.parse(source, str(path)))))
    _preload()
    trace = baseline(snapshot, {str(m.path) for m in modules})
    usable = set(trace.seconds) - trace.failed
    print(f"baseline: {len(trace.seconds)} fast unit tests in {sum(trace.seconds.values()):.0f} s", flush=True)
    if trace.failed:
        print(f"  {len(trace.failed)} fail without any mutant and are left out:", *sorted(trace.failed), sep="\n    ")

    below = []
    for module in modules:
        outcomes: dict[int, str] = {}
        jobs = []
        files = importers(snapshot, module.name)
        for number, point in enumerate(module.points):
            tests = selected_tests(module, point, trace, usable, files)
            if not tests:
                outcomes[number] = "not run by any test"
                continue
            seconds = sum(trace.seconds[t] for t in tests)
            jobs.append(Job(module, number, tests, timeout_s=10 + 3 * seconds))

        def done(job: Job, outcome: str, outcomes: dict[int, str] = outcomes, module: Module = module) -> None:
            outcomes[job.number] = outcome
            if options.verbose:
                point = module.points[job.number]
                print(f"  {outcome:8} {module.name}.py:{point.line}: {point.before} -> {point.after}", flush=True)

        started = time.monotonic()
        run_all(jobs, snapshot, max(1, options.jobs), done)
        survivors, equivalent = [], []
        lines = module.source.splitlines()
        for number, point in enumerate(module.points):
            if outcomes[number] in ("killed", "timeout"):
                continue
            key = (module.name, lines[point.line - 1].strip(), f"{point.before} -> {point.after}")
            (equivalent if key in EQUIVALENT else survivors).append((point, outcomes[number], EQUIVALENT.get(key)))
        total = len(module.points) - len(equivalent)
        killed = total - len(survivors)
        percent = 100.0 * killed / total if total else 100.0
        print(
            f"{module.name}: {killed} of {total} mutants killed ({percent:.1f}%)"
            + (f", {len(equivalent)} equivalent left out" if equivalent else "")
            + f" [{time.monotonic() - started:.0f} s]",
            flush=True,
        )
        relative = f"{PACKAGE}/{module.name}.py"
        for point, outcome, _ in survivors:
            note = " (no test runs this line)" if outcome == "not run by any test" else ""
            print(f"  {relative}:{point.line}: {point.before} -> {point.after}{note}")
        for point, _, why in equivalent:
            print(f"  equivalent {relative}:{point.line}: {point.before} -> {point.after}: {why}")
        if percent < options.target:
            below.append(module.name)
    print(f"{time.monotonic() - began:.0f} s in all", flush=True)
    if below:
        print(f"below the target of {options.target:g}%: {', '.join(below)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
