"""The variables a policy sets before a framework is imported, and how to take them back."""

from __future__ import annotations

import os
from collections.abc import MutableMapping


class EnvironmentChanges:
    """Sets variables in ``environ`` (os.environ by default), remembering each one's first value so
    that ``restore()`` (%gpumem reset) puts the environment back as it was."""

    def __init__(self, environ: MutableMapping[str, str] | None = None):
        self.environ = os.environ if environ is None else environ
        self._saved: dict[str, str | None] = {}

    def set(self, variables: dict[str, str]) -> None:
        for key, value in variables.items():
            self._saved.setdefault(key, self.environ.get(key))
            self.environ[key] = value

    def original(self, key: str) -> str | None:
        """The variable's value before any change made here."""
        return self._saved[key] if key in self._saved else self.environ.get(key)

    def put_back(self, key: str) -> None:
        """Give one variable back its value from before any change made here."""
        if key not in self._saved:
            return
        value = self._saved.pop(key)
        if value is None:
            self.environ.pop(key, None)
        else:
            self.environ[key] = value

    def restore(self) -> None:
        for key, value in self._saved.items():
            if value is None:
                self.environ.pop(key, None)
            else:
                self.environ[key] = value
        self._saved = {}
