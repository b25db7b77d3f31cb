// The golden fixture (tests/fixtures/golden/, made by tests/golden_cases.py): for each case, the words the
// sidebar and the live inline view show of every GPU, which tests/render/test_golden.py checks viewtext.py
// and the still picture against. A mismatch names the case and the surface.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import {
  simulatedBanner,
  viewLines
} from '../../labextension/src/format/panel';
import {
  othersNote,
  processCells,
  processNote
} from '../../labextension/src/format/table';
import { gpuKey } from '../../labextension/src/model/history';
import { parseMessage } from '../../labextension/src/wire/protocol';
import type { SampleMessage } from '../../labextension/src/wire/types';
import { trans } from './fixtures';

const GOLDEN = join(process.cwd(), 'tests', 'fixtures', 'golden');

interface IGolden {
  case: string;
  sample: unknown;
  banner: string | null;
  view: Record<string, Record<string, unknown>>;
}

const cases: IGolden[] = readdirSync(GOLDEN)
  .filter(name => name.endsWith('.json'))
  .sort()
  .map(name => JSON.parse(readFileSync(join(GOLDEN, name), 'utf8')));

test('there are golden cases to run', () => {
  assert.ok(cases.length >= 8);
});

for (const golden of cases) {
  test(`${golden.case}: the sidebar and the live inline view show the golden words`, () => {
    const message = parseMessage(golden.sample) as SampleMessage;
    assert.ok(message, `${golden.case}: the sample does not parse`);
    const sample = message.sample;
    assert.equal(
      simulatedBanner(sample.simulated, trans) || null,
      golden.banner,
      `${golden.case}: banner`
    );
    assert.deepEqual(
      sample.gpus.map(gpuKey),
      Object.keys(golden.view),
      `${golden.case}: GPUs`
    );
    for (const gpu of sample.gpus) {
      const key = gpuKey(gpu);
      const { processes, ...lines } = golden.view[key];
      const shown = {
        ...viewLines(sample, gpu, trans),
        processNote: processNote(gpu, trans),
        othersNote: gpu.lost ? null : othersNote(gpu, trans)
      };
      for (const [surface, expected] of Object.entries(lines)) {
        assert.deepEqual(
          shown[surface as keyof typeof shown],
          expected,
          `${golden.case}: ${key}: ${surface}`
        );
      }
      const cells = (gpu.processes ?? []).map(p => {
        const c = processCells(p, trans);
        return {
          pid: c.pid,
          name: c.name,
          user: c.user,
          used: c.usedBytes,
          cpu: c.cpuPercent
        };
      });
      assert.deepEqual(
        cells,
        processes,
        `${golden.case}: ${key}: process cells`
      );
    }
  });
}
