"""Bytes inside, units at the edge: the one place figures become text."""

from __future__ import annotations

MiB = 1 << 20
GiB = 1 << 30


def format_mib(value: int | None) -> str:
    """ "5927 MiB": whole MiB as nvidia-smi prints them, so users can compare line by line; "N/A" when unknown."""
    if value is None:
        return "N/A"
    return f"{value / MiB:.0f} MiB"


def format_gib_or_mib(value: float | None) -> str:
    """ "4.1 GiB" from 1 GiB up, "504 MiB" below: a figure as the sidebar and the inline view show it (format.ts
    formatBytes; tests/fixtures/golden/ pins that both agree); "N/A" when unknown."""
    if value is None:
        return "N/A"
    if value >= GiB:
        return f"{value / GiB:.1f} GiB"
    return f"{round(value / MiB)} MiB"


def format_total(value: int | None) -> str:
    """A device size: MiB as nvidia-smi prints it, GiB as people say it."""
    if value is None:
        return "N/A"
    return f"{format_mib(value)} ({value / GiB:.1f} GiB)"


def format_percent(part: int | None, whole: int | None) -> str:
    if part is None or not whole:
        return "N/A"
    return f"{100 * part / whole:.0f}%"


def format_duration(seconds: float) -> str:
    """ "45 s", "30 min", "2 h 5 min": a time span as people say it (an idle time)."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    if minutes < 120:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min" if minutes % 60 else f"{minutes // 60} h"


_SPANS = {"s": 1, "sec": 1, "min": 60, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str | float) -> float | None:
    """ "90s", "15min", "2h", "1d" (or a number of seconds) -> seconds; None when it is none of these."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return float(text) if text > 0 else None
    cleaned = str(text).strip().lower().replace(" ", "")
    number = cleaned.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = cleaned[len(number) :] or "s"
    try:
        value = float(number) * _SPANS[unit]
    except (ValueError, KeyError):
        return None
    return value if value > 0 and value == value and value != float("inf") else None


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
