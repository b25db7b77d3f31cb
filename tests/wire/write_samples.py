"""Writes the protocol fixtures that are what the kernel's encoder emits (tests/fixtures/protocol/), each made as
tests/protocol_fixtures.py ``MESSAGES`` says: after a field is added to the sample (docs/contributing.md, "Add a
field") they are written, not edited by hand, and the difference read before it is committed.
tests/kernel/test_protocol.py holds the encoder to them and says which is stale.

    PYTHONPATH=tests python tests/wire/write_samples.py
"""

from __future__ import annotations

import json
from pathlib import Path

import protocol_fixtures as made

from jupyter_gpumem._version import __version__

FOLDER = Path(__file__).parents[1] / "fixtures" / "protocol"


def write() -> list[str]:
    """Writes every fixture; the names of those that changed."""
    changed = []
    for name, make in made.MESSAGES.items():
        text = json.dumps(make(), indent=2, ensure_ascii=False) + "\n"
        path = FOLDER / name
        if path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(name)
    return changed


if __name__ == "__main__":
    print(f"jupyter-gpumem {__version__}: wrote {', '.join(write()) or 'nothing (none changed)'}")
