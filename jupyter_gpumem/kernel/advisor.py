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
from jupyter_gpumem.kernel.control import Controller
from jupyter_gpumem.kernel.oom import OutOfMemory, recognise
from jupyter_gpumem.kernel.recorder import Recorder
from jupyter_gpumem.kernel.release import held_tensors
from jupyter_gpumem.render.cells import culprit
from jupyter_gpumem.units import MiB, format_mib, format_percent

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


# The devices NVML cannot see (it sees NVIDIA GPUs only), as the advice names them.
UNMEASURED = {
    "ROCm": "an AMD GPU via ROCm",
    "MPS": "an Apple GPU via MPS",
    "XPU": "an Intel GPU via XPU",
    "DirectML": "a GPU via DirectML",
    "TPU": "a TPU",
}


def diagnose(report: OutOfMemory, reading: Reading, uuids: list[str], growth: bool | None) -> Advice:
    """``uuids``: the framework's GPUs by NVML uuid, in its order; ``growth``: the policy's growth."""
    framework = report.framework
    lines = [f"jupyter-gpumem: {framework} ran out of {_what(report)} ({report.error})."]
    if report.shape is not None:
        size = _size(report.bytes, report.rounded) if report.bytes is not None else "an unknown size"
        lines.append(
            f"  The tensor that did not fit: shape [{', '.join(map(str, report.shape))}], "
            f"{report.dtype_name}, {size}" + (f", on {report.device}" if report.device else "") + "."
        )
    elif report.bytes is not None:
        lines.append(f"  The allocation that did not fit: {_size(report.bytes, report.rounded)}.")
    else:
        lines.append("  The message does not say which tensor did not fit.")
    if report.node or report.op:
        where = [f"node {report.node}" if report.node else "", f"op {report.op}" if report.op else ""]
        lines.append(f"  In {' / '.join(w for w in where if w)}.")

    device = _device(reading, report, uuids) if report.measurable else None
    split = reading.breakdowns.get(device.uuid or "") if device else None
    free = None
    if (sentence := stalled(reading.snapshot)) is not None:  # the figures below, if any, are the driver's last
        lines.append(f"  {sentence}")
    if device is None or device.total_bytes is None:
        lines.append(f"  GPU memory figures: {_unmeasured(report)}.")
        if report.free is not None:  # what the framework said when it failed, NVML's figures being out of reach
            free = report.free
            lines.append(f"  {framework} said {_size(free, free > 0) if free else 'nothing'} was free{_limit(report)}.")
    else:
        own = reading.own(device).bytes  # None where it cannot be attributed (containers): not 0
        budget = split.budget_bytes if split else None
        allocator = reading.allocators.get(device.uuid or "")
        figures = (
            f"  GPU {device.index} {device.name or ''}: this kernel holds {format_mib(own)} as nvidia-smi counts "
            f"it; the device has {format_mib(device.used_bytes)} used of {format_mib(device.total_bytes)}"
        )
        if allocator is not None:
            figures += f"; {framework} tensors use {format_mib(allocator.in_use)} (peak {format_mib(allocator.peak)})"
        lines.append(figures + ".")
        free = device.free_bytes
        if budget is not None and own is not None:
            free = max(0, min(free if free is not None else budget, budget - own))
            lines.append(
                f"  Budget: {format_mib(budget)} ({format_percent(budget, device.total_bytes)} of the GPU); "
                f"{format_mib(free)} of it is free."
            )
        else:
            lines.append(f"  No budget set: {format_mib(free)} of the GPU is free.")
        if allocator is not None and allocator.pool is not None:
            free = max(0, allocator.pool - allocator.in_use)  # what the allocator itself can still hand out

    batch, first = _batch_lines(report, free, lines)
    lines.extend(_causes(report, device, split.budget_bytes if split else None, growth, framework))
    return Advice(report, tuple(lines), batch, first)


def _what(report: OutOfMemory) -> str:
    """What ran out, as the first line says it."""
    if (report.device or "").upper().startswith("CPU"):
        return "host memory on the CPU"
    name = UNMEASURED.get(report.accelerator or "")
    return f"memory on {name}" if name else "GPU memory"


def _unmeasured(report: OutOfMemory) -> str:
    """Why there are no NVML figures for this error."""
    if (report.device or "").upper().startswith("CPU"):
        return "none: this was the host's memory, which jupyter-gpumem does not measure"
    name = UNMEASURED.get(report.accelerator or "")
    if name:
        return f"none here: NVML sees only NVIDIA GPUs, not {name}"
    return "not available (no driver, or the GPU could not be told)"


def _limit(report: OutOfMemory) -> str:
    return " under its limit (max allowed less what was allocated)" if report.accelerator == "MPS" else ""


def _size(size: int, rounded: bool) -> str:
    """A size from the message; "about" where the framework printed it rounded (PyTorch's "20.00 MiB")."""
    return ("about " if rounded else "") + (format_mib(size) if size >= MiB else _small(size))


def _batch_lines(report: OutOfMemory, free: int | None, lines: list[str]) -> tuple[int | None, int | None]:
    shape = report.shape
    if not shape or report.bytes is None or free is None or shape[0] < 2:
        lines.append(
            "  Fix: run the work in smaller batches, e.g. jupyter_gpumem.batched(model.evaluate, x, y, "
            "batch_size=64), and halve it until it fits."
        )
        return None, None
    first = shape[0]
    per_sample = report.bytes / first
    # The model largest_batch measures, with the one figure the error gives: this tensor, all of it per sample.
    fits = largest_under(Fit(fixed=0.0, per_sample=per_sample, linear=True, worst_residual=0.0), free, 0)
    if fits < 1:
        lines.append(
            f"  Not even one sample ({_small(per_sample)} in this tensor) fits in the "
            f"{format_mib(free)} free: the model needs less memory (smaller layers, float16), or more memory."
        )
        return None, first
    if fits >= first:
        batch = friendly(max(1, first // 2))
        lines.append(
            f"  The tensor alone would fit in the {format_mib(free)} free, but the rest of the step needs "
            f"room too: try batches of ~{batch} of {first}: jupyter_gpumem.batched(fn, x, ...) runs them for you."
        )
        return batch, first
    batch = friendly(fits)
    lines.append(
        f"  Fix: a batch of at most ~{batch} of {first} fits in the {format_mib(free)} free "
        f"({_small(per_sample)} per sample in this tensor). jupyter_gpumem.batched(model.evaluate, x, y) "
        f"runs it in batches of that size and returns what the whole call would (or pass batch_size={batch})."
    )
    return batch, first


def _small(size: float) -> str:
    """A per-sample size, which is often under a MiB."""
    if size < 1024:
        return f"{math.ceil(size)} bytes"
    return f"{math.ceil(size / 1024)} KiB" if size < MiB else format_mib(math.ceil(size))


def _causes(
    report: OutOfMemory, device: Device | None, budget: int | None, growth: bool | None, framework: str
) -> list[str]:
    causes = []
    if device is not None and device.total_bytes:
        others = sum(p.used_bytes or 0 for p in device.processes if not p.is_self)
        if others >= 0.1 * device.total_bytes:
            share = format_percent(others, device.total_bytes)
            causes.append(f"other processes hold {format_mib(others)} of this GPU ({share}; %gpumem status lists them)")
    if budget is not None and report.bytes is not None and report.bytes > budget:
        causes.append(
            f"the budget is too small for this tensor alone ({format_mib(budget)}): restart the kernel and ask "
            "for more with %gpumem, or use smaller batches"
        )
    # The frameworks that take their pool when they start (unless growth=on) say how to free it.
    free = next((a.free_earlier for a in ADAPTERS.values() if a.name == framework), None)
    if growth is not True and free and report.measurable:  # the policy's growth applies to NVIDIA GPUs
        causes.append(
            f"growth is off, so {framework} reserved its pool when it started and tensors from earlier cells "
            f"(models, results) still hold parts of it: {free}, or restart the kernel"
        )
    unused = report.unused_pool
    if unused and unused >= (report.bytes or 0) // 2:
        intel = report.accelerator == "XPU"  # its allocator has no expandable segments
        causes.append(
            f"PyTorch holds {format_mib(unused)} reserved but unallocated, in pieces too small for this "
            f"request (fragmentation): torch.{'xpu' if intel else 'cuda'}.empty_cache() gives them back"
            + ("" if intel else "; %gpumem growth=on before CUDA starts (expandable segments) avoids it")
        )
    return [f"  Also likely: {cause}." for cause in causes]


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
        kept = [f"{count} {name} tensor{'s' if count > 1 else ''}" for name, count in held.items()]
        return [
            *([named] if named else []),
            *(
                [f"  Its traceback keeps {' and '.join(kept)} of the failed call alive: %gpumem free releases "
                 f"{'it' if sum(held.values()) == 1 else 'them'} (and nothing you still reference)."]
                if kept else []
            ),
        ]  # fmt: skip

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
