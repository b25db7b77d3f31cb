import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  History,
  chooseGpu,
  decimate,
  gpuKey
} from '../../labextension/src/model/history';
import { parseMessage } from '../../labextension/src/wire/protocol';
import type { Sample, SampleMessage } from '../../labextension/src/wire/types';
import { fixture } from './fixtures';

const MiB = 1024 ** 2;
const S1 = (parseMessage(fixture('sample.json')) as SampleMessage).sample;
const GPU_B = 'GPU-b2b2b2b2-0000-4000-8000-000000000002';

function at(t: number, ownMiB: number | null): Sample {
  return {
    ...S1,
    t,
    gpus: S1.gpus.map(g => ({
      ...g,
      ownBytes:
        g.uuid === GPU_B ? (ownMiB === null ? null : ownMiB * MiB) : g.ownBytes
    }))
  };
}

test('history keeps one series per GPU: this kernel, others, budget, total', () => {
  const history = new History(100);
  history.push(S1);
  const series = history.series(GPU_B)!;
  assert.deepEqual(series.t, [1763740800000]);
  assert.deepEqual(series.own, [4200 * MiB]);
  assert.deepEqual(series.others, [(330 + 380) * MiB]);
  assert.deepEqual(series.budget, [4096 * MiB]);
  assert.deepEqual(series.total, [8192 * MiB]);
  assert.deepEqual(series.framework, [3000 * MiB]);
  assert.ok(Number.isNaN(history.series(S1.gpus[0].uuid!)!.budget[0]));
});

test('history is bounded by its capacity and keeps the newest samples', () => {
  const history = new History(50);
  for (let i = 0; i < 1000; i++) {
    history.push(at(i, i));
  }
  const series = history.series(GPU_B)!;
  assert.ok(series.t.length >= 50 && series.t.length <= 50 + Math.ceil(50 / 8));
  assert.equal(series.t[series.t.length - 1], 999000);
  assert.equal(series.own[series.own.length - 1], 999 * MiB);
  history.capacity = 10;
  assert.equal(history.series(GPU_B)!.t.length, 10);
  assert.equal(history.latest!.t, 999);
});

/** GPU B (budget 4096 MiB) with this kernel at `ownMiB`, and the kernel's reason when over:
 * its text changes with the figures, as the kernel's does. */
function over(
  t: number,
  ownMiB: number | null,
  budgetMiB: number | null = 4096
): Sample {
  const sample = at(t, ownMiB);
  return {
    ...sample,
    gpus: sample.gpus.map(g =>
      g.uuid === GPU_B
        ? {
            ...g,
            budgetBytes: budgetMiB === null ? null : budgetMiB * MiB,
            overReason:
              ownMiB !== null && budgetMiB !== null && ownMiB > budgetMiB
                ? `CUDA context: ${ownMiB - budgetMiB} MiB over`
                : null
          }
        : g
    )
  };
}

const marks = (history: History) =>
  history.series(GPU_B)!.marks.map(m => [m.t / 1000, m.reason]);

test('a ramp through the budget makes one mark, though the reason changes every second', () => {
  const history = new History(100);
  for (let t = 0; t < 30; t++) {
    history.push(over(t, 3000 + t * 100)); // over from t = 11 (4100 MiB) on
  }
  assert.deepEqual(marks(history), [[11, 'CUDA context: 4 MiB over']]);
  assert.equal(history.series(GPU_B)!.marks[0].ownBytes, 4100 * MiB);
  assert.deepEqual(history.series(S1.gpus[0].uuid!)!.marks, []);
});

test('an episode ends only below 95% of the budget: a figure hovering at the budget is one mark', () => {
  const history = new History(100);
  const ownMiB = [4000, 4100, 4000, 4100, 3950, 4200, 3800, 4100, 4096, 4097];
  ownMiB.forEach((own, t) => history.push(over(t, own)));
  assert.deepEqual(marks(history), [
    [1, 'CUDA context: 4 MiB over'],
    [7, 'CUDA context: 4 MiB over'] // after 3800 MiB (93%)
  ]);
});

test('N/A for a moment does not end an episode; the budget going away does', () => {
  const history = new History(100);
  [4200, null, 4200, 4200].forEach((own, t) => history.push(over(t, own)));
  assert.equal(marks(history).length, 1);
  history.push(over(4, 4200, null)); // policy reset: no budget
  history.push(over(5, 4200));
  assert.deepEqual(
    marks(history).map(([t]) => t),
    [0, 5]
  );
});

test('a new stream (hello) starts counting episodes afresh', () => {
  const history = new History(100);
  history.push(over(0, 4200));
  history.reset([over(10, 4200)]);
  assert.deepEqual(marks(history), [[10, 'CUDA context: 104 MiB over']]);
});

test('marks older than the kept history are dropped with it', () => {
  const history = new History(8);
  history.push(over(0, 4200));
  for (let t = 1; t < 40; t++) {
    history.push(over(t, t === 39 ? 4300 : 3000));
  }
  assert.deepEqual(marks(history), [[39, 'CUDA context: 204 MiB over']]);
});

test('an N/A figure is a gap (NaN), never 0', () => {
  const history = new History(10);
  history.push(at(1, null));
  assert.ok(Number.isNaN(history.series(GPU_B)!.own[0]));
});

test("decimation keeps each time bucket's lowest and highest figure: a peak never vanishes, nor a dip", () => {
  const history = new History(3600);
  for (let i = 0; i < 3600; i++) {
    const mib = i === 1234 ? 4000 : i === 2345 ? 0 : 1000;
    history.push(at(1763740800 + i, mib));
  }
  const shown = decimate(history.series(GPU_B)!, 20_000); // an hour on 180 pixels
  assert.ok(
    shown.t.length >= 360 && shown.t.length <= 362,
    `${shown.t.length}`
  ); // two points a bucket
  assert.equal(shown.own.filter(v => v === 4000 * MiB).length, 1);
  assert.equal(Math.max(...shown.own), 4000 * MiB);
  assert.equal(Math.min(...shown.own), 0);
  assert.equal(shown.t[shown.t.length - 1], (1763740800 + 3599) * 1000);
  assert.ok(shown.t.every((t, i) => i === 0 || t > shown.t[i - 1]));
});

test('a bucket shows its figures in the order they came: a fall stays a fall', () => {
  const history = new History(100);
  for (let i = 0; i < 10; i++) {
    history.push(at(i, [3000, 5000, 1000, 2000][i % 4]));
  }
  const shown = decimate(history.series(GPU_B)!, 10_000);
  assert.deepEqual(shown.t, [0, 9000]);
  // Up to 5000 first, then down to 1000: the highest before the lowest.
  assert.deepEqual(shown.own, [5000 * MiB, 1000 * MiB]);
});

test('buckets are aligned to time, so a new sample changes only the last bucket', () => {
  const history = new History(600);
  for (let i = 0; i < 300; i++) {
    history.push(at(1763740800 + i, 1000 + i));
  }
  const before = decimate(history.series(GPU_B)!, 10_000);
  history.push(at(1763740800 + 300, 5000));
  const after = decimate(history.series(GPU_B)!, 10_000);
  const same = Math.min(before.t.length, after.t.length) - 2;
  assert.deepEqual(after.own.slice(0, same), before.own.slice(0, same));
  assert.equal(after.own[after.own.length - 1], 5000 * MiB);
});

test('decimation starts where the chart does', () => {
  const history = new History(100);
  for (let i = 0; i < 100; i++) {
    history.push(at(i, 1000 + i));
  }
  const shown = decimate(history.series(GPU_B)!, 10_000, 50_000);
  // A bucket's two points are at its first and last sample: 50 and 59 s, its lowest and highest.
  assert.deepEqual(shown.t.slice(0, 2), [50_000, 59_000]);
  assert.deepEqual(shown.own.slice(0, 2), [1050 * MiB, 1059 * MiB]);
  assert.equal(shown.t.length, 10);
});

test('decimation keeps a gap where a whole bucket was N/A, and one sample is one point', () => {
  const history = new History(100);
  for (let i = 0; i < 91; i++) {
    history.push(at(i, i >= 50 && i < 60 ? null : 1000));
  }
  const shown = decimate(history.series(GPU_B)!, 10_000);
  assert.equal(shown.t.length, 19); // nine buckets of ten samples, and one of one (90 s)
  assert.ok(Number.isNaN(shown.own[10]) && Number.isNaN(shown.own[11]));
  assert.equal(shown.own[9], 1000 * MiB);
  assert.equal(shown.t[18], 90_000);
});

test('at first look the panel shows the GPU with a budget, else the one in use, else the first', () => {
  const gpu = (
    index: number,
    budgetBytes: number | null,
    ownBytes: number | null
  ) => ({ index, uuid: `GPU-${index}`, budgetBytes, ownBytes });
  assert.equal(chooseGpu([], null), null);
  assert.equal(
    chooseGpu(
      [gpu(0, null, 0), gpu(1, 4096 * MiB, 0), gpu(2, null, MiB)],
      null
    ),
    'GPU-1'
  );
  assert.equal(
    chooseGpu([gpu(0, null, null), gpu(1, null, 0), gpu(2, null, MiB)], null),
    'GPU-2'
  );
  assert.equal(chooseGpu([gpu(0, null, null), gpu(1, null, 0)], null), 'GPU-0');
  assert.equal(
    chooseGpu([{ ...gpu(0, null, null), uuid: null }], null),
    'index 0'
  );
});

test('the GPU the user chose stays chosen while it is there', () => {
  const gpus = S1.gpus; // GPU 1 has the budget
  assert.equal(chooseGpu(gpus, null), GPU_B);
  const other = gpuKey(gpus[0]);
  assert.equal(chooseGpu(gpus, other), other);
  assert.equal(chooseGpu(gpus, 'GPU-gone'), GPU_B);
});
