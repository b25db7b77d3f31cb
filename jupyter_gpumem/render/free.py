"""`%gpumem free`'s words: what was released, and per GPU what came back, as nvidia-smi counts it and by the
framework's allocator, from a Reading before and one after (kernel/release.py does the releasing)."""

from __future__ import annotations

from dataclasses import dataclass

from jupyter_gpumem.budget.framework_interface import Allocator
from jupyter_gpumem.budget.reading import Reading
from jupyter_gpumem.gpu.reader import stalled
from jupyter_gpumem.units import format_gib_or_mib, format_mib


@dataclass(frozen=True)
class Freed:
    error: str | None  # the class of the last error whose traceback was released; None: none was held
    tensors: dict[str, int]  # framework name -> its arrays the released frames held (locals of functions)
    collected: int  # what the garbage collection found unreachable
    released: tuple[tuple[str, str, bool], ...]  # per started framework: name, its sentence, restart only
    before: Reading
    after: Reading


def lines(freed: Freed) -> list[str]:
    out = ["jupyter-gpumem: released what this kernel can without touching anything you still reference."]
    if freed.error is None:
        out.append("  No error's traceback was being kept.")
    else:
        held = [f"{count} {name} tensor{'s' if count > 1 else ''}" for name, count in freed.tensors.items() if count]
        out.append(
            f"  The last error's traceback ({freed.error}) is released"
            + (f", with the {' and '.join(held)} its frames held" if held else "")
            + ": %debug and %tb no longer have it."
        )
    out.append(f"  Garbage collection: {freed.collected} unreachable objects freed.")
    out.extend(f"  {sentence}" for _, sentence, _ in freed.released)
    silent = stalled(freed.after.snapshot)
    if silent:  # the figures after are not after: what came back is not known yet
        out.append(f"  {silent} What came back shows in %gpumem status once it answers.")
    else:
        out.extend(_gpu_lines(freed))
    return out


def _gpu_lines(freed: Freed) -> list[str]:
    before = {d.uuid: d for d in freed.before.snapshot.devices}
    keeps = [name for name, _, restart_only in freed.released if restart_only]
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
            out.append(f"{name}: what this kernel holds cannot be told here (N/A), so what came back is unknown.")
        elif own_after < own_before:
            out.append(
                f"{name}: this kernel held {format_mib(own_before)} and now holds {format_mib(own_after)} as "
                f"nvidia-smi counts it: {format_mib(own_before - own_after)} came back."
            )
        else:
            out.append(f"{name}: this kernel holds {format_mib(own_after)} as nvidia-smi counts it; nothing came back.")
        split = _allocator_line(freed.before.allocators.get(uuid), allocator)
        if split:
            out.append(split)
        if keeps and own_after:
            out.append(
                f"  {' and '.join(keeps)} keep{'s' if len(keeps) == 1 else ''} {'its' if len(keeps) == 1 else 'their'} "
                f"pool: restarting the kernel would give back the {format_mib(own_after)} it holds here."
            )
    return out


def _allocator_line(before: Allocator | None, after: Allocator | None) -> str | None:
    if after is None:
        return None
    tensors = f"tensors {_change(before.in_use if before else None, after.in_use)}"
    pool = f"; its pool {_change(before.pool if before else None, after.pool)}" if after.pool is not None else ""
    return f"  By the allocator: {tensors}{pool}."


def _change(before: int | None, after: int) -> str:
    if before is None or before == after:
        return format_gib_or_mib(after)
    return f"{format_gib_or_mib(before)} -> {format_gib_or_mib(after)}"
