"""Fuzz every reader of another process's value (issue 43): 100,000 generated inputs per reader by default, each
checked for the reader's property (tests/security/readers.py: a value within range or one sentence, and nothing
escapes). tests/security/test_readers_property.py runs the same checks on a few hundred inputs in CI.

    python benchmarks/fuzz_readers.py                     # every reader, 100,000 inputs each
    python benchmarks/fuzz_readers.py --examples 5000 report body

Prints, per reader, the inputs tried, the time, and the first input that broke the property (none: it held).
Exits 1 when any reader failed."""

from __future__ import annotations

import argparse
import logging
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "security")]

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from readers import READERS, private_directory  # noqa: E402


def fuzz(name: str, examples: int, directory: Path) -> tuple[int, float, str | None]:
    strategy, check = READERS[name]
    tried = [0]

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def holds(value: Any) -> None:
        tried[0] += 1
        check(value, directory) if name in ("report", "notice") else check(value)

    start = time.perf_counter()
    try:
        holds()
    except Exception:  # the property broke: hypothesis raises the shrunk input's error
        return tried[0], time.perf_counter() - start, traceback.format_exc(limit=-3)
    return tried[0], time.perf_counter() - start, None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("readers", nargs="*", help=f"some of: {', '.join(sorted(READERS))} (default: all)")
    parser.add_argument("--examples", type=int, default=100_000)
    args = parser.parse_args()
    unknown = set(args.readers) - set(READERS)
    if unknown:
        parser.error(f"no reader {', '.join(sorted(unknown))}; the readers are {', '.join(sorted(READERS))}")
    logging.disable(logging.CRITICAL)  # each refusal is logged once per sender: hundreds of thousands of senders here
    failed = False
    with private_directory() as folder:
        print(f"{'reader':<12} {'inputs':>9} {'seconds':>9} {'per input':>10}  result", flush=True)
        for name in args.readers or sorted(READERS):
            tried, seconds, broke = fuzz(name, args.examples, Path(folder))
            result = "held" if broke is None else f"BROKE:\n{broke}"
            print(
                f"{name:<12} {tried:>9,} {seconds:>9.1f} {seconds / max(tried, 1) * 1e3:>8.2f}ms  {result}", flush=True
            )
            failed = failed or broke is not None
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
