"""The largest batch that fits, predicted from a few measured ones (issue 36, story S5): a step's peak memory
grows with its batch size n, often as ``peak = fixed + per_sample * n`` (the weights, their gradients and the
optimiser's state are fixed; activations and temporaries grow with n), but not always: a peak may be the larger
of two moments (the optimiser's update up to some size, the activations beyond), or grow a little faster than a
line (XLA's temporaries). Pure arithmetic on (n, peak) pairs: which size to measure next (``next_size``), the
line the answer rests on (``fit``, ``largest_under``), and for a step whose peak costs nothing to count (a jitted
JAX step, compiled, never run) the exact largest size (``exact_largest``). The kernel's ``largest_batch``
measures the points through a framework's allocator, and the out-of-memory advice uses ``largest_under`` with
the figures of the tensor that failed.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from jupyter_gpumem.units import MiB, format_mib

# A point is on the line when it is within this share of its own peak, or within FLOOR_BYTES, whichever is larger:
# allocators round each block (PyTorch to 512 bytes, TensorFlow's BFC to 256 bytes), so a small step's peak moves
# by a few blocks that do not follow the batch.
TOLERANCE = 0.05
FLOOR_BYTES = 4 * 1024
# The sizes measured first (after a warm-up step at the smallest, not counted): two points give a slope before
# anything is extrapolated. Then doubling, and smaller steps near the limit (next_size).
SIZES = (1, 2)
# At most this many sizes are measured (the warm-up and verify's step not counted): 1 to 8192 by doubling.
MOST = 14
# A segment steeper than the one before it by this factor or more may hold a bend (a flat peak that starts to
# rise inside it): its slope is then only a lower bound, and the next step is that much more careful (at most).
CAUTION = 4.0
# Two consecutive segments whose slopes agree within this share: the peak grows in a line there, and the answer
# is extrapolated from the last point without measuring closer to it.
SETTLED = 0.10
# A jitted JAX step measures only this many sizes before its exact search (which the estimate only starts).
JITTED_MOST = 4
# A jitted JAX step's exact search compiles at most this many sizes beyond the measured ones.
EXACT_MOST = 12


@dataclass(frozen=True)
class Fit:
    """The line the answer rests on, ``peak = fixed + per_sample * n`` in bytes: through the largest measured
    point under the room (``fit``'s docstring), at the steeper of the last segment's slope and the least-squares
    slope. ``linear``: every measured point is within the tolerance of the least-squares line (at least 3 of
    them, from ``from_size`` on: smaller sizes off it are left out); ``worst_residual``: the largest distance of
    a point from the least-squares line, as a share of the point's peak."""

    fixed: float
    per_sample: float
    linear: bool
    worst_residual: float
    from_size: int = 1  # the smallest size the least-squares line rests on: smaller ones were off it
    per_square: float = 0.0  # bytes per n², where the slopes still grow at the anchor (fit's docstring)

    def peak(self, n: int) -> float:
        """The predicted peak at batch size ``n``."""
        return self.fixed + self.per_sample * n + self.per_square * n * n


def fit(points: Sequence[tuple[int, int]], room_bytes: int | None = None) -> Fit:
    """The line through measured (batch size, peak bytes) points that the answer rests on.

    It goes through the anchor, the largest size measured (with ``room_bytes``: the largest whose peak is at most
    it, where there is one), at the *steepest recent slope*: the larger of the slope of the last segment (the
    anchor and the size measured before it) and the least-squares slope. Beyond the anchor it lies above both: a
    peak that is flat and then rises (the optimiser's update, then the activations) has its rising slope in the
    last segment, which the least-squares line through the flat points would hide.

    ``linear`` is a report: the least-squares line of three or more points, each within 5% of its own peak or
    4 KiB of it, whichever is larger (TOLERANCE, FLOOR_BYTES); where not all of them are, the largest sizes alone
    are tried, down to the largest three spanning at least a factor of 4 (``from_size`` says where that line
    starts). ``worst_residual`` is that
    line's. Two sizes: the line through them, ``linear`` False (nothing checks it). One size: the line through it
    and the origin, ``linear`` False; it is shown, never extrapolated (``next_size`` and the kernel answer that
    size itself).

    Several points at one size count as the largest peak measured there. Raises ValueError without points, or
    for a size below 1 or a negative peak (a programming error: the measurements are the caller's)."""
    ordered = _ordered(points)
    if len(ordered) == 1:
        n, peak = ordered[0]
        return Fit(0.0, peak / n, False, 0.0, n)
    report = _least_squares(ordered)
    if not report.linear:
        for start in range(1, len(ordered) - 2):
            if ordered[-1][0] < 4 * ordered[start][0]:
                break  # sizes closer together than that cannot show a line: the search near the answer does
            tail = _least_squares(ordered[start:])
            if tail.linear:
                report = tail
                break
    under = [point for point in ordered if room_bytes is None or point[1] <= room_bytes]
    anchor = under[-1] if under else ordered[-1]
    before = [point for point in ordered if point[0] < anchor[0]]
    if not before:  # the anchor is the smallest size: the least-squares line through the anchor
        return Fit(
            anchor[1] - report.per_sample * anchor[0],
            report.per_sample,
            report.linear,
            report.worst_residual,
            report.from_size,
        )
    (n1, p1), (n2, p2) = before[-1], anchor
    last = (p2 - p1) / (n2 - n1)
    slope = max(report.per_sample, last)
    square = 0.0
    if len(before) >= 2:
        n0, p0 = before[-2]
        previous = (p1 - p0) / (n1 - n0)
        if (last - previous) * (n2 - n1) > FLOOR_BYTES:  # beyond the allocator's rounding
            # Still growing faster: the slope grows on as it did between the two segments' middles, and the
            # tangent at the anchor is steeper than the last segment's slope by half a segment of that growth.
            growth = (last - previous) / ((n2 - n0) / 2)
            slope = max(report.per_sample, last + growth * (n2 - n1) / 2)
            square = growth / 2
    # peak(n) = p2 + slope (n - n2) + square (n - n2)², written in powers of n.
    return Fit(
        p2 - slope * n2 + square * n2 * n2,
        slope - 2 * square * n2,
        report.linear,
        report.worst_residual,
        report.from_size,
        square,
    )


def _ordered(points: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    if not points:
        raise ValueError("fit: no measured points")
    peaks: dict[int, int] = {}
    for n, peak in points:
        if n < 1 or peak < 0:
            raise ValueError(f"fit: a point needs a size of at least 1 and a peak of at least 0, not ({n}, {peak})")
        peaks[n] = max(peak, peaks.get(n, 0))
    return sorted(peaks.items())


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
    most: int = MOST,
    at_most: int | None = None,
) -> int | None:
    """The next size to measure, or None when the measuring is done. ``room`` is ``limit_bytes - margin_bytes``.

    - First ``sizes``, smallest first, each above every size measured (before any point only the smallest, and
      only where there is room at all). With one point there is no slope: the next size runs where it is at most
      twice the first (one more sample at 1) and the first fitted; a line through the origin is never used.
    - From two points on, each next size is predicted from the last point at the *steepest* slope of any segment
      so far (between consecutive sizes), so that a flat start neither stops nor misleads the search, and it may
      take at most half of the room left above the last point, divided by the caution: 1, or up to CAUTION where
      the last segment is that many times steeper than the one before (a bend inside it: its slope is then a
      lower bound). The next size is the next of ``sizes``, else twice the last, where that is within reach; else
      the farthest size within reach, a smaller step towards the answer, unless the last two slopes agree within
      SETTLED (a line: the answer is extrapolated from there) or the step would be under a sixteenth of the last
      size (the extrapolation left is then at most about half of it).
    - Never more than ``most`` sizes, never above ``at_most`` (the rows there are), nothing after a step whose
      peak went past the room."""
    room = limit_bytes - margin_bytes
    if room <= 0:
        return None
    ordered = _ordered(points) if points else []
    above = ordered[-1][0] if ordered else 0
    planned = sorted(n for n in set(sizes) if n > above and 1 <= n <= (at_most or n))
    if not ordered:
        return planned[0] if planned else None
    if len(ordered) >= most or any(peak > room for _, peak in ordered):
        return None
    n_last, p_last = ordered[-1]
    wanted = planned[0] if planned else 2 * n_last
    if at_most is not None:
        wanted = min(wanted, at_most)
    if wanted <= n_last:
        return None
    if len(ordered) == 1:
        return wanted if wanted <= 2 * n_last else None
    slopes = [(p2 - p1) / (n2 - n1) for (n1, p1), (n2, p2) in itertools.pairwise(ordered)]
    steepest = max(slopes)
    if steepest <= 0:
        return wanted  # nothing has grown yet: doubling is as safe as the last step was
    last = slopes[-1]
    previous = slopes[-2] if len(slopes) >= 2 else last
    caution = 1.0 if last <= 0 else CAUTION if previous <= 0 else min(CAUTION, max(1.0, last / previous))
    reach = n_last + math.floor((room - p_last) / (2 * caution * steepest))
    if wanted <= reach:
        return wanted
    if len(slopes) >= 2 and abs(last - previous) <= SETTLED * max(abs(last), abs(previous)):
        return None
    if reach - n_last < max(1, n_last / 64):
        return None
    return reach


def exact_largest(
    peak_of: Callable[[int], int],
    points: Sequence[tuple[int, int]],
    limit_bytes: int,
    margin_bytes: int,
    estimate: int,
    *,
    most: int = EXACT_MOST,
    at_most: int | None = None,
) -> int:
    """The largest n whose ``peak_of(n)`` is at most ``limit_bytes - margin_bytes``, for a peak that costs
    nothing to count but time (a jitted JAX step's compiled analysis: it never runs). ``points``: the sizes
    counted already; ``estimate``: the answer the line gives, tried first. Then the secant through the two
    counted sizes nearest the boundary, galloping up while sizes fit and, once one does not, interpolating
    between the largest that fits and the smallest that does not (a bisection where one side stays put twice),
    until they are neighbours: at most ``most`` counts beyond ``points``, each size counted once. The answer is
    always a size counted to fit (or 0), so never above the truth where the peak does not fall as n grows; with
    the counts spent before the neighbours are found, it is the largest counted to fit. Not above ``at_most``."""
    room = limit_bytes - margin_bytes
    known = dict(_ordered(points)) if points else {}

    def fitting() -> list[int]:
        return sorted(n for n, p in known.items() if p <= room)

    fits = max(fitting(), default=0)
    over = min((n for n, p in known.items() if p > room and n > fits), default=None)
    if at_most is not None and (over is None or over > at_most + 1):
        over = at_most + 1 if fits <= at_most else fits  # at_most + 1 counts as not fitting, uncounted
    guess: int | None = estimate
    moved = ""
    for _ in range(most):
        if over is not None and over - fits <= 1:
            break
        if guess is None:
            guess = _secant(known, fits, over, room, moved)
        candidate = max(fits + 1, guess if over is None else min(guess, over - 1))
        guess = None
        peak = known[candidate] = int(peak_of(candidate))
        if peak <= room:
            moved = "up" if moved != "up" else "up twice"
            fits = candidate
        else:
            moved = "down" if moved != "down" else "down twice"
            over = candidate
    return fits if at_most is None else min(fits, at_most)


def _secant(known: dict[int, int], fits: int, over: int | None, room: int, moved: str) -> int:
    """The next size exact_largest counts: on the line through the nearest counted sizes either side of the
    boundary (or the two largest that fit, while none is known not to), rounded down."""
    if over is not None and over in known and fits in known:
        if moved.endswith("twice"):
            return (fits + over) // 2
        p1, p2 = known[fits], known[over]
        return fits + math.floor((room - p1) * (over - fits) / (p2 - p1)) if p2 > p1 else (fits + over) // 2
    if over is not None:  # the upper end is at_most + 1, never counted
        return over - 1 if fits not in known or known[fits] <= room else (fits + over) // 2
    below = sorted(n for n in known if n < fits)
    if fits not in known or not below or known[fits] <= known[below[-1]]:
        return 2 * max(fits, 1)
    n1, p1 = below[-1], known[below[-1]]
    slope = (known[fits] - p1) / (fits - n1)
    return fits + max(1, math.floor((room - known[fits]) / slope))


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
