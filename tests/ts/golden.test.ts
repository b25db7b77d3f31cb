// The golden fixture (tests/fixtures/golden/, made by tests/golden_cases.py): for each case, the words the
// sidebar and the live inline view show of every GPU, which tests/render/test_golden.py checks viewtext.py
// and the still picture against; in English (<case>.json) and in each translated language (<language>/<case>.json,
// the sidebar's bundle made from the built catalogue by JupyterLab's own Gettext). viewtext.py mirrors format/: a
// drift between the two in any language fails here or there. A mismatch names the case, the language and the surface.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
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
import type { Trans } from '../../labextension/src/format/trans';
import { gpuKey } from '../../labextension/src/model/history';
import { parseMessage } from '../../labextension/src/wire/protocol';
import type { SampleMessage } from '../../labextension/src/wire/types';
import { bundle, languages as localeLanguages, trans } from './fixtures';

const GOLDEN = join(process.cwd(), 'tests', 'fixtures', 'golden');

interface IWords {
  case: string;
  banner: string | null;
  view: Record<string, Record<string, unknown>>;
}

interface IGolden extends IWords {
  sample: unknown;
}

function read<T>(...path: string[]): T {
  return JSON.parse(readFileSync(join(GOLDEN, ...path), 'utf8'));
}

const cases: IGolden[] = readdirSync(GOLDEN)
  .filter(name => name.endsWith('.json'))
  .sort()
  .map(name => read<IGolden>(name));

// A folder per translated language, its name the catalogue's locale (ja_JP).
const languages = readdirSync(GOLDEN)
  .filter(name => statSync(join(GOLDEN, name)).isDirectory())
  .sort();

test('there are golden cases to run', () => {
  assert.ok(cases.length >= 8);
});

test('there are golden words in every language of locale/, for every case', () => {
  assert.deepEqual(languages, localeLanguages());
  for (const language of languages) {
    assert.deepEqual(
      readdirSync(join(GOLDEN, language)).sort(),
      cases.map(golden => `${golden.case}.json`),
      language
    );
  }
});

/** The sidebar's words of the case's sample, in the language of `bundle`, against `words`. */
function showsTheGoldenWords(
  golden: IGolden,
  words: IWords,
  bundle: Trans,
  label: string
): void {
  const message = parseMessage(golden.sample) as SampleMessage;
  assert.ok(message, `${label}: the sample does not parse`);
  const sample = message.sample;
  assert.equal(
    simulatedBanner(sample.simulated, bundle) || null,
    words.banner,
    `${label}: banner`
  );
  assert.deepEqual(
    sample.gpus.map(gpuKey),
    Object.keys(words.view),
    `${label}: GPUs`
  );
  for (const gpu of sample.gpus) {
    const key = gpuKey(gpu);
    const { processes, ...lines } = words.view[key];
    const shown = {
      ...viewLines(sample, gpu, bundle),
      processNote: processNote(gpu, bundle),
      othersNote: gpu.lost ? null : othersNote(gpu, bundle)
    };
    for (const [surface, expected] of Object.entries(lines)) {
      assert.deepEqual(
        shown[surface as keyof typeof shown],
        expected,
        `${label}: ${key}: ${surface}`
      );
    }
    const cells = (gpu.processes ?? []).map(p => {
      const c = processCells(p, bundle);
      return {
        pid: c.pid,
        name: c.name,
        user: c.user,
        used: c.usedBytes,
        cpu: c.cpuPercent
      };
    });
    assert.deepEqual(cells, processes, `${label}: ${key}: process cells`);
  }
}

for (const golden of cases) {
  test(`${golden.case}: the sidebar and the live inline view show the golden words`, () => {
    showsTheGoldenWords(golden, golden, trans, golden.case);
  });
}

for (const language of languages) {
  for (const golden of cases) {
    test(`${language}/${golden.case}: the sidebar and the live inline view show the golden words in ${language}`, () => {
      const words = read<IWords>(language, `${golden.case}.json`);
      showsTheGoldenWords(
        golden,
        words,
        bundle(language),
        `${language}/${golden.case}`
      );
    });
  }
}
