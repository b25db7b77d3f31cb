// The GPU's lines the schema declares (`x-line` on a SampleGpu property, generated into wire/lines.ts): the
// sidebar words each one whose figure is known, through the catalogue and the number formatter, after the
// shapes' lines and in the schema's order, and none on a lost GPU. tests/render/test_declared_lines.py checks
// that no surface words one by hand, and the inline view's twin of these.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { formatBytes } from '../../labextension/src/format/number';
import {
  declaredLines,
  limitLines,
  viewLines
} from '../../labextension/src/format/panel';
import { GPU_LINES } from '../../labextension/src/wire/lines';
import { parseMessage } from '../../labextension/src/wire/protocol';
import type { SampleMessage } from '../../labextension/src/wire/types';
import { bracketed, fixture, trans } from './fixtures';

const GiB = 1024 ** 3;

/** S1's first GPU as the sidebar reads it, every declared line's figure null but `field`'s. */
function sampleWith(field?: string, value: number | null = 3 * GiB) {
  const message = parseMessage(fixture('sample.json')) as SampleMessage;
  assert.ok(message, 'the sample parses');
  const nulls = Object.fromEntries(GPU_LINES.map(line => [line.field, null]));
  const gpu = {
    ...message.sample.gpus[0],
    ...nulls,
    ...(field === undefined ? {} : { [field]: value })
  };
  return { sample: message.sample, gpu };
}

for (const line of GPU_LINES) {
  test(`${line.field}: its declared line shows where the figure is known, worded through the catalogue`, () => {
    const { sample, gpu } = sampleWith(line.field);
    const words = trans.__(line.words, formatBytes(3 * GiB, trans));
    assert.deepEqual(declaredLines(gpu, trans), [words]);
    assert.equal(limitLines(gpu, trans).at(-1), words);
    assert.ok(
      (viewLines(sample, gpu, trans).limits ?? '').toString().includes(words)
    );
    assert.deepEqual(declaredLines(gpu, bracketed), [
      `⟦${line.words.replace('%1', formatBytes(3 * GiB, trans))}⟧`
    ]);
  });

  test(`${line.field}: no line where its figure is null or the GPU is lost`, () => {
    const known = sampleWith(line.field).gpu;
    assert.deepEqual(
      declaredLines(sampleWith(line.field, null).gpu, trans),
      []
    );
    assert.deepEqual(limitLines({ ...known, lost: true }, trans), []);
  });
}

test('the declared lines show in the order the schema declares them', () => {
  const { gpu } = sampleWith();
  const all = {
    ...gpu,
    ...Object.fromEntries(GPU_LINES.map(l => [l.field, GiB]))
  };
  assert.deepEqual(
    declaredLines(all, trans),
    GPU_LINES.map(line => trans.__(line.words, formatBytes(GiB, trans)))
  );
});
