import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

// A zone with daylight saving, set before any date is made (node reads TZ when it changes).
process.env.TZ = 'Europe/Berlin';

import {
  IColours,
  IFigureArgs,
  MIN_SPAN_MS,
  axisTime,
  bucketMs,
  MARGIN,
  hoverText,
  figure,
  timeTicks,
  fromLocal,
  liveRange,
  picture,
  settleMs,
  split,
  tailPaths,
  tailPicture,
  toLocal,
  xRange,
  yScale
} from '../../labextension/src/widgets/figure';
import { ISeries } from '../../labextension/src/model/history';
import { trans } from './fixtures';

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

const COLOURS: IColours = {
  own: '#1976d2',
  framework: '#f57c00',
  others: '#9e9e9e',
  budget: '#d32f2f',
  driverLimit: '#f57c00',
  total: '#616161',
  text: '#616161',
  grid: '#e0e0e0',
  background: '#ffffff',
  font: 'sans-serif'
};

/** `n` samples a second: this kernel as `own(i)` bytes, a 4 GiB budget, 1 GiB of others, 40 GiB total. */
function history(n: number, own: (i: number) => number): ISeries {
  const t = seconds(n);
  return {
    t,
    own: t.map((_, i) => own(i)),
    framework: t.map(() => NaN),
    others: t.map(() => GiB),
    total: t.map(() => 40 * GiB),
    budget: t.map(() => 4 * GiB),
    driverLimit: t.map(() => NaN),
    marks: [],
    cells: []
  };
}

const args = (series: ISeries, more: Partial<IFigureArgs> = {}) => ({
  series,
  windowMs: 3_600_000,
  framework: null,
  width: 250,
  height: 180,
  colours: COLOURS,
  range: null,
  ...more
});

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

test('a sample that moves no pixel leaves the picture as it was; one that does changes it', () => {
  const s = history(3600, () => 2 * GiB);
  s.budget = s.own.map(() => 4 * GiB);
  const next = (mib: number) => {
    s.t.push(s.t[s.t.length - 1] + 1000);
    for (const f of [
      'own',
      'framework',
      'others',
      'total',
      'budget'
    ] as const) {
      s[f].push(s[f][s[f].length - 1]);
    }
    s.own[s.own.length - 1] = 2 * GiB + mib * MiB;
  };
  // Thirty seconds at a figure 4 MiB up (a seventh of a pixel): the range steps once (a 30-second
  // bucket) and the line's end moves a pixel every 17 s; the other samples change nothing.
  let drawn = picture(figure(args(s), trans));
  let changes = 0;
  for (let i = 0; i < 30; i++) {
    next(4);
    const shown = picture(figure(args(s), trans));
    changes += shown === drawn ? 0 : 1;
    drawn = shown;
  }
  assert.ok(
    changes >= 1 && changes <= 3,
    `${changes} of 30 samples changed it`
  );
  // A jump of a GiB is many pixels: a new picture.
  next(1024);
  assert.notEqual(picture(figure(args(s), trans)), drawn);
  // So is a line hidden, another size, or a zoom.
  const again = history(3600, () => 2 * GiB);
  const base = picture(figure(args(again), trans));
  assert.equal(picture(figure(args(again), trans)), base);
  const hidden = new Set(['others']);
  assert.notEqual(picture(figure(args(again, { hidden }), trans)), base);
  assert.notEqual(picture(figure(args(again, { width: 600 }), trans)), base);
  const range: [number, number] = [T0 + 60_000, T0 + 120_000];
  assert.notEqual(picture(figure(args(again, { range }), trans)), base);
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

/** One more sample a second after the newest: the same figures, this kernel's `mib` MiB up. */
function grow(s: ISeries, mib: number): void {
  s.t.push(s.t[s.t.length - 1] + 1000);
  for (const f of ['own', 'framework', 'others', 'total', 'budget'] as const) {
    s[f].push(s[f][s[f].length - 1]);
  }
  s.own[s.own.length - 1] += mib * MiB;
}

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

test("at the stream's pace with an hour, the traces are redrawn under 5% of samples, the tails when a pixel moves", () => {
  for (const width of [250, 600]) {
    // The training run: 64 MiB a second from 1 GiB under the budget (4 GiB), through it.
    const s = history(3600, () => 3 * GiB);
    const split0 = split(figure(args(s, { width }), trans));
    let traces = picture(split0.settled);
    let tail = tailPicture(split0.settled, split0.tails);
    let reacts = 0;
    let relayouts = 0;
    const samples = 300;
    for (let i = 0; i < samples; i++) {
      grow(s, i < 30 ? 64 : 0);
      const { settled, tails } = split(figure(args(s, { width }), trans));
      const shown = picture(settled);
      const moved = tailPicture(settled, tails);
      if (shown !== traces) {
        reacts++;
      } else if (moved !== tail) {
        relayouts++;
      }
      traces = shown;
      tail = moved;
    }
    assert.ok(
      reacts <= samples * 0.05,
      `${width} px: ${reacts} reacts in ${samples}`
    );
    assert.ok(relayouts >= 1, `${width} px: the tails never moved`);
  }
});

test('a new y scale is a redraw of the traces at once', () => {
  const s = history(3600, () => 2 * GiB);
  const before = split(figure(args(s), trans)).settled;
  grow(s, 6 * 1024); // 8 GiB: above the budget's scale
  const after = split(figure(args(s), trans)).settled;
  assert.notEqual(after.yTop, before.yTop);
  assert.notEqual(picture(after), picture(before));
});
