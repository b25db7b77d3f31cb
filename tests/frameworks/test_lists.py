"""The frameworks have one source, the adapters' registry (frameworks.ADAPTERS; docs/contributing.md, "Add a
framework"): framework='s names, the magic's help and the sentences that name them all derive from it, and a list
of them kept by hand in the package fails here."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from controller_fixtures import GPU_A, Machine, a100, magics_on, make

from jupyter_gpumem.budget.overhead import Overhead
from jupyter_gpumem.budget.plan import make_plan
from jupyter_gpumem.budget.policy import Policy, PolicyError, parse
from jupyter_gpumem.budget.state import State
from jupyter_gpumem.frameworks import ADAPTERS
from jupyter_gpumem.frameworks.choice import named
from jupyter_gpumem.gpu import nvml
from jupyter_gpumem.gpu.host import HostProcesses
from jupyter_gpumem.kernel import largest
from jupyter_gpumem.kernel.magic import help_text
from jupyter_gpumem.render import messages
from jupyter_gpumem.units import MiB
from jupyter_gpumem.words import CATALOGUE

__all__ = ["make"]  # the fixture

ROOT = Path(__file__).parents[2]
OVERHEAD = Overhead(450 * MiB, "estimated", "a test figure")
ADAPTED = {key: adapter() for key, adapter in ADAPTERS.items()}

# Every way code names a framework: its framework= key, its module, its aliases, its name for people.
SPELLED = {s: key for key, a in ADAPTED.items() for s in (key, a.module, a.name, *a.aliases)}
_NAME = "|".join(sorted(map(re.escape, SPELLED), key=len, reverse=True))
_SEPARATOR = r"""(?:['"`]?\s*(?:,|\||/|、|\band\b|\bor\b|と|和|或)\s*['"`]?|\s*,\s*(?:and|or)\s+)"""
# Three names or more in a row, with only separators between them: a list of frameworks.
_RUN = re.compile(rf"(?<![\w.])(?:{_NAME})(?:'s)?(?:{_SEPARATOR}(?:{_NAME})(?:'s)?){{2,}}(?!\w)")


def package_files() -> list[Path]:
    python = [p for p in (ROOT / "jupyter_gpumem").rglob("*.py") if not {"labextension", "generated"} & set(p.parts)]
    return sorted([*python, *(ROOT / "labextension" / "src").rglob("*.ts")])


@pytest.mark.parametrize("path", package_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_lists_the_frameworks_by_hand(path: Path):
    """Code, comments and docstrings alike: a list of every framework is the registry's to make, and one written
    out goes stale when the next framework comes (say "every framework", or name one or two)."""
    text = path.read_text(encoding="utf-8")
    for run in _RUN.finditer(text):
        if len({SPELLED[name] for name in re.findall(_NAME, run.group(0))}) >= 3:
            line = text.count("\n", 0, run.start()) + 1
            raise AssertionError(f"{path.relative_to(ROOT)}:{line} lists frameworks by hand: {run.group(0)!r}")


def test_the_list_finder_finds_the_lists_it_is_for():
    for listed in ("TensorFlow, PyTorch and JAX", "tensorflow|pytorch|jax", '"tensorflow", "pytorch", "jax"'):
        assert _RUN.search(listed), listed
    for prose in ("PyTorch's and TensorFlow's peaks", "TensorFlow and JAX: off takes the pool", "jax.numpy, torch"):
        assert not _RUN.search(prose), prose


@pytest.mark.parametrize("key", list(ADAPTERS))
def test_framework_takes_each_frameworks_key_module_and_aliases(key: str):
    adapter = ADAPTED[key]
    for spelling in (key, adapter.module, *adapter.aliases):
        assert named(parse([f"framework={spelling.upper()}"]).framework, ADAPTED) == key


def test_an_unknown_framework_is_refused_naming_every_registered_one_and_nothing_changes(make, capsys):
    control = make(Machine(a100(0, GPU_A)), *ADAPTED.values())
    before = control.state
    with pytest.raises(PolicyError) as refused:
        named("mxnet", ADAPTED)
    every = ", ".join(["auto", *ADAPTERS][:-1]) + f" or {list(ADAPTERS)[-1]}"
    assert str(refused.value) == f"framework=mxnet is not a framework jupyter-gpumem supports; use framework={every}."
    magics_on(control).gpumem("fraction=0.4 framework=mxnet")
    assert str(refused.value) in capsys.readouterr().err
    assert control.state == before


def test_the_magics_help_lists_every_framework_from_the_registry():
    shown = help_text()
    assert f"framework=auto|{'|'.join(ADAPTERS)}\n" in shown
    growth = shown.split("growth=on|off", 1)[1].split("gpus=", 1)[0]
    for adapter in ADAPTED.values():
        line = next(line for line in growth.splitlines() if adapter.growth in line)
        assert adapter.name in line.split(":")[0], adapter.name
    threads = shown.split("threads=2", 1)[1].split("\n", 1)[0]
    assert [a.name for a in ADAPTED.values() if a.name in threads] == [a.name for a in ADAPTED.values() if a.threads]


@pytest.mark.parametrize("key", list(ADAPTERS))
def test_each_framework_has_its_words_in_the_catalogue(key: str):
    adapter = ADAPTED[key]
    assert adapter.takes.code in CATALOGUE, f"words/en.json has no {adapter.takes.code!r} for {adapter.name}"
    assert adapter.growth and isinstance(adapter.threads, bool)


def test_the_sentences_about_every_framework_name_each_of_the_registry(scenario):
    scenario("s1_two_gpus")
    plan = make_plan(parse(["fraction=0.5"]), nvml.read(os.getpid(), HostProcesses().lookup), lambda d: OVERHEAD)
    state = State(Policy(), plan, (ADAPTED["tensorflow"],), False, None)
    none_installed = messages.recorded(state, "%gpumem", installed=False)[0]
    no_framework = largest._no_framework(ADAPTED)
    for adapter in ADAPTED.values():
        assert adapter.name in none_installed and adapter.name in no_framework, adapter.name
    assert f"framework={'|'.join(ADAPTERS)}." in no_framework
