"""The largest batch that fits, predicted from a few measured ones (issue 36, story S5): a step's peak memory
grows with its batch size n, often as ``peak = fixed + per_sample * n`` (the weights, their gradients and the
optimiser's state are fixed; activations and temporaries grow with n), but not always: a peak may be the larger
of two moments (the optimiser's update up to some size, the activations beyond), or grow a little faster than a
line (XLA's temporaries). Pure arithmetic on (n, peak) pairs: which size to measure next (``next_size``), the
line the answer rests on (``fit``, ``largest_under``), the answer of a step that runs counted before it is given
(``checked_largest``: a peak need not lie on any curve, issue 45), and for a step whose peak costs nothing to
count (a jitted JAX step, compiled, never run) the exact largest size (``exact_largest``). The kernel's
``largest_batch`` measures the points through a framework's allocator, and the out-of-memory advice uses
``largest_under`` with the figures of the tensor that failed.
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
# The answer of a step that runs is counted before it is given (checked_largest, issue 45): at most this many
# steps after the measuring, each at a size the points counted so far predict will fit.
CHECK_MOST = 12
# The search near the answer stops once the largest size counted to fit is within this share of the smallest one
# counted not to, or of the size the line predicts next: one more step would gain less than that.
CLOSE = 0.05
# Of those steps, at most this many count again a size counted above a larger one (noise, or the step's shape?
# checked_largest).
CONFIRM_MOST = 4


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
    anchor and the size measured before it) and the least-squares slope, and of the segment from the anchor to
    the next size measured, which went past the room (a check of the answer that did not fit). Beyond the anchor
    it lies above them: a peak that is flat and then rises (the optimiser's update, then the activations) has its
    rising slope in the last segment, which the least-squares line through the flat points would hide.

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
    # A size counted above the anchor went past the room: the peak rose at least as steeply as the line to it.
    after = next((point for point in ordered if point[0] > anchor[0]), None)
    beyond = (after[1] - anchor[1]) / (after[0] - anchor[0]) if after is not None else -math.inf
    if not before:  # the anchor is the smallest size: the least-squares line through the anchor
        slope = max(report.per_sample, beyond)
        return Fit(anchor[1] - slope * anchor[0], slope, report.linear, report.worst_residual, report.from_size)
    (n1, p1), (n2, p2) = before[-1], anchor
    last = (p2 - p1) / (n2 - n1)
    slope = max(report.per_sample, last, beyond)
    square = 0.0
    if len(before) >= 2:
        n0, p0 = before[-2]
        previous = (p1 - p0) / (n1 - n0)
        if (last - previous) * (n2 - n1) > FLOOR_BYTES:  # beyond the allocator's rounding
            # Still growing faster: the slope grows on as it did between the two segments' middles, and the
            # tangent at the anchor is steeper than the last segment's slope by half a segment of that growth.
            growth = (last - previous) / ((n2 - n0) / 2)
            slope = max(report.per_sample, last + growth * (n2 - n1) / 2, beyond)
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
    - From two points on, each next size is predicted from the last point at the *steepest* slope of any segment so far
      (between consecutive sizes, less the ``jitter`` seen: noise, not a slope), so that a flat start neither stops
      nor misleads the search, and it may take at most half of the room left above the last point, divided by the
      caution: 1, or up to CAUTION where the last segment is that many times steeper than the one before (a bend inside
      it: its slope is then a lower bound). The next size is the next of ``sizes``, else twice the last, where that is
      within reach; else the farthest size within reach, a smaller step towards the answer, unless the last two slopes
      agree within SETTLED (a line: the answer is extrapolated from there) or the step would be under a sixteenth of the
      last size (the extrapolation left is then at most about half of it).
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
    # As much of a rise as a fall seen between counts is the counter's noise, not a slope: a segment steep by noise
    # would otherwise keep every later step small, and the points might never leave the noise (TensorFlow's MLP on
    # the CPU once stopped at 104, counted lower there than at 1: 27 and 29 MiB).
    noise = jitter(ordered)
    slopes = [max(0, p2 - p1 - noise) / (n2 - n1) for (n1, p1), (n2, p2) in itertools.pairwise(ordered)]
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


def jitter(points: Sequence[tuple[int, int]], smallest: int = 1, *, told: bool = False) -> int:
    """The most a counted peak lies above one counted at the same or a larger size: 0 where the counts grow with
    the batch. More samples rarely need less memory, so such a fall is taken for the counter's noise (a BFC
    allocator hands a tensor a free chunk up to twice its size without splitting it, so its count depends on what
    ran before) or an allocator's rounding of its blocks, which no curve through the points shows. A fall of at
    most FLOOR_BYTES counts as none (the rounding of small blocks, within the tolerance of a line). Only the points
    from ``smallest`` on count: the noise of the sizes near an answer, not of small ones (where a buffer that the
    framework keeps once a larger step made it counts as a fall too).

    ``told``: a fall from a size counted at least twice (after other steps), each time that high, is the step's own
    shape, not noise: another algorithm at another size (TensorFlow's CNN on the CPU counts 57.0 MiB at 160 and
    48.9 MiB at 175, every time). The noise of a count that moves with what ran before only adds (a chunk larger
    than the tensor), so a fall's lower count is not in doubt, its higher one is until counted again; the spread of
    one size's counts still counts. The sizes such a fall waits on are ``unconfirmed``'s."""
    counts = _by_size(points, smallest)
    worst = _spread(counts)
    for smaller, _, fall in _falls(counts):
        if not (told and len(counts[smaller]) > 1):
            worst = max(worst, fall)
    return worst if worst > FLOOR_BYTES else 0


def unconfirmed(points: Sequence[tuple[int, int]], smallest: int, room_bytes: int) -> list[int]:
    """The size counted once above a larger one by the most, where that fall widens ``jitter`` beyond the spread of
    one size's counts: counted once more, a fall that stays is the step's shape (``jitter(told=True)`` leaves it
    out), one that goes was noise (and the size's two counts now differ by it). Not a size whose count went past
    ``room_bytes`` (a size counted past it is not run again)."""
    counts = _by_size(points, smallest)
    spread = _spread(counts)
    falls = [
        (fall, smaller)
        for smaller, _, fall in _falls(counts)
        if fall > max(spread, FLOOR_BYTES) and len(counts[smaller]) == 1 and counts[smaller][0] <= room_bytes
    ]
    return [max(falls)[1]] if falls else []


def _by_size(points: Sequence[tuple[int, int]], smallest: int) -> dict[int, list[int]]:
    counts: dict[int, list[int]] = {}
    for n, peak in points:
        if n >= smallest:
            counts.setdefault(n, []).append(peak)
    return counts


def _spread(counts: dict[int, list[int]]) -> int:
    """The most one size's counts lie apart."""
    return max((max(peaks) - min(peaks) for peaks in counts.values()), default=0)


def _falls(counts: dict[int, list[int]]) -> list[tuple[int, int, int]]:
    """(smaller size, larger size, bytes): where the larger size was counted lower than the smaller (its lowest
    count below the smaller's highest), by how much."""
    sizes = sorted(counts)
    return [
        (a, b, max(counts[a]) - min(counts[b]))
        for i, a in enumerate(sizes)
        for b in sizes[i + 1 :]
        if max(counts[a]) > min(counts[b])
    ]


@dataclass(frozen=True)
class Checked:
    """What ``checked_largest`` found. ``batch_size``: the largest size counted to fit (0: none); ``estimate``:
    the line's answer through the measured points, before anything was checked; ``counted``: the (size, peak)
    pairs it counted, in order; ``widened_bytes``: what the margin was widened by for the counts' jitter;
    ``exhausted``: its steps ran out before the search settled (the answer is still a size counted to fit)."""

    batch_size: int
    estimate: int
    counted: tuple[tuple[int, int], ...] = ()
    widened_bytes: int = 0
    exhausted: bool = False


def checked_largest(
    peak_of: Callable[[int], int],
    points: Sequence[tuple[int, int]],
    limit_bytes: int,
    margin_bytes: int,
    *,
    most: int = CHECK_MOST,
    at_most: int | None = None,
    recount: int = 0,
) -> Checked:
    """The answer of a step that runs, counted before it is given: never a size whose counted peak went past the
    room, so never above the largest size that fits where the count is the truth's (issue 45).

    A step's peak need not lie on the curve fitted to it: TensorFlow's BFC allocator hands out whole chunks, so
    its count is a step function of n (and moves with what ran before); a step may change shape past the sizes
    measured (another convolution algorithm, another chunking). Each round takes the largest size the points
    counted so far predict to fit (``predicted_largest``: the room is the limit less the margin, widened by the
    points' ``jitter``), below the smallest size counted not to, and halfway to the largest size counted to fit
    after two counts in a row that did not (a step in the peak, which the prediction would creep up to); and
    counts it with ``peak_of``. So a size is counted only
    where the points so far predict it fits, and a step past the limit is never run on purpose. The first round
    counts the prediction from the measured points (the estimate); the rounds stop when the next prediction is no
    more than CLOSE above the largest size counted to fit, or that one is within CLOSE of the smallest size
    counted not to, or after ``most`` counts. A size fits where its lowest count, plus the widening, is at most
    ``limit_bytes - margin_bytes`` (so every count of it is, the widening being at least their spread). The answer
    is the largest size counted to fit: in the common case the estimate, one step. Not above ``at_most``.

    ``recount``: for an allocator whose count of one size depends on what ran before it (a BFC allocator hands a
    tensor a free chunk up to twice its size without splitting it), the answer found is counted this many times
    more, each after a step at another size (the smallest measured, then half the answer): where the counts
    differ, the margin widens (``predicted_largest``) and the search goes on below. A fall from one size to a
    larger one widens it too, unless the smaller size, counted again after a step at the smallest size, is as
    high (``unconfirmed``: the step's shape, not noise; at most CONFIRM_MOST such steps). Those steps count among
    the ``most``.

    ``points``: the measured sizes (at least one); one point is not extrapolated."""
    known = list(points)
    counted: list[tuple[int, int]] = []
    estimate: int | None = None
    exhausted = False
    confirmed = 0  # steps that counted a fall's higher size again, and the steps before them (``unconfirmed``)

    def count(n: int) -> None:
        peak = int(peak_of(n))
        known.append((n, peak))
        counted.append((n, peak))

    # The noise that counts is that of the sizes from a quarter of the largest measured size that fits on: fixed
    # before the checks, so that counts far above the measured sizes do not leave the noise seen there behind.
    near = max((n for n, p in _ordered(points) if p <= limit_bytes - margin_bytes), default=0) // 4
    while True:
        # Where the count moves with what ran before, a fall from one size to a larger one may be that noise or the
        # step's own shape: the higher size is counted once more, after a step at the smallest size (another
        # history), to tell which.
        unsure = unconfirmed(known, near, limit_bytes - margin_bytes) if recount else []
        if unsure and confirmed + 2 <= CONFIRM_MOST and len(counted) + 2 <= most:
            count(min(n for n, _ in known))
            count(unsure[0])
            confirmed += 2
            continue
        candidate, widened = predicted_largest(
            known, limit_bytes, margin_bytes, at_most=at_most, near=near, told=bool(recount)
        )
        room = limit_bytes - margin_bytes - widened
        ordered = _ordered(known)
        # A size fits where its lowest count, widened by the noise, does: its other counts are within the noise.
        lowest: dict[int, int] = {}
        for n, p in known:
            lowest[n] = min(p, lowest.get(n, p))
        fits = max((n for n, p in lowest.items() if p <= room), default=0)
        over = min((n for n, p in lowest.items() if p > room and n > fits), default=None)
        if room <= 0:
            fits = 0
            break
        if estimate is None:
            estimate = candidate
        if over is not None:
            candidate = min(candidate, over - 1)
            if len(counted) >= 2 and all(p > room for _, p in counted[-2:]):
                # Two counts in a row past the room: the peak jumps somewhere below them (a step, not a slope),
                # so halve the way to the size counted to fit; below the prediction, it is predicted to fit.
                candidate = min(candidate, (fits + over) // 2)
        settled = candidate <= fits or (
            bool(counted)
            and (candidate - fits <= CLOSE * candidate or (over is not None and over - fits <= CLOSE * over))
        )
        if not settled:
            if len(counted) >= most:
                exhausted = True
                break
            count(candidate)
            continue
        times = sum(n == fits for n, _ in known)
        if fits == 0 or times > recount:
            break
        if len(counted) + 2 > most:
            exhausted = True
            break
        # Another history: a step at the smallest size measured, then at half the answer (a size that fitted).
        count(ordered[0][0] if times == 1 else max(ordered[0][0], fits // 2))
        count(fits)
    if at_most is not None:
        fits = min(fits, at_most)
    return Checked(fits, estimate if estimate is not None else fits, tuple(counted), widened, exhausted)


def predicted_largest(
    points: Sequence[tuple[int, int]],
    limit_bytes: int,
    margin_bytes: int,
    *,
    at_most: int | None = None,
    near: int | None = None,
    told: bool = False,
) -> tuple[int, int]:
    """The largest size the counted points predict to fit, and what the margin is widened by for their jitter:
    ``(n, widened_bytes)``. The room is ``limit_bytes - margin_bytes - widened_bytes``, where the widening is the
    ``jitter`` of the points from ``near`` on (by default a quarter of the largest size that fits; ``told``: a fall
    from a size counted twice, as high both times, is the step's shape, not noise).

    The prediction is ``fit``'s (through the largest size that fits at the steepest recent slope, curving up where
    the slopes grew, steepened towards a size counted past the room) or, where the slopes of the points from
    ``near`` on rise and fall (a peak in steps, not a curve: one jump steepens the last slope), the least-squares
    line through them raised by the most a point lies above it, or by the widening where that is more (what the
    residuals show; then under the room the margin leaves, not widened a second time), whichever says more. One
    point is not extrapolated: its own size. A peak that does not grow sets no bound: the largest size that fits
    (``at_most`` where given). ``checked_largest`` counts only sizes at most this, so only sizes predicted to
    fit."""
    ordered = _ordered(points)
    if near is None:
        near = max((n for n, p in ordered if p <= limit_bytes - margin_bytes), default=0) // 4
    widened = jitter(points, near, told=told)
    room = limit_bytes - margin_bytes - widened
    fits = max((n for n, p in ordered if p <= room), default=0)
    if room <= 0:
        return 0, widened
    line = fit(points, room)
    candidate = fits
    if line.per_sample > 0 or line.per_square > 0 or at_most is not None:  # else the line sets no bound
        candidate = largest_under(line, limit_bytes, margin_bytes + widened, at_most=at_most)
    upper = [point for point in ordered if point[0] >= near]
    slopes = [(p2 - p1) / (n2 - n1) for (n1, p1), (n2, p2) in itertools.pairwise(upper)]
    stepped = any(later < earlier for earlier, later in itertools.pairwise(slopes))
    raised = _raised_line(upper, widened) if stepped else None
    if raised is not None:
        # Raised by the points' noise already: under the room as the margin leaves it, not widened a second time.
        candidate = max(candidate, largest_under(raised, limit_bytes, margin_bytes, at_most=at_most))
    if len(ordered) == 1:
        candidate = min(candidate, ordered[0][0])  # one point has no slope: nothing is extrapolated from it
    return candidate, widened


def _raised_line(ordered: Sequence[tuple[int, int]], widened: int) -> Fit | None:
    """The least-squares line through these points (three at least, growing), raised by the most a point lies
    above it, or by ``widened`` where that is more: above every one of them, as a prediction whose margin is what
    the residuals show."""
    if len(ordered) < 3:
        return None
    line = _least_squares(ordered)
    if line.per_sample <= 0:
        return None
    above = max(p - line.peak(n) for n, p in ordered)
    return Fit(line.fixed + max(0.0, above, widened), line.per_sample, line.linear, line.worst_residual, ordered[0][0])


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
