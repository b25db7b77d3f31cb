"""Bytes inside, units at the edge: the one place figures become text."""

from __future__ import annotations

MiB = 1 << 20
GiB = 1 << 30


def format_bytes(value: int | None) -> str:
    """MiB as nvidia-smi prints them, so users can compare line by line; "N/A" when unknown."""
    if value is None:
        return "N/A"
    return f"{value / MiB:.0f} MiB"


def format_total(value: int | None) -> str:
    """A device size: MiB as nvidia-smi prints it, GiB as people say it."""
    if value is None:
        return "N/A"
    return f"{format_bytes(value)} ({value / GiB:.1f} GiB)"


def format_percent(part: int | None, whole: int | None) -> str:
    if part is None or not whole:
        return "N/A"
    return f"{100 * part / whole:.0f}%"
