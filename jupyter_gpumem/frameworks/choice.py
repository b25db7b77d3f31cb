"""Which frameworks a policy is for (framework=auto)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from jupyter_gpumem.budget.policy import Policy, PolicyError
from jupyter_gpumem.frameworks.base import Adapter
from jupyter_gpumem.i18n import gettext as _
from jupyter_gpumem.i18n import pgettext


def targets(policy: Policy, adapters: Mapping[str, Adapter], referenced: Callable[[str], bool]) -> list[Adapter]:
    """The frameworks ``policy`` is for. framework=<name>: that one. auto: the supported frameworks
    imported in this kernel, else those installed (each gets it when imported), else TensorFlow.
    ``adapters``: every supported framework, in the order auto looks for them; ``referenced(module)``:
    the notebook refers to the module (it may have been imported by another framework's import)."""
    if policy.framework != "auto":
        return [adapters[named(policy.framework, adapters)]]
    every = list(adapters.values())
    imported = [a for a in every if a.imported()]
    if len(imported) > 1:
        # One framework may import another (TensorFlow imports JAX when it is installed): count
        # those the notebook refers to, or that have started.
        imported = [a for a in imported if a.initialised() or referenced(a.module)] or imported
    return imported or [a for a in every if a.importable()] or every[:1]


def named(name: str, adapters: Mapping[str, Adapter]) -> str:
    """The registry's key for ``framework=name``: the key itself, the framework's module ("torch") or one of its
    aliases ("tf"). Raises PolicyError, naming every framework the registry has, for any other name."""
    for key, adapter in adapters.items():
        if name in (key, adapter.module, *adapter.aliases):
            return key
    raise PolicyError(
        _("framework={value} is not a framework jupyter-gpumem supports; use {accepted}.").format(
            value=name, accepted=accepted(adapters)
        )
    )


def accepted(adapters: Mapping[str, Adapter]) -> str:
    """framework='s accepted values, from the registry: "framework=auto, <each key> or <the last key>"."""
    names = ["auto", *adapters]
    return _("framework={names} or {last}").format(
        names=pgettext("list separator", ", ").join(names[:-1]), last=names[-1]
    )


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
