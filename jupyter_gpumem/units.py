"""Bytes inside, units at the edge: the one place figures become text. docs/numbers.md is the rule;
labextension/src/format/number.ts implements the same one, and tests/render/test_number_format.py feeds both
thousands of generated readings and compares their words.

Every figure rounds half up on its exact value: byte counts and percentages in integer arithmetic, never
through a binary double (Python's f-strings round a double half to even, JavaScript's toFixed and Math.round
half up, and 2.25 GiB or 157 of 200 MiB are exactly half way)."""

from __future__ import annotations

import math
import time
from decimal import ROUND_HALF_UP, Decimal
from typing import Literal

MiB = 1 << 20
GiB = 1 << 30

Level = Literal["ok", "warn", "error"]

WARN_TENTHS = 9  # the warning colour from 9/10 of the budget, compared on bytes (format/number.ts WARN_TENTHS)


def nearest(numerator: int, denominator: int) -> int:
    """numerator / denominator to the nearest whole number, a half up (toward +inf, as Math.round); exact,
    since it never leaves the integers. denominator > 0."""
    return (2 * numerator + denominator) // (2 * denominator)


def round_half_up(value: float) -> int:
    """A double to the nearest whole number, a half up, on its exact value (Math.round): whole seconds, and
    whole bytes of a figure that is an average."""
    floor = math.floor(value)
    return floor + (value - floor >= 0.5)  # value - floor is exact for a double


def whole_mib(value: float) -> int:
    """ "5927": the whole MiB nvidia-smi prints, a half up."""
    return nearest(round_half_up(value), MiB)


def tenths_text(tenths: int) -> str:
    """ "2.3" from 23: one decimal without a double in between."""
    sign = "-" if tenths < 0 else ""
    return f"{sign}{abs(tenths) // 10}.{abs(tenths) % 10}"


def format_mib(value: float | None) -> str:
    """ "5927 MiB": whole MiB as nvidia-smi prints them, so users can compare line by line; "N/A" when unknown."""
    if value is None:
        return "N/A"
    return f"{whole_mib(value)} MiB"


def format_gib_or_mib(value: float | None) -> str:
    """ "4.1 GiB" from 1 GiB up, "504 MiB" below: a figure as the sidebar and the inline view show it
    (format/number.ts formatBytes); "N/A" when unknown. The unit is chosen on the exact bytes: one byte under
    1 GiB reads "1024 MiB"; an average is first rounded to whole bytes."""
    if value is None:
        return "N/A"
    size = round_half_up(value)
    if size >= GiB:
        return f"{tenths_text(nearest(10 * size, GiB))} GiB"
    return f"{nearest(size, MiB)} MiB"


def against_budget(own: int, budget: int) -> tuple[str, str, str]:
    """Own and budget in the budget's unit, ("3.1", "4.0", "GiB") or ("177", "512", "MiB"): the headline's and
    the status bar's figures."""
    if budget >= GiB:
        return tenths_text(nearest(10 * own, GiB)), tenths_text(nearest(10 * budget, GiB)), "GiB"
    return str(nearest(own, MiB)), str(nearest(budget, MiB)), "MiB"


def format_total(value: int | None) -> str:
    """A device size: MiB as nvidia-smi prints it, GiB as people say it."""
    if value is None:
        return "N/A"
    return f"{format_mib(value)} ({tenths_text(nearest(10 * round_half_up(value), GiB))} GiB)"


def percent(part: int, whole: int) -> int:
    """part as a whole percent of whole (> 0), a half up: 157 of 200 MiB is 79."""
    return nearest(100 * part, whole)


def format_percent(part: int | None, whole: int | None) -> str:
    """ "79%"; "N/A" when either is unknown or the whole is 0."""
    if part is None or not whole:
        return "N/A"
    return f"{percent(part, whole)}%"


def budget_level(own: int, budget: int) -> Level:
    """The colour of a figure against its budget, decided on the bytes, never on the rounded words: the warning
    colour from 90% of the budget, the error colour above it (a budget of 0: above it at once)."""
    if own > budget or budget <= 0:
        return "error"
    return "warn" if 10 * own >= WARN_TENTHS * budget else "ok"


def format_tenth(value: float) -> str:
    """ "12.3": one decimal, a half up on the double's exact value (Number.prototype.toFixed(1)); a CPU share."""
    return str(Decimal(value).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def format_duration(seconds: float) -> str:
    """ "45 s", "30 min", "2 h 5 min": a time span as people say it (an idle time), whole seconds or minutes a
    half up; the unit is chosen on the rounded figure, so 59.5 s reads "1 min", never "60 s"."""
    whole = round_half_up(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes = round_half_up(seconds / 60)
    if minutes < 120:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min" if minutes % 60 else f"{minutes // 60} h"


def format_clock(t: float) -> str:
    """ "14:03:27": the local wall-clock second a time (seconds since the epoch) falls in, its fraction dropped."""
    return time.strftime("%H:%M:%S", time.localtime(t))


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
    """ "6GiB", "512MiB", "4GB", "1.5 GiB" -> bytes; None when the text is not a size with a unit, or not a finite
    one. values.size also bounds it (what a setting or an argument accepts)."""
    cleaned = text.strip().lower().replace(" ", "")
    for unit, scale in _UNITS.items():
        if cleaned.endswith(unit):
            number = cleaned[: -len(unit)]
            try:
                value = float(number) * scale
            except ValueError:
                return None
            return round(value) if math.isfinite(value) else None  # "1e309GiB", "infGiB", "nanGiB": no size
    return None
