"""The largest batch that fits, from measured (batch size, peak) points: the line, whether the points are on
it, the largest n under a limit, which size to measure next (never one the points predict will not fit), and
the exact search of a step whose peak costs only a compile, and the check of a step's answer: counted before it is
given, never above the truth, never a size the counts predict will not fit (issue 45)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jupyter_gpumem.budget.batchfit import (
    CHECK_MOST,
    EXACT_MOST,
    SIZES,
    Fit,
    checked_largest,
    default_margin,
    exact_largest,
    fit,
    jitter,
    largest_under,
    next_size,
    predicted_largest,
    unconfirmed,
)
from jupyter_gpumem.units import GiB, MiB


def test_points_on_a_line_give_its_fixed_part_and_slope():
    line = fit([(2, 500 * MiB + 2 * 3 * MiB), (4, 500 * MiB + 4 * 3 * MiB), (8, 500 * MiB + 8 * 3 * MiB)])
    assert line.linear
    assert line.fixed == pytest.approx(500 * MiB)
    assert line.per_sample == pytest.approx(3 * MiB)
    assert line.worst_residual == pytest.approx(0, abs=1e-9)


def test_a_point_off_the_line_by_more_than_five_percent_and_a_mib_is_not_linear():
    square = [(n, 100 * MiB + n * n * 2 * MiB) for n in (2, 4, 8, 16)]
    line = fit(square)
    assert not line.linear
    assert line.worst_residual > 0.05
    # The parabola through the three largest: exact for n².
    assert line.per_square == pytest.approx(2 * MiB) and line.peak(100) == pytest.approx(100 * MiB + 20000 * MiB)
    assert largest_under(line, 100 * MiB + 2 * 99 * 99 * MiB, 0) == 99


def test_memory_that_grows_slower_at_the_largest_sizes_gets_the_cautious_line():
    points = [(2, 10 * MiB), (4, 20 * MiB), (8, 30 * MiB), (16, 36 * MiB)]
    line = fit(points)
    assert not line.linear and line.per_square == 0
    assert line.peak(16) >= 36 * MiB and line.per_sample >= (36 - 30) * MiB / 8


def test_small_wobbles_within_the_tolerance_keep_the_line():
    wobbly = [(2, 200 * MiB), (4, 210 * MiB + 3 * MiB), (8, 230 * MiB), (16, 270 * MiB - 3 * MiB)]
    assert fit(wobbly).linear


def test_the_tolerance_has_a_floor_of_4_kib_for_small_peaks():
    # 3 KiB off on peaks of 20-40 KiB: more than 5%, less than the floor; 12 KiB off is off the line.
    assert fit([(2, 20 * 1024), (4, 25 * 1024 + 3 * 1024), (8, 40 * 1024)]).linear
    assert not fit([(2, 20 * 1024), (4, 25 * 1024 + 12 * 1024), (8, 40 * 1024)]).linear


def test_small_sizes_off_the_line_of_the_large_ones_are_left_out():
    # The weights' gradients make the peak up to 32; from 64 on the activations do, 3 KiB a sample.
    points = [(2, 152 * 1024), (4, 153 * 1024), (8, 154 * 1024), (16, 156 * 1024), (32, 158 * 1024)]
    points += [(n, 40 * 1024 + 3 * 1024 * n) for n in (64, 128, 256)]
    line = fit(points)
    assert line.linear and line.from_size == 64
    assert (line.fixed, line.per_sample) == pytest.approx((40 * 1024, 3 * 1024))


def test_two_points_make_a_line_nothing_checks():
    line = fit([(2, 10 * MiB), (4, 14 * MiB)])
    assert not line.linear
    assert (line.fixed, line.per_sample) == pytest.approx((6 * MiB, 2 * MiB))


def test_one_point_counts_all_of_its_peak_as_growing_with_n():
    line = fit([(4, 40 * MiB)])
    assert (line.fixed, line.per_sample, line.linear) == (0, 10 * MiB, False)


def test_no_points_or_impossible_ones_are_programming_errors():
    with pytest.raises(ValueError, match="no measured points"):
        fit([])
    with pytest.raises(ValueError, match="size of at least 1"):
        fit([(0, 5)])


def test_largest_under_the_limit_less_the_margin():
    line = Fit(fixed=500 * MiB, per_sample=3 * MiB, linear=True, worst_residual=0.0)
    # 500 + 3n <= 1000 - 10  ->  n <= 163.33
    assert largest_under(line, 1000 * MiB, 10 * MiB) == 163
    assert largest_under(line, 1000 * MiB, 10 * MiB, at_most=100) == 100
    assert largest_under(line, 500 * MiB + 3 * MiB, 0) == 1  # exactly on the limit fits
    assert largest_under(line, 500 * MiB + 3 * MiB - 1, 0) == 0
    assert largest_under(line, 400 * MiB, 0) == 0  # not even the fixed part fits


def test_a_peak_that_does_not_grow_sets_no_bound_and_says_so():
    flat = Fit(fixed=100 * MiB, per_sample=0.0, linear=True, worst_residual=0.0)
    assert largest_under(flat, GiB, 0, at_most=10000) == 10000
    assert largest_under(flat, 50 * MiB, 0, at_most=10000) == 0
    with pytest.raises(ValueError, match="does not grow with the batch size"):
        largest_under(flat, GiB, 0)


@given(
    fixed=st.integers(0, 8 * GiB),
    per_sample=st.integers(1, 64 * MiB),
    limit=st.integers(0, 16 * GiB),
    margin=st.integers(0, GiB),
)
def test_the_answer_fits_and_one_more_does_not(fixed, per_sample, limit, margin):
    line = Fit(float(fixed), float(per_sample), True, 0.0)
    n = largest_under(line, limit, margin)
    assert n >= 0
    if n > 0:
        assert fixed + per_sample * n <= limit - margin
    assert fixed + per_sample * (n + 1) > limit - margin


@given(
    fixed=st.integers(0, 4 * GiB),
    per_sample=st.integers(1, 64 * MiB),
    limit=st.integers(1, 16 * GiB),
)
def test_measuring_never_offers_a_size_the_points_predict_will_not_fit(fixed, per_sample, limit):
    points: list[tuple[int, int]] = []
    margin = limit // 20
    while (n := next_size(points, (2, 4, 8, 16), limit, margin)) is not None:
        if len(points) >= 2:
            assert fit(points).peak(n) <= limit - margin
        points.append((n, fixed + per_sample * n))
    if len(points) >= 3:
        line = fit(points)
        assert line.linear and line.per_sample == pytest.approx(per_sample, rel=1e-6, abs=1e-3)


def test_the_first_size_is_measured_only_where_there_is_room():
    assert next_size([], (2, 4, 8, 16), 10 * MiB, MiB) == 2
    assert next_size([], (2, 4, 8, 16), MiB, MiB) is None
    assert next_size([], (16, 4), GiB, 0) == 4


def test_after_a_step_past_the_room_nothing_larger_is_run():
    assert next_size([(2, 10 * MiB), (4, 30 * MiB)], (2, 4, 8), 25 * MiB, 0) is None


def test_each_next_size_takes_at_most_half_of_the_room_left():
    points = [(2, 100 * MiB + 20 * MiB), (4, 100 * MiB + 40 * MiB)]  # 10 MiB a sample
    assert next_size(points, (2, 4, 8, 16), 220 * MiB, 0) == 8  # 40 of the 80 MiB left
    assert next_size(points, (2, 4, 8, 16), 200 * MiB, 0) == 7  # 8 would take 40 of 60: a smaller step
    on_line = [*points, (8, 180 * MiB)]
    # The last two slopes agree (a line) and 16 would take 80 of the 70 MiB left: the answer is extrapolated.
    assert next_size(on_line, (2, 4, 8, 16), 250 * MiB, 0) is None


def largest_batch_of(peak, limit, sizes=SIZES):
    """What largest_batch does with a step whose peak at n is peak(n): the sizes it measures, its answer, and
    the truth (the largest n whose peak is under the limit less the default margin)."""
    margin = default_margin(limit)
    points: list[tuple[int, int]] = []
    while (n := next_size(points, sizes, limit, margin)) is not None:
        points.append((n, peak(n)))
    answer = largest_under(fit(points, limit - margin), limit, margin)
    truth = next(n for n in range(1, 10**6) if peak(n + 1) > limit - margin)
    return [n for n, _ in points], answer, truth


def test_a_peak_flat_and_then_rising_is_not_taken_for_flat():
    # PyTorch's MLP on MemTracker: the optimiser's update (21.3 MiB) is the peak up to 768, then the activations,
    # 16 KiB a sample, are. Doubling goes on through the flat part, and the bend in 512-1024 is measured past.
    def peak(n: int) -> int:
        return max(21840 * 1024, 7324 * 1024 + 16 * 1024 * n)

    for limit in (32 * MiB, 64 * MiB):
        sizes, answer, truth = largest_batch_of(peak, limit)
        assert sizes[:11] == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
        assert max(sizes) > 1024 and all(peak(n) <= limit for n in sizes)
        assert answer == truth  # 1487 and 3433: two points past the bend give the slope exactly


def test_the_steepest_slope_so_far_predicts_the_next_size():
    # 2 MiB a sample from 1 to 2, 0.5 MiB from 2 to 4: 8 would take 8 MiB at 2 MiB a sample, more than half of
    # the 7 MiB left, so a smaller step (5) is taken; at the last slope 8 would have looked like 2 MiB.
    points = [(1, 10 * MiB), (2, 12 * MiB), (4, 13 * MiB)]
    assert next_size(points, SIZES, 20 * MiB, 0) == 5


def test_one_point_is_never_extrapolated_through_the_origin():
    # 21 MiB at 1 under 30.4 MiB of room: through the origin 2 would need 42 MiB, but a step at 2 is one sample
    # more, so it runs and the two points give the slope.
    assert next_size([(1, 21 * MiB)], SIZES, 32 * MiB, 32 * MiB // 20) == 2
    # A first size that does not fit stops everything; a jump of more than double waits for a slope.
    assert next_size([(1, 33 * MiB)], SIZES, 32 * MiB, 0) is None
    assert next_size([(16, 21 * MiB)], (16, 64), GiB, 0) is None


def test_memory_growing_as_n_squared_is_approached_from_below():
    sizes, answer, truth = largest_batch_of(lambda n: 16 * 1024 * n * n + 1000, GiB)
    assert truth == 249 and 0.9 * truth <= answer <= truth
    assert max(sizes) <= answer


def test_the_exact_search_finds_the_largest_size_under_the_room_in_a_few_counts():
    counted: list[int] = []

    def peak(n: int) -> int:  # XLA-like: temporaries that grow a little faster than a line, in steps of 64
        counted.append(n)
        return 14 * MiB + 12 * 1024 * n + ((n * n) // 4096) * 64

    limit = 256 * MiB
    room = limit - default_margin(limit)
    truth = next(n for n in range(1, 10**6) if peak(n + 1) > room)
    counted.clear()
    points = [(n, peak(n)) for n in (1, 2, 4, 8)]
    counted.clear()
    estimate = largest_under(fit(points, room), limit, default_margin(limit))
    assert estimate > truth  # the line from the small sizes is above it
    found = exact_largest(peak, points, limit, default_margin(limit), estimate)
    assert found == truth and len(counted) <= EXACT_MOST and len(set(counted)) == len(counted)
    assert exact_largest(peak, points, limit, default_margin(limit), estimate, at_most=1000) == 1000


# ---------------------------------------------------------------------- the answer counted before it is given


def bfc_like(n: int) -> int:
    """A peak in steps, as TensorFlow's BFC allocator counts it: the weights, then an activation rounded up to a
    power of two (a chunk of its bin) and a little per sample on top."""
    return 20 * MiB + 2 ** math.ceil(math.log2(300 * 1024 * n)) + 100 * 1024 * n


def measured_points(peak, limit, sizes=SIZES):
    margin = default_margin(limit)
    points: list[tuple[int, int]] = []
    while (n := next_size(points, sizes, limit, margin)) is not None:
        points.append((n, peak(n)))
    return points


def truth_of(peak, room):
    """The largest n whose peak is at most the room, for a peak that does not fall as n grows (bisection)."""
    fits, over = 0, 1
    while peak(over) <= room:
        fits, over = over, 2 * over
    while over - fits > 1:
        middle = (fits + over) // 2
        fits, over = (middle, over) if peak(middle) <= room else (fits, middle)
    return fits


def guarded(peak, limit, margin, known):
    """A counter that fails the test if it is asked for a size the points counted so far do not predict to fit,
    and records what it counted into ``known``."""

    # The sizes whose noise counts, as checked_largest fixes them: from a quarter of the largest measured that fits.
    near = max((n for n, p in known if p <= limit - margin), default=0) // 4

    def count(n: int) -> int:
        predicted, _ = predicted_largest(known, limit, margin, near=near)
        assert n <= predicted, f"counted {n}, above {predicted}, the largest the points predict to fit"
        known.append((n, peak(n)))
        return known[-1][1]

    return count


def test_a_peak_in_steps_made_the_line_answer_above_the_truth_and_the_check_does_not():
    limit = 300 * MiB
    margin = default_margin(limit)
    points = measured_points(bfc_like, limit)
    truth = truth_of(bfc_like, limit - margin)
    line = largest_under(fit(points, limit - margin), limit, margin)
    assert line > truth  # the line's answer (before issue 45) would run out of memory: 443 > 436
    found = checked_largest(bfc_like, points, limit, margin)
    assert found.estimate == line and found.counted[0] == (line, bfc_like(line))  # counted, did not fit
    assert 0.9 * truth <= found.batch_size <= truth
    assert bfc_like(found.batch_size) <= limit - margin and not found.exhausted
    assert len(found.counted) <= CHECK_MOST


@settings(deadline=None)
@given(
    fixed=st.integers(0, 200 * MiB),
    per_sample=st.integers(1024, 4 * MiB),
    chunk=st.sampled_from([0, 64 * 1024, MiB, 8 * MiB]),
    power=st.booleans(),
    limit=st.integers(16 * MiB, 4 * GiB),
)
def test_the_answer_is_never_above_the_truth_and_nothing_counted_was_predicted_not_to_fit(
    fixed, per_sample, chunk, power, limit
):
    def peak(n: int) -> int:  # a line, rounded up to chunks or to powers of two: never falling as n grows
        grown = per_sample * n
        if power:
            grown = 2 ** math.ceil(math.log2(grown))
        elif chunk:
            grown = -(-grown // chunk) * chunk
        return fixed + grown

    margin = default_margin(limit)
    points = measured_points(peak, limit)
    if not points:
        return
    known = list(points)
    found = checked_largest(guarded(peak, limit, margin, known), points, limit, margin)
    truth = truth_of(peak, limit - margin)
    assert found.batch_size <= truth
    assert found.batch_size == 0 or peak(found.batch_size) <= limit - margin  # a size counted to fit
    assert len(found.counted) <= CHECK_MOST


def test_on_a_line_the_check_is_one_step_at_the_line_answer():
    def peak(n: int) -> int:
        return 500 * MiB + 3 * MiB * n

    limit = 2 * GiB
    points = measured_points(peak, limit)
    found = checked_largest(peak, points, limit, default_margin(limit))
    assert found.counted == ((found.estimate, peak(found.estimate)),)
    assert found.batch_size == found.estimate == truth_of(peak, limit - default_margin(limit))
    assert found.widened_bytes == 0


def test_counts_that_fall_as_the_batch_grows_widen_the_margin_by_the_fall():
    # The counter's noise: a count 3 MiB above the line at every third size.
    def line(n: int) -> int:
        return 50 * MiB + 10 * 1024 * n

    def peak(n: int) -> int:
        return line(n) + (3 * MiB if n % 3 == 0 else 0)

    points = [(n, peak(n)) for n in (64, 96, 128, 150, 160)]  # 150 counted 3 MiB up, 160 not: a fall
    assert jitter(points) == peak(150) - peak(160) > 2 * MiB
    assert jitter(points, smallest=155) == 0  # from there on the counts grow
    limit = 60 * MiB  # the answer near those sizes: their noise is the answer's
    margin = default_margin(limit)
    known = list(points)
    found = checked_largest(guarded(peak, limit, margin, known), points, limit, margin)
    assert found.widened_bytes >= jitter(points)
    room = limit - margin
    assert peak(found.batch_size) + found.widened_bytes <= room  # fits with the noise seen to spare
    assert found.batch_size <= truth_of(lambda n: line(n) + found.widened_bytes, room)
    assert found.batch_size > max(n for n, p in points if p <= room - found.widened_bytes)  # and above the measured


def test_a_count_that_moves_with_what_ran_before_is_counted_thrice_and_the_margin_widens_by_its_spread():
    runs: list[int] = []

    def peak(n: int) -> int:  # 4 MiB more after a step at a much smaller size: its chunks carved small
        moved = 4 * MiB if runs and runs[-1] < n / 4 else 0
        runs.append(n)
        return 20 * MiB + 200 * 1024 * n + moved

    limit = 128 * MiB
    margin = default_margin(limit)
    points = [(n, peak(n)) for n in (1, 2, 4, 8, 16, 32, 64, 128, 256)]
    found = checked_largest(peak, points, limit, margin, recount=2)
    sizes = [n for n, _ in found.counted]
    assert sizes[1] == 1 and sizes[2] == sizes[0]  # counted again after a step at the smallest size
    assert found.widened_bytes == 4 * MiB  # the two counts' spread
    room = limit - margin
    counts = [p for n, p in found.counted if n == found.batch_size]
    assert len(counts) == 3 and max(counts) <= room and min(counts) + found.widened_bytes <= room
    worst = truth_of(lambda n: 24 * MiB + 200 * 1024 * n, room)  # the count after a small step, at every size
    assert 0.9 * worst <= found.batch_size <= worst and len(found.counted) <= CHECK_MOST
    plain = checked_largest(peak, points, limit, margin)
    assert [n for n, _ in plain.counted].count(plain.batch_size) <= 1  # without recount: one count


def test_a_count_high_by_noise_at_a_small_size_does_not_keep_the_measuring_small():
    # TensorFlow's MLP on the CPU (benchmark, 2026-11-29) stopped measuring at 104, counted lower there than at 1
    # (27 and 29 MiB), and largest_batch answered that no batch size follows. Here a count 2 MiB high at 2, taken
    # for a slope of 2 MiB per sample, kept every later step small; the fall from 2 to 4 shows it is noise.
    def peak(n: int) -> int:
        return 28 * MiB + 20 * 1024 * n + (2 * MiB if n == 2 else 0)

    limit = 64 * MiB
    points = measured_points(peak, limit)
    room = limit - default_margin(limit)
    assert all(p <= room for _, p in points)
    assert max(n for n, _ in points) >= truth_of(lambda n: 28 * MiB + 20 * 1024 * n, room) // 4
    assert fit(points, room).per_sample > 0


def stepped_down(n: int) -> int:
    """A peak that falls once as the batch grows, every time it is counted: TensorFlow's CNN on the CPU counts
    57.0 MiB at 160 and 48.9 MiB at 175 whatever ran before (benchmarks/tf_counts.py, 2026-11-29: another
    convolution algorithm at another size). Here 12 MiB more below 170."""
    return 30 * MiB + 160 * 1024 * n + (12 * MiB if n < 170 else 0)


def test_a_fall_that_a_second_count_repeats_is_the_steps_shape_and_does_not_widen_the_margin():
    points = [(n, stepped_down(n)) for n in (1, 2, 4, 8, 16, 32, 64, 160, 200, 256)]
    fall = stepped_down(160) - stepped_down(200)
    assert jitter(points) == fall > 5 * MiB  # counted once each, the fall is taken for noise
    assert unconfirmed(points, 64, 96 * MiB) == [160]  # the size above a larger one by the most
    twice = [*points, (160, stepped_down(160))]
    assert jitter(twice, told=True) == 0 < jitter(twice) == fall  # as high twice: the step's shape
    assert unconfirmed(twice, 64, 96 * MiB) == []

    limit = 96 * MiB
    margin = default_margin(limit)
    room = limit - margin
    truth = max(n for n in range(1, 2000) if stepped_down(n) <= room)
    found = checked_largest(stepped_down, points, limit, margin, recount=2)
    counted = [n for n, _ in found.counted]
    assert counted[:2] == [1, 160]  # the size above a larger one, counted again first, after the smallest
    assert found.widened_bytes == 0
    assert 0.95 * truth <= found.batch_size <= truth
    plain = checked_largest(stepped_down, points, limit, margin)  # a counter that never moves: nothing confirmed
    assert 160 not in [n for n, _ in plain.counted] and plain.widened_bytes == fall


def test_a_fall_that_a_second_count_does_not_repeat_was_noise_and_widens_the_margin():
    counted: list[int] = []

    def peak(n: int) -> int:  # 12 MiB more the first time 160 is counted only: what ran before, not the size
        counted.append(n)
        return 30 * MiB + 160 * 1024 * n + (12 * MiB if n == 160 and counted.count(160) == 1 else 0)

    points = [(n, peak(n)) for n in (1, 2, 4, 8, 16, 32, 64, 160, 200, 256)]
    limit = 96 * MiB
    margin = default_margin(limit)
    found = checked_largest(peak, points, limit, margin, recount=2)
    assert found.counted[1] == (160, peak(160))  # counted again: 12 MiB lower
    assert found.widened_bytes == 12 * MiB  # 160's two counts differ by that: the count's noise
    assert peak(found.batch_size) + 12 * MiB <= limit - margin


def test_a_size_counted_past_the_room_is_not_counted_again_to_confirm_a_fall():
    # 100 past a room of 88 MiB falls by 10 MiB to 120; 130 falls by 2 MiB to 140
    points = [(100, 90 * MiB), (120, 80 * MiB), (130, 84 * MiB), (140, 82 * MiB)]
    assert unconfirmed(points, 1, 88 * MiB) == [130]


def test_a_size_counted_past_the_room_steepens_the_line_from_the_largest_that_fits():
    points = [(2, 10 * MiB), (4, 12 * MiB), (8, 16 * MiB), (16, 60 * MiB)]  # 16 went past 40 MiB
    line = fit(points, 40 * MiB)
    assert line.peak(16) >= 60 * MiB  # the segment from 8 to 16 is the slope beyond 8
    assert largest_under(line, 40 * MiB, 0) < 16
