"""Writes the protocol fixtures that are what the kernel's encoder emits (tests/fixtures/protocol/), from the readings
of tests/protocol_fixtures.py: after a field is added to the sample (docs/contributing.md, "Add a field") they are
written, not edited by hand, and the difference read before it is committed. The tests that hold the encoder to them
(tests/kernel/test_protocol.py, tests/budget/test_attribution.py, tests/budget/test_privacy.py,
tests/wire/test_releases.py) say which is stale.

    PYTHONPATH=tests python tests/wire/write_samples.py
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import protocol_fixtures as made

from jupyter_gpumem._version import __version__
from jupyter_gpumem.kernel import protocol
from jupyter_gpumem.units import MiB

FOLDER = Path(__file__).parents[1] / "fixtures" / "protocol"


def hello() -> object:
    history = [
        protocol.figures_only(made.s1_sample(1763740798.0, 3900 * MiB)),
        protocol.figures_only(made.s1_sample(1763740799.0, 4000 * MiB)),
    ]
    return protocol.hello(1.0, 900.0, history)


# Each fixture and what makes it.
SAMPLES: dict[str, Callable[[], object]] = {
    "hello.json": hello,
    "sample.json": lambda: protocol.sample_message(made.s1_sample()),
    "sample_lost_gpu.json": lambda: protocol.sample_message(made.lost_sample()),
    "sample_no_driver.json": lambda: protocol.sample_message(made.no_driver_sample()),
    "sample_two_frameworks.json": lambda: protocol.sample_message(made.two_frameworks_sample()),
    "sample_stalled.json": lambda: protocol.sample_message(made.stalled_sample()),
    "sample_container.json": lambda: protocol.sample_message(made.container_sample()),
    "sample_hidden.json": lambda: protocol.sample_message(made.hidden_sample()),
    "sample_privacy.json": lambda: protocol.sample_message(made.privacy_sample()),
}


def write() -> list[str]:
    """Writes every fixture; the names of those that changed."""
    changed = []
    for name, make in SAMPLES.items():
        text = json.dumps(make(), indent=2, ensure_ascii=False) + "\n"
        path = FOLDER / name
        if path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(name)
    return changed


if __name__ == "__main__":
    print(f"jupyter-gpumem {__version__}: wrote {', '.join(write()) or 'nothing (none changed)'}")
