"""`%gpumem free`'s words: what was released, and per GPU what came back, as nvidia-smi counts it and by the
framework's allocator, from a Reading before and one after (kernel/release.py does the releasing)."""

from __future__ import annotations

from dataclasses import dataclass

from jupyter_gpumem.budget.framework_interface import Allocator
from jupyter_gpumem.budget.reading import Reading
from jupyter_gpumem.gpu.reader import stalled
from jupyter_gpumem.i18n import gettext as _
from jupyter_gpumem.i18n import ngettext
from jupyter_gpumem.units import format_gib_or_mib, format_mib
from jupyter_gpumem.words import word


def _and(items: list[str]) -> str:
    return word("join_and", {}).join(items)


@dataclass(frozen=True)
class Freed:
    error: str | None  # the class of the last error whose traceback was released; None: none was held
    tensors: dict[str, int]  # framework name -> its arrays the released frames held (locals of functions)
    collected: int  # what the garbage collection found unreachable
    released: tuple[tuple[str, str, bool], ...]  # per started framework: name, its sentence, restart only
    before: Reading
    after: Reading


def lines(freed: Freed) -> list[str]:
    out = [_("jupyter-gpumem: released what this kernel can without touching anything you still reference.")]
    if freed.error is None:
        out.append("  " + _("No error's traceback was being kept."))
    else:
        held = [
            ngettext("{count} {framework} tensor", "{count} {framework} tensors", count).format(
                count=count, framework=name
            )
            for name, count in freed.tensors.items()
            if count
        ]
        if held:
            said = _(
                "The last error's traceback ({error}) is released, with the {tensors} its frames held: %debug and %tb "
                "no longer have it."
            )
        else:
            said = _("The last error's traceback ({error}) is released: %debug and %tb no longer have it.")
        out.append("  " + said.format(error=freed.error, tensors=_and(held)))
    out.append(
        "  "
        + ngettext(
            "Garbage collection: {count} unreachable object freed.",
            "Garbage collection: {count} unreachable objects freed.",
            freed.collected,
        ).format(count=freed.collected)
    )
    out.extend(f"  {sentence}" for _name, sentence, _restart in freed.released)
    silent = stalled(freed.after.snapshot)
    if silent:  # the figures after are not after: what came back is not known yet
        out.append(
            "  " + _("{stalled} What came back shows in %gpumem status once it answers.").format(stalled=silent.words())
        )
    else:
        out.extend(_gpu_lines(freed))
    return out


def _gpu_lines(freed: Freed) -> list[str]:
    before = {d.uuid: d for d in freed.before.snapshot.devices}
    keeps = [name for name, _sentence, restart_only in freed.released if restart_only]
    out = []
    for device in freed.after.snapshot.devices:
        uuid = device.uuid or ""
        was = before.get(device.uuid)
        own_before = freed.before.own(was).bytes if was else None
        own_after = freed.after.own(device).bytes
        allocator = freed.after.allocators.get(uuid)
        if not own_before and not own_after and allocator is None:
            continue  # this kernel has nothing on this GPU
        name = f"GPU {device.index} {device.name or ''}".rstrip()
        if own_before is None or own_after is None:
            out.append(
                _("{gpu}: what this kernel holds cannot be told here (N/A), so what came back is unknown.").format(
                    gpu=name
                )
            )
        elif own_after < own_before:
            out.append(
                _(
                    "{gpu}: this kernel held {before} and now holds {after} as nvidia-smi counts it: {back} came back."
                ).format(
                    gpu=name,
                    before=format_mib(own_before),
                    after=format_mib(own_after),
                    back=format_mib(own_before - own_after),
                )
            )
        else:
            out.append(
                _("{gpu}: this kernel holds {after} as nvidia-smi counts it; nothing came back.").format(
                    gpu=name, after=format_mib(own_after)
                )
            )
        split = _allocator_line(freed.before.allocators.get(uuid), allocator)
        if split:
            out.append(split)
        if keeps and own_after:
            out.append(
                "  "
                + ngettext(
                    "{frameworks} keeps its pool: restarting the kernel would give back the {held} it holds here.",
                    "{frameworks} keep their pool: restarting the kernel would give back the {held} it holds here.",
                    len(keeps),
                ).format(frameworks=_and(keeps), held=format_mib(own_after))
            )
    return out


def _allocator_line(before: Allocator | None, after: Allocator | None) -> str | None:
    if after is None:
        return None
    tensors = _change(before.in_use if before else None, after.in_use)
    if after.pool is None:
        return "  " + _("By the allocator: tensors {tensors}.").format(tensors=tensors)
    pool = _change(before.pool if before else None, after.pool)
    return "  " + _("By the allocator: tensors {tensors}; its pool {pool}.").format(tensors=tensors, pool=pool)


def _change(before: int | None, after: int) -> str:
    if before is None or before == after:
        return format_gib_or_mib(after)
    return f"{format_gib_or_mib(before)} -> {format_gib_or_mib(after)}"
