"""Text laid out by the columns it takes on a terminal or in a notebook's monospace font, not by its characters:
a CJK character (ユーザー, 显存) takes two columns, a combining mark none. Every text table in render/ pads and
cuts through here, so a Japanese or Chinese table lines up as an English one does."""

from __future__ import annotations

from wcwidth import wcwidth


def columns(text: str) -> int:
    """The columns ``text`` takes: 2 for a wide (East Asian) character, 0 for a combining one, else 1. A control
    character (which the tables show escaped anyway) counts 1, as ``len`` did."""
    return sum(_char(c) for c in text)


def _char(c: str) -> int:
    width = wcwidth(c)
    return 1 if width < 0 else width


def left(text: str, width: int) -> str:
    """``text`` padded with spaces on the right to ``width`` columns (as ``str.ljust`` does by characters)."""
    return text + " " * max(0, width - columns(text))


def right(text: str, width: int) -> str:
    """``text`` padded with spaces on the left to ``width`` columns (as ``str.rjust`` does by characters)."""
    return " " * max(0, width - columns(text)) + text


def cut(text: str, width: int) -> str:
    """The longest start of ``text`` that fits in ``width`` columns (a wide character that would straddle the
    edge is left out, never halved)."""
    taken = 0
    for i, c in enumerate(text):
        taken += _char(c)
        if taken > width:
            return text[:i]
    return text
