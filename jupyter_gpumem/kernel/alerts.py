"""Warnings in the notebook when this kernel nears or passes its budget, or the GPU fills up: once per
episode, not once per sample. An episode ends when the figure falls back below a lower mark."""

from __future__ import annotations

from dataclasses import dataclass

from jupyter_gpumem.budget.reading import Reading
from jupyter_gpumem.gpu.model import Device
from jupyter_gpumem.i18n import gettext as _
from jupyter_gpumem.render.chart import OVER_ENDS_BELOW
from jupyter_gpumem.units import format_mib, format_percent


@dataclass(frozen=True)
class Mark:
    name: str
    on: float  # the share at which the warning fires
    off: float  # the share below which it may fire again


NEAR_BUDGET = Mark("near budget", on=0.90, off=0.85)
OVER_BUDGET = Mark("over budget", on=1.0, off=OVER_ENDS_BELOW)  # the chart's episodes end there too
GPU_FULL = Mark("GPU full", on=0.95, off=0.90)


class Alerts:
    def __init__(self) -> None:
        self._active: set[tuple[str, str]] = set()  # (mark, GPU uuid) whose episode is going on

    def check(self, reading: Reading) -> list[str]:
        """The warnings this reading starts."""
        lines = []
        for device in reading.snapshot.devices:
            split = reading.breakdowns.get(device.uuid or "")
            figure = reading.own(device)
            own, budget = figure.bytes, split.budget_bytes if split else None
            used, total = device.used_bytes, device.total_bytes
            where = f"GPU {device.index} {device.name or ''}".rstrip()
            # Not NVML's figure under this kernel's PID: say which it is (attribution.py).
            uses = {
                "matched": _("{held} (matched)").format(held=format_mib(own)),
                "estimated": _("about {held} (estimated)").format(held=format_mib(own)),
            }
            held = uses.get(figure.source, format_mib(own))
            if own is not None and budget:
                share = own / budget
                over = self._starts(OVER_BUDGET, device, share)
                near = self._starts(NEAR_BUDGET, device, share)  # also when over: no "near" on the way back
                if over:
                    lines.append(
                        _(
                            "jupyter-gpumem: this kernel uses {held} on {gpu}, {over} over its {budget} budget. Run "
                            "%gpumem explain to see why."
                        ).format(held=held, gpu=where, over=format_mib(own - budget), budget=format_mib(budget))
                    )
                elif near:
                    lines.append(
                        _("jupyter-gpumem: this kernel uses {held} on {gpu}, {share} of its {budget} budget.").format(
                            held=held, gpu=where, share=format_percent(own, budget), budget=format_mib(budget)
                        )
                    )
            if used is not None and total:
                others = None if own is None else used - own
                # Only when others share the GPU: this kernel's own growth has the budget warnings. When its
                # own share is unknown, nobody can be told apart: the GPU filling up is worth saying anyway.
                crowded = used / total if others is None or others >= 0.05 * total else 0.0
                if self._starts(GPU_FULL, device, crowded):
                    if others is None:
                        said = _(
                            "jupyter-gpumem: {gpu} is {share} full ({used} of {total}); this kernel's own share is "
                            "unknown ({reason}), so this kernel may run out of memory before its budget."
                        )
                    else:
                        said = _(
                            "jupyter-gpumem: {gpu} is {share} full ({used} of {total}); other processes hold "
                            "{others}, so this kernel may run out of memory before its budget."
                        )
                    lines.append(
                        said.format(
                            gpu=where,
                            share=format_percent(used, total),
                            used=format_mib(used),
                            total=format_mib(total),
                            reason=figure.reason.words(),
                            others=format_mib(others) if others is not None else "",
                        )
                    )
        return lines

    def _starts(self, mark: Mark, device: Device, share: float) -> bool:
        key = (mark.name, device.uuid or str(device.index))
        if share < mark.off:
            self._active.discard(key)
        if share >= mark.on and key not in self._active:
            self._active.add(key)
            return True
        return False
