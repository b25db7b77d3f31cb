// The chart's thresholds and constants are the package's (jupyter_gpumem/render/chart.json): the sidebar reads the
// copy tsc and the bundlers take (labextension/src/model/chart.json), so the copy must be the file, byte for byte.
// tests/render/test_chart_constants.py finds any literal of them left in either language's sources.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { MIN_SPAN_MS, bucketMs } from '../../labextension/src/chart/range';
import { yScale } from '../../labextension/src/chart/scale';
import { OVER_ENDS_BELOW } from '../../labextension/src/model/history';

const ROOT = process.cwd();
const read = (...path: string[]) => readFileSync(join(ROOT, ...path), 'utf8');

test("the sidebar's chart constants are the package's, byte for byte", () => {
  assert.equal(
    read('labextension', 'src', 'model', 'chart.json'),
    read('jupyter_gpumem', 'render', 'chart.json'),
    'labextension/src/model/chart.json differs from jupyter_gpumem/render/chart.json: run jlpm build:schema'
  );
});

test("the chart's thresholds are the package file's values", () => {
  const chart = JSON.parse(read('jupyter_gpumem', 'render', 'chart.json'));
  assert.equal(OVER_ENDS_BELOW, chart.over_ends_below);
  assert.equal(MIN_SPAN_MS, chart.min_span_s * 1000);
  // The ladder: the first rung at least a pixel column's worth, the top one the last before whole hours.
  for (const rung of chart.buckets_s) {
    assert.equal(bucketMs(rung * 1000, 1), rung * 1000);
  }
  // Nothing known: the scale's lowest top.
  const none = [NaN];
  const { top } = yScale({
    own: none,
    framework: none,
    others: none,
    total: none,
    budget: none,
    driverLimit: none
  });
  assert.ok(top >= chart.min_top_bytes && top < 2 * chart.min_top_bytes);
});
