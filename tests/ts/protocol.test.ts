import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import {
  DEFAULT_HISTORY_S,
  DEFAULT_INTERVAL_S,
  DEFAULT_SETTINGS,
  ProtocolError,
  configureMessage,
  connectCode,
  parseMessage,
  readSettings,
  receive
} from '../../labextension/src/wire/protocol';
import type { Hello, SampleMessage } from '../../labextension/src/wire/types';

import { fixture, malformed } from './fixtures';
import { FakeKernel, channelOn } from './kernel-fixture';

const MiB = 1024 ** 2;

test('the S1 sample fixture parses with budget, hidden GPU, N/A and the hostile name as data', () => {
  const message = parseMessage(fixture('sample.json')) as SampleMessage;
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

test('the server notice arrives with the sample; a sample without one has none', () => {
  const message = parseMessage(fixture('sample_privacy.json')) as SampleMessage;
  assert.deepEqual(message.sample.notice, {
    kind: 'idle_warning',
    text: 'This kernel has held 3.1 GiB of GPU memory while idle for 30 min; it will be shut down at 14:35.',
    t: 1763740790,
    shutdownAt: 1763742600,
    textSaid: null // the fixture's server words it itself, as an older one does
  });
  const plain = parseMessage(fixture('sample.json')) as SampleMessage;
  assert.equal(plain.sample.notice, null);
  const older = fixture('sample.json') as { sample: Record<string, unknown> };
  delete older.sample.notice; // a kernel from before notices
  assert.equal((parseMessage(older) as SampleMessage).sample.notice, null);
});

test('the hello fixture replays history that has no process tables', () => {
  const hello = parseMessage(fixture('hello.json')) as Hello;
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
  const lost = (parseMessage(fixture('sample_lost_gpu.json')) as SampleMessage)
    .sample;
  assert.deepEqual(
    lost.gpus.map(g => [g.lost, g.usedBytes]),
    [
      [false, 1200 * MiB],
      [true, null]
    ]
  );
  const none = (parseMessage(fixture('sample_no_driver.json')) as SampleMessage)
    .sample;
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
  // unknown_protocol.json is a sample of protocol 2: its kernel runs another major release, which is
  // said as such (tests/ts/releases.test.ts), not as a wrong field.
  assert.match(
    warnings.join('\n'),
    /message\.protocol is 2 \(jupyter-gpumem release not named\); this extension \(jupyter-gpumem \S+\) reads protocol 1$/m
  );
  assert.match(warnings.join('\n'), /message\.protocol is missing$/m);
  assert.match(
    warnings.join('\n'),
    /message\.sample\.gpus\[0\]\.used_bytes must be integer or null$/m
  );
  assert.match(
    warnings.join('\n'),
    /gpus\[1\]\.overhead_source must be one of estimated, remembered, measured, null$/m
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

type Json = Record<string, unknown>;

/** The S1 sample fixture as the kernel sent it, with its sample's top level and its GPUs
 * changed: `undefined` removes a field (what an older kernel sends). */
function s1(top: Json, gpu: Json = {}): Json {
  const message = fixture('sample.json') as { sample: Json };
  const drop = (o: Json) => {
    for (const [key, value] of Object.entries(o)) {
      if (value === undefined) {
        delete o[key];
      }
    }
    return o;
  };
  const sample = drop({ ...message.sample, ...top });
  sample.gpus = (sample.gpus as Json[]).map(g => drop({ ...g, ...gpu }));
  return { ...message, sample };
}

const sampleOf = (data: unknown) =>
  (parseMessage(data) as SampleMessage).sample;

const TAKES =
  'TensorFlow takes nearly all the memory of every GPU it can see when it starts (and keeps it)';

test('what the framework takes, where the policy stands and its note are read as the kernel sent them', () => {
  const sample = sampleOf(
    s1(
      {
        takes: TAKES,
        policy_state: 'in_force',
        policy_note: 'in force in TensorFlow since 10:42:01'
      },
      { in_force: true }
    )
  );
  assert.equal(sample.takes, TAKES);
  assert.equal(sample.policyState, 'in_force');
  assert.equal(sample.policyNote, 'in force in TensorFlow since 10:42:01');
  assert.deepEqual(
    sample.gpus.map(g => g.inForce),
    [true, true]
  );
  for (const state of ['recorded', 'not_in_force', null]) {
    assert.equal(sampleOf(s1({ policy_state: state })).policyState, state);
  }
  const none = sampleOf(
    s1(
      { takes: null, policy_state: null, policy_note: null },
      { in_force: false }
    )
  );
  assert.deepEqual(
    [none.takes, none.policyState, none.policyNote, none.gpus[1].inForce],
    [null, null, null, false]
  );
});

test('an older kernel without those fields still streams: no takes, no state, no note, not in force', () => {
  const sample = sampleOf(
    s1(
      { takes: undefined, policy_state: undefined, policy_note: undefined },
      { in_force: undefined }
    )
  );
  assert.deepEqual(
    [sample.takes, sample.policyState, sample.policyNote],
    [null, null, null]
  );
  assert.deepEqual(
    sample.gpus.map(g => g.inForce),
    [false, false]
  );
  assert.equal(sample.gpus[1].budgetBytes, 4096 * MiB);
});

test('a process the host sees but has not measured yet is told apart from N/A; an older kernel: never', () => {
  const message = fixture('sample.json') as {
    sample: { gpus: { processes: Json[] }[] };
  };
  const gpu1 = message.sample.gpus[1];
  gpu1.processes = gpu1.processes.map((p, i) => ({
    ...p,
    cpu_percent: null,
    cpu_pending: i === 0
  }));
  const processes = sampleOf(message).gpus[1].processes!;
  assert.deepEqual(
    processes.map(p => [p.cpuPercent, p.cpuPending]),
    [
      [null, true],
      [null, false],
      [null, false]
    ]
  );
  const older = sampleOf(fixture('sample.json')).gpus[1].processes!;
  assert.deepEqual(
    older.map(p => p.cpuPending),
    [false, false, false]
  );
  gpu1.processes[0].cpu_pending = 'soon';
  assert.throws(
    () => parseMessage(message),
    /processes\[0\]\.cpu_pending must be boolean$/
  );
});

test('a policy state the protocol does not name, or a wrongly typed new field, drops the message', () => {
  const refused: [Json, RegExp][] = [
    [
      s1({ policy_state: 'applied' }),
      /^message\.sample\.policy_state must be one of recorded, in_force, not_in_force, null$/
    ],
    [s1({ policy_state: 3 }), /^message\.sample\.policy_state must be one of/],
    [s1({ policy_state: '' }), /policy_state must be one of/],
    [
      s1({ takes: ['TensorFlow'] }),
      /^message\.sample\.takes must be string or null$/
    ],
    [
      s1({ policy_note: false }),
      /^message\.sample\.policy_note must be string or null$/
    ],
    [
      s1({}, { in_force: 'yes' }),
      /^message\.sample\.gpus\[0\]\.in_force must be boolean$/
    ],
    [s1({}, { in_force: null }), /in_force must be boolean/]
  ];
  for (const [data, message] of refused) {
    assert.throws(
      () => parseMessage(data),
      (error: unknown) =>
        error instanceof ProtocolError && message.test(error.message)
    );
  }
  const warnings: string[] = [];
  const original = console.warn;
  console.warn = (text: string) => warnings.push(text);
  try {
    assert.equal(receive(s1({ policy_state: 'applied' })), null);
  } finally {
    console.warn = original;
  }
  assert.equal(warnings.length, 1);
});

test("the settings schema's defaults are the sidebar's defaults", () => {
  const schema = JSON.parse(
    readFileSync(
      join(process.cwd(), 'labextension', 'schema', 'plugin.json'),
      'utf8'
    )
  ) as { properties: Record<string, { default: number }> };
  const defaults = Object.fromEntries(
    Object.entries(schema.properties).map(([key, p]) => [key, p.default])
  );
  assert.equal(defaults.intervalSeconds, DEFAULT_INTERVAL_S);
  assert.equal(defaults.historyMinutes * 60, DEFAULT_HISTORY_S);
  assert.deepEqual(readSettings(defaults), DEFAULT_SETTINGS);
  assert.deepEqual(DEFAULT_SETTINGS, {
    intervalS: DEFAULT_INTERVAL_S,
    historyS: DEFAULT_HISTORY_S
  });
});

test('settings missing from the registry get the defaults; set ones are read in seconds', () => {
  assert.deepEqual(readSettings(null), DEFAULT_SETTINGS);
  assert.deepEqual(readSettings({}), DEFAULT_SETTINGS);
  assert.deepEqual(readSettings({ intervalSeconds: '2' }), DEFAULT_SETTINGS);
  assert.deepEqual(readSettings({ intervalSeconds: 0.5, historyMinutes: 30 }), {
    intervalS: 0.5,
    historyS: 1800
  });
});

test('the interface’s language rides on configure, and a configure without one is the fixture', () => {
  assert.deepEqual(
    configureMessage({ intervalS: 2, historyS: 1800 }, 'ja-JP'),
    {
      ...(fixture('configure.json') as object),
      language: 'ja-JP'
    }
  );
  assert.deepEqual(
    configureMessage({ intervalS: 2, historyS: 1800 }, null),
    fixture('configure.json')
  );
});

test('the sidebar tells a kernel the interface’s language after its hello and with every configure', () => {
  const kernel = new FakeKernel();
  const sent: unknown[] = [];
  const comm = { isDisposed: false, send: (data: unknown) => sent.push(data) };
  const { channel, done } = channelOn(kernel, 'ja-JP');
  try {
    // As the kernel sends it: the wire's own names.
    const hello = fixture('hello.json') as {
      interval_s: number;
      history_s: number;
    };
    kernel.open(comm, hello);
    assert.equal(channel.state, 'streaming');
    channel.configure({ intervalS: 5, historyS: 600 });
    assert.deepEqual(sent, [
      {
        protocol: 1,
        type: 'configure',
        interval_s: hello.interval_s,
        history_s: hello.history_s,
        language: 'ja-JP'
      },
      {
        protocol: 1,
        type: 'configure',
        interval_s: 5,
        history_s: 600,
        language: 'ja-JP'
      }
    ]);
  } finally {
    done();
  }
});
