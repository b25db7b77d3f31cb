// A stalled driver's sentence in the sidebar, the inline view and the status bar's tooltip: the same words as
// the kernel's status (tests/fixtures/stalled_words.json, read by tests/render/test_stalled_words.py too).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

process.env.TZ = 'UTC'; // the fixture's clock; this file runs in a process of its own

import { stalledLine } from '../../labextension/src/format/channel';
import { History } from '../../labextension/src/model/history';
import { parseSample } from '../../labextension/src/wire/protocol';
import type { Sample } from '../../labextension/src/wire/types';
import { fixture, trans } from './fixtures';

interface ICase {
  t: number;
  stalled_since: number;
  gpus: number;
  words: string;
}

const CASES: ICase[] = JSON.parse(
  readFileSync(
    join(process.cwd(), 'tests', 'fixtures', 'stalled_words.json'),
    'utf8'
  )
).cases;

test('a stalled driver is named with the time of its last answer, as the kernel names it', () => {
  for (const c of CASES) {
    const sample = {
      t: c.t,
      stalledSince: c.stalled_since,
      gpus: new Array(c.gpus).fill({})
    };
    assert.equal(stalledLine(sample, trans), c.words);
  }
});

test('a driver that answered has no sentence, from a kernel that does not send the field too', () => {
  assert.equal(
    stalledLine({ t: 5, stalledSince: null, gpus: [] }, trans),
    null
  );
  const older = { t: 5, gpus: [] } as unknown as Sample;
  assert.equal(stalledLine(older, trans), null);
});

test("the chart leaves a gap where the figures are a stalled driver's last ones", () => {
  const message = fixture('sample.json') as { sample: Record<string, unknown> };
  const fresh = parseSample(message.sample);
  const history = new History(10);
  history.push(fresh);
  history.push({ ...fresh, t: fresh.t + 1, stalledSince: fresh.t });
  history.push({ ...fresh, t: fresh.t + 2, stalledSince: null });
  const gpu = fresh.gpus[0];
  const series = history.series(gpu.uuid ?? `index ${gpu.index}`)!;
  assert.equal(series.t.length, 3);
  assert.equal(series.own[0], gpu.ownBytes); // the fixture's kernel holds a known figure
  assert.ok(Number.isNaN(series.own[1]));
  assert.ok(Number.isNaN(series.others[1]));
  assert.ok(Number.isNaN(series.framework[1]));
  assert.equal(series.total[1], series.total[0]); // the device's size does not stall
  assert.equal(series.own[2], gpu.ownBytes); // back when the driver answers
});
