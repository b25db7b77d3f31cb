// The chart's x range (chart/range.ts): the data's span, at least two minutes, at most the window; live, it
// steps a settle step of whole buckets at a time.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { MARGIN } from '../../labextension/src/chart/area';
import {
  MIN_SPAN_MS,
  bucketMs,
  liveRange,
  settleMs,
  xRange
} from '../../labextension/src/chart/range';
import { T0, seconds } from './chart-fixtures';

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

test('live, the x range steps a settle step at a time, and covers the newest sample', () => {
  const t = seconds(3601);
  const plotW = 250 - MARGIN.l - MARGIN.r; // an hour in 30-second buckets, settled two at a time
  const [x0, x1] = liveRange(t, 3_600_000, plotW);
  assert.equal(x1 - x0, 3_600_000);
  assert.equal(x1 % 60_000, 0);
  assert.ok(x1 >= t[3600] && x1 - t[3600] < 60_000);
  // The next samples in the same bucket leave the range where it was.
  const later = liveRange(seconds(3602), 3_600_000, plotW);
  assert.deepEqual(x1 - t[3600] >= 1000 ? later : [x0, x1], [x0, x1]);
  // The shortest range is the data's own until the data is longer.
  assert.deepEqual(liveRange(seconds(21), 3_600_000, plotW), [
    T0,
    T0 + MIN_SPAN_MS
  ]);
});

test('the traces settle in steps of about a minute of whole buckets, never more than six pixel columns', () => {
  assert.equal(settleMs(30_000), 60_000); // an hour at 250 px: two buckets a step
  assert.equal(settleMs(10_000), 60_000); // an hour at 600 px: six
  assert.equal(settleMs(5000), 30_000); // an hour at 1000 px: six, not twelve columns of blank
  assert.equal(settleMs(1000), 6000); // a short span: six seconds, not 60 columns of blank
  assert.equal(settleMs(120_000), 120_000); // a bucket longer than the step: one
  // The live range moves in those steps too: an hour at 600 px ends on a minute.
  const plotW = 600 - MARGIN.l - MARGIN.r;
  const [, x1] = liveRange(seconds(3601), 3_600_000, plotW);
  assert.equal(x1 % 60_000, 0);
});
