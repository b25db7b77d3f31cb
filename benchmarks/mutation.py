"""Mutation testing with mutmut 3: plant small bugs in the policy modules, one at a time, and count those the
fast unit tests catch.

    pip install -e ".[test,mutation]"
    python benchmarks/mutation.py                               # every policy module, target 90%
    python benchmarks/mutation.py budget/reading gpu/nvml        # some of them
    python benchmarks/mutation.py budget/reading --survivors     # only what survived the last run, again
    python benchmarks/mutation.py --report                      # the last results again, running nothing
    mutmut show NAME; mutmut browse                             # mutmut's own views of the last results

Prints a table (module, mutants, killed, equivalent, survived, %), then each survivor as its mutmut name and
``function: before -> after``; exits 1 when a module is below ``--target`` percent. Not in CI: on a busy
2-core machine a module takes from a few minutes to half an hour.

What this adds to ``mutmut run``. The policy modules and the pytest selection (the fast unit tests: not the
kernel, browser or server markers) are ``[tool.mutmut]`` in pyproject.toml. tests/conftest.py compiles the
stand-in libnvidia-ml.so.1 and re-executes pytest with LD_LIBRARY_PATH naming it, which mutmut cannot
survive (it runs pytest in its own process, then forks a child per mutant); so this script builds the
stand-in first and starts mutmut with the conftest's build variable and LD_LIBRARY_PATH already set, the
state in which the conftest does not re-execute. Every mutant of a module named is run afresh (mutmut's
cache of results is for functions it has not seen change, and a new test changes no function).

mutmut mutates the bodies of functions and methods only: module constants, class bodies, and functions with
a decorator other than ``@staticmethod``/``@classmethod`` (``@property`` among them) are not mutated.

Equivalent mutants. mutmut names a mutant by its function and its index among that function's mutants, so an
edit anywhere in a function renumbers its mutants. ``EQUIVALENT`` therefore keys on the module, the function
and the changed source text (the lines the mutant's diff removes, stripped, then `` -> `` and the lines it
adds; or the removed text alone, for every mutant of that source), never on a number or a line number. Each
entry says why the mutant changes nothing a user or a caller can tell. They are shown and left out of the
percentage; an entry that no longer matches a surviving mutant is reported, so the list cannot rot.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "jupyter_gpumem"
_BUILD_VARIABLE = "JUPYTER_GPUMEM_TEST_STANDIN_DIR"  # tests/conftest.py: set means "already on the stand-in"
KILLED = {"killed", "timeout", "segfault"}  # a crash or a hang is a test noticing

_STARTED_NAMED = (
    "an estimate needs a started framework, and once one has started the State names it: the fallback name is "
    "never used"
)
_NO_KEY = "a GPU without a UUID is looked up under a key no GPU has: '' and 'XXXX' alike"

_AT_IMPORT = (
    "runs only at import (a trait built in GpumemConfig's class body), which mutmut's forked children have done "
    "before the mutant is chosen: out of this tool's reach, not equivalent; the forms tests cover the traits"
)
_ANY_CASE = "policy.parse_value reads on, off and none in any case"

_TRAIT_ERROR = (
    "the trait's own error is never shown: any exception refuses the value with the sentence from FORMS, and "
    "Float and Int read obj only for that error"
)
_EVERY_APPLICATION = "every traitlets Application has it, so the default is never taken"
_JSON_LOADER = "IPython's applications read JSON with traitlets' own JSONFileConfigLoader, the default here"
_UNREAD_SETTING = (
    "an unreadable file's setting is never read: fields() raises before it and privacy_level() looks at the kind"
)
_FALL_THROUGH = "'configuration' is the kind shown() and origin() fall through to: they test only for the others"
_SECTION_ONCE = (
    "a section names each setting once and is read once, at construction: nothing refused there is kept later"
)
_CAPITALISED = (
    "traitlets' Config holds only a Config under a capitalised name, so isinstance(value, Config) decides alone "
    "unless a file assigns Config() to a lowercase name"
)
_RESOLVED_TWICE = (
    "the name matters only for a lazy value (.append()), which _given_in() and fields() both resolve: either alone "
    "does it"
)
_FIRST_SAMPLE = "follows() takes its first figures from the sample the candidate was made from, the same ones"
_FITS = "fits is read only as zero or not: has the candidate followed a move at all"
_SNAPSHOT_ONCE = "_decide reads a snapshot itself when given none: one reading of the same machine either way"
_SEVERAL_NONE_IMPORTED = (
    "several frameworks that are not all imported are none imported (targets keeps only the imported ones); "
    "then the name is not used (State.framework is None)"
)
_ONE_FRAMEWORK = "with one framework, together only picks the conjunction of a one-name label"
_NOT_STARTED_NAME = (
    "the name is read only for a started framework's figures (the calibration, an estimate), and then it is "
    "label(started)"
)
_NO_ORIGIN = "an origin is read only for a cap that is set (Ceiling.origin): an unset cap's is never shown"

# (module, function, change) -> why the mutant changes nothing a user or a caller can tell. Module as given on
# the command line, function as Class.method; change as "before -> after" (the changed lines, stripped) for
# one mutant, "before" alone for every mutant of that source, or "*" for every mutant of the function.
EQUIVALENT: dict[tuple[str, str, str], str] = {
    **{
        ("budget/config", f"{trait}.__init__", "*"): _AT_IMPORT
        for trait in ("_Setting", "NumberOrString", "BytesOrString", "BoolOrString", "IntOrString", "String")
    },
    ("budget/config", "IntListOrString.__init__", "*"): _AT_IMPORT,
    ("budget/config", "_policy_fields", 'text = "on" if value else "off" -> text = "ON" if value else "off"'): (
        _ANY_CASE
    ),
    ("budget/config", "_policy_fields", 'text = "on" if value else "off" -> text = "on" if value else "OFF"'): (
        _ANY_CASE
    ),
    (
        "budget/config",
        "_policy_fields",
        'text = ",".join(str(item).strip() for item in value) or "none" -> '
        'text = ",".join(str(item).strip() for item in value) or "NONE"',
    ): _ANY_CASE,
    **{
        ("budget/config", f"{trait}.validate", change): _TRAIT_ERROR
        for trait in ("_Number", "_Whole")
        for change in (
            "self.error(obj, value)",
            "return super().validate(obj, value) -> return super().validate(None, value)",
        )
    },
    (
        "budget/config",
        "_Setting.default_value_repr",
        "return f\"os.environ.get({environment_variable(self.name or '')!r}, '')\" -> "
        "return f\"os.environ.get({environment_variable(self.name or 'XXXX')!r}, '')\"",
    ): "a trait in a class body always has its name",
    **{
        (
            "budget/config",
            "GpumemConfig._find_my_config",
            f"if name[:1].isupper() or isinstance(value, Config): -> {after}",
        ): _CAPITALISED
        for after in (
            "if name[:1].isupper() and isinstance(value, Config):",
            "if name[:2].isupper() or isinstance(value, Config):",
        )
    },
    (
        "budget/config",
        "GpumemConfig._find_my_config",
        "kept[name] = value  # a subsection, not a setting of ours -> "
        "kept[name] = None  # a subsection, not a setting of ours",
    ): "GpumemConfig has no child configurables: traitlets' _load_config skips a capitalised subsection unread",
    ("budget/config", "GpumemConfig._find_my_config", "self.refused.pop(name, None) -> self.refused.pop(None, None)"): (
        _SECTION_ONCE
    ),
    (
        "budget/config",
        "GpumemConfig._find_my_config",
        "self._refused_ceilings.pop(name, None) -> self._refused_ceilings.pop(None, None)",
    ): _SECTION_ONCE,
    **{
        ("budget/config", "GpumemConfig.ceiling", f'{cap}_origin={source}.origin() if {source} else "",'): _NO_ORIGIN
        for cap, source in (("max_fraction", "fraction_from"), ("max_limit", "limit_from"))
    },
    **{
        (
            "budget/config",
            "GpumemConfig.ceilings_given",
            f'for path in getattr(application, "loaded_config_files", []): -> {after}',
        ): _EVERY_APPLICATION
        for after in (
            'for path in getattr(application, "loaded_config_files", None):',
            'for path in getattr(application, "loaded_config_files", ):',
        )
    },
    (
        "budget/config",
        "GpumemConfig.ceilings_given",
        'cli = getattr(application, "cli_config", None) or Config() -> '
        'cli = getattr(application, "cli_config", ) or Config()',
    ): _EVERY_APPLICATION,
    **{
        (
            "budget/config",
            "GpumemConfig.ceilings_given",
            'given.append(_Given("", loaded, "unreadable", path))  # ceiling() says so -> '
            f'given.append(_Given({setting}, loaded, "unreadable", path))  # ceiling() says so',
        ): _UNREAD_SETTING
        for setting in ("None", '"XXXX"')
    },
    **{
        (
            "budget/config",
            "GpumemConfig.ceilings_given",
            f'given.append(_Given(setting, value, "configuration")) -> given.append(_Given(setting, value, {kind}))',
        ): _FALL_THROUGH
        for kind in ("None", '"XXconfigurationXX"', '"CONFIGURATION"')
    },
    (
        "budget/config",
        "GpumemConfig._given_in",
        'def _given_in(self, config: Config, settings: tuple[str, ...], kind: str, where: str = "") -> list[_Given]: '
        '-> def _given_in(self, config: Config, settings: tuple[str, ...], kind: str, where: str = "XXXX") -> '
        "list[_Given]:",
    ): "where is read only for the kind 'file', whose caller always gives the path",
    **{
        (
            "budget/config",
            "_load_file",
            'loader_class = getattr(application, "json_config_loader_class", JSONFileConfigLoader) -> '
            f"loader_class = {after}",
        ): _JSON_LOADER
        for after in (
            'getattr(None, "json_config_loader_class", JSONFileConfigLoader)',
            'getattr(application, "XXjson_config_loader_classXX", JSONFileConfigLoader)',
            'getattr(application, "JSON_CONFIG_LOADER_CLASS", JSONFileConfigLoader)',
        )
    },
    **{
        (
            "budget/config",
            "_load_file",
            f'loader_class = getattr(application, "{kind}_config_loader_class", {loader}) -> '
            f'loader_class = getattr(application, "{kind}_config_loader_class", {after})',
        ): _EVERY_APPLICATION
        for kind, loader in (("json", "JSONFileConfigLoader"), ("python", "PyFileConfigLoader"))
        for after in ("None", "")
    },
    **{
        (
            "budget/config",
            "_load_file",
            "loaded = loader_class(name, path=directory, log=log).load_config() -> "
            f"loaded = loader_class(name, path=directory, {after}).load_config()",
        ): "the loader logs only its own debug lines, never a ceiling"
        for after in ("log=None", "")
    },
    (
        "budget/config",
        "GpumemConfig._given_in",
        "value = _validated(self, traits[setting], setting, value) -> "
        "value = _validated(self, traits[setting], None, value)",
    ): _RESOLVED_TWICE,
    (
        "budget/config",
        "_Given.fields",
        "value = _validated(owner, trait, self.setting, self.value) -> "
        "value = _validated(owner, trait, None, self.value)",
    ): _RESOLVED_TWICE,
    ("budget/config", "_same", "return False -> return True"): (
        "reached only by a value whose == raises, which no configuration file, command line or %config holds"
    ),
    **{
        ("budget/config", "_unknown", f"close = get_close_matches(name, SETTINGS, n=1) -> {after}"): (
            "the hint names close[0], the best match whatever n (get_close_matches sorts by score)"
        )
        for after in ("close = get_close_matches(name, SETTINGS, )", "close = get_close_matches(name, SETTINGS, n=2)")
    },
    **{
        (
            "budget/attribution",
            "Matcher._observe",
            f"gpu.candidates.setdefault(pid, _Candidate(row.used_bytes, pool)) -> {after}",
        ): _FIRST_SAMPLE
        for after in (
            "gpu.candidates.setdefault(pid, _Candidate(None, pool))",
            "gpu.candidates.setdefault(pid, _Candidate(row.used_bytes, None))",
        )
    },
    **{
        ("budget/attribution", "_Candidate.follows", f"self.fits += 1 -> {after}"): _FITS
        for after in ("self.fits = 1", "self.fits -= 1", "self.fits += 2")
    },
    (
        "budget/attribution",
        "_Candidate.follows",
        "slack = max(SLACK_BYTES, abs(moved) // 50) -> slack = max(SLACK_BYTES, abs(moved) / 50)",
    ): "byte counts are whole numbers, so a slack with a fraction of a byte draws the same lines",
    **{
        (
            "budget/attribution",
            "_Candidate.follows",
            "if moved - slack <= grew <= moved + (GROWTH_BYTES if moved > 0 else slack) and not miss: -> "
            f"if moved - slack <= grew <= moved + (GROWTH_BYTES if {after} else slack) and not miss:",
        ): "reached only when the pool moved by at least MOVE_BYTES, so moved is never 0 or 1"
        for after in ("moved >= 0", "moved > 1")
    },
    (
        "kernel/control",
        "Controller.request",
        "state = self._decide(policy, self.snapshot(), plan_empty=True) -> "
        "state = self._decide(policy, None, plan_empty=True)",
    ): _SNAPSHOT_ONCE,
    (
        "kernel/control",
        "Controller.reset",
        "state = self._decide(Policy(), self.snapshot()) -> state = self._decide(Policy(), None)",
    ): (_SNAPSHOT_ONCE),
    (
        "kernel/control",
        "Controller.request",
        "installed = len(state.adapters) > 1 or state.adapters[0].importable() -> "
        "installed = len(state.adapters) > 2 or state.adapters[0].importable()",
    ): "several frameworks are named before any is imported only when each is installed (targets)",
    **{
        (
            "kernel/control",
            "Controller.read",
            f"for uuid, allocator in zip(uuids, adapter.memory_in_use(), strict=False): -> {after}",
        ): "zip's strict is False by default"
        for after in (
            "for uuid, allocator in zip(uuids, adapter.memory_in_use(), strict=None):",
            "for uuid, allocator in zip(uuids, adapter.memory_in_use(), ):",
        )
    },
    **{
        (
            "kernel/control",
            "Controller.read",
            'name, version = label(started) if started else (state.framework or "the framework", None) -> '
            f"name, version = label(started) if started else {after}",
        ): _NOT_STARTED_NAME
        for after in (
            '(state.framework and "the framework", None)',
            '(state.framework or "XXthe frameworkXX", None)',
            '(state.framework or "THE FRAMEWORK", None)',
        )
    },
    **{
        (
            "kernel/control",
            "Controller._state",
            f'framework = label(adapters, "and" if together else "or")[0] -> framework = label(adapters, {after})[0]',
        ): _SEVERAL_NONE_IMPORTED
        for after in (
            "",
            '"and" if (together) or True else "or"',
            '"and" if together else "XXorXX"',
            '"and" if together else "OR"',
        )
    },
    **{
        (
            "kernel/control",
            "Controller._on_import",
            'print("\\n".join(self._apply(self._state(state.policy, plan, [adapter], True)))) -> '
            f'print("\\n".join(self._apply(self._state(state.policy, plan, [adapter], {after}))))',
        ): _ONE_FRAMEWORK
        for after in ("None", "False")
    },
    **{
        (
            "budget/state",
            "State.since",
            'return time.strftime("%H:%M:%S", time.localtime(self.applied_at)) if self.applied_at else "" -> '
            f'return time.strftime("%H:%M:%S", time.localtime(self.applied_at)) if {after}',
        ): "since() is shown only for an applied State, whose applied_at is set"
        for after in ('(self.applied_at) or True else ""', 'self.applied_at else "XXXX"')
    },
    (
        "budget/reading",
        "Reading.shown",
        "return self.privacy.split(device, () if own is None else (own,)) -> "
        "return self.privacy.split(device, () if (own is None) and False else (own,))",
    ): "keeping PID None keeps nothing more: no process has it",
    **{
        (
            "budget/reading",
            "Reading.own",
            'overhead=lambda: estimate(device, self.framework or "the framework", 0), -> '
            f"overhead=lambda: estimate(device, self.framework or {fallback}, 0),",
        ): _STARTED_NAMED
        for fallback in ('"XXthe frameworkXX"', '"THE FRAMEWORK"')
    },
    (
        "gpu/nvml",
        "_mig_devices",
        "uuid=_text(uuid) if uuid is not None else None, -> uuid=_text(uuid) if (uuid is not None) or True else None,",
    ): "_text passes None through as it is",
    (
        "budget/reading",
        "Reading.own",
        'known = self.owns.get(device.uuid or "") -> known = self.owns.get(device.uuid or "XXXX")',
    ): _NO_KEY,
    (
        "budget/reading",
        "reading",
        'gpu = planned.get(device.uuid or "") -> gpu = planned.get(device.uuid or "XXXX")',
    ): "outside() is asked only for GPUs that report a UUID (those reading() attributes)",
    ("budget/reading", "_outside", "if pool is None or own is None: -> if pool is None and own is None:"): (
        "own is known when over the budget, and the pool is unknown only where the plan gives no allocator limit: "
        "a 0-byte budget, which the policy refuses"
    ),
    ("budget/reading", "reading", "device, -> None,"): (
        "breakdown() reads the device only for NVML's own figure when no attributed one is given; reading() "
        "always gives it"
    ),
    ("budget/reading", "reading", "hidden=device.uuid in hidden, -> hidden=None,"): (
        "a GPU the policy hides is outside the plan, so it has no budget and is never over it: the 'hidden' "
        "reason is reached only through breakdown() called alone"
    ),
}


@dataclass
class Mutant:
    name: str  # mutmut's: jupyter_gpumem.budget.reading.xǁReadingǁlimit__mutmut_3
    status: str
    function: str
    before: str  # the lines the mutant's diff removes, stripped
    after: str  # and those it adds

    @property
    def change(self) -> str:
        return f"{self.before} -> {self.after}"

    def keys(self, module: str) -> list[tuple[str, str, str]]:
        return [(module, self.function, change) for change in (self.change, self.before, "*")]

    def why_equivalent(self, module: str) -> str | None:
        return next((EQUIVALENT[key] for key in self.keys(module) if key in EQUIVALENT), None)


def policy_modules() -> list[str]:
    """The modules [tool.mutmut] mutates, as budget/reading."""
    from mutmut.configuration import config

    os.chdir(ROOT)  # mutmut reads pyproject.toml, and its results under mutants/, from the current folder
    return [path.removeprefix(f"{PACKAGE}/").removesuffix(".py") for path in config().only_mutate]


def build_standin(directory: Path) -> dict[str, str]:
    """The stand-in's builds, as tests/conftest.py makes them, and the environment that makes the conftest
    use them instead of building its own."""
    sys.path.insert(0, str(ROOT))
    from jupyter_gpumem import standin

    standin.build(directory / "current")
    standin.build(directory / "without-v3", without_v3=True)
    env = dict(os.environ)
    env[_BUILD_VARIABLE] = str(directory)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(directory / "current"), env.get("LD_LIBRARY_PATH")]))
    # The conftest removes the build at the end of every pytest session but a worker's; each of mutmut's
    # sessions (the stats run, then one per mutant) is a worker of this script, which removes it once.
    env["PYTEST_XDIST_WORKER"] = "mutmut"
    env.pop("PYTHONPATH", None)  # mutmut puts its mutated copy first; a checkout on the path would shadow it
    return env


def run_mutmut(modules: list[str], names: list[str], jobs: int) -> int:
    directory = Path(tempfile.mkdtemp(prefix="gpumem-mutation-"))
    try:
        env = build_standin(directory)
        patterns = names or [f"{PACKAGE}.{module.replace('/', '.')}.*" for module in modules]
        # Started as "python", not as the mutmut script: tests/gpu/test_host.py reads the name of a process it
        # has just started, which until the exec is its parent's.
        command = [sys.executable, "-c", "from mutmut.__main__ import cli; cli()", "run", f"--max-children={jobs}"]
        return subprocess.run([*command, *patterns], cwd=ROOT, env=env).returncode
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def change_of(diff: str) -> tuple[str, str]:
    """The lines a mutant's diff removes and those it adds, stripped: no line number, no mutant number."""
    lines = diff.splitlines()[2:]  # past the ---/+++ header
    removed = " / ".join(line[1:].strip() for line in lines if line.startswith("-"))
    added = " / ".join(line[1:].strip() for line in lines if line.startswith("+"))
    return removed, added


def mutants_of(module: str) -> list[Mutant]:
    from mutmut.mutation.data import SourceFileMutationData
    from mutmut.mutation.diff_apply import get_diff_for_mutant
    from mutmut.stats import status_by_exit_code
    from mutmut.utils.format_utils import orig_function_and_class_names_from_key

    path = Path(PACKAGE) / f"{module}.py"
    data = SourceFileMutationData(path=path)
    data.load()
    mutants = []
    for name, code in data.exit_code_by_key.items():
        function, cls = orig_function_and_class_names_from_key(name)
        function = f"{cls}.{function}" if cls else function
        status = status_by_exit_code[code]
        before, after = ("", "") if status in KILLED else change_of(get_diff_for_mutant(name, path=path))
        mutants.append(Mutant(name, status, function, before, after))
    return mutants


def report(modules: list[str], target: float) -> int:
    rows, details, below, matched = [], [], [], set()
    for module in modules:
        mutants = mutants_of(module)
        alive = [m for m in mutants if m.status not in KILLED and m.status != "not checked"]
        equivalent = [m for m in alive if m.why_equivalent(module)]
        survivors = [m for m in alive if m not in equivalent]
        matched |= {key for m in equivalent for key in m.keys(module)}
        unrun = sum(m.status == "not checked" for m in mutants)
        if unrun:
            details.append(f"  {module}: {unrun} mutants not run yet (an interrupted run), left out")
        counted = len(mutants) - len(equivalent) - unrun
        killed = counted - len(survivors)
        percent = 100.0 * killed / counted if counted else 100.0
        rows.append((module, len(mutants), killed, len(equivalent), len(survivors), percent))
        if percent < target:
            below.append(module)
        details += [f"  {m.name} [{m.status}]\n      {m.function}: {m.change}" for m in survivors]
        by_reason: dict[str | None, list[Mutant]] = {}  # each reason printed once, after its mutants
        for m in equivalent:
            by_reason.setdefault(m.why_equivalent(module), []).append(m)
        for why, same in by_reason.items():
            details += [f"  equivalent {m.function}: {m.change}" for m in same] + [f"      {why}"]
    print(f"{'module':24} {'mutants':>8} {'killed':>8} {'equiv.':>8} {'survived':>8} {'%':>6}")
    for module, total, killed, equivalent, survived, percent in rows:
        print(f"{module:24} {total:8} {killed:8} {equivalent:8} {survived:8} {percent:6.1f}")
    print(*details, sep="\n")
    for key in sorted(set(EQUIVALENT) - matched):
        if key[0] in modules:
            print(f"  stale equivalent (matches no surviving mutant): {key}")
    if below:
        print(f"below the target of {target:g}%: {', '.join(below)}")
        return 1
    return 0


def main() -> int:
    policy = policy_modules()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", default=policy, help=f"of {PACKAGE}, as budget/reading (default: all)")
    parser.add_argument("--target", type=float, default=90.0, help="percent of mutants to kill per module (default 90)")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once (default 1: the machines are shared)")
    parser.add_argument("--survivors", action="store_true", help="run only the last run's survivors of the modules")
    parser.add_argument("--report", action="store_true", help="report the last results, running nothing")
    options = parser.parse_args()
    for module in options.modules:
        if module not in policy:
            parser.error(f"{module} is not among [tool.mutmut] only_mutate in pyproject.toml: {' '.join(policy)}")
    if not options.report:
        names = []
        if options.survivors:
            names = [m.name for module in options.modules for m in mutants_of(module) if m.status not in KILLED]
            if not names:
                return report(options.modules, options.target)
        code = run_mutmut(options.modules, names, options.jobs)
        if code:
            return code
    return report(options.modules, options.target)


if __name__ == "__main__":
    sys.exit(main())
