"""The comm protocol between a kernel and the sidebar or an inline view: its version, its comm target and
the settings' defaults and ranges (docs/protocol.md). The TypeScript side reads the same values."""

from __future__ import annotations

PROTOCOL = 1
TARGET = "jupyter_gpumem"  # the comm target the sidebar registers

DEFAULT_INTERVAL_S = 1.0  # the sidebar's defaults too (labextension/src/protocol.ts)
DEFAULT_HISTORY_S = 900.0

TABLE = ("processes", "others")  # what a sample says of processes; history keeps only the figures

INTERVAL_RANGE_S = (0.2, 10.0)
HISTORY_RANGE_S = (10.0, 24 * 3600.0)
