import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  MIN_SPAN_MS,
  areaPath,
  bucketMs,
  linePath,
  nearest,
  timeTicks,
  xRange,
  yScale
} from '../../labextension/src/chart';

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;
const T0 = new Date(2025, 10, 21, 10, 0, 0).getTime();
const seconds = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => T0 + (from + i) * 1000);

test('a 20-second ramp gets the x range of its data, at least two minutes, not the 15-minute window', () => {
  const t = seconds(21);
  assert.deepEqual(xRange(t, 900_000), [T0, T0 + MIN_SPAN_MS]);
  assert.equal(MIN_SPAN_MS, 120_000);
  // Five minutes of data: exactly their span.
  assert.deepEqual(xRange(seconds(301), 900_000), [T0, T0 + 300_000]);
  // More than the window (the history keeps a little slack): the last window.
  const long = seconds(1000);
  assert.deepEqual(xRange(long, 900_000), [T0 + 99_000, T0 + 999_000]);
  // A one-minute window is never exceeded.
  assert.deepEqual(xRange(t, 60_000), [T0, T0 + 60_000]);
});

test('buckets come from a short ladder, so they stay put while the range grows', () => {
  assert.equal(bucketMs(120_000, 200), 1000);
  assert.equal(bucketMs(3_600_000, 200), 30_000);
  assert.equal(bucketMs(3_601_000, 200), 30_000);
  assert.equal(bucketMs(900_000, 500), 2000);
  assert.equal(bucketMs(86_400_000, 200), 600_000);
});

const series = (own: number[], budget: number[], others: number[] = []) => ({
  own,
  framework: own.map(() => NaN),
  others: others.length ? others : own.map(() => NaN),
  total: own.map(() => 40 * GiB),
  budget
});

test("y reaches the larger of this kernel's peak and its budget, never the device total", () => {
  // A 2 GiB kernel with a 4 GiB budget on a 40 GiB GPU: the budget sets the scale.
  const small = yScale(series([GiB, 2 * GiB], [4 * GiB, 4 * GiB]));
  assert.equal(small.unit, 'GiB');
  assert.ok(small.top >= 4 * GiB && small.top <= 5 * GiB, `${small.top}`);
  assert.ok((2 * GiB) / small.top >= 0.4); // the kernel fills a good part of the height
  // Over budget: the kernel's peak sets it.
  const over = yScale(series([6 * GiB], [4 * GiB]));
  assert.ok(over.top >= 6 * GiB && over.top <= 8 * GiB, `${over.top}`);
  // No budget: the kernel's own peak.
  const alone = yScale(series([3 * GiB, NaN], [NaN, NaN]));
  assert.ok(alone.top >= 3 * GiB && alone.top <= 4 * GiB, `${alone.top}`);
});

test('round ticks from zero, in MiB below a GiB', () => {
  const scale = yScale(series([300 * MiB], [512 * MiB]));
  assert.equal(scale.unit, 'MiB');
  assert.deepEqual(
    scale.ticks.map(v => v / MiB),
    [0, 200, 400, 600]
  );
  const big = yScale(series([21 * GiB], [20 * GiB]));
  assert.deepEqual(
    big.ticks.map(v => v / GiB),
    [0, 5, 10, 15, 20, 25]
  );
});

test('a kernel that holds nothing and has no budget scales to the others; nothing at all: 256 MiB', () => {
  const idle = yScale(series([0, 0], [NaN, NaN], [12 * GiB, 12 * GiB]));
  assert.ok(idle.top >= 12 * GiB && idle.top <= 15 * GiB, `${idle.top}`);
  const empty = yScale(series([NaN], [NaN], [NaN]));
  assert.equal(empty.top, 300 * MiB);
});

test('time ticks leave room for their labels and show seconds only for short spans', () => {
  const short = timeTicks(T0, T0 + 120_000, 200);
  assert.equal(short.seconds, false); // a minute apart at 200 px
  assert.deepEqual(short.ticks, [T0, T0 + 60_000, T0 + 120_000]);
  const wide = timeTicks(T0 + 5_000, T0 + 125_000, 560);
  assert.equal(wide.seconds, true);
  assert.equal(wide.ticks[0], T0 + 15_000);
  assert.ok(wide.ticks.every(t => (t - T0) % 15_000 === 0));
  const hour = timeTicks(T0, T0 + 3_600_000, 200);
  assert.ok(hour.ticks.length <= 3 && !hour.seconds);
});

test('N/A breaks the line and its area instead of dropping to zero', () => {
  const t = [0, 1, 2, 3, 4];
  const v = [1, 2, NaN, 3, 4];
  const x = (n: number) => n * 10;
  const y = (n: number) => 100 - n;
  assert.equal(linePath(t, v, x, y), 'M0 99L10 98M30 97L40 96');
  assert.equal(
    areaPath(t, v, x, y, 100),
    'M0 99L10 98L10 100L0 100Z' + 'M30 97L40 96L40 100L30 100Z'
  );
  assert.equal(
    linePath(
      [0],
      [1 / 3],
      n => n + 0.04,
      n => n * 100
    ),
    'M0 33.3' // a tenth of a pixel
  );
  assert.equal(linePath(t, [NaN, NaN, NaN, NaN, NaN], x, y), '');
});

test('the hover finds the nearest point', () => {
  const t = [0, 10, 20, 30];
  assert.equal(nearest(t, -5), 0);
  assert.equal(nearest(t, 14), 1);
  assert.equal(nearest(t, 16), 2);
  assert.equal(nearest(t, 99), 3);
});
