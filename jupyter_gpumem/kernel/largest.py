"""`jupyter_gpumem.largest_batch`: the largest batch size that fits, predicted from a few small steps before
any runs out of memory (issue 36, story S5).

    fit = largest_batch(lambda x, y: train_step(x, y), lambda n: (x_train[:n], y_train[:n]))
    fit.batch_size

It measures one step's peak memory at a few batch sizes through the framework's own allocator (frameworks/*.py
``step_peak``), from 1 upwards, each predicted at the steepest slope seen so far, takes the largest n under the
limit less a margin on the line through the largest size at the steepest recent slope (budget/batchfit.py), and
counts one step there before answering it: where that step does not fit (a peak off the line: TensorFlow's BFC
allocator rounds its blocks up), smaller sizes predicted from all the counts are counted until one fits, and the
answer is always a size counted to fit (issue 45). It never runs a size the points so far predict will not fit. A
jitted JAX function is compiled, never run (XLA's analysis): its answer is the exact largest size, found by a
short search of compiles.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import psutil
from IPython import get_ipython

from jupyter_gpumem.budget import batchfit
from jupyter_gpumem.budget.batchfit import Fit, Limit
from jupyter_gpumem.budget.overhead import estimate
from jupyter_gpumem.frameworks import Adapter, Jax
from jupyter_gpumem.frameworks.base import Peak
from jupyter_gpumem.i18n import gettext as _
from jupyter_gpumem.i18n import pgettext
from jupyter_gpumem.kernel.runtime import runtime
from jupyter_gpumem.render import framework_names
from jupyter_gpumem.render import largest as shown
from jupyter_gpumem.units import MiB, format_mib, parse_bytes

# Counted on the CPU (no GPU: PyTorch's MemTracker, TensorFlow's BFC on CPU:0), the answer is checked only where its
# step would take at most this much of the machine's memory (and half of what is free).
CPU_CHECK_MOST = 2 * 1024 * MiB


@dataclass(frozen=True)
class BatchFit:
    """What ``largest_batch`` found: ``batch_size`` (0 when none can be told or none fits: ``problem`` says why),
    the sizes measured and their peaks, the line through them, the limit and where it came from, the margin,
    and the answer's predicted peak and headroom (the limit less its counted peak, else its predicted one).
    ``estimate``: the line's answer before the answer was counted, ``checked``: the sizes counted after the
    measuring to check it (with their peaks, also among ``points``), ``widened_bytes``: what the margin was
    widened by for peaks counted lower than at a smaller batch (budget/batchfit.py ``jitter``)."""

    batch_size: int
    points: tuple[tuple[int, int], ...]  # (batch size, peak bytes) as measured, in the order run
    fit: Fit | None
    limit_bytes: int | None
    limit_source: str
    margin_bytes: int
    framework: str
    counted: str  # how the peaks were counted, a phrase
    problem: str | None = None  # why there is no answer, or what to be careful of: a sentence
    verified_bytes: int | None = None  # the answer's counted peak (verify=True)
    estimate: int = 0  # the line's answer, before it was counted (0: none was made)
    checked: tuple[tuple[int, int], ...] = ()  # (batch size, peak) counted to check the answer, in order
    widened_bytes: int = 0  # the margin was widened by this much for the counts' jitter
    exhausted: bool = False  # the check's steps ran out before its search settled

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(n for n, _ in self.points)

    @property
    def peaks(self) -> tuple[int, ...]:
        return tuple(peak for _, peak in self.points)

    @property
    def predicted_bytes(self) -> int | None:
        """The line's peak at the answer."""
        return round(self.fit.peak(self.batch_size)) if self.fit is not None and self.batch_size else None

    @property
    def checked_bytes(self) -> int | None:
        """The answer's peak as counted (the largest count there): every answer of a step that runs is counted,
        and a jitted JAX step's exact search compiles its answer."""
        counts = [peak for n, peak in self.points if n == self.batch_size]
        return max(counts) if counts and self.batch_size else None

    @property
    def headroom_bytes(self) -> int | None:
        """The limit less the answer's counted peak, else its predicted one (the margin is part of it)."""
        peak = self.checked_bytes if self.checked_bytes is not None else self.predicted_bytes
        return None if peak is None or self.limit_bytes is None else self.limit_bytes - peak

    def view(self) -> shown.View:
        """The words and figures every form of the result shows (text and HTML)."""
        if self.batch_size:
            headline = _("jupyter-gpumem: the largest batch that fits is {batch_size} ({framework}).").format(
                batch_size=self.batch_size, framework=self.framework
            )
        else:
            headline = _("jupyter-gpumem: no batch size can be given ({framework}).").format(framework=self.framework)
        facts: list[tuple[str, str]] = []
        if self.fit is not None:
            facts.append((pgettext("largest_batch fact", "fit"), _line(self.fit)))
        if self.limit_bytes is not None:
            facts.append(
                (
                    pgettext("largest_batch fact", "limit"),
                    _("{limit}: {source}").format(limit=format_mib(self.limit_bytes), source=self.limit_source),
                )
            )
            margin = format_mib(self.margin_bytes)
            if self.widened_bytes:
                margin = _("{margin}, widened by {widened} to {total} for the counts' jitter").format(
                    margin=margin,
                    widened=format_mib(self.widened_bytes),
                    total=format_mib(self.margin_bytes + self.widened_bytes),
                )
            facts.append((pgettext("largest_batch fact", "margin"), margin))
        if self.predicted_bytes is not None and self.headroom_bytes is not None:
            facts.append(
                (
                    pgettext("largest_batch fact", "predicted peak"),
                    _("{peak} at {batch_size}").format(
                        peak=format_mib(self.predicted_bytes), batch_size=self.batch_size
                    ),
                )
            )
        checked = self.checked_bytes
        if checked is not None and (self.checked or self.estimate):
            facts.append(
                (
                    pgettext("largest_batch fact", "checked"),
                    _("{peak} counted at {batch_size}: fits").format(
                        peak=format_mib(checked), batch_size=self.batch_size
                    ),
                )
            )
        if self.headroom_bytes is not None and self.batch_size:
            facts.append((pgettext("largest_batch fact", "headroom"), format_mib(self.headroom_bytes)))
        if self.verified_bytes is not None and checked is None:
            facts.append(
                (
                    pgettext("largest_batch fact", "verified"),
                    _("{peak} measured at {batch_size}").format(
                        peak=format_mib(self.verified_bytes), batch_size=self.batch_size
                    ),
                )
            )
        notes = []
        if self.fit is not None and not self.fit.linear:
            notes.append(_not_linear(self.fit, len(self.points)))
        if self.batch_size:
            notes.extend(_checks(self))
        if self.problem:
            notes.append(self.problem)
        measured = [(str(n), format_mib(peak), _small(peak) if peak < 1 << 20 else "") for n, peak in self.points]
        counted = _("counted by {how}").format(how=self.counted) if self.counted else ""
        return shown.View(headline, measured, facts, notes, counted)

    def __str__(self) -> str:
        return shown.text(self.view())

    def __repr__(self) -> str:
        return str(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        return shown.html(self.view())


def largest_batch(
    step: Callable[..., Any],
    batch_of: Callable[[int], tuple[Any, ...]],
    *,
    limit: int | str | None = None,
    margin: int | str | None = None,
    sizes: Sequence[int] | None = None,
    verify: bool = False,
) -> BatchFit:
    """The largest batch size n for which ``step(*batch_of(n))`` fits, predicted from a few steps.

    ``step(*batch_of(n))`` runs one step at batch size n (``batch_of`` returns a tuple of the step's arguments).
    The step runs once at the smallest size to warm up (lazy state: gradients, optimiser moments, traced
    functions; not counted), then at ``sizes`` (1 and 2 by default), then at twice the last size while the
    steepest slope seen so far predicts it takes at most half of the room left, then at smaller steps towards
    the answer until the last two slopes agree: at most 14 sizes, never one predicted not to fit (budget/batchfit.py
    ``next_size``). Its peak is counted by the framework's allocator on the GPU (PyTorch
    ``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats``; TensorFlow
    ``get_memory_info('GPU:0')['peak']`` after ``reset_memory_stats``; JAX ``memory_stats()['peak_bytes_in_use']``).
    A jitted JAX function is not run: XLA's ``jit(f).lower(*args).compile().memory_analysis()`` tells its peak,
    at a few small sizes and then, from the estimate, at the sizes of an exact search (a dozen compiles at most):
    its answer is the largest n whose compiled peak is at most ``limit - margin``. Without a GPU the framework
    counts on the CPU where it can (PyTorch's MemTracker; TensorFlow with TF_CPU_ALLOCATOR_USE_BFC=true set
    before its import; JAX only for a jitted step). The framework is the one the arguments' (or the step's)
    types come from, else the one this kernel's policy names.

    ``limit`` (bytes, or a size such as "6GiB"): by default this kernel's budget as nvidia-smi counts it, less
    the CUDA context and libraries and what the kernel holds outside the framework's allocator, and never more
    than the GPU's free memory (other processes respected): budget/batchfit.py ``step_limit`` has the formula,
    on the framework's first GPU. ``margin`` (bytes or a size): by default 5% of the limit, at most 512 MiB.
    For a step that runs, the answer is the largest n under ``limit - margin`` on the line through the largest
    size measured at the steepest recent slope (its last segment's or the least-squares one, whichever is
    steeper; curved upwards where the slopes still grow there); the result says when the points are not on a
    line. That answer is counted (one step) before it is given; where it does not fit, smaller sizes predicted
    from all the counts are, until one does (at most 12 steps; TensorFlow's answer thrice, after other steps,
    since its allocator's count moves with what ran before, the margin widened by how far): the answer is a size
    counted to fit, and the result says what the check found. ``verify``: that count of the answer, shown. If even
    the smallest size cannot fit (the limit is below what is held), nothing runs and the result says why."""
    return measured(step, batch_of, limit=limit, margin=margin, sizes=sizes, verify=verify)


def measured(
    step: Callable[..., Any],
    batch_of: Callable[[int], tuple[Any, ...]],
    *,
    limit: int | str | None = None,
    margin: int | str | None = None,
    sizes: Sequence[int] | None = None,
    verify: bool = False,
    at_most: int | None = None,
) -> BatchFit:
    """largest_batch, with no size measured or answered above ``at_most`` (batched: the rows there are)."""
    planned = _check(step, batch_of, sizes, verify)
    explicit = _size("limit", limit)
    margin_given = _size("margin", margin)
    control = runtime(get_ipython()).control
    jitted = _jitted(step, control.adapters.values())
    adapter = jitted or _framework(step, batch_of, planned[0], control)
    if adapter is None:
        return BatchFit(0, (), None, None, "", 0, _("no framework"), "", _no_framework(control.adapters))
    # Two defaults: the count of a step's peak may leave out what the allocator held before it (the first
    # measurement tells), and then the tensors in use now come off the limit too.
    limits = {True: Limit(explicit, _("given (limit=)"))} if explicit is not None else _default_limits(control, adapter)
    found = limits[True] if jitted is None else limits.get(False, limits[True])
    if found is None:
        problem = _("NVML shows no GPU here to take a limit from: pass one, e.g. largest_batch(..., limit='6GiB').")
        return BatchFit(0, (), None, None, "", 0, adapter.name, "", problem)
    spare = margin_given if margin_given is not None else batchfit.default_margin(found.bytes)
    result = BatchFit(0, (), None, found.bytes, found.source, spare, adapter.name, "")
    if found.bytes - spare <= 0:
        return _with(result, problem=_no_room(found, spare))

    counts: dict[int, Peak] = {}  # a jitted step's compiled peaks, by size: each size compiled once

    def measure(n: int) -> Peak:
        if jitted is not None and n in counts:
            return counts[n]
        args = tuple(batch_of(n))
        if jitted is None:
            return adapter.step_peak(lambda: step(*args), (step, *args))
        counts[n] = jitted.compiled_peak(step, args)
        return counts[n]

    points: list[tuple[int, int]] = []
    counted = ""
    on_gpu = False
    warmed = jitted is not None
    # A jitted step's sizes only give the exact search its first estimate: a few small ones are enough.
    most = batchfit.JITTED_MOST if jitted is not None else batchfit.MOST
    while (n := batchfit.next_size(points, planned, found.bytes, spare, most=most, at_most=at_most)) is not None:
        if not warmed:
            step(*batch_of(n))
            warmed = True
        peak = measure(n)
        counted, on_gpu = peak.how, peak.on_gpu
        if peak.bytes is None:
            return _with(result, points=tuple(points), counted="", problem=peak.how)
        without_held = limits.get(False)
        if not points and not peak.includes_held and without_held is not None:
            found = without_held
            spare = margin_given if margin_given is not None else batchfit.default_margin(found.bytes)
            result = _with(result, limit_bytes=found.bytes, limit_source=found.source, margin_bytes=spare)
        points.append((n, peak.bytes))
    result = _with(result, points=tuple(points), counted=counted)
    if not points:
        return _with(result, problem=_no_room(found, spare))
    line = batchfit.fit(points, found.bytes - spare)
    result = _with(result, fit=line)
    if line.per_sample <= 0 and line.per_square <= 0:
        return _with(result, problem=_flat(points))
    answer = batchfit.largest_under(line, found.bytes, spare, at_most=at_most)
    if len(result.sizes) == 1:
        answer = min(answer, points[0][0])  # one point has no slope: nothing is extrapolated from it
    result = _with(result, estimate=answer)
    # Counted on the CPU, the check's step takes this machine's memory: not where it would take more than
    # CPU_CHECK_MOST or half of what is free (the answer is then the line's, unchecked, and the result says so).
    host_most = min(CPU_CHECK_MOST, psutil.virtual_memory().available // 2)
    unchecked = jitted is None and not on_gpu and answer > 0 and line.peak(answer) > host_most
    if unchecked:
        result = _with(result, problem=_unchecked(answer, round(line.peak(answer)), host_most))
    if jitted is None and not unchecked:
        # The answer is counted before it is given, and smaller sizes predicted from all the counts where it does
        # not fit: each size run is one the points so far predict will fit (issue 45).
        def step_at(n: int) -> int:
            peak = measure(n)
            if peak.bytes is None:  # never a made-up figure: no answer, and why, as for a size measured above
                raise _NotCounted(peak.how)
            return peak.bytes

        # Where the count of one size moves with what ran before (frameworks/base.py count_moves), the answer is
        # counted thrice.
        recount = 2 if adapter.count_moves else 0
        try:
            checked = batchfit.checked_largest(step_at, points, found.bytes, spare, at_most=at_most, recount=recount)
        except _NotCounted as not_counted:
            return _with(result, points=tuple(points), counted="", problem=str(not_counted))
        points.extend(checked.counted)
        answer = checked.batch_size
        line = batchfit.fit(points, found.bytes - spare - checked.widened_bytes)
        result = _with(
            result,
            points=tuple(points),
            fit=line,
            estimate=checked.estimate,
            checked=checked.counted,
            widened_bytes=checked.widened_bytes,
            exhausted=checked.exhausted,
        )
    if jitted is not None and answer > 0:
        # Compiling is harmless (nothing runs): the exact largest size from the estimate, each compile a point.
        def compiled(n: int) -> int:
            peak = measure(n)
            points.append((n, peak.bytes or 0))
            return peak.bytes or 0

        answer = batchfit.exact_largest(compiled, points, found.bytes, spare, answer, at_most=at_most)
        line = batchfit.fit(points, found.bytes - spare)
        result = _with(result, points=tuple(points), fit=line)
    if answer == 0:
        return _with(result, problem=_none_fits(line, found, spare + result.widened_bytes))
    past = _past_limit(points, found.bytes) if jitted is None else None  # a compile past it ran nothing
    result = _with(result, batch_size=answer, problem=past or result.problem)
    if verify:
        # The answer was counted already (its check, or the exact search's compile): no step more.
        verified = result.checked_bytes
        result = _with(result, verified_bytes=verified if verified is not None else measure(answer).bytes)
    return result


# ---------------------------------------------------------------------- choosing the framework and the limit


def _jitted(step: object, adapters: Any) -> Jax | None:
    """JAX's adapter when ``step`` is a jitted JAX function (it has ``.lower``)."""
    jax = next((a for a in adapters if isinstance(a, Jax)), None)
    return jax if jax is not None and jax.imported() and hasattr(step, "lower") and jax.owns(step) else None


def _framework(step: object, batch_of: Callable[[int], tuple[Any, ...]], n: int, control: Any) -> Adapter | None:
    """The framework of the arguments' types (a batch of ``n``), else the step's, else the one the policy names."""
    adapters: list[Adapter] = [a for a in control.adapters.values() if a.imported()]
    for value in (*tuple(batch_of(n)), step):
        for adapter in adapters:
            if adapter.owns(value):
                return adapter
    named = [a for a in control.state.adapters if isinstance(a, Adapter) and a.imported()]
    return named[0] if named else None


def _default_limits(control: Any, adapter: Adapter) -> dict[bool, Limit | None]:
    """step_limit on the framework's first GPU, with this kernel's figures read now: for a count of the step's
    peak that includes what the allocator held before it (True), and for one that does not (False)."""
    reading = control.read(control.snapshot())
    uuids = control.framework_uuids(reading)
    devices = {d.uuid: d for d in reading.snapshot.devices if not d.lost}
    device = next((devices[u] for u in uuids if u in devices), None)
    if device is None:
        return {True: None, False: None}
    split = reading.breakdowns.get(device.uuid or "")
    overhead = split.overhead if split is not None and split.overhead is not None else None
    overhead = overhead or estimate(device, adapter.name, adapter.library_bytes)
    allocator = reading.allocators.get(device.uuid or "")
    return {
        held: batchfit.step_limit(
            budget_bytes=split.budget_bytes if split is not None else None,
            free_bytes=device.free_bytes,
            overhead_bytes=overhead.bytes,
            own_bytes=reading.own(device).bytes,
            pool_bytes=allocator.pool if allocator is not None else None,
            in_use_bytes=allocator.in_use if allocator is not None else None,
            counts_held=held,
        )
        for held in (True, False)
    }


# ---------------------------------------------------------------------- arguments and sentences


def _no_framework(adapters: Any) -> str:
    return _(
        "Neither the step nor its arguments belong to {frameworks}, and no framework this kernel knows is imported: "
        "import the framework first, or name it with %gpumem framework={names}."
    ).format(frameworks=framework_names(list(adapters.values()), together=False), names="|".join(adapters))


def _check(step: object, batch_of: object, sizes: Sequence[int] | None, verify: object) -> list[int]:
    if not callable(step):
        raise TypeError(f"largest_batch: step must be the function that runs one step, not {type(step).__name__}.")
    if not callable(batch_of):
        raise TypeError(
            f"largest_batch: batch_of must be a function n -> the step's arguments, not {type(batch_of).__name__}."
        )
    planned = list(batchfit.SIZES if sizes is None else sizes)
    if not planned or any(isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1 for n in planned):
        raise ValueError(f"largest_batch: sizes must be whole numbers of at least 1, not {sizes!r}.")
    if not isinstance(verify, bool):
        raise TypeError(f"largest_batch: verify is True or False, not {verify!r}.")
    return sorted({int(n) for n in planned})


def _size(name: str, value: int | str | None) -> int | None:
    """A limit or margin in bytes, or a size with its unit ("6GiB", "512MiB")."""
    if value is None:
        return None
    if isinstance(value, str):
        parsed = parse_bytes(value)
        if parsed is not None and parsed >= 0:
            return parsed
    elif not isinstance(value, bool) and isinstance(value, numbers.Integral) and value >= 0:
        return int(value)
    raise ValueError(f"largest_batch: {name} must be bytes or a size with its unit (e.g. '6GiB'), not {value!r}.")


def _with(result: BatchFit, **changes: Any) -> BatchFit:
    return replace(result, **changes)


def _line(fit: Fit) -> str:
    fixed = format_mib(round(fit.fixed)) if abs(fit.fixed) >= 1 << 20 else _small(round(fit.fixed))
    per_sample = _small(round(fit.per_sample))
    if fit.per_square > 0:
        if fit.linear:
            said = _(
                "{fixed} + {per_sample} × n + {per_square} × n² (a line within 5%, curving up at the largest sizes)"
            )
        else:
            said = _("{fixed} + {per_sample} × n + {per_square} × n² (not a line)")
        return said.format(fixed=fixed, per_sample=per_sample, per_square=_small(round(fit.per_square)))
    if not fit.linear:
        said = _("{fixed} + {per_sample} per sample (not a line)")
    elif fit.from_size > 1:
        said = _("{fixed} + {per_sample} per sample (a line, from batch {from_size} on)")
    else:
        said = _("{fixed} + {per_sample} per sample (a line)")
    return said.format(fixed=fixed, per_sample=per_sample, from_size=fit.from_size)


def _small(size: float) -> str:
    """A per-sample size, which is often under a MiB (negative in a curve's expansion)."""
    if size < 0:
        return "-" + _small(-size)
    if size < 1024:
        return _("{count} bytes").format(count=round(size))  # "1 bytes" as before: English unchanged
    return f"{round(size / 1024)} KiB" if size < 1 << 20 else format_mib(size)


def _not_linear(fit: Fit, count: int) -> str:
    # Two messages rather than ngettext's forms: one size and several say different things after the colon,
    # which a language of one plural form could not tell apart.
    if count == 1:
        return _(
            "Only {count} size could be measured under the limit, so nothing checks that the peak grows in a line: "
            "the answer is that size."
        ).format(count=count)
    if count < 3:
        return _(
            "Only {count} sizes could be measured under the limit, so nothing checks that the peak grows in a "
            "line: the answer comes from the line through them."
        ).format(count=count)
    off = f"{fit.worst_residual:.0%}"
    if fit.per_square > 0:
        return _(
            "The peaks are not on a line (one is {off} off it): the memory grows faster than the batch, and its "
            "slope still grew at the largest sizes. The answer assumes it goes on growing as fast, right for "
            "memory that grows as n² and cautious for slower growth: check it with verify=True."
        ).format(off=off)
    return _(
        "The peaks are not on a line (one is {off} off it): the memory does not grow in proportion to the batch "
        "over the sizes measured. The answer comes from the line through the largest size at the steepest recent "
        "slope, cautious where the growth settles into a line; verify=True checks it."
    ).format(off=off)


class _NotCounted(Exception):
    """A check's step whose peak the framework could not count: its sentence."""


def _checks(result: BatchFit) -> list[str]:
    """What the check of a step's answer found, where it was more than one step that fitted."""
    notes = []
    if result.widened_bytes:
        notes.append(
            _(
                "The step's peak was counted up to {jitter} apart at one batch size, or lower at a larger one: the "
                "count moves by that much with what ran before (the chunks the allocator had free), so the margin "
                "was widened by it."
            ).format(jitter=format_mib(result.widened_bytes))
        )
    over = [(n, peak) for n, peak in result.checked if n > result.batch_size]
    if over:
        n, peak = over[0]
        notes.append(
            _(
                "A batch of {size}, predicted to fit, was counted at {peak}: past the limit less the margin, so the "
                "peak is not on the line there (an allocator that rounds its blocks up, a step that changes shape). "
                "{count} sizes were counted near the answer, each predicted to fit from the counts before it: the "
                "answer is the largest counted to fit."
            ).format(size=n, peak=format_mib(peak), count=len({size for size, _ in result.checked}))
        )
    if result.exhausted:
        notes.append(
            _(
                "The check's {count} steps ran out before its search settled (the largest size counted to fit "
                "within {close} of the smallest counted not to): a somewhat larger batch may fit too."
            ).format(count=len(result.checked), close=f"{batchfit.CLOSE:.0%}")
        )
    return notes


def _unchecked(answer: int, peak: int, most: int) -> str:
    return _(
        "The answer was not counted before it was given: the step is counted on the CPU here, and at {batch_size} "
        "it would take about {peak} of this machine's memory, more than the {most} a check may take. It is the "
        "line's, and may be above the largest batch that fits where the peak is not on the line."
    ).format(batch_size=answer, peak=format_mib(peak), most=format_mib(most))


def _no_room(found: Limit, spare: int) -> str:
    return _(
        "Nothing was run: the limit, {limit} ({source}), leaves no room above the {margin} margin even for the "
        "smallest batch. Free memory first (%gpumem free, del what you no longer need), or ask for a larger budget."
    ).format(limit=format_mib(found.bytes), source=found.source, margin=format_mib(spare))


def _flat(points: list[tuple[int, int]]) -> str:
    (n1, p1), (n2, p2) = points[0], points[-1]
    return _(
        "The step's peak does not grow with the batch size ({peak1} at {n1}, {peak2} at {n2}): the allocator "
        "measured does not see the step's memory, or the step does not use its batch, so no batch size follows "
        "from it."
    ).format(peak1=format_mib(p1), n1=n1, peak2=format_mib(p2), n2=n2)


def _none_fits(fit: Fit, found: Limit, spare: int) -> str:
    return _(
        "Not even a batch of 1 fits: the line predicts {peak} for it, above the limit of {limit} less the {margin} "
        "margin."
    ).format(peak=format_mib(round(fit.peak(1))), limit=format_mib(found.bytes), margin=format_mib(spare))


def _past_limit(points: list[tuple[int, int]], limit_bytes: int) -> str | None:
    over = [n for n, peak in points if peak > limit_bytes]
    if not over:
        return None
    return _(
        "The step at {batch_size} already went past the limit: the line was fitted to it, so the answer is below it."
    ).format(batch_size=over[0])
