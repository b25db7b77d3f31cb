"""Every value that crosses a process boundary, checked in one place before anything uses it.

Another process's JSON (a kernel's report, a server's body, Prometheus's answer, the server's notice), a
setting (a user's profile, the environment, the Settings editor) and a magic's arguments are all somebody
else's word, and on a shared hub that somebody may be hostile (docs/hub.md, "Trust model"). What each reader
gets from here is either a value it can compute with, or ``Refused``: one sentence that says what was wrong,
after which the reader changes nothing. No value that passes can overflow, be NaN, stay "fresh" for ever or
exhaust the stack:

- JSON: ``loads`` parses it (NaN and Infinity are not JSON; an integer of more than ``MAX_DIGITS`` digits
  is refused unparsed), then ``problem`` walks it: nested at most ``MAX_DEPTH`` deep, every number finite and
  within ``LARGEST`` (an integer beyond it is not exact in JavaScript, whose sidebar reads the same numbers),
  every string UTF-8 (no lone surrogate, which no encoder can write back). The schemas check the shapes after
  it (wire/schemas).
- One number a person typed: ``whole`` (ASCII digits only: ``"²".isdigit()`` is true in Python), ``number``,
  ``fraction`` and ``size``, each within the range the setting allows.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, cast

from jupyter_gpumem.units import parse_bytes

MAX_DEPTH = 32  # the schemas' deepest value is 6 levels down; Python's own limit is ~1000
LARGEST = 2**53 - 1  # JavaScript's Number.MAX_SAFE_INTEGER: both sides hold every integer up to it exactly
MAX_DIGITS = 16  # LARGEST has 16 digits: a longer integer is refused before Python parses it
MAX_BYTES = 2**44  # 16 TiB: beyond any GPU's memory (the largest have ~0.2 TiB); a size above it is a mistake
DIGITS = re.compile(r"[0-9]{1,16}")  # ASCII only: str.isdigit() admits "²" and other scripts' digits


class Refused(ValueError):
    """A value refused; ``str()`` is the phrase that says why, in English (a log's words); ``kind`` says which
    rule it broke, for a reader that words its own sentence in the user's language: ``not_json``, ``unsafe``,
    ``not_number``, ``outside``, ``not_size``, ``not_positive``, ``too_large``, ``not_whole``."""

    def __init__(self, phrase: str, kind: str = "unsafe"):
        super().__init__(phrase)
        self.kind = kind


def _constant(name: str) -> Any:
    raise Refused(f"{name} is not a number JSON allows")


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise Refused(f"an integer of {len(text.lstrip('-'))} digits is beyond {LARGEST}")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise Refused(f"{shown(text)} is beyond the largest number")
    return value


def loads(raw: bytes | str) -> Any:
    """Another process's JSON as Python values that pass ``problem``. Raises ``Refused`` with a phrase that says
    what is wrong ("not JSON: Expecting value: line 1 column 1 (char 0)")."""
    try:
        data = json.loads(raw, parse_constant=_constant, parse_int=_integer, parse_float=_float)
    except Refused:
        raise
    except RecursionError:
        raise Refused(f"not JSON this reader takes: nested deeper than {MAX_DEPTH} levels") from None
    except (ValueError, TypeError) as error:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise Refused(f"not JSON: {error}", "not_json") from None
    found = problem(data)
    if found is not None:
        raise Refused(found)
    return data


def problem(data: object, root: str = "") -> str | None:
    """What makes ``data`` (values as json.loads makes them) unsafe to use, as a phrase naming where
    ("report.sample.t is not a finite number"); None: every value is usable. Walks without recursion: first
    without the paths (every report, every second, a few hundred values), then, only where something is wrong,
    again to say where."""
    return None if _usable(data) else _where(data, root)


def _usable(data: object) -> bool:
    """``problem(data) is None``, only faster: no paths, exact types (a subclass takes the slow walk)."""
    stack: list[tuple[object, int]] = [(data, 0)]
    while stack:
        found, depth = stack.pop()
        kind, value = type(found), cast(Any, found)
        if kind is str:
            if not (value.isascii() or _encodable(value)):
                return False
        elif kind is int or kind is float:
            if not -LARGEST <= value <= LARGEST:  # NaN and infinities fail it too
                return False
        elif kind is dict or kind is list:
            if depth >= MAX_DEPTH:
                return False
            if kind is dict:
                for key, item in value.items():
                    if type(key) is not str or not (key.isascii() or _encodable(key)):
                        return False
                    stack.append((item, depth + 1))
            else:
                stack.extend((item, depth + 1) for item in value)
        elif not (value is None or kind is bool):
            return False
    return True


def _where(data: object, root: str) -> str | None:
    stack: list[tuple[object, str, int]] = [(data, root, 0)]
    while stack:
        value, path, depth = stack.pop()
        where = shown(path, 60)
        if depth > MAX_DEPTH:
            return f"{where or 'the value'} is nested deeper than {MAX_DEPTH} levels"
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int):
            if not -LARGEST <= value <= LARGEST:
                return f"{where or 'the value'} is an integer beyond {LARGEST}"
        elif isinstance(value, float):
            if not (math.isfinite(value) and -LARGEST <= value <= LARGEST):
                return f"{where or 'the value'} is not a finite number within {LARGEST}"
        elif isinstance(value, str):
            if not _encodable(value):
                return f"{where or 'the value'} is not UTF-8 text"
        elif isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str) or not _encodable(key):
                    return f"{where or 'the value'} has a key that is not UTF-8 text"
                stack.append((item, f"{path}.{key}" if path else key, depth + 1))
        elif isinstance(value, list | tuple):
            stack.extend((item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value))
        else:
            return f"{where or 'the value'} is a {type(value).__name__}, which JSON does not have"
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown(value: object, most: int = 24) -> str:
    """A value as a sentence quotes it: bounded, so that a 5,000-digit number is not echoed whole, and printable."""
    if isinstance(value, int) and not -(10**most) < value < 10**most:
        return f"a number of {math.floor(value.bit_length() * math.log10(2)) + 1} digits"  # str() refuses >4300
    text = "".join(c if c.isprintable() else "?" for c in str(value))  # no line breaks or escapes into a log
    return text if len(text) <= most else f"{text[: most - 1]}…"


def whole(value: object, low: int, high: int) -> int:
    """A whole number from ``low`` to ``high``: an int (not a bool), or text of ASCII digits. Raises ``Refused``
    with a phrase."""
    if isinstance(value, bool):
        raise Refused(f"{value} is not a whole number", "not_whole")
    if isinstance(value, str):
        text = value.strip()
        if not DIGITS.fullmatch(text):
            raise Refused(f"{shown(text)} is not a whole number", "not_whole")
        value = int(text)
    if not isinstance(value, int):
        raise Refused(f"{shown(value)} is not a whole number", "not_whole")
    if not low <= value <= high:
        raise Refused(f"{shown(value)} is not from {low} to {high}", "outside")
    return value


def number(value: object, low: float, high: float) -> float:
    """A finite number from ``low`` to ``high``: an int or float (not a bool), or its text. Raises ``Refused``
    with a phrase."""
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise Refused(f"{shown(value)} is not a number", "not_number") from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Refused(f"{shown(value)} is not a number", "not_number")
    if not low <= value <= high:  # NaN fails this too
        raise Refused(f"{shown(value)} is not from {low:g} to {high:g}", "outside")
    return float(value)


def fraction(text: str) -> float:
    """A share of a GPU, above 0 and at most 1: "0.4" or "40%". Raises ``Refused`` with a phrase."""
    cleaned = text.strip()
    try:
        value = float(cleaned.rstrip("%")) / (100 if cleaned.endswith("%") else 1)
    except ValueError:
        raise Refused(f"{shown(cleaned)} is not a number", "not_number") from None
    if not (0 < value <= 1):  # NaN fails this too
        raise Refused(f"{shown(cleaned)} is outside (0, 1]", "outside")
    return value


def size(text: str) -> int:
    """A size with a unit ("6GiB"), above 0 and at most ``MAX_BYTES``. Raises ``Refused`` with a phrase."""
    found = parse_bytes(text)
    if found is None:
        raise Refused(f"{shown(text)} is not a size", "not_size")
    return byte_count(found)


def byte_count(value: int) -> int:
    """A number of bytes, above 0 and at most ``MAX_BYTES``. Raises ``Refused`` with a phrase."""
    if value <= 0:
        raise Refused(f"{shown(value)} must be above zero", "not_positive")
    if value > MAX_BYTES:
        raise Refused(
            f"{shown(value)} bytes is beyond any GPU's memory (at most {MAX_BYTES // 2**40} TiB)", "too_large"
        )
    return value
