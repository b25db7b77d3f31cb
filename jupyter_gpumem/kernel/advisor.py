"""After a cell dies of GPU out-of-memory: a diagnosis beneath the traceback (story S5) in the user's
own numbers, and the batch size that fits, which `jupyter_gpumem.batched` then uses.

The advisor listens to IPython's ``post_run_cell`` event, which comes after the traceback is shown:
it never hides, replaces or changes the exception, stays quiet for any other error, and never raises.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace

from jupyter_gpumem.budget.batchfit import Fit, largest_under
from jupyter_gpumem.budget.reading import Reading
from jupyter_gpumem.frameworks import ADAPTERS
from jupyter_gpumem.gpu.model import Device
from jupyter_gpumem.gpu.reader import stalled
from jupyter_gpumem.i18n import gettext as _
from jupyter_gpumem.i18n import ngettext
from jupyter_gpumem.kernel.control import Controller
from jupyter_gpumem.kernel.oom import OutOfMemory, recognise
from jupyter_gpumem.kernel.recorder import Recorder
from jupyter_gpumem.kernel.release import held_tensors
from jupyter_gpumem.render.cells import culprit
from jupyter_gpumem.units import MiB, format_mib, format_percent
from jupyter_gpumem.words import word

log = logging.getLogger("jupyter_gpumem")


@dataclass(frozen=True)
class Advice:
    report: OutOfMemory
    lines: tuple[str, ...]
    batch_size: int | None  # the largest friendly first dimension that fits the free memory
    first_dim: int | None  # the failing tensor's first dimension (the batch it was computed for)


def friendly(n: int) -> int:
    """Round down to two significant digits: 1849 -> 1800, 123 -> 120, 57 -> 57."""
    if n < 100:
        return n
    step = int(10 ** (len(str(n)) - 2))
    return n // step * step


def _device(reading: Reading, report: OutOfMemory, uuids: list[str]) -> Device | None:
    devices = reading.snapshot.devices
    index = report.gpu_index
    if index is not None and index < len(uuids):
        return next((d for d in devices if d.uuid == uuids[index]), None)
    holding = [d for d in devices if d.holds_self]
    return holding[0] if len(holding) == 1 else None


def unmeasured() -> dict[str, str]:
    """The devices NVML cannot see (it sees NVIDIA GPUs only), as the advice names them."""
    return {
        "ROCm": _("an AMD GPU via ROCm"),
        "MPS": _("an Apple GPU via MPS"),
        "XPU": _("an Intel GPU via XPU"),
        "DirectML": _("a GPU via DirectML"),
        "TPU": _("a TPU"),
    }


def _and(items: list[str]) -> str:
    return word("join_and", {}).join(items)


def diagnose(report: OutOfMemory, reading: Reading, uuids: list[str], growth: bool | None) -> Advice:
    """``uuids``: the framework's GPUs by NVML uuid, in its order; ``growth``: the policy's growth."""
    framework = report.framework
    lines = [
        _("jupyter-gpumem: {framework} ran out of {what} ({error}).").format(
            framework=framework, what=_what(report), error=report.error
        )
    ]
    if report.shape is not None:
        size = _size(report.bytes, report.rounded) if report.bytes is not None else _("an unknown size")
        shape = ", ".join(map(str, report.shape))
        if report.device:
            said = _("The tensor that did not fit: shape [{shape}], {dtype}, {size}, on {device}.")
        else:
            said = _("The tensor that did not fit: shape [{shape}], {dtype}, {size}.")
        lines.append("  " + said.format(shape=shape, dtype=report.dtype_name, size=size, device=report.device))
    elif report.bytes is not None:
        lines.append(
            "  " + _("The allocation that did not fit: {size}.").format(size=_size(report.bytes, report.rounded))
        )
    elif report.error == "CUDARuntimeError":  # CuPy's raw CUDA error: no size, and not only the GPU's memory
        lines.append(
            "  "
            + _(
                "CUDA refused an allocation outside {framework}'s memory pool, of a size the message does not say: "
                "GPU memory, or pinned host memory."
            ).format(framework=framework)
        )
    else:
        lines.append("  " + _("The message does not say which tensor did not fit."))
    if report.pool_held is not None:
        lines.append("  " + _pool(report, framework))
    if report.node or report.op:
        if report.node and report.op:
            where = _("In node {node} / op {op}.")
        elif report.node:
            where = _("In node {node}.")
        else:
            where = _("In op {op}.")
        lines.append("  " + where.format(node=report.node, op=report.op))

    device = _device(reading, report, uuids) if report.measurable else None
    split = reading.breakdowns.get(device.uuid or "") if device else None
    free = None
    if (sentence := stalled(reading.snapshot)) is not None:  # the figures below, if any, are the driver's last
        lines.append(f"  {sentence.words()}")
    if device is None or device.total_bytes is None:
        lines.append("  " + _("GPU memory figures: {why}.").format(why=_unmeasured(report)))
        if report.free is not None:  # what the framework said when it failed, NVML's figures being out of reach
            free = report.free
            lines.append("  " + _said_free(framework, free, report))
    else:
        own = reading.own(device).bytes  # None where it cannot be attributed (containers): not 0
        budget = split.budget_bytes if split else None
        allocator = reading.allocators.get(device.uuid or "")
        if allocator is None:
            figures = _(
                "GPU {index} {name}: this kernel holds {own} as nvidia-smi counts it; the device has {used} used "
                "of {total}."
            )
        else:
            figures = _(
                "GPU {index} {name}: this kernel holds {own} as nvidia-smi counts it; the device has {used} used "
                "of {total}; {framework} tensors use {in_use} (peak {peak})."
            )
        lines.append(
            "  "
            + figures.format(
                index=device.index,
                name=device.name or "",
                own=format_mib(own),
                used=format_mib(device.used_bytes),
                total=format_mib(device.total_bytes),
                framework=framework,
                in_use=format_mib(allocator.in_use) if allocator is not None else "",
                peak=format_mib(allocator.peak) if allocator is not None else "",
            )
        )
        free = device.free_bytes
        if budget is not None and own is not None:
            free = max(0, min(free if free is not None else budget, budget - own))
            lines.append(
                "  "
                + _("Budget: {budget} ({share} of the GPU); {free} of it is free.").format(
                    budget=format_mib(budget), share=format_percent(budget, device.total_bytes), free=format_mib(free)
                )
            )
        else:
            lines.append("  " + _("No budget set: {free} of the GPU is free.").format(free=format_mib(free)))
        if allocator is not None and allocator.pool is not None:
            free = max(0, allocator.pool - allocator.in_use)  # what the allocator itself can still hand out

    batch, first = _batch_lines(report, free, lines)
    lines.extend(_causes(report, device, split.budget_bytes if split else None, growth, framework))
    return Advice(report, tuple(lines), batch, first)


def _what(report: OutOfMemory) -> str:
    """What ran out, as the first line says it."""
    if (report.device or "").upper().startswith("CPU"):
        return _("host memory on the CPU")
    name = unmeasured().get(report.accelerator or "")
    return _("memory on {device}").format(device=name) if name else _("GPU memory")


def _unmeasured(report: OutOfMemory) -> str:
    """Why there are no NVML figures for this error."""
    if (report.device or "").upper().startswith("CPU"):
        return _("none: this was the host's memory, which jupyter-gpumem does not measure")
    name = unmeasured().get(report.accelerator or "")
    if name:
        return _("none here: NVML sees only NVIDIA GPUs, not {device}").format(device=name)
    return _("not available (no driver, or the GPU could not be told)")


def _pool(report: OutOfMemory, framework: str) -> str:
    """What the framework's memory pool held when it failed, and under which limit (CuPy states both)."""
    if report.pool_limit is None:
        said = _("{framework}'s memory pool held {held} from the GPU.")
    elif report.pool_limit_reached:
        said = _(
            "{framework}'s memory pool held {held} of its limit of {limit}: this allocation would have gone past it."
        )
    else:
        said = _("{framework}'s memory pool held {held}, within its limit of {limit}: the GPU itself ran out first.")
    limit = _size(report.pool_limit, False) if report.pool_limit is not None else ""
    return said.format(framework=framework, held=_size(report.pool_held or 0, False), limit=limit)


def _said_free(framework: str, free: int, report: OutOfMemory) -> str:
    """What the framework said was free when it failed; MPS's figure is under its own limit."""
    if report.accelerator == "MPS":
        if free:
            said = _("{framework} said {free} was free under its limit (max allowed less what was allocated).")
        else:
            said = _("{framework} said nothing was free under its limit (max allowed less what was allocated).")
    elif free:
        said = _("{framework} said {free} was free.")
    else:
        said = _("{framework} said nothing was free.")
    return said.format(framework=framework, free=_size(free, free > 0) if free else "")


def _size(size: int, rounded: bool) -> str:
    """A size from the message; "about" where the framework printed it rounded (PyTorch's "20.00 MiB")."""
    exact = format_mib(size) if size >= MiB else _small(size)
    return _("about {size}").format(size=exact) if rounded else exact


def _batch_lines(report: OutOfMemory, free: int | None, lines: list[str]) -> tuple[int | None, int | None]:
    shape = report.shape
    if not shape or report.bytes is None or free is None or shape[0] < 2:
        lines.append(
            "  "
            + _(
                "Fix: run the work in smaller batches, e.g. jupyter_gpumem.batched(model.evaluate, x, y, "
                "batch_size=64), and halve it until it fits."
            )
        )
        return None, None
    first = shape[0]
    per_sample = report.bytes / first
    # The model largest_batch measures, with the one figure the error gives: this tensor, all of it per sample.
    fits = largest_under(Fit(fixed=0.0, per_sample=per_sample, linear=True, worst_residual=0.0), free, 0)
    if fits < 1:
        lines.append(
            "  "
            + _(
                "Not even one sample ({per_sample} in this tensor) fits in the {free} free: the model needs less "
                "memory (smaller layers, float16), or more memory."
            ).format(per_sample=_small(per_sample), free=format_mib(free))
        )
        return None, first
    if fits >= first:
        batch = friendly(max(1, first // 2))
        lines.append(
            "  "
            + _(
                "The tensor alone would fit in the {free} free, but the rest of the step needs room too: try "
                "batches of ~{batch} of {first}: jupyter_gpumem.batched(fn, x, ...) runs them for you."
            ).format(free=format_mib(free), batch=batch, first=first)
        )
        return batch, first
    batch = friendly(fits)
    lines.append(
        "  "
        + _(
            "Fix: a batch of at most ~{batch} of {first} fits in the {free} free ({per_sample} per sample in this "
            "tensor). jupyter_gpumem.batched(model.evaluate, x, y) runs it in batches of that size and returns "
            "what the whole call would (or pass batch_size={batch})."
        ).format(batch=batch, first=first, free=format_mib(free), per_sample=_small(per_sample))
    )
    return batch, first


def _small(size: float) -> str:
    """A per-sample size, which is often under a MiB."""
    if size < 1024:
        return _("{count} bytes").format(count=math.ceil(size))  # "1 bytes" as before: English unchanged
    return f"{math.ceil(size / 1024)} KiB" if size < MiB else format_mib(math.ceil(size))


def _causes(
    report: OutOfMemory, device: Device | None, budget: int | None, growth: bool | None, framework: str
) -> list[str]:
    causes = []
    if report.pool_limit_reached:  # the pool's own limit, which %gpumem sets and CuPy takes at any time
        causes.append(
            _(
                "{framework}'s memory pool reached its limit ({limit}): ask for a larger budget with %gpumem "
                "({framework} takes a new pool limit at once), or del arrays you no longer need and give the pool's "
                "free blocks back with %gpumem free"
            ).format(framework=framework, limit=_size(report.pool_limit or 0, False))
        )
    if device is not None and device.total_bytes:
        others = sum(p.used_bytes or 0 for p in device.processes if not p.is_self)
        if others >= 0.1 * device.total_bytes:
            share = format_percent(others, device.total_bytes)
            causes.append(
                _("other processes hold {held} of this GPU ({share}; %gpumem status lists them)").format(
                    held=format_mib(others), share=share
                )
            )
    if budget is not None and report.bytes is not None and report.bytes > budget and not report.pool_limit_reached:
        causes.append(
            _(
                "the budget is too small for this tensor alone ({budget}): restart the kernel and ask for more "
                "with %gpumem, or use smaller batches"
            ).format(budget=format_mib(budget))
        )
    # The frameworks that take their pool when they start (unless growth=on) say how to free it.
    free = next((a.free_earlier for a in ADAPTERS.values() if a.name == framework), None)
    free = _(free) if free else None  # the adapter's phrase is marked with N_, translated here
    if growth is not True and free and report.measurable:  # the policy's growth applies to NVIDIA GPUs
        causes.append(
            _(
                "growth is off, so {framework} reserved its pool when it started and tensors from earlier cells "
                "(models, results) still hold parts of it: {free}, or restart the kernel"
            ).format(framework=framework, free=free)
        )
    unused = report.unused_pool
    if unused and unused >= (report.bytes or 0) // 2:
        intel = report.accelerator == "XPU"  # its allocator has no expandable segments
        if intel:
            said = _(
                "PyTorch holds {unused} reserved but unallocated, in pieces too small for this request "
                "(fragmentation): torch.xpu.empty_cache() gives them back"
            )
        else:
            said = _(
                "PyTorch holds {unused} reserved but unallocated, in pieces too small for this request "
                "(fragmentation): torch.cuda.empty_cache() gives them back; %gpumem growth=on before CUDA starts "
                "(expandable segments) avoids it"
            )
        causes.append(said.format(unused=format_mib(unused)))
    return ["  " + _("Also likely: {cause}.").format(cause=cause) for cause in causes]


class Advisor:
    """This kernel's advisor: diagnoses with the kernel's Controller, names the cell from its Recorder."""

    def __init__(self, control: Controller, cells: Recorder):
        self._control = control
        self._cells = cells
        self.last: Advice | None = None  # the latest advice, for batched(batch_size=None)
        self.errors = 0  # GPU out-of-memory errors recognised in this kernel's cells (the server's metrics count them)

    def advise(self, report: OutOfMemory, error: BaseException | None = None) -> Advice:
        """The diagnosis of ``report`` with this kernel's figures now; with the ``error`` itself, also the cell
        that raised this kernel's memory and what its traceback keeps alive."""
        reading = self._control.read(self._control.snapshot())
        uuids = self._control.framework_uuids(reading)
        advice = diagnose(report, reading, uuids, reading.state.policy.growth)
        if error is None:
            return advice
        return replace(advice, lines=(*advice.lines, *self._cells_and_traceback(report, reading, uuids, error)))

    def _cells_and_traceback(
        self, report: OutOfMemory, reading: Reading, uuids: list[str], error: BaseException
    ) -> list[str]:
        device = _device(reading, report, uuids) if report.measurable else None
        named = culprit(self._cells.finished(), device.uuid) if device is not None and device.uuid else None
        held = held_tensors(error.__traceback__, self._control.adapters.values())
        kept = [
            ngettext("{count} {framework} tensor", "{count} {framework} tensors", count).format(
                count=count, framework=name
            )
            for name, count in held.items()
        ]
        keeps = ngettext(
            "Its traceback keeps {tensors} of the failed call alive: %gpumem free releases it (and nothing you "
            "still reference).",
            "Its traceback keeps {tensors} of the failed call alive: %gpumem free releases them (and nothing you "
            "still reference).",
            sum(held.values()),
        )
        return [
            *([named] if named else []),
            *(["  " + keeps.format(tensors=_and(kept))] if kept else []),
        ]

    def after_cell(self, result: object = None) -> None:
        """IPython's post_run_cell handler: the diagnosis beneath a GPU out-of-memory traceback."""
        try:
            error = getattr(result, "error_in_exec", None)
            report = recognise(error) if error is not None else None
            if report is None:
                return
            self.errors += 1
            self.last = self.advise(report, error)
            print("\n".join(self.last.lines))
        except Exception:  # the user's own error is what matters; ours goes to the log
            log.exception("jupyter-gpumem: the out-of-memory advisor failed")
