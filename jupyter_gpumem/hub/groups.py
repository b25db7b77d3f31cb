"""Per-group jupyter-gpumem settings for JupyterHub: a ``pre_spawn_hook`` that sets ``JUPYTER_GPUMEM_*`` in the
spawned server's environment from the user's groups, and for container spawners the NVIDIA container toolkit's
``NVIDIA_GPU_MEMORY_LIMIT`` / ``NVIDIA_GPU_MEMORY_REQUEST``, a ceiling the driver enforces (docs/hub.md)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from jupyter_gpumem import values
from jupyter_gpumem.budget.config import environment_variable
from jupyter_gpumem.units import MiB

CEILINGS = ("max_fraction", "max_limit")
# The container toolkit's CDI hook apply-cuda-memory-limits reads these (whole MiB, request <= limit) and sets
# soft = request, hard = limit on the container's cgroup with nvmlDeviceSetMemoryLimits_v1.
TOOLKIT_LIMIT = "NVIDIA_GPU_MEMORY_LIMIT"
TOOLKIT_REQUEST = "NVIDIA_GPU_MEMORY_REQUEST"
CONTAINER_SPAWNER_PACKAGES = ("dockerspawner", "kubespawner")

log = logging.getLogger("jupyter_gpumem.hub")


def _ceiling_value(name: str, text: str) -> float:
    """The ceiling as a number to compare; ``values.Refused`` (a ValueError naming the setting) for one that is not
    a ceiling: a NaN would compare as neither lower nor higher, and turn the ceiling off in every kernel."""
    try:
        return values.fraction(text) if name == "max_fraction" else float(values.size(text))
    except values.Refused as refused:
        raise values.Refused(f"{name}={text!r}: {refused}", refused.kind) from None


def check_ceilings(policies: Mapping[str, Mapping[str, str]]) -> None:
    """Raise ``values.Refused`` naming the group and the setting for a ceiling that is not one: when the hub reads
    its configuration, rather than at every spawn of that group's members."""
    for group, settings in policies.items():
        for name in CEILINGS:
            if name in settings:
                try:
                    _ceiling_value(name, str(settings[name]))
                except values.Refused as refused:
                    raise values.Refused(f"group {group!r}: {refused}", refused.kind) from None


def group_settings(groups: list[str], policies: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """The environment for a member of ``groups``: for a ceiling (``max_fraction``, ``max_limit``) the lowest
    that any of their groups sets; for any other setting (``limit``, ``fraction``, ``growth``, ...) the
    first group's in the order of ``policies``. Groups without a policy add nothing. Every name becomes
    ``JUPYTER_GPUMEM_<NAME>``: the kernels' settings (configuration.md) and the server extension's idle
    culler, ``idle_warn_minutes`` and ``idle_shutdown_minutes`` (hub.md), alike."""
    return {environment_variable(name): value for name, (value, _) in _chosen(groups, policies).items()}


def _chosen(groups: list[str], policies: Mapping[str, Mapping[str, str]]) -> dict[str, tuple[str, str]]:
    """Each setting's value for a member of ``groups`` and the group it comes from (group_settings' rule)."""
    chosen: dict[str, tuple[str, str]] = {}
    for group, settings in policies.items():
        if group not in groups:
            continue
        for name, value in settings.items():
            text = str(value)
            lower = (
                name in chosen
                and name in CEILINGS
                and _ceiling_value(name, text) < _ceiling_value(name, chosen[name][0])
            )
            if name not in chosen or lower:
                chosen[name] = (text, group)
    return chosen


@dataclass(frozen=True)
class UserCeiling:
    """The memory one user's server may hold on a GPU, as the driver is to enforce it: ``limit_bytes`` the hard
    limit (their groups' lowest ``max_limit``, and ``max_fraction`` of the GPU where its size is known),
    ``request_bytes`` the soft one (their first group's ``limit=``, the default budget, else the hard limit)."""

    limit_bytes: int
    request_bytes: int
    clamped_group: str | None = None  # the group whose limit= was above the ceiling, and was lowered to it


def user_ceiling(
    groups: list[str], policies: Mapping[str, Mapping[str, str]], gpu_memory: int | None = None
) -> UserCeiling | None:
    """A member of ``groups``' ceiling on a GPU of ``gpu_memory`` bytes (None: not known, and a ``max_fraction``
    then counts for nothing here); None where no group of theirs sets a ceiling that counts."""
    chosen = _chosen(groups, policies)
    bounds: list[int] = []
    if "max_limit" in chosen:
        bounds.append(values.size(chosen["max_limit"][0]))
    if "max_fraction" in chosen and gpu_memory is not None:
        bounds.append(math.floor(values.fraction(chosen["max_fraction"][0]) * gpu_memory))
    if not bounds:
        return None
    limit = min(bounds)
    request, clamped = limit, None
    if "limit" in chosen:
        text, group = chosen["limit"]
        try:
            request = values.size(text)
        except values.Refused:
            request = limit  # the kernels say so (configuration.md); the driver gets the ceiling alone
        if request > limit:
            request, clamped = limit, group
    return UserCeiling(limit, request, clamped)


def _whole_mib(count: int) -> int:
    """Bytes as the toolkit's whole MiB, rounded down; at least 1, as 0 would read as no limit."""
    return max(1, count // MiB)


def toolkit_environment(
    groups: list[str], policies: Mapping[str, Mapping[str, str]], gpu_memory: int | None = None
) -> dict[str, str]:
    """The container toolkit's variables for a member of ``groups``: ``NVIDIA_GPU_MEMORY_LIMIT`` the ceiling and
    ``NVIDIA_GPU_MEMORY_REQUEST`` the default budget (never above the limit), in whole MiB rounded down; none
    without a ceiling. ``gpu_memory``: the GPU's size in bytes, which a ``max_fraction`` needs."""
    ceiling = user_ceiling(groups, policies, gpu_memory)
    if ceiling is None:
        return {}
    limit = _whole_mib(ceiling.limit_bytes)
    return {TOOLKIT_LIMIT: str(limit), TOOLKIT_REQUEST: str(min(limit, _whole_mib(ceiling.request_bytes)))}


def is_container_spawner(spawner: Any) -> bool:
    """Whether the spawner starts containers through the NVIDIA container toolkit: DockerSpawner, KubeSpawner and
    any class of theirs (SwarmSpawner, SystemUserSpawner, a subclass of your own), by their classes' modules."""
    return any(
        getattr(cls, "__module__", "").partition(".")[0] in CONTAINER_SPAWNER_PACKAGES for cls in type(spawner).__mro__
    )


def gpu_size(value: str | int | None) -> int | None:
    """``gpu_memory=`` as bytes ("40GiB", or a number of bytes); ``values.Refused`` for what is not a size."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise values.Refused(f"gpu_memory={value!r} is not a size", "not_size")
    try:
        return values.byte_count(value) if isinstance(value, int) else values.size(value)
    except values.Refused as refused:
        raise values.Refused(f"gpu_memory={value!r}: {refused}", refused.kind) from None


def group_environment(
    policies: Mapping[str, Mapping[str, str]],
    *,
    toolkit_variables: bool | None = None,
    gpu_memory: str | int | None = None,
) -> Callable[[Any], None]:
    """A ``c.Spawner.pre_spawn_hook``: ``policies`` maps a JupyterHub group to jupyter-gpumem settings by their
    configuration name, e.g. ``{"students": {"limit": "4GiB", "max_fraction": "0.25", "idle_shutdown_minutes": "60"}}``.
    Values set here override the same variables in ``c.Spawner.environment``.

    For a container spawner (``is_container_spawner``; ``toolkit_variables=True`` or ``False`` decides instead) it
    also sets the container toolkit's ``NVIDIA_GPU_MEMORY_LIMIT`` / ``_REQUEST`` from the user's ceiling
    (``toolkit_environment``): the driver then enforces it. A ``max_fraction`` counts there only with the GPU's
    size, ``gpu_memory`` (e.g. ``"40GiB"``). A ceiling that is not one raises ``values.Refused`` here."""
    check_ceilings(policies)
    size = gpu_size(gpu_memory)
    warned: set[tuple[str, str]] = set()

    def warn_once(spawner: Any, key: tuple[str, str], message: str, *args: object) -> None:
        if key not in warned:
            warned.add(key)
            getattr(spawner, "log", log).warning(message, *args)

    def hook(spawner: Any) -> None:
        groups = [group.name for group in spawner.user.groups]
        settings = group_settings(groups, policies)
        spawner.environment.update(settings)
        wanted = is_container_spawner(spawner) if toolkit_variables is None else toolkit_variables
        if not wanted:
            return
        ceiling = user_ceiling(groups, policies, size)
        if ceiling is not None and ceiling.clamped_group is not None:
            warn_once(
                spawner,
                ("clamped", ceiling.clamped_group),
                "jupyter-gpumem: group %r's limit= is above its members' ceiling; %s is the ceiling, %s MiB.",
                ceiling.clamped_group,
                TOOLKIT_REQUEST,
                _whole_mib(ceiling.limit_bytes),
            )
        if size is None and environment_variable("max_fraction") in settings:
            warn_once(
                spawner,
                ("unsized", ""),
                "jupyter-gpumem: max_fraction is not passed to the container toolkit: give the GPU's size, "
                'group_environment(..., gpu_memory="40GiB").',
            )
        spawner.environment.update(toolkit_environment(groups, policies, size))

    return hook
