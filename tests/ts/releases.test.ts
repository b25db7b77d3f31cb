// Releases mix (docs/protocol.md, "Versioning and releases mixing"): a kernel's jupyter-gpumem and
// JupyterLab's are upgraded at different times. The comm messages of every release are kept in
// tests/fixtures/releases/<release>/protocol/ (the Python tests, tests/wire/test_releases.py, read the same
// folders): this sidebar decodes every one of protocol 1, older or newer, with the schema's defaults for
// what an older kernel did not send; it refuses a kernel of protocol 2 with one sentence naming both
// releases and what to upgrade; and the sidebar of release 0.1.0 reads this release's messages.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import {
  channelLine,
  incompatibleLine
} from '../../labextension/src/format/channel';
import {
  KernelMessage,
  VersionError,
  parseMessage,
  receive
} from '../../labextension/src/wire/protocol';
import type {
  Hello,
  Sample,
  SampleMessage
} from '../../labextension/src/wire/types';
import {
  COMM_SCHEMA,
  PACKAGE_VERSION
} from '../../labextension/src/wire/schema';
import { chartLabels } from '../../labextension/src/format/chart';
import { viewLines } from '../../labextension/src/format/panel';
import { frameworkName } from '../../labextension/src/format/words';
import { problem } from '../../labextension/src/wire/validate';
import { bundle, trans } from './fixtures';
import { FakeKernel, channelOn } from './kernel-fixture';

type Json = Record<string, unknown>;

const ROOT = process.cwd();
const RELEASES = join(ROOT, 'tests', 'fixtures', 'releases');
// Oldest first: the first commits' messages, 0.1.0 as it shipped, this release, an invented newer one.
const MAJOR_1 = ['0.1.0-first', '0.1.0', '0.2.0', 'newer-minor'];
const NEWER_MAJOR = 'newer-major'; // invented: protocol 2, from a jupyter-gpumem 1.0.0
const read = (path: string): Json => JSON.parse(readFileSync(path, 'utf8'));
const VERSION = read(join(ROOT, 'package.json')).version as string;

/** A release's kernel-to-sidebar messages (configure goes the other way: the Python tests read it). */
function messages(release: string): [string, Json][] {
  const dir = join(RELEASES, release, 'protocol');
  return readdirSync(dir)
    .filter(name => name.endsWith('.json') && name !== 'configure.json')
    .sort()
    .map(name => [`${release}/${name}`, read(join(dir, name))]);
}

const samples = (message: KernelMessage): Sample[] =>
  message.type === 'hello' ? message.history : [message.sample];

const camel = (name: string) =>
  name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
const fields = (definition: 'sample' | 'gpu' | 'process') =>
  Object.keys(COMM_SCHEMA.$defs[definition].properties).map(camel);

/** The fields of this release's schema that a decoded value lacks: none, if the defaults were filled. */
function lacking(value: object, definition: 'sample' | 'gpu' | 'process') {
  return fields(definition).filter(name => !(name in value));
}

test('the release folders hold messages of every release of protocol 1, and one of protocol 2', () => {
  const folders = readdirSync(RELEASES, { withFileTypes: true })
    .filter(entry => entry.isDirectory())
    .map(entry => entry.name)
    .sort();
  assert.deepEqual(folders, [...MAJOR_1, NEWER_MAJOR].sort());
  for (const release of [...MAJOR_1, NEWER_MAJOR]) {
    assert.ok(messages(release).length >= 2, release);
  }
  assert.ok(
    folders.includes(PACKAGE_VERSION),
    `this release (${PACKAGE_VERSION}) has no folder`
  );
});

test('every message of every release of protocol 1 decodes, with every field this release knows', () => {
  let decoded = 0;
  for (const release of MAJOR_1) {
    for (const [name, data] of messages(release)) {
      const message = parseMessage(data);
      for (const sample of samples(message)) {
        assert.deepEqual(lacking(sample, 'sample'), [], name);
        for (const gpu of sample.gpus) {
          assert.deepEqual(lacking(gpu, 'gpu'), [], name);
          for (const process of gpu.processes ?? []) {
            assert.deepEqual(lacking(process, 'process'), [], name);
          }
        }
        decoded += 1;
      }
    }
  }
  assert.ok(decoded >= 20, `${decoded} samples`);
});

test("an older kernel's message reads as not known where it did not say, and as it said elsewhere", () => {
  // The first sample the protocol ever had (git history: tests/fixtures/releases/README.md).
  const first = (
    parseMessage(
      read(join(RELEASES, '0.1.0-first', 'protocol', 'sample.json'))
    ) as SampleMessage
  ).sample;
  const gpu = first.gpus[1];
  assert.deepEqual(
    [gpu.poolBytes, gpu.poolKnown, gpu.overheadSource, gpu.overReason],
    [null, false, null, null]
  );
  assert.deepEqual(
    [gpu.ownSource, gpu.inForce, gpu.limitKind, gpu.limitHard],
    [null, false, null, false]
  );
  assert.deepEqual(
    [first.stalledSince, first.notice, first.cells, first.takes],
    [null, null, [], null]
  );
  assert.deepEqual(
    [gpu.ownBytes, gpu.budgetBytes, gpu.processes![0].self],
    [3355443200, 4294967296, true]
  );
  // 0.1.0 as it shipped: everything but what 0.2.0 added.
  const shipped = parseMessage(
    read(join(RELEASES, '0.1.0', 'protocol', 'hello.json'))
  ) as Hello;
  assert.equal(shipped.packageVersion, '0.1.0');
  assert.deepEqual(
    shipped.history.map(s => s.stalledSince),
    [null, null]
  );
});

test("several frameworks' names are worded in the sidebar's language where the kernel sends their code, and an older kernel's English name is shown as it is", () => {
  const ja = bundle('ja_JP');
  const ours = (
    parseMessage(
      read(join(RELEASES, '0.2.0', 'protocol', 'sample_two_frameworks.json'))
    ) as SampleMessage
  ).sample;
  const gpu = ours.gpus[1];
  assert.equal(ours.framework, 'TensorFlow and PyTorch'); // what an older sidebar shows
  assert.equal(frameworkName(ours, ja), 'TensorFlow と PyTorch');
  assert.equal(frameworkName(ours, bundle('zh_CN')), 'TensorFlow 和 PyTorch');
  assert.equal(
    chartLabels(frameworkName(ours, ja), ja).framework,
    'TensorFlow と PyTorch 使用中'
  );
  assert.match(
    String(viewLines(ours, gpu, ja).breakdown),
    /^TensorFlow と PyTorch /
  );
  assert.equal(
    viewLines(ours, gpu, trans).breakdown,
    'TensorFlow and PyTorch limit 3.6 GiB + 400 MiB set aside for CUDA and libraries (estimated)'
  );
  // A code this sidebar does not know (a newer kernel's): the English name.
  const newer = {
    ...ours,
    frameworkSaid: { code: 'frameworks_both', values: {} }
  };
  assert.equal(frameworkName(newer, ja), 'TensorFlow and PyTorch');
  // A kernel of 0.1.0 with both imported sent the English name alone (its schema's example): shown as it is.
  const raw = read(join(RELEASES, '0.1.0', 'protocol', 'sample.json'));
  const older = (
    parseMessage({
      ...raw,
      sample: { ...(raw.sample as Json), framework: 'TensorFlow and PyTorch' }
    }) as SampleMessage
  ).sample;
  assert.equal(older.frameworkSaid, null);
  assert.equal(frameworkName(older, ja), 'TensorFlow and PyTorch');
  assert.equal(
    chartLabels(frameworkName(older, ja), ja).framework,
    'TensorFlow and PyTorch 使用中'
  );
  assert.match(
    String(viewLines(older, older.gpus[1], ja).breakdown),
    /^TensorFlow and PyTorch /
  );
});

test("a newer kernel's fields this release does not know are left alone; what it knows reads as sent", () => {
  const ours = parseMessage(
    read(join(RELEASES, '0.2.0', 'protocol', 'sample.json'))
  ) as SampleMessage;
  const newer = parseMessage(
    read(join(RELEASES, 'newer-minor', 'protocol', 'sample.json'))
  ) as SampleMessage;
  for (const name of fields('sample').filter(
    f => f !== 'gpus' && f !== 'cells'
  )) {
    assert.deepEqual(
      newer.sample[name as keyof Sample],
      ours.sample[name as keyof Sample],
      name
    );
  }
  newer.sample.gpus.forEach((gpu, i) => {
    for (const name of fields('gpu').filter(f => f !== 'processes')) {
      assert.deepEqual(
        gpu[name as keyof typeof gpu],
        ours.sample.gpus[i][name as keyof typeof gpu],
        name
      );
    }
  });
  assert.deepEqual(
    newer.sample.cells.map(c => [c.count, c.line, c.endT]),
    [[12, 'model.fit(x, y, epochs=3)', 1763740799.5]]
  );
});

test('a kernel of protocol 2 is refused with one sentence naming both releases and what to upgrade', () => {
  assert.equal(PACKAGE_VERSION, VERSION);
  const [[, hello], [, sample]] = messages(NEWER_MAJOR).sort((a, b) =>
    a[0].localeCompare(b[0])
  );
  const sentence = (theirs: string) =>
    `This kernel's jupyter-gpumem${theirs} speaks protocol 2; this JupyterLab extension ` +
    `(jupyter-gpumem ${VERSION}) reads protocol 1: upgrade jupyter-gpumem where JupyterLab runs, ` +
    'then reload this page.';
  for (const [data, theirs] of [
    [hello, ' 1.0.0'],
    [sample, ''], // a sample does not name the kernel's release
    [{ ...hello, package_version: '<img src=x onerror=alert(1)>' }, ''],
    [{ protocol: 2, type: 'handshake' }, '']
  ] as [Json, string][]) {
    assert.throws(
      () => parseMessage(data),
      (error: unknown) =>
        error instanceof VersionError &&
        error.protocol === 2 &&
        incompatibleLine(error, trans) === sentence(theirs)
    );
  }
  assert.equal(
    incompatibleLine({ protocol: 0, packageVersion: '0.0.1' }, trans),
    "This kernel's jupyter-gpumem 0.0.1 speaks protocol 0; this JupyterLab extension " +
      `(jupyter-gpumem ${VERSION}) reads protocol 1: upgrade jupyter-gpumem in this kernel's ` +
      'environment (%pip install -U jupyter-gpumem), then restart the kernel.'
  );
  const refused: string[] = [];
  const warnings: string[] = [];
  const original = console.warn;
  console.warn = (text: string) => warnings.push(text);
  try {
    assert.equal(
      receive(hello, error => refused.push(incompatibleLine(error, trans))),
      null
    );
    assert.equal(receive(hello), null); // without a listener: a warning only
  } finally {
    console.warn = original;
  }
  assert.deepEqual(refused, [sentence(' 1.0.0')]);
  assert.equal(warnings.length, 2);
});

test('the sidebar says what to upgrade for a kernel of protocol 2, and streams again from one of protocol 1', () => {
  const original = console.warn;
  console.warn = () => undefined;
  const { channel, done } = channelOn(new FakeKernel());
  try {
    const [[, hello], [, sample]] = messages(NEWER_MAJOR).sort((a, b) =>
      a[0].localeCompare(b[0])
    );
    const line = () =>
      channelLine(channel.state, channel.detail, trans, channel.refused);
    channel.receive(hello);
    assert.equal(channel.state, 'incompatible');
    assert.match(
      line(),
      /^This kernel's jupyter-gpumem 1\.0\.0 speaks protocol 2; .* upgrade jupyter-gpumem where JupyterLab runs, then reload this page\.$/
    );
    const said = line();
    channel.receive(sample); // names no release: the hello's sentence stays
    assert.deepEqual([channel.state, line()], ['incompatible', said]);
    const latest = () => channel.history.latest; // read anew: no narrowing
    assert.equal(latest(), null);
    // The kernel is replaced by one of release 0.1.0 (its environment downgraded, or another kernel).
    channel.receive(read(join(RELEASES, '0.1.0', 'protocol', 'hello.json')));
    assert.deepEqual([channel.state, channel.detail], ['streaming', '']);
    assert.equal(latest()?.t, 1763740799);
  } finally {
    done();
    console.warn = original;
  }
});

/** A schema as schema.ts has it: without the words for people (labextension/scripts/schema.mjs). */
function strip(node: unknown, names = false): unknown {
  if (Array.isArray(node)) {
    return node.map(item => strip(item));
  }
  if (typeof node === 'object' && node !== null) {
    return Object.fromEntries(
      Object.entries(node)
        .filter(
          ([key]) => names || !['$schema', 'title', 'description'].includes(key)
        )
        .map(([key, value]) => [
          key,
          strip(value, !names && (key === 'properties' || key === '$defs'))
        ])
    );
  }
  return node;
}

test("release 0.1.0's sidebar reads the messages of this release and of a newer one of protocol 1", () => {
  // 0.1.0's own schema, frozen in its folder; validate.ts is the same code as 0.1.0's (unchanged since).
  const old = strip(
    read(join(RELEASES, '0.1.0', 'schemas', 'comm.v1.json'))
  ) as Json;
  let count = 0;
  for (const release of MAJOR_1.slice(MAJOR_1.indexOf('0.1.0') + 1)) {
    for (const [name, data] of messages(release)) {
      assert.equal(problem(old, structuredClone(data), 'message'), null, name);
      count += 1;
    }
  }
  assert.ok(count >= 10, `${count} messages`);
});
