// Live, each line's newest part (chart/tails.ts): the traces keep the completed buckets, the tails are SVG
// paths in the plot area's pixels.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { figure } from '../../labextension/src/chart/figure';
import { split, tailPaths } from '../../labextension/src/chart/tails';
import { toLocal } from '../../labextension/src/chart/time';
import { COLOURS, GiB, MiB, T0, args, history } from './chart-fixtures';
import { trans } from './fixtures';

test("live, the traces keep the completed buckets and each line's newest part is its tail", () => {
  const s = history(3601, i => GiB + i * MiB);
  const fig = figure(args(s, { width: 600 }), trans);
  const { settled, tails } = split(fig);
  const last = s.t[s.t.length - 1];
  assert.ok(fig.settledMs !== null && fig.settledMs <= last);
  assert.ok(last - fig.settledMs <= 60_000);
  assert.equal(fig.settledMs % 60_000, 0);
  const own = (f: typeof fig) =>
    f.data.find(d => (d as { uid: string }).uid === 'own') as {
      x: number[];
      y: number[];
    };
  // The traces stop before the settle time; the tail starts at their last point and ends at the newest.
  const kept = own(settled).x;
  assert.ok(kept.every(x => x < toLocal(fig.settledMs!)));
  const tail = tails.find(t => t.uid === 'own')!;
  assert.equal(tail.x[0], kept[kept.length - 1]);
  assert.equal(tail.x[tail.x.length - 1], toLocal(last));
  assert.equal(tail.y[tail.y.length - 1], (GiB + 3600 * MiB) / GiB);
  assert.deepEqual(
    [...kept, ...tail.x.slice(1)],
    own(fig).x,
    'the trace and its tail are the line, not a point more or less'
  );
  // Every line has its tail, with its style; this kernel's with the area under it.
  assert.deepEqual(
    tails.map(t => t.uid),
    ['others', 'budget', 'own']
  );
  assert.equal(tail.line.color, COLOURS.own);
  assert.ok(tail.fill !== null);
  assert.equal(tails.find(t => t.uid === 'others')!.fill, null);
  // The layout (scales, ticks) and the marks are the whole figure's.
  assert.deepEqual(settled.layout, fig.layout);
});

test('a hidden line has no tail; a zoomed figure, or one of a few minutes, is not split', () => {
  const s = history(3601, () => 2 * GiB);
  const hidden = new Set(['others']);
  const { tails } = split(figure(args(s, { hidden }), trans));
  assert.deepEqual(
    tails.map(t => t.uid),
    ['budget', 'own']
  );
  const range: [number, number] = [T0 + 60_000, T0 + 120_000];
  const zoomed = figure(args(s, { range }), trans);
  assert.equal(zoomed.settledMs, null);
  assert.deepEqual(split(zoomed), { settled: zoomed, tails: [] });
  // Five minutes at 250 px: two samples a pixel column, the traces hold all.
  const short = figure(args(history(300, () => 2 * GiB)), trans);
  assert.equal(short.settledMs, null);
  assert.deepEqual(split(short).tails, []);
});

test("the tails are SVG paths in the plot area's pixels: a gap starts a new stretch, plotly's dash", () => {
  const s = history(3600, () => 2 * GiB);
  // An hour at 250 px, 160 px high: the plot is 212 x 120 px.
  const fig = figure(args(s, { width: 250, height: 160 }), trans);
  const [a, b] = fig.layout.xaxis!.range as [number, number];
  const xAt = (share: number) => a + share * (b - a);
  const yAt = (share: number) => (share * fig.yTop) / GiB;
  const paths = tailPaths(fig, [
    {
      uid: 'own',
      x: [xAt(0.5), xAt(0.75), null, xAt(0.9), xAt(1)],
      y: [0, yAt(0.5), null, yAt(1), yAt(1)],
      line: { color: '#1976d2', width: 2, dash: 'solid' },
      fill: 'rgba(25, 118, 210, 0.15)',
      fillOpacity: 1
    },
    {
      uid: 'others',
      x: [xAt(0), xAt(1)],
      y: [1, null],
      line: { color: '#888', width: 1.5 },
      fill: null,
      fillOpacity: 1
    },
    {
      uid: 'budget',
      x: [xAt(0), xAt(1)],
      y: [yAt(1), yAt(1)],
      line: { color: '#d32f2f', width: 1.5, dash: 'dash' },
      fill: null,
      fillOpacity: 1
    }
  ]);
  // The others' tail has no two points in a row: nothing to draw.
  assert.deepEqual(
    paths.map(p => p.uid),
    ['own', 'budget']
  );
  const [own, budget] = paths;
  assert.equal(own.line, 'M106.0,120.0L159.0,60.0M190.8,0.0L212.0,0.0');
  assert.equal(
    own.area,
    'M106.0,120.0L106.0,120.0L159.0,60.0L159.0,120.0Z' +
      'M190.8,120.0L190.8,0.0L212.0,0.0L212.0,120.0Z'
  );
  assert.deepEqual(
    [own.stroke, own.width, own.dasharray, own.fill],
    ['#1976d2', 2, '', 'rgba(25, 118, 210, 0.15)']
  );
  // plotly's dash at this width: three times the larger of the width and 3 px.
  assert.deepEqual(
    [budget.line, budget.area, budget.dasharray],
    ['M0.0,0.0L212.0,0.0', null, '9px,9px']
  );
});
