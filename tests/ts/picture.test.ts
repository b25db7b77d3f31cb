// What plotly would draw (chart/picture.ts): the picture changes only when a pixel does, so the chart redraws
// its traces for a few samples in a hundred.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { figure } from '../../labextension/src/chart/figure';
import { picture } from '../../labextension/src/chart/picture';
import { split, tailPicture } from '../../labextension/src/chart/tails';
import { GiB, MiB, T0, args, grow, history } from './chart-fixtures';
import { trans } from './fixtures';

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
