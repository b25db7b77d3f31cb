"""The hub's browser tests share the UI tests' chromium (labserver.py): one per module."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ui"))
from labserver import browser

__all__ = ["browser"]
