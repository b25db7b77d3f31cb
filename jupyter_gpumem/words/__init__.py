"""Codes on the wire, words at the surface (docs/protocol.md, "Codes and words").

Every reason, problem and note is a code with its values (``{"code": "nvml_error", "values": {"error": "..."}}``);
the catalogue of a language (``en.json``: code -> template) words it. The same file is the sidebar's and the hub
page's catalogue, so a template is plain JSON: ``{name}`` is a value, ``{name:spec}`` a value in a given format.

A value is a string (data, shown as it is: an error's text, a framework's name), a number (formatted here, never
before: ``*_bytes`` in whole MiB, ``*_s`` as a duration, unless the spec says ``size`` or ``clock``), another
code with its values (worded in its place), or a list of these (``{name:or}`` joins them with the catalogue's
``join_or``, ``{name:and}`` with ``join_and``, ``{name:semicolon}`` with ``join_semicolon``, ``{name:list}`` with
``join_list``, a list's comma: "TensorFlow, PyTorch"). ``{name:clock}`` is a
time of day, without seconds when the values' ``now`` is a minute or more before it. None is a size or MiB figure
not known ("N/A"); anywhere else None, like any other value, has no words (TypeError), as the sidebar shows the
sentence instead. A whole float reads as an integer: JSON does not tell them apart.

Another language's template is the English one through gettext (``jupyter_gpumem.i18n``), the code as its context:
``catalogue("ja_JP")`` maps each code to its Japanese template, English where the ``.po`` leaves it untranslated,
and ``word`` uses the catalogue of the language in use. A ``Said`` as a ``str`` stays English (the wire's sentence
fields); ``Said.words()`` is its words in the language in use.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, tzinfo
from functools import cache
from pathlib import Path
from typing import Any, Union

from jupyter_gpumem import i18n
from jupyter_gpumem.units import format_duration, format_gib_or_mib, format_mib
from jupyter_gpumem.wire.generated import comm_v1

CATALOGUE: dict[str, str] = json.loads((Path(__file__).parent / "en.json").read_text(encoding="utf-8"))
PLACEHOLDER = re.compile(r"\{(\w+)(?::(\w+))?\}")
JOINS = ("or", "and", "semicolon", "list")

Value = Union[str, int, float, "Said", Sequence[Union[str, "Said"]]]


class Said(str):
    """A phrase or sentence that knows its code and values. As a ``str`` it is its English words, what every
    surface of this process shows and what the wire's sentence fields carry for readers of older releases;
    ``wire()`` is the code and values a reader of this release words itself."""

    code: comm_v1.Code
    values: Mapping[str, Value]

    def __new__(cls, code: comm_v1.Code, **values: Value) -> Said:
        said = super().__new__(cls, word(code, values, CATALOGUE))
        said.code, said.values = code, values
        return said

    def __reduce__(self) -> tuple[Any, ...]:  # copy and pickle: a Said is made from its code, never its words
        return _said, (self.code, dict(self.values))

    def words(self) -> str:
        """Its words in the language in use (``i18n.use_language``); its ``str`` in English."""
        return word(self.code, self.values)

    def wire(self) -> comm_v1.Said:
        """The code and values as the wire carries them (comm.v1.json ``$defs/said``)."""
        return {"code": self.code, "values": {k: _wire_value(v) for k, v in self.values.items()}}


def _said(code: comm_v1.Code, values: dict[str, Value]) -> Said:
    return Said(code, **values)


def _wire_value(value: Value) -> Any:
    if isinstance(value, Said):
        return value.wire()
    if isinstance(value, list | tuple):
        return [_wire_value(v) for v in value]
    return value


def wire(text: str | None) -> comm_v1.Said | None:
    """The code and values of a sentence field, for the field beside it; None for no sentence, or one that is
    not a Said (an older kernel's, read from its report)."""
    return text.wire() if isinstance(text, Said) else None


@cache
def _translated(language: str) -> Mapping[str, str]:
    translation = i18n.translation(language)
    return {code: translation.pgettext(code, template) for code, template in CATALOGUE.items()}


def catalogue(language: str | None = None) -> Mapping[str, str]:
    """Code -> template in ``language`` ("ja_JP", "zh_CN"; None: the language in use), English for any code its
    catalogue leaves untranslated. What the hub page and the inline view inline for a language."""
    language = i18n.language() if language is None else language
    return CATALOGUE if language == i18n.ENGLISH else _translated(language)


def word(
    code: str, values: Mapping[str, Any], catalogue: Mapping[str, str] | None = None, zone: tzinfo | None = None
) -> str:
    """The words of ``code`` with ``values``, as a catalogue has them (None: the language in use's), times of day
    in ``zone`` (None: this machine's). A value a template names and the values leave out is a programming error
    (KeyError); tests/words checks every producer sends them."""
    catalogue = _catalogue(catalogue)

    def one(match: re.Match[str]) -> str:
        name, spec = match.group(1), match.group(2)
        return _format(name, values[name], spec, values, catalogue, zone)

    return PLACEHOLDER.sub(one, catalogue[code])


def word_wire(said: Mapping[str, Any], catalogue: Mapping[str, str] | None = None, zone: tzinfo | None = None) -> str:
    """The words of a code and its values as they came off the wire (``wire()``'s shape)."""
    return word(said["code"], said.get("values") or {}, catalogue, zone)


def _catalogue(given: Mapping[str, str] | None) -> Mapping[str, str]:
    return catalogue() if given is None else given


def _format(
    name: str,
    value: Any,
    spec: str | None,
    values: Mapping[str, Any],
    catalogue: Mapping[str, str],
    zone: tzinfo | None = None,
) -> str:
    if isinstance(value, Mapping):
        return word_wire(value, catalogue, zone)
    if isinstance(value, Said):  # its str is English: worded again in this catalogue's language
        return word(value.code, value.values, catalogue, zone)
    if isinstance(value, str):  # data
        return value
    if isinstance(value, list | tuple):
        assert spec in JOINS, f"{name}: a list needs a join ({', '.join(JOINS)})"
        return catalogue[f"join_{spec}"].join(_format(name, v, None, values, catalogue, zone) for v in value)
    if spec == "size":
        return format_gib_or_mib(value)
    if not isinstance(value, int | float) or isinstance(value, bool):
        if value is None and (spec == "mib" or name.endswith("_bytes")):
            return format_mib(value)
        # The sidebar cannot word it either (format/words.ts): it would show the sentence instead.
        raise TypeError(f"{name}: {value!r} has no words (a number, a string, a code or a list of these)")
    if spec == "clock":
        return clock(value, values.get("now"), zone)
    if spec == "mib" or name.endswith("_bytes"):
        return format_mib(value)
    if name.endswith("_s"):
        return format_duration(value)
    # JSON does not tell 1000000.0 from 1000000: the sidebar reads both as the one number.
    return f"{value:g}" if isinstance(value, float) and not value.is_integer() else str(round(value))


def clock(t: float, now: float | None = None, zone: tzinfo | None = None) -> str:
    """A time of day in ``zone`` (None: this machine's): "14:05", with seconds when less than a minute from ``now``
    (always without one)."""
    shape = "%H:%M" if now is not None and t - now >= 60 else "%H:%M:%S"
    return time.strftime(shape, time.localtime(t)) if zone is None else datetime.fromtimestamp(t, zone).strftime(shape)
