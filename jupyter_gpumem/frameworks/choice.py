"""Which frameworks a policy is for (framework=auto)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from jupyter_gpumem.budget.policy import Policy
from jupyter_gpumem.frameworks.base import Adapter


def targets(policy: Policy, adapters: Mapping[str, Adapter], referenced: Callable[[str], bool]) -> list[Adapter]:
    """The frameworks ``policy`` is for. framework=<name>: that one. auto: the supported frameworks
    imported in this kernel, else those installed (each gets it when imported), else TensorFlow.
    ``adapters``: every supported framework, in the order auto looks for them; ``referenced(module)``:
    the notebook refers to the module (it may have been imported by another framework's import)."""
    if policy.framework != "auto":
        return [adapters[policy.framework]]
    every = list(adapters.values())
    imported = [a for a in every if a.imported()]
    if len(imported) > 1:
        # One framework may import another (TensorFlow imports JAX when it is installed): count
        # those the notebook refers to, or that have started.
        imported = [a for a in imported if a.initialised() or referenced(a.module)] or imported
    return imported or [a for a in every if a.importable()] or every[:1]


def referenced_in(namespace: Callable[[], Mapping[str, Any] | None]) -> Callable[[str], bool]:
    """``referenced(module)`` over a namespace (the notebook's user_ns): it holds the module, one of
    its submodules, or something defined in it. Without a namespace, everything counts."""

    def referenced(module: str) -> bool:
        values = namespace()
        if values is None:
            return True
        prefix = module + "."
        for value in list(values.values()):
            try:
                name = value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", None)
                if isinstance(name, str) and (name == module or name.startswith(prefix)):
                    return True
            except Exception:  # a user's object may raise anything from its attributes
                continue
        return False

    return referenced
