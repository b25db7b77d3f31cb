import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  statusText,
  statusTooltip
} from '../../labextension/src/format/statusbar';
import { parseMessage } from '../../labextension/src/wire/protocol';
import type { SampleMessage } from '../../labextension/src/wire/types';
import { fixture, trans } from './fixtures';

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;
const S1 = (parseMessage(fixture('sample.json')) as SampleMessage).sample;

/** GPU 0 of a kernel holding ``ownBytes`` against ``budgetBytes`` (null: not known, no budget), in force. */
const gpu = (
  ownBytes: number | null,
  budgetBytes: number | null
): Parameters<typeof statusText>[0] => ({
  index: 0,
  lost: false,
  hidden: false,
  ownBytes,
  budgetBytes,
  inForce: true
});

test('the status bar reads "GPU 3.1/4.0 GiB" against the budget, "GPU 3.1 GiB" without one', () => {
  assert.deepEqual(statusText(gpu(3200 * MiB, 4 * GiB), trans), {
    text: 'GPU 3.1/4.0 GiB',
    level: 'ok'
  });
  assert.deepEqual(statusText(gpu(3.7 * GiB, 4 * GiB), trans), {
    text: 'GPU 3.7/4.0 GiB',
    level: 'warn'
  });
  assert.equal(statusText(gpu(4.2 * GiB, 4 * GiB), trans).level, 'error');
  assert.deepEqual(statusText(gpu(3200 * MiB, null), trans), {
    text: 'GPU 3.1 GiB',
    level: 'ok'
  });
  assert.equal(
    statusText(gpu(177 * MiB, 512 * MiB), trans).text,
    'GPU 177/512 MiB'
  );
  assert.equal(
    statusText(gpu(null, 4 * GiB), trans).text,
    'GPU N/A of 4.0 GiB'
  );
  assert.equal(statusText(gpu(null, null), trans).text, 'GPU N/A');
});

test('the status bar’s tooltip has the split and says what a click does', () => {
  const gpu1 = S1.gpus[1];
  assert.equal(
    statusTooltip(gpu1, S1, trans),
    [
      '4.1 of 4.0 GiB budget (103%)',
      'TensorFlow pool 3.6 GiB + 504 MiB outside it (measured) = 4.1 GiB',
      `Over budget: ${gpu1.overReason}`,
      'GPU 1 · NVIDIA GeForce GTX 1080 · 4.8 GiB of 8.0 GiB used',
      'Click to open the GPU Memory panel.'
    ].join('\n')
  );
});

test('the status bar’s tooltip says how many kernels of the server hold how much, before the click', () => {
  const lines = statusTooltip(
    S1.gpus[1],
    S1,
    trans,
    '2 kernels on this server hold 7.5 GiB of GPU memory'
  ).split('\n');
  assert.deepEqual(lines.slice(-2), [
    '2 kernels on this server hold 7.5 GiB of GPU memory',
    'Click to open the GPU Memory panel.'
  ]);
});
