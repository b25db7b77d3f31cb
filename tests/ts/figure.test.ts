// The time chart as a plotly figure (chart/figure.ts): its lines, legend, scales, marks, cells and ticks.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { figure, hoverText } from '../../labextension/src/chart/figure';
import { MIN_SPAN_MS } from '../../labextension/src/chart/range';
import { toLocal } from '../../labextension/src/chart/time';
import { COLOURS, GiB, MiB, T0, args, history } from './chart-fixtures';
import { trans } from './fixtures';

const names = (fig: ReturnType<typeof figure>) =>
  fig.data.map(d => (d as { name?: string }).name);

test('the figure has a line per figure the kernel sends, this kernel filled and drawn on top', () => {
  const fig = figure(args(history(60, i => i * 50 * MiB)), trans);
  // The device total (40 GiB) is far above a 4 GiB budget: a note, not a line; no framework figures.
  assert.deepEqual(names(fig), ['others', 'budget', 'this kernel']);
  const own = fig.data[2] as { fill: string; y: (number | null)[] };
  assert.equal(own.fill, 'tozeroy');
  assert.equal(own.y[59], (59 * 50) / 1024);
  // The unit above the tick labels and the total's note: HTML live (chart.ts), plotly's title and
  // annotation in the figure the camera saves.
  assert.equal(fig.unit, 'GiB');
  assert.equal(fig.note, 'device total 40.0 GiB ↑');
  assert.equal((fig.layout.title as { text: string }).text, 'GiB');
  assert.deepEqual(
    fig.layout.annotations!.map(a => a.text),
    ['device total 40.0 GiB ↑']
  );
  // Legend order is the user's reading order, not the drawing order.
  const ranks = fig.data.map(d => (d as { legendrank: number }).legendrank);
  assert.deepEqual(ranks, [2, 3, 0]);
  assert.equal(fig.layout.hovermode, 'x unified');
  assert.equal(fig.layout.uirevision, 'gpumem');
  assert.equal(fig.layout.yaxis!.fixedrange, true); // zoom and pan are on time only
});

test('a device total within the scale is a line, and the framework has its own', () => {
  const s = history(60, () => 3 * GiB);
  s.total = s.total.map(() => 4.2 * GiB);
  s.framework = s.own.map(v => v - 512 * MiB);
  const fig = figure(args(s, { framework: 'PyTorch' }), trans);
  assert.deepEqual(names(fig), [
    'device total',
    'others',
    'budget',
    'PyTorch in use',
    'this kernel'
  ]);
  assert.deepEqual(fig.layout.annotations, []);
  assert.equal(fig.note, null);
});

test('the legend lists the lines in reading order, each drawn as its line is; a hidden one is legendonly', () => {
  const s = history(60, () => 3 * GiB);
  s.total = s.total.map(() => 4.2 * GiB);
  s.framework = s.own.map(v => v - 512 * MiB);
  const shown = figure(args(s, { framework: 'JAX' }), trans);
  assert.deepEqual(
    shown.legend.map(e => [
      e.uid,
      e.name,
      e.colour,
      e.width,
      e.style,
      e.hidden
    ]),
    [
      ['own', 'this kernel', COLOURS.own, 2, 'solid', false],
      ['framework', 'JAX in use', COLOURS.framework, 1.5, 'dotted', false],
      ['others', 'others', COLOURS.others, 1.5, 'solid', false],
      ['budget', 'budget', COLOURS.budget, 1.5, 'dashed', false],
      ['total', 'device total', COLOURS.total, 1, 'solid', false]
    ]
  );
  const visible = (fig: ReturnType<typeof figure>) =>
    Object.fromEntries(
      fig.data.map(d => [
        (d as { uid: string }).uid,
        (d as { visible: unknown }).visible
      ])
    );
  assert.deepEqual(new Set(Object.values(visible(shown))), new Set([true]));
  const hidden = figure(
    args(s, {
      framework: 'JAX',
      hidden: new Set(['others', 'marks', 'cells'])
    }),
    trans
  );
  assert.equal(visible(hidden).others, 'legendonly');
  assert.equal(visible(hidden).own, true);
  assert.deepEqual(
    hidden.legend.filter(e => e.hidden).map(e => e.uid),
    ['others']
  );
  // The saved picture has the legend plotly draws; the lines' names are the same.
  assert.equal(hidden.layout.showlegend, true);
});

test("the lines in legend order and their names are the ones the kernel's plotly figure has", () => {
  // The contract with jupyter_gpumem/render/figure.py: tests/fixtures/chart/traces.json.
  const pinned = JSON.parse(
    readFileSync(
      join(process.cwd(), 'tests', 'fixtures', 'chart', 'traces.json'),
      'utf8'
    )
  ) as { framework: string; traces: [string, string][] };
  const s = history(60, () => 3 * GiB);
  s.total = s.total.map(() => 4.2 * GiB);
  s.framework = s.own.map(v => v - 512 * MiB);
  s.driverLimit = s.own.map(() => 3.5 * GiB); // binds: below the total, under the top
  const fig = figure(args(s, { framework: pinned.framework }), trans);
  const lines = fig.data as { uid: string; name: string; legendrank: number }[];
  const inLegend = [...lines]
    .sort((a, b) => a.legendrank - b.legendrank)
    .map(t => [t.uid, t.name]);
  assert.deepEqual(inLegend, pinned.traces);
});

test('N/A is a gap in the line, never 0', () => {
  const s = history(5, i => (i === 2 ? NaN : GiB));
  const own = figure(args(s), trans).data.at(-1) as { y: (number | null)[] };
  assert.deepEqual(own.y, [1, 1, null, 1, 1]);
});

test('the scales: x spans the data (two minutes at least), y the larger of peak and budget', () => {
  const fig = figure(args(history(21, i => i * 300 * MiB)), trans);
  assert.equal(fig.x1 - fig.x0, MIN_SPAN_MS);
  assert.deepEqual(fig.layout.xaxis!.range, [
    toLocal(T0),
    toLocal(T0 + MIN_SPAN_MS)
  ]);
  assert.ok(fig.yTop >= 6000 * MiB && fig.yTop <= 8 * GiB, `${fig.yTop}`);
  assert.equal(fig.layout.yaxis!.range![1], fig.yTop / GiB);
  assert.equal(fig.layout.xaxis!.hoverformat, '%H:%M:%S'); // the hover's time to the second
});

test('at most two points per pixel column over an hour, the peaks kept', () => {
  const spike = 1800;
  const s = history(3600, i => (i >= spike && i < spike + 3 ? 3 * GiB : GiB));
  const own = figure(args(s), trans).data.at(-1) as { y: number[] };
  assert.ok(own.y.length <= 250, `${own.y.length}`);
  assert.equal(Math.max(...own.y), 3); // a 3-second spike survives the decimation
});

test("a zoom on the user's range draws it at full resolution, the y scale unchanged", () => {
  const s = history(3600, i => (i >= 1800 && i < 1803 ? 3 * GiB : GiB));
  const live = figure(args(s), trans);
  const range: [number, number] = [T0 + 1_790_000, T0 + 1_820_000];
  const zoomed = figure(args(s, { range }), trans);
  assert.deepEqual([zoomed.x0, zoomed.x1], range);
  assert.equal(zoomed.yTop, live.yTop);
  const own = zoomed.data.at(-1) as { x: number[]; y: number[] };
  const inView = own.x.filter(
    x => x >= toLocal(range[0]) && x <= toLocal(range[1])
  );
  assert.equal(inView.length, 31); // every second of the 30
  assert.deepEqual(own.y.filter(v => v === 3).length, 3);
});

test('one mark per over-budget episode in view, its reason in the hover', () => {
  const s = history(60, i => (i > 30 ? 5 * GiB : GiB));
  s.marks = [
    {
      t: T0 + 31_000,
      ownBytes: 5 * GiB,
      reason: 'CUDA context',
      reasonSaid: null
    },
    {
      t: T0 - 7_200_000,
      ownBytes: 5 * GiB,
      reason: 'long ago',
      reasonSaid: null
    }
  ];
  const fig = figure(args(s), trans);
  const marks = fig.data.at(-1) as {
    x: number[];
    hovertext: string[];
    showlegend: boolean;
  };
  assert.deepEqual(marks.x, [toLocal(T0 + 31_000)]);
  // Cut to lines that fit the 250 px chart.
  assert.deepEqual(marks.hovertext, [
    'Over budget from 10:00:31: CUDA<br>context'
  ]);
  assert.equal(marks.showlegend, false);
});

test("the kernel's text in a hover is cut at spaces into lines that fit, and never read as tags", () => {
  assert.equal(hoverText('a bb ccc dddd', 6), 'a bb<br>ccc<br>dddd');
  assert.equal(
    hoverText('averyveryverylongword x', 6),
    'averyveryverylongword<br>x'
  );
  assert.equal(
    hoverText('process <img src=x> & co', 40),
    'process &lt;img src=x&gt; &amp; co'
  );
});

test('the figure gives plotly its own time ticks, so plotly measures no label to hide it', () => {
  // Ten minutes across 312 px: every 2 minutes.
  const fig = figure(
    args(
      history(600, () => 2 * GiB),
      { width: 350 }
    ),
    trans
  );
  const x = fig.layout.xaxis!;
  assert.equal(x.tickmode, 'array');
  assert.equal(x.tickformat, '%H:%M');
  assert.equal(x.ticklabeloverflow, 'allow');
  assert.deepEqual(
    (x.tickvals as number[]).map(v => v - toLocal(T0)),
    [0, 2, 4, 6, 8].map(m => m * 60_000)
  );
});

test('each cell in view is a band, and the hover along its top names it (escaped), a running one to now', () => {
  const s = history(60, () => GiB);
  const at = (i: number) => (T0 + i * 1000) / 1000;
  s.cells = [
    {
      count: 3,
      line: 'model.fit(x, <b>y</b>)',
      startT: at(10),
      endT: at(20),
      error: false
    },
    { count: 4, line: 'boom()', startT: at(25), endT: at(30), error: true },
    { count: null, line: 'train()', startT: at(40), endT: null, error: false }
  ];
  const fig = figure(args(s), trans);
  const band = fig.data[0] as {
    uid: string;
    fill: string;
    x: (number | null)[];
    y: (number | null)[];
  };
  // Drawn first (under the lines), its area to zero; one run of points per cell, a gap between them.
  assert.equal(band.uid, 'cells');
  assert.equal(band.fill, 'tozeroy');
  const runs: number[][] = [[]];
  band.x.forEach(v =>
    v === null ? runs.push([]) : runs[runs.length - 1].push(v)
  );
  assert.deepEqual(
    runs.filter(r => r.length).map(r => [r[0], r[r.length - 1]]),
    [
      [toLocal(T0 + 10_000), toLocal(T0 + 20_000)],
      [toLocal(T0 + 25_000), toLocal(T0 + 30_000)],
      [toLocal(T0 + 40_000), toLocal(T0 + 59_000)] // running: up to the last sample
    ]
  );
  assert.equal(fig.layout.shapes, undefined);
  const cells = fig.data.find(d => (d as { uid?: string }).uid === 'cells') as {
    hovertext: (string | null)[];
    showlegend: boolean;
  };
  const titles = new Set(cells.hovertext.filter(h => h !== null));
  assert.deepEqual(
    [...titles],
    [
      '[3] model.fit(x, &lt;b&gt;y&lt;/b&gt;)',
      '[4] boom() (error)',
      '[*] train()'
    ]
  );
  assert.equal(cells.showlegend, false);
  // A cell before the window is not drawn.
  s.cells = [
    { count: 1, line: 'old', startT: at(-500), endT: at(-400), error: false }
  ];
  const uids = figure(args(s), trans).data.map(d => (d as { uid: string }).uid);
  assert.ok(!uids.includes('cells'));
});
