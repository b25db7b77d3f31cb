import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  IHello,
  ISampleMessage,
  configureMessage,
  connectCode,
  parseMessage,
  receive
} from '../../labextension/src/protocol';
import { fixture, malformed } from './fixtures';

const MiB = 1024 ** 2;

test('the S1 sample fixture parses with budget, hidden GPU, N/A and the hostile name as data', () => {
  const message = parseMessage(fixture('sample.json')) as ISampleMessage;
  assert.equal(message.type, 'sample');
  const { sample } = message;
  assert.equal(sample.policy, 'fraction=0.5 gpus=1');
  assert.equal(sample.framework, 'TensorFlow');
  assert.equal(sample.frameworkStarted, true);
  assert.equal(sample.simulated, 's1_two_gpus.scenario');
  const [gpu0, gpu1] = sample.gpus;
  assert.equal(gpu0.hidden, true);
  assert.equal(gpu0.budgetBytes, null);
  assert.equal(gpu1.budgetBytes, 4096 * MiB);
  assert.equal(gpu1.ownBytes, 4200 * MiB);
  assert.equal(gpu1.frameworkBytes, 3000 * MiB);
  assert.equal(gpu1.poolBytes, 3696 * MiB);
  assert.equal(gpu1.poolKnown, true);
  assert.equal(gpu1.overheadBytes, 504 * MiB);
  assert.equal(gpu1.overheadSource, 'measured');
  assert.match(
    gpu1.overReason!,
    /^CUDA context \+ cuDNN\/cuBLAS: 504 MiB outside/
  );
  assert.equal(gpu0.overReason, null);
  assert.deepEqual(
    gpu1.processes!.map(p => [p.pid, p.usedBytes, p.self]),
    [
      [4242, 4200 * MiB, true],
      [1204, null, false],
      [6200, 380 * MiB, false]
    ]
  );
  assert.equal(gpu1.processes![2].name, '<img src=x onerror=alert(1)>');
});

test('the hello fixture replays history that has no process tables', () => {
  const hello = parseMessage(fixture('hello.json')) as IHello;
  assert.equal(hello.type, 'hello');
  assert.equal(hello.intervalS, 1);
  assert.equal(hello.historyS, 900);
  assert.deepEqual(
    hello.history.map(s => [s.t, s.gpus[1].ownBytes, s.gpus[1].processes]),
    [
      [1763740798, 3900 * MiB, null],
      [1763740799, 4000 * MiB, null]
    ]
  );
});

test('a lost GPU and a missing driver parse as such', () => {
  const lost = (parseMessage(fixture('sample_lost_gpu.json')) as ISampleMessage)
    .sample;
  assert.deepEqual(
    lost.gpus.map(g => [g.lost, g.usedBytes]),
    [
      [false, 1200 * MiB],
      [true, null]
    ]
  );
  const none = (
    parseMessage(fixture('sample_no_driver.json')) as ISampleMessage
  ).sample;
  assert.deepEqual(none.gpus, []);
  assert.match(none.problem!, /No NVIDIA driver/);
});

test('every malformed fixture is dropped with exactly one console warning', () => {
  const cases = malformed();
  assert.ok(cases.length >= 8);
  const warnings: string[] = [];
  const original = console.warn;
  console.warn = (text: string) => warnings.push(text);
  try {
    for (const [name, data] of cases) {
      const before = warnings.length;
      assert.equal(receive(data), null, name);
      assert.equal(warnings.length, before + 1, name);
      assert.match(warnings[before], /^jupyter-gpumem: dropped a message/);
    }
  } finally {
    console.warn = original;
  }
  assert.match(warnings.join('\n'), /protocol 2 is not 1/);
  assert.match(warnings.join('\n'), /gpus\[0\]\.used_bytes is not a number/);
  assert.match(
    warnings.join('\n'),
    /gpus\[1\]\.overhead_source is not one of estimated, remembered, measured/
  );
});

test('the configure message is the shared fixture', () => {
  assert.deepEqual(
    configureMessage({ intervalS: 2, historyS: 1800 }),
    fixture('configure.json')
  );
});

test('the connect code calls the kernel side without leaving names behind', () => {
  assert.equal(
    connectCode({ intervalS: 0.2, historyS: 900 }),
    "__import__('jupyter_gpumem')._connect_sidebar(interval_s=0.2, history_s=900)"
  );
});
