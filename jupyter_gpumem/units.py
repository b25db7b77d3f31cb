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


_UNITS = {"tib": 1 << 40, "gib": GiB, "mib": MiB, "kib": 1 << 10, "gb": 10**9, "mb": 10**6}


def parse_bytes(text: str) -> int | None:
    """ "6GiB", "512MiB", "4GB", "1.5 GiB" -> bytes; None when the text is not a size with a unit."""
    cleaned = text.strip().lower().replace(" ", "")
    for unit, scale in _UNITS.items():
        if cleaned.endswith(unit):
            number = cleaned[: -len(unit)]
            try:
                return round(float(number) * scale)
            except ValueError:
                return None
    return None
