"""Per-group jupyter-gpumem settings for JupyterHub: a ``pre_spawn_hook`` that sets ``JUPYTER_GPUMEM_*`` in the
spawned server's environment from the user's groups (docs/hub.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from jupyter_gpumem import values
from jupyter_gpumem.budget.config import environment_variable

CEILINGS = ("max_fraction", "max_limit")


def _ceiling_value(name: str, text: str) -> float:
    """The ceiling as a number to compare; ``values.Refused`` (a ValueError naming the setting) for one that is not
    a ceiling: a NaN would compare as neither lower nor higher, and turn the ceiling off in every kernel."""
    try:
        return values.fraction(text) if name == "max_fraction" else float(values.size(text))
    except values.Refused as refused:
        raise values.Refused(f"{name}={text!r}: {refused}", refused.kind) from None


def group_settings(groups: list[str], policies: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """The environment for a member of ``groups``: for a ceiling (``max_fraction``, ``max_limit``) the lowest
    that any of their groups sets; for any other setting (``limit``, ``fraction``, ``growth``, ...) the
    first group's in the order of ``policies``. Groups without a policy add nothing. Every name becomes
    ``JUPYTER_GPUMEM_<NAME>``: the kernels' settings (configuration.md) and the server extension's idle
    culler, ``idle_warn_minutes`` and ``idle_shutdown_minutes`` (hub.md), alike."""
    chosen: dict[str, str] = {}
    for group, settings in policies.items():
        if group not in groups:
            continue
        for name, value in settings.items():
            text = str(value)
            lower = (
                name in chosen and name in CEILINGS and _ceiling_value(name, text) < _ceiling_value(name, chosen[name])
            )
            if name not in chosen or lower:
                chosen[name] = text
    return {environment_variable(name): value for name, value in chosen.items()}


def group_environment(policies: Mapping[str, Mapping[str, str]]) -> Callable[[Any], None]:
    """A ``c.Spawner.pre_spawn_hook``: ``policies`` maps a JupyterHub group to jupyter-gpumem settings by their
    configuration name, e.g. ``{"students": {"limit": "4GiB", "max_fraction": "0.25", "idle_shutdown_minutes": "60"}}``.
    Values set here override the same variables in ``c.Spawner.environment``."""

    def hook(spawner: Any) -> None:
        groups = [group.name for group in spawner.user.groups]
        spawner.environment.update(group_settings(groups, policies))

    return hook
