"""Knowing the moment `import tensorflow` (torch, jax) completes, to apply a policy before the
framework's first operation and to keep the kernel's State current.

Finding has no side effects (importlib.util.find_spec may ask at any time); only a real import,
which executes the module, fires the callback, once, on the importing thread.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Iterable, Sequence
from types import ModuleType


class ImportWatch(importlib.abc.MetaPathFinder):
    """Calls ``callback(module)`` right after each watched module's own code has run."""

    def __init__(self, callback: Callable[[str], None]):
        self.callback = callback
        self.modules: set[str] = set()

    def watch(self, modules: Iterable[str]) -> None:
        """Watch these (those not imported yet); installs the finder while anything is watched."""
        self.modules.update(m for m in modules if m not in sys.modules)
        if self.modules and self not in sys.meta_path:
            sys.meta_path.insert(0, self)

    def stop(self) -> None:
        self.modules.clear()
        if self in sys.meta_path:
            sys.meta_path.remove(self)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.modules:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec: importlib.machinery.ModuleSpec | None = (
                find(fullname, path, target) if finder is not self and find else None
            )
            if spec is not None and spec.loader is not None:
                spec.loader = _ThenLoader(spec.loader, lambda: self._loaded(fullname))
                return spec
        return None

    def _loaded(self, module: str) -> None:
        if module not in self.modules:
            return
        self.modules.discard(module)
        if not self.modules:
            self.stop()
        self.callback(module)


class _ThenLoader(importlib.abc.Loader):
    def __init__(self, loader: importlib.abc.Loader, then: Callable[[], None]):
        self._loader = loader
        self._then = then

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self._loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._then()


def importing(module: str) -> bool:
    """The module's own code is running now (its import has not completed)."""
    spec = getattr(sys.modules.get(module), "__spec__", None)
    return bool(getattr(spec, "_initializing", False))
