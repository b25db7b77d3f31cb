"""The largest batch that fits, predicted from a few measured ones (issue 36, story S5): a step's peak memory
grows with its batch size n as ``peak = fixed + per_sample * n`` (the weights, their gradients and the
optimiser's state are fixed; activations and temporaries grow with n). Pure arithmetic on (n, peak) pairs: the
kernel's ``largest_batch`` measures them through a framework's allocator, and the out-of-memory advice uses the
same model with the figures of the tensor that failed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from jupyter_gpumem.units import MiB, format_mib

# A point is on the line when it is within this share of its own peak, or within FLOOR_BYTES, whichever is larger:
# allocators round each block (PyTorch to 512 bytes, TensorFlow's BFC to 256 bytes), so a small step's peak moves
# by a few blocks that do not follow the batch. Small, because the answer lies far beyond the sizes measured: a
# step whose peak changes its moment (weights' gradients at small sizes, activations at larger ones) must not be
# taken for a line.
TOLERANCE = 0.05
FLOOR_BYTES = 4 * 1024
# The sizes measured by default: small enough to run beside anything, far enough apart to show the slope.
SIZES = (2, 4, 8, 16)
# Slopes that rise by this factor from one pair of sizes to the next, twice, are memory growing as n² (fit).
CURVING = 1.5
# At most this many doublings past them, while the batch's part of the peak is still the smaller (next_size).
EXTRA = 6


@dataclass(frozen=True)
class Fit:
    """``peak = fixed + per_sample * n``, in bytes. ``linear``: every measured point is within the tolerance
    of the least-squares line (and there were at least 3 of them); ``worst_residual``: the largest distance
    of a point from that line, as a share of the point's peak. Where ``linear`` is False, ``fixed`` and
    ``per_sample`` are the conservative line (``fit``'s docstring), the one every answer comes from."""

    fixed: float
    per_sample: float
    linear: bool
    worst_residual: float
    from_size: int = 1  # the smallest size the line rests on: smaller ones were off it (fit's docstring)
    per_square: float = 0.0  # bytes per n², for memory that grows faster than the batch (fit's docstring)

    def peak(self, n: int) -> float:
        """The predicted peak at batch size ``n``."""
        return self.fixed + self.per_sample * n + self.per_square * n * n


def fit(points: Sequence[tuple[int, int]]) -> Fit:
    """The line through measured (batch size, peak bytes) points.

    - Three or more distinct sizes: the least-squares line. It is ``linear`` when every point lies within
      5% of its own peak or 4 KiB of it, whichever is larger (TOLERANCE, FLOOR_BYTES). Where they do not, the
      largest sizes alone are tried, down to the largest three: at small sizes a step's peak is often another
      moment of it (its weights' gradients) than at large ones (its activations); ``from_size`` says where the
      line starts. When not even those are on a line, and the peak grows ever faster over the four largest
      sizes (each slope at least CURVING times the one before: attention's n²), the curve returned is the
      parabola through the three largest (``per_square``): exact for n², cautious for anything between n and
      n², short for faster growth. Else the cautious line: through the point of the largest size, at the
      steeper of the least-squares slope and the slope between the two largest sizes, so that beyond the
      measured sizes it lies above both.
      ``worst_residual`` is then that of all the points from the line.
    - Two sizes: the line through them; ``linear`` is False, as nothing checks it.
    - One size: the line through it and the origin (all of its peak counted as growing with n, which predicts
      more than any line with a fixed part); ``linear`` False.

    Several points at one size count as the largest peak measured there. Raises ValueError without points, or
    for a size below 1 or a negative peak (a programming error: the measurements are the caller's)."""
    if not points:
        raise ValueError("fit: no measured points")
    peaks: dict[int, int] = {}
    for n, peak in points:
        if n < 1 or peak < 0:
            raise ValueError(f"fit: a point needs a size of at least 1 and a peak of at least 0, not ({n}, {peak})")
        peaks[n] = max(peak, peaks.get(n, 0))
    ordered = sorted(peaks.items())
    if len(ordered) == 1:
        n, peak = ordered[0]
        return Fit(0.0, peak / n, False, 0.0)
    every = _least_squares(ordered)
    for start in range(1, len(ordered) - 2):
        if not every.linear:
            tail = _least_squares(ordered[start:])
            if tail.linear:
                return tail
    if every.linear:
        return every
    if len(ordered) >= 4:
        (m, q), (n0, p0), (n1, p1), (n2, p2) = ordered[-4:]
        first, before, after = (p0 - q) / (n0 - m), (p1 - p0) / (n1 - n0), (p2 - p1) / (n2 - n1)
        if first > 0 and before >= CURVING * first and after >= CURVING * before:
            square = (after - before) / (n2 - n0)
            slope = before - square * (n0 + n1)
            return Fit(p0 - square * n0 * n0 - slope * n0, slope, False, every.worst_residual, n0, square)
    (n1, p1), (n2, p2) = ordered[-2], ordered[-1]
    steeper = max(every.per_sample, (p2 - p1) / (n2 - n1))
    top = max(p2, every.peak(n2))
    return Fit(top - steeper * n2, steeper, False, every.worst_residual, ordered[0][0])


def _least_squares(ordered: Sequence[tuple[int, int]]) -> Fit:
    """The least-squares line through points of distinct sizes, smallest first; linear where there are at least
    three and each is within the tolerance."""
    count = len(ordered)
    mean_n = sum(n for n, _ in ordered) / count
    mean_p = sum(p for _, p in ordered) / count
    spread = sum((n - mean_n) ** 2 for n, _ in ordered)
    slope = sum((n - mean_n) * (p - mean_p) for n, p in ordered) / spread
    fixed = mean_p - slope * mean_n
    residuals = [abs(p - (fixed + slope * n)) for n, p in ordered]
    worst = max((r / p if p else (0.0 if r == 0 else math.inf)) for r, (_, p) in zip(residuals, ordered, strict=True))
    on_line = all(r <= max(TOLERANCE * p, FLOOR_BYTES) for r, (_, p) in zip(residuals, ordered, strict=True))
    return Fit(fixed, slope, count >= 3 and on_line, worst, ordered[0][0])


def largest_under(fit: Fit, limit_bytes: int, margin_bytes: int, *, at_most: int | None = None) -> int:
    """The largest n with ``fit.peak(n) <= limit_bytes - margin_bytes``; 0 when not even n = 1 fits.

    Where the peak does not grow with n (``per_sample`` <= 0: the step ignores the batch, or the allocator
    measured does not see its memory), the line sets no bound: the answer is ``at_most`` when the fixed part
    fits, and without ``at_most`` that is a ValueError, since no batch size follows from the line."""
    room = limit_bytes - margin_bytes
    if fit.per_square > 0:
        a, b, c = fit.per_square, fit.per_sample, fit.fixed - room
        n = max(0, math.floor((-b + math.sqrt(max(0.0, b * b - 4 * a * c))) / (2 * a)))
        while fit.peak(n + 1) <= room:
            n += 1
        while n > 0 and fit.peak(n) > room:
            n -= 1
        return n if at_most is None else min(n, at_most)
    if fit.per_sample <= 0:
        if fit.fixed > room:
            return 0
        if at_most is None:
            raise ValueError("largest_under: the peak does not grow with the batch size, so the line sets no bound")
        return max(0, at_most)
    n = max(0, math.floor((room - fit.fixed) / fit.per_sample))
    while fit.peak(n + 1) <= room:  # float rounding either way: the answer is exact on the line
        n += 1
    while n > 0 and fit.peak(n) > room:
        n -= 1
    return n if at_most is None else min(n, at_most)


def next_size(
    points: Sequence[tuple[int, int]],
    sizes: Sequence[int],
    limit_bytes: int,
    margin_bytes: int,
    *,
    extra: int = EXTRA,
    at_most: int | None = None,
) -> int | None:
    """The next size to measure, or None when the measuring is done; never a size that the line through the
    points so far (``fit``'s) puts above the room, ``limit_bytes - margin_bytes``.

    First ``sizes``, smallest first, each above every size measured (before any point only the smallest is offered,
    and only where there is room at all). Then, at most ``extra`` times, twice the largest size measured, while the
    batch does not yet make most of the peak (between the two largest sizes, the part that grows with n is below
    the fixed part) and the doubled size is predicted to need at most half the room: at small sizes a step's
    peak is often the moment its weights' gradients are made, and only larger ones show the activations' slope.
    ``at_most``: no size above it (the rows there are)."""
    room = limit_bytes - margin_bytes
    if room <= 0:
        return None
    measured = {n for n, _ in points}
    above = max(measured, default=0)
    candidates = sorted(n for n in set(sizes) if n > above and 1 <= n <= (at_most or n))
    if not points:
        return candidates[0] if candidates else None
    if any(peak > room for _, peak in points):
        return None  # a measured step already went past the room: nothing larger is run
    line = fit(points)
    if candidates:
        return candidates[0] if line.peak(candidates[0]) <= room else None
    doubled = sum(1 for n in measured if n > max(sizes, default=0))
    if len(points) < 2 or doubled >= extra:
        return None
    (n1, p1), (n2, p2) = sorted(points)[-2:]
    slope = (p2 - p1) / (n2 - n1)
    if slope > 0 and slope * n2 >= p2 - slope * n2:
        return None  # the batch makes most of the peak: its slope is seen
    if at_most is not None and 2 * n2 > at_most:
        return None
    return 2 * n2 if line.peak(2 * n2) <= room / 2 else None


@dataclass(frozen=True)
class Limit:
    """What a step's counted peak may reach, and where that comes from (a phrase for people)."""

    bytes: int
    source: str


def step_limit(
    *,
    budget_bytes: int | None,
    free_bytes: int | None,
    overhead_bytes: int,
    own_bytes: int | None,
    pool_bytes: int | None,
    in_use_bytes: int | None,
    counts_held: bool,
) -> Limit | None:
    """The default limit of ``largest_batch`` on one GPU, as nvidia-smi counts its memory:

    - under a budget: ``budget - overhead - outside``, where ``overhead`` is the CUDA context and libraries (what
      the plan sets aside, or what this kernel measured) and ``outside`` what this kernel holds beyond them and
      its framework's allocator pool: ``own - overhead - pool`` once the framework runs on this GPU, all of
      ``own`` before (another framework, a library);
    - never more than the GPU's free memory, which respects other processes: ``free + pool`` once the framework
      runs on this GPU (its pool is already this kernel's), ``free - overhead`` before (it has still to make its
      CUDA context);
    - where the count of a step's peak leaves out what the allocator held before it (``counts_held`` False:
      XLA's analysis, PyTorch's CPU tracker) the allocator's tensors in use now come off too.

    ``pool_bytes``/``in_use_bytes`` None: the framework's allocator is not running on this GPU; ``own_bytes`` None:
    this kernel's memory there is unknown (then nothing is taken off for it). None when neither a budget nor the
    free memory is known."""
    started = in_use_bytes is not None
    in_use = in_use_bytes or 0
    pool = pool_bytes if pool_bytes is not None else in_use
    own = own_bytes or 0
    outside = max(0, own - overhead_bytes - pool) if started else own
    held = 0 if counts_held else in_use
    found: list[Limit] = []
    if budget_bytes is not None:
        kept = f", {format_mib(outside)} it holds outside the allocator" if outside else ""
        tensors = f", {format_mib(held)} of tensors in use" if held else ""
        found.append(
            Limit(
                budget_bytes - overhead_bytes - outside - held,
                f"this kernel's budget of {format_mib(budget_bytes)} less {format_mib(overhead_bytes)} for the "
                f"CUDA context and libraries{kept}{tensors}",
            )
        )
    if free_bytes is not None:
        room = free_bytes + pool if started else free_bytes - overhead_bytes
        how = (
            f" and its allocator's pool of {format_mib(pool)}"
            if started
            else f" less {format_mib(overhead_bytes)} for the CUDA context and libraries"
        )
        tensors = f", less {format_mib(held)} of tensors in use" if held else ""
        found.append(Limit(room - held, f"the GPU's free memory, {format_mib(free_bytes)}{how}{tensors}"))
    return min(found, key=lambda limit: limit.bytes) if found else None


def default_margin(limit_bytes: int) -> int:
    """5% of the limit, at most MARGIN_CAP_BYTES: room for what a step's count leaves out (the allocator's
    rounding and fragmentation, a library's workspace)."""
    return max(0, min(limit_bytes // 20, MARGIN_CAP_BYTES))


MARGIN_CAP_BYTES = 512 * MiB
