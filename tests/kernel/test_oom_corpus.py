"""The out-of-memory recogniser on what users really paste: the messages in tests/fixtures/oom/, copied from
public issues (one file per message, with its source and the facts a careful reader takes from it). Each is
raised as that framework version raised it, and must be recognised with every fact exact; the negatives (errors
that only mention memory) get no diagnosis. `python tests/kernel/test_oom_corpus.py` prints the score per framework."""

from __future__ import annotations

import builtins
import importlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from jupyter_gpumem.kernel.oom import recognise

FIXTURES = Path(__file__).parents[1] / "fixtures" / "oom"
CASES: dict[str, dict[str, Any]] = {path.stem: json.loads(path.read_text()) for path in sorted(FIXTURES.glob("*.json"))}
POSITIVE = sorted(name for name, case in CASES.items() if case["expect"] is not None)
NEGATIVE = sorted(name for name, case in CASES.items() if case["expect"] is None)
# What the frameworks printed before issue 19 was read, and what the parser then already read right.
CORE = ("framework", "bytes", "shape", "dtype", "device", "node")


def raised(case: dict[str, Any]) -> BaseException:
    """The exception as that framework version raised it: the real class where it is installed (TensorFlow,
    PyTorch, JAX, CuPy), a builtin where the class was generic, else a class of that name and module (jaxlib's
    XlaRuntimeError, gone from today's jaxlib)."""
    name, message = case["raised"], case["message"]
    if name.startswith("cupy"):
        # CuPy's classes build their message from figures (today's wording): the pasted one is set as it was printed.
        module, _, cls = name.rpartition(".")
        kind = getattr(importlib.import_module(module), cls)  # cupy.cuda.runtime re-exports cupy_backends' class
        error = kind.__new__(kind)
        error.args = (message,)
        return error
    if name.endswith("ResourceExhaustedError"):
        import tensorflow as tf

        return tf.errors.ResourceExhaustedError(None, None, message)
    if name in ("torch.OutOfMemoryError", "torch.cuda.OutOfMemoryError"):
        import torch

        return torch.OutOfMemoryError(message)
    if name == "jax.errors.JaxRuntimeError":
        import jax

        return jax.errors.JaxRuntimeError(message)
    if "." not in name:
        kind: type[BaseException] = getattr(builtins, name)
        return kind(message)
    module, _, cls = name.rpartition(".")
    return type(cls, (RuntimeError,), {"__module__": module})(message)


def expected(case: dict[str, Any]) -> dict[str, Any]:
    return {"framework": case["framework"], **case["expect"]}


def read(case: dict[str, Any]) -> dict[str, Any] | None:
    """The facts the recogniser took from the message, in the fixture's terms; None when not recognised."""
    report = recognise(raised(case))
    if report is None:
        return None
    facts = {
        "framework": report.framework,
        "bytes": report.bytes,
        "rounded": getattr(report, "rounded", False),
        "shape": list(report.shape) if report.shape is not None else None,
        "dtype": report.dtype,
        "device": report.device,
        "accelerator": getattr(report, "accelerator", None),
        "free": getattr(report, "free", None),
        "unused_pool": report.unused_pool,
    }
    if case["framework"] == "TensorFlow":
        facts["node"] = report.node
    if case["framework"] == "CuPy":
        facts |= {
            "pool_held": report.pool_held,
            "pool_limit": report.pool_limit,
            "pool_limit_reached": report.pool_limit_reached,
        }
    return facts


@pytest.mark.parametrize("name", POSITIVE)
def test_every_pasted_out_of_memory_error_is_recognised_with_its_facts(name):
    case = CASES[name]
    assert read(case) == expected(case), case["source"]


@pytest.mark.parametrize("name", NEGATIVE)
def test_errors_that_only_mention_memory_get_no_diagnosis(name):
    assert read(CASES[name]) is None, CASES[name]["source"]


def test_the_corpus_holds_every_era_and_device():
    kinds = Counter((case["framework"], case["device_kind"]) for case in CASES.values() if case["expect"])
    assert len(POSITIVE) >= 60 and len(NEGATIVE) >= 5
    for wanted in [
        ("PyTorch", "CUDA"),
        ("PyTorch", "ROCm"),
        ("PyTorch", "MPS"),
        ("PyTorch", "XPU"),
        ("PyTorch", "DirectML"),
        ("TensorFlow", "GPU"),
        ("TensorFlow", "CPU"),
        ("TensorFlow", "DirectML"),
        ("TensorFlow", "XPU"),
        ("JAX", "GPU"),
        ("JAX", "TPU"),
        ("CuPy", "GPU"),
        ("CuPy", "CUDA"),
    ]:
        assert kinds[wanted], wanted
    raised_as = Counter(case["raised"].rpartition(".")[2] for case in CASES.values() if case["expect"])
    assert raised_as["RuntimeError"] >= 20  # the generic class: recognised by the message alone


def test_the_score_over_the_whole_corpus(capsys):
    table = score()
    with capsys.disabled():
        print("\n" + format_score(table))
    total = table["all"]
    assert total["recognised"] == total["core exact"] == total["exact"] == total["cases"]
    assert total["negatives quiet"] == total["negatives"]


def score() -> dict[str, Counter[str]]:
    """Per framework: cases, recognised, exact on the facts read before issue 19 ("core"), exact on all."""
    table: dict[str, Counter[str]] = {}
    for case in CASES.values():
        rows = [table.setdefault(case["framework"], Counter()), table.setdefault("all", Counter())]
        facts = read(case)
        for row in rows:
            if case["expect"] is None:
                row["negatives"] += 1
                row["negatives quiet"] += facts is None
                continue
            want = expected(case)
            row["cases"] += 1
            row["recognised"] += facts is not None
            row["core exact"] += facts is not None and all(facts.get(k) == want.get(k) for k in CORE)
            row["exact"] += facts == want
    return table


def format_score(table: dict[str, Counter[str]]) -> str:
    columns = ["cases", "recognised", "core exact", "exact", "negatives", "negatives quiet"]
    lines = [f"{'':12}" + "".join(f"{c:>17}" for c in columns)]
    lines += [f"{name:12}" + "".join(f"{row[c]:>17}" for c in columns) for name, row in sorted(table.items())]
    return "\n".join(lines)


if __name__ == "__main__":
    print(format_score(score()))
    for name in POSITIVE + NEGATIVE:
        case = CASES[name]
        got = read(case)
        want = expected(case) if case["expect"] is not None else None
        if got != want:
            print(f"{name}: got {got}\n{' ' * len(name)}  want {want}")
