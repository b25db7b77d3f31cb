// The chart's time axis (chart/time.ts): local time across a daylight-saving change, our own ticks, plotly's
// range ends read back.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { MARGIN } from '../../labextension/src/chart/area';
import {
  axisTime,
  fromLocal,
  timeTicks,
  toLocal
} from '../../labextension/src/chart/time';
import { T0 } from './chart-fixtures';

test('hour ticks stay on the hour across a daylight-saving change', () => {
  // Berlin, 26 October 2025: 03:00 summer time becomes 02:00 winter time.
  const before = new Date(2025, 9, 26, 1, 0, 0).getTime();
  const after = new Date(2025, 9, 26, 4, 0, 0).getTime();
  assert.equal(after - before, 4 * 3_600_000); // an hour longer than the clock says
  for (const t of [before, after]) {
    assert.equal(toLocal(t) % 3_600_000, 0, new Date(t).toString());
    assert.equal(fromLocal(toLocal(t)), t);
  }
});

test('time ticks: round steps at least 60 px apart, none whose label would stick out of the chart', () => {
  // An hour across 562 px (the sidebar at 600): every 10 minutes, on the local 10 minutes, as hh:mm.
  const lo = toLocal(T0);
  const hour = timeTicks(lo, lo + 3_600_000, lo, lo + 3_600_000, 562);
  assert.equal(hour.format, '%H:%M');
  assert.deepEqual(
    hour.values.map(v => (v - lo) / 60_000),
    [0, 10, 20, 30, 40, 50] // 11:00 sits on the right edge: its label would be cut in half
  );
  // Two minutes across 212 px (the sidebar at 250): every minute.
  const two = timeTicks(lo, lo + 120_000, lo, lo + 120_000, 212);
  assert.deepEqual(two, { values: [lo, lo + 60_000], format: '%H:%M' });
  // A zoom on ten seconds of it: seconds, the spans either side too (for a pan), none cut at the edges.
  const x0 = lo + 30_000;
  const zoom = timeTicks(x0 - 10_000, x0 + 20_000, x0, x0 + 10_000, 212);
  assert.equal(zoom.format, '%H:%M:%S');
  const step = zoom.values[1] - zoom.values[0];
  assert.equal(step, 5000);
  assert.ok(zoom.values.every(v => v % step === 0));
  assert.ok(
    zoom.values[0] < x0 && zoom.values[zoom.values.length - 1] > x0 + 10_000
  );
  const half = (8 * 6) / 2;
  for (const v of zoom.values.filter(v => v >= x0 && v <= x0 + 10_000)) {
    const px = ((v - x0) / 10_000) * 212;
    assert.ok(
      px - half >= -MARGIN.l && px + half <= 212 + MARGIN.r,
      String(px)
    );
  }
  assert.ok(!zoom.values.includes(x0 + 10_000)); // 212 px in: its label would pass the right edge
  // Days: on local midnight.
  const week = timeTicks(lo, lo + 7 * 86_400_000, lo, lo + 7 * 86_400_000, 562);
  assert.equal(week.format, '%b %d');
  assert.ok(week.values.every(v => v % 86_400_000 === 0));
});

test("plotly's range ends are read back as the axis's time", () => {
  assert.equal(
    axisTime('2025-10-26 04:00:12.3456'),
    Date.UTC(2025, 9, 26, 4, 0, 12, 346)
  );
  assert.equal(axisTime('2025-10-26'), Date.UTC(2025, 9, 26));
  assert.equal(axisTime(1234), 1234);
  assert.ok(Number.isNaN(axisTime('soon')));
  assert.ok(Number.isNaN(axisTime(undefined)));
});
