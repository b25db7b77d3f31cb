"""Words and pictures: the status as text and HTML, explain, the policy's sentences, the sidebar's words.

Every sentence here goes through gettext (jupyter_gpumem.i18n) with literal English, its values put in by name
after translation, so a translation may reorder them; a ``Said`` is shown as ``said.words()``, in the language in
use (its ``str`` stays English for the wire)."""

from __future__ import annotations

from collections.abc import Sequence

from jupyter_gpumem.budget.framework_interface import Framework
from jupyter_gpumem.i18n import gettext as _
from jupyter_gpumem.i18n import pgettext
from jupyter_gpumem.words import Said


def words(value: object) -> str:
    """A value for a sentence: a Said in the language in use, anything else as its ``str``."""
    return value.words() if isinstance(value, Said) else str(value)


def framework_names(adapters: Sequence[Framework], together: bool = True) -> str:
    """The frameworks' names for a sentence in the language in use: "TensorFlow and PyTorch" (all of them),
    "TensorFlow or PyTorch" (whichever is imported); "TensorFlow と PyTorch" in Japanese. Only for people:
    the overhead cache keys its entries by budget's English ``label``, which no language changes."""
    names = [a.name for a in adapters]
    if len(names) < 2:
        return "".join(names)
    said = _("{names} and {last}") if together else _("{names} or {last}")
    return said.format(names=list_of(names[:-1]), last=names[-1])


def list_of(items: Sequence[str]) -> str:
    """Items of a list in a sentence, with the language's separator (", "; Japanese and Chinese "、")."""
    return pgettext("list separator", ", ").join(items)
