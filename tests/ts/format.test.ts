import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  breakdown,
  formatBytes,
  formatMiB,
  formatPercent,
  headline
} from '../../labextension/src/format';
import { ISampleMessage, parseMessage } from '../../labextension/src/protocol';
import { fixture } from './fixtures';

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

test('bytes are shown as nvidia-smi counts them, and N/A is not zero', () => {
  assert.equal(formatBytes(null), 'N/A');
  assert.equal(formatBytes(0), '0 MiB');
  assert.equal(formatBytes(380 * MiB), '380 MiB');
  assert.equal(formatBytes(8192 * MiB), '8.0 GiB');
  assert.equal(formatMiB(12000 * MiB), '12000 MiB');
  assert.equal(formatMiB(null), 'N/A');
  assert.equal(formatPercent(null), 'N/A');
  assert.equal(formatPercent(163.5), '163.5%');
});

test('the headline reads "3.1 of 4.0 GiB budget (78%)"', () => {
  assert.deepEqual(headline(3200 * MiB, 4 * GiB, 'TensorFlow'), {
    text: '3.1 of 4.0 GiB budget (78%)',
    level: 'ok'
  });
});

test('the headline warns from 90% and errs above the budget', () => {
  assert.equal(headline(0.899 * 4 * GiB, 4 * GiB, null).level, 'ok');
  assert.equal(headline(0.9 * 4 * GiB, 4 * GiB, null).level, 'warn');
  assert.equal(headline(4 * GiB, 4 * GiB, null).level, 'warn');
  assert.equal(headline(4 * GiB + MiB, 4 * GiB, null).level, 'error');
});

test('small budgets are in MiB', () => {
  assert.equal(
    headline(177 * MiB, 512 * MiB, null).text,
    '177 of 512 MiB budget (35%)'
  );
});

test('without a budget the headline says who will take the memory', () => {
  assert.equal(
    headline(1536 * MiB, null, 'TensorFlow').text,
    '1.5 GiB used by this kernel; no budget set — TensorFlow will take nearly all memory'
  );
  assert.equal(
    headline(null, null, 'PyTorch').text,
    'N/A; no budget set — PyTorch takes what it needs, without a cap'
  );
  assert.equal(
    headline(null, null, 'JAX').text,
    'N/A; no budget set — JAX will take 75% of it'
  );
  assert.equal(
    headline(null, null, null).text,
    'N/A; no budget set — a framework will take its default (TensorFlow: nearly all memory)'
  );
  assert.match(headline(null, 4 * GiB, null).text, /^N\/A of 4\.0 GiB budget/);
});

test('the breakdown splits the budget into pool and what lies outside it', () => {
  const [gpu0, gpu1] = (parseMessage(fixture('sample.json')) as ISampleMessage)
    .sample.gpus;
  assert.equal(
    breakdown(gpu1, 'TensorFlow'),
    'TensorFlow pool 3.6 GiB + 504 MiB outside it (measured) = 4.1 GiB'
  );
  const planned = {
    ...gpu1,
    poolKnown: false,
    overheadBytes: 400 * MiB,
    overheadSource: 'estimated' as const
  };
  assert.equal(
    breakdown(planned, 'TensorFlow'),
    'TensorFlow limit 3.6 GiB + 400 MiB set aside for CUDA and libraries (estimated)'
  );
  assert.equal(
    breakdown({ ...planned, overheadSource: 'remembered' }, 'PyTorch'),
    'PyTorch limit 3.6 GiB + 400 MiB set aside for CUDA and libraries (measured by an earlier kernel)'
  );
  assert.equal(
    breakdown(planned, null), // several frameworks installed, none imported
    'Allocator limit 3.6 GiB + 400 MiB set aside for CUDA and libraries (estimated)'
  );
  assert.equal(breakdown(gpu0, 'TensorFlow'), null); // hidden: no budget
});
