// The chart's y scale (chart/scale.ts): up to the larger of this kernel's peak and its budget, round ticks.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { yScale } from '../../labextension/src/chart/scale';
import { GiB, MiB } from './chart-fixtures';

const series = (own: number[], budget: number[], others: number[] = []) => ({
  own,
  framework: own.map(() => NaN),
  others: others.length ? others : own.map(() => NaN),
  total: own.map(() => 40 * GiB),
  budget,
  driverLimit: own.map(() => NaN)
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
