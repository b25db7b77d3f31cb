"""Words and pictures: the status as text and HTML, explain, the policy's sentences, the sidebar's words.

Every sentence here goes through gettext (jupyter_gpumem.i18n) with literal English, its values put in by name
after translation, so a translation may reorder them; a ``Said`` is shown as ``said.words()``, in the language in
use (its ``str`` stays English for the wire)."""

from __future__ import annotations

from jupyter_gpumem.words import Said


def words(value: object) -> str:
    """A value for a sentence: a Said in the language in use, anything else as its ``str``."""
    return value.words() if isinstance(value, Said) else str(value)
