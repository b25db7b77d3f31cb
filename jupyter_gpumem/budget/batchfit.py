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

from jupyter_gpumem.units import MiB

# A point is on the line when it is within this share of its own peak, or within FLOOR_BYTES, whichever is larger:
# allocators round each block (PyTorch to 512 bytes, TensorFlow's BFC to 256 bytes and its bins) and keep a
# workspace or two whose size does not follow the batch exactly.
TOLERANCE = 0.05
FLOOR_BYTES = 1 * MiB
# The sizes measured by default: small enough to run beside anything, far enough apart to show the slope.
SIZES = (2, 4, 8, 16)


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

    def peak(self, n: int) -> float:
        """The predicted peak at batch size ``n``."""
        return self.fixed + self.per_sample * n


def fit(points: Sequence[tuple[int, int]]) -> Fit:
    """The line through measured (batch size, peak bytes) points.

    - Three or more distinct sizes: the least-squares line. It is ``linear`` when every point lies within
      5% of its own peak or 1 MiB of it, whichever is larger (TOLERANCE, FLOOR_BYTES). When one does not (memory
      that grows as n², attention; a first step that made lazy state), the line returned is the conservative
      one: through the point of the largest size, at the steeper of the least-squares slope and the slope
      between the two largest sizes, so that beyond the measured sizes it lies above both.
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
    count = len(ordered)
    mean_n = sum(n for n, _ in ordered) / count
    mean_p = sum(p for _, p in ordered) / count
    spread = sum((n - mean_n) ** 2 for n, _ in ordered)
    slope = sum((n - mean_n) * (p - mean_p) for n, p in ordered) / spread
    fixed = mean_p - slope * mean_n
    residuals = [abs(p - (fixed + slope * n)) for n, p in ordered]
    worst = max((r / p if p else (0.0 if r == 0 else math.inf)) for r, (_, p) in zip(residuals, ordered, strict=True))
    on_line = all(r <= max(TOLERANCE * p, FLOOR_BYTES) for r, (_, p) in zip(residuals, ordered, strict=True))
    if count >= 3 and on_line:
        return Fit(fixed, slope, True, worst)
    (n1, p1), (n2, p2) = ordered[-2], ordered[-1]
    steeper = max(slope, (p2 - p1) / (n2 - n1))
    top = max(p2, fixed + slope * n2)
    return Fit(top - steeper * n2, steeper, False, worst)


def largest_under(fit: Fit, limit_bytes: int, margin_bytes: int, *, at_most: int | None = None) -> int:
    """The largest n with ``fixed + per_sample * n <= limit_bytes - margin_bytes``; 0 when not even n = 1 fits.

    Where the peak does not grow with n (``per_sample`` <= 0: the step ignores the batch, or the allocator
    measured does not see its memory), the line sets no bound: the answer is ``at_most`` when the fixed part
    fits, and without ``at_most`` that is a ValueError, since no batch size follows from the line."""
    room = limit_bytes - margin_bytes
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
    points: Sequence[tuple[int, int]], sizes: Sequence[int], limit_bytes: int, margin_bytes: int
) -> int | None:
    """The next of ``sizes`` to measure: the smallest not measured yet, above every size measured, that the
    points so far predict will fit under ``limit_bytes - margin_bytes``; None when there is none (then the
    measuring stops). Before any point only the smallest size is offered, and only where there is room at all;
    a size is never offered that the line through the points so far (fit's) puts above the room."""
    room = limit_bytes - margin_bytes
    if room <= 0:
        return None
    measured = {n for n, _ in points}
    above = max(measured, default=0)
    candidates = sorted(n for n in set(sizes) if n > above and n >= 1)
    if not candidates:
        return None
    if not points:
        return candidates[0]
    line = fit(points)
    if any(peak > room for _, peak in points):
        return None  # a measured step already went past the room: nothing larger is run
    return candidates[0] if line.peak(candidates[0]) <= room else None
