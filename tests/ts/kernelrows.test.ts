import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import {
  kernelCells,
  kernelsNote,
  kernelsSummary,
  kernelsTitle,
  shutDownDialog
} from '../../labextension/src/format/kernels';
import { duration } from '../../labextension/src/format/number';
import { statusText } from '../../labextension/src/format/statusbar';
import {
  ISessionName,
  ListedBody,
  kernelRows
} from '../../labextension/src/model/kernelrows';
import { readServerBody } from '../../labextension/src/wire/api';
import { bracketed, trans } from './fixtures';

const API = join(process.cwd(), 'tests', 'fixtures', 'api');
const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

function apiFixture(name: string): unknown {
  return JSON.parse(readFileSync(join(API, name), 'utf8'));
}

const notebook = (path: string): ISessionName => ({
  name: path.split('/').pop()!,
  path,
  type: 'notebook'
});

function body(
  kernels: ListedBody['kernels'],
  gpus: ListedBody['gpus'] = []
): ListedBody {
  return { t: 10_000, kernels, gpus };
}

/** One idle kernel on the GPUs given, idle 12 min, on a server whose GPUs have 8 GiB each. */
function shapedRow(gpus: ListedBody['kernels'][number]['gpus']) {
  const [row] = kernelRows(
    body(
      [
        {
          id: 'k',
          executionState: 'idle',
          lastActivity: 10_000 - 725,
          gpus
        }
      ],
      [0, 1].map(index => ({ index, totalBytes: 8 * GiB }))
    ),
    new Map(),
    null
  );
  return row;
}

test('the server body fixture is read: each kernel, its GPUs, its idle time on the server clock', () => {
  const read = readServerBody(apiFixture('body.json'))!;
  assert.equal(read.gpus.length, 2);
  const rows = kernelRows(
    read,
    new Map([['5f0c4a6e-kernel-a', notebook('work/train.ipynb')]]),
    '9b1d-kernel-b'
  );
  assert.deepEqual(
    rows.map(r => [r.id, r.session?.name ?? null, r.current, r.heldBytes]),
    [
      ['5f0c4a6e-kernel-a', 'train.ipynb', false, 4404019200],
      ['9b1d-kernel-b', null, true, 0]
    ]
  );
  assert.equal(rows[0].idleS, 300.5); // body t − last_activity: both the server's clock
  assert.equal(rows[1].busy, true);
  assert.equal(rows[1].idleS, null);
});

test('a body its schema does not admit is refused whole: another version, a kernel without its ceiling…', () => {
  const malformed = readdirSync(join(API, 'malformed'));
  assert.ok(malformed.length >= 5);
  for (const name of malformed) {
    assert.equal(
      readServerBody(apiFixture(join('malformed', name))),
      null,
      name
    );
  }
});

test("what an older server leaves out is read as its schema's default", () => {
  const body = apiFixture('body.json') as {
    kernels: Record<string, unknown>[];
  };
  delete body.kernels[0].execution_state;
  delete body.kernels[0].last_activity;
  const [kernel] = readServerBody(body)!.kernels;
  assert.equal(kernel.executionState, null);
  assert.equal(kernel.lastActivity, null);
});

test('largest first, unknown memory last, then by name', () => {
  const k = (id: string, used: (number | null)[]) => ({
    id,
    executionState: 'idle',
    lastActivity: null,
    gpus: used.map((u, index) => ({ index, usedBytes: u, budgetBytes: null }))
  });
  const rows = kernelRows(
    body([
      k('small', [100 * MiB]),
      k('unknown', [null]),
      k('none', []),
      k('big', [1 * GiB, 2 * GiB]),
      k('middle', [2 * GiB, null])
    ]),
    new Map(),
    null
  );
  assert.deepEqual(
    rows.map(r => r.id),
    ['big', 'middle', 'small', 'none', 'unknown']
  );
  assert.equal(
    kernelsSummary(rows, trans),
    '3 kernels on this server hold 5.1 GiB of GPU memory (N/A for 1 more)'
  );
});

test("a row's words: name, memory, budget, idle, this kernel; several GPUs named", () => {
  const [row] = kernelRows(
    body([
      {
        id: '5f0c4a6e-1111',
        executionState: 'idle',
        lastActivity: 10_000 - 725,
        gpus: [{ index: 0, usedBytes: 3.7 * GiB, budgetBytes: 4 * GiB }]
      }
    ]),
    new Map([['5f0c4a6e-1111', notebook('a/b.ipynb')]]),
    '5f0c4a6e-1111'
  );
  assert.deepEqual(kernelCells(row, 1, trans), {
    name: 'b.ipynb',
    nameTitle: 'a/b.ipynb (kernel 5f0c4a6e-1111)',
    memory: '3.7 GiB',
    level: 'warn',
    detail: 'budget 4.0 GiB · idle 12 min',
    badge: 'this kernel',
    shutDown: 'Shut down the kernel of b.ipynb'
  });
  assert.equal(
    kernelCells(row, 2, trans).detail,
    'GPU 0: 3.7 GiB of 4.0 GiB · idle 12 min'
  );
});

test("what an older server leaves out of a kernel's GPU is read as none: no MIG slice, no driver limit", () => {
  const read = readServerBody(apiFixture('body.json'))!;
  const [gpu] = read.kernels[0].gpus;
  assert.equal(gpu.slice, null);
  assert.equal(gpu.driverLimitBytes, null);
  const [row] = kernelRows(read, new Map(), null);
  assert.equal(
    kernelCells(row, read.gpus.length, trans).detail,
    'GPU 1: 4.1 GiB of 4.0 GiB · idle 5 min'
  );
});

test("a kernel on a MIG slice under the driver's limit: the row says both after its budget, as the server sends them", () => {
  const sent = apiFixture('body.json') as {
    kernels: { gpus: Record<string, unknown>[] }[];
  };
  Object.assign(sent.kernels[0].gpus[0], {
    slice: '2g.10gb',
    driver_limit_bytes: 6 * GiB
  });
  const read = readServerBody(sent)!;
  const [row] = kernelRows(read, new Map(), null);
  const cells = kernelCells(row, read.gpus.length, trans);
  assert.equal(
    cells.detail,
    'GPU 1: 4.1 GiB of 4.0 GiB, MIG slice 2g.10gb, driver limit 6.0 GiB · idle 5 min'
  );
  assert.equal(cells.level, 'error'); // over its budget, below the limit
  const one = kernelCells(
    shapedRow([
      {
        index: 0,
        usedBytes: 3 * GiB,
        budgetBytes: 4 * GiB,
        slice: '1g.5gb',
        driverLimitBytes: 6 * GiB
      }
    ]),
    1,
    trans
  );
  assert.equal(
    one.detail,
    'budget 4.0 GiB · MIG slice 1g.5gb · driver limit 6.0 GiB · idle 12 min'
  );
  assert.equal(one.level, 'ok');
});

test("without a budget the driver's limit stands alone, and the memory is coloured against it", () => {
  const cells = (usedBytes: number, driverLimitBytes: number | null) =>
    kernelCells(
      shapedRow([{ index: 0, usedBytes, budgetBytes: null, driverLimitBytes }]),
      1,
      trans
    );
  assert.equal(
    cells(5.5 * GiB, 6 * GiB).detail,
    'driver limit 6.0 GiB · idle 12 min'
  );
  assert.equal(cells(5.5 * GiB, 6 * GiB).level, 'warn'); // 92% of the limit
  assert.equal(cells(6.5 * GiB, 6 * GiB).level, 'error');
  assert.equal(cells(5.5 * GiB, null).detail, 'no budget · idle 12 min');
  assert.equal(cells(5.5 * GiB, null).level, 'ok');
});

test('with a budget the colour counts against the budget, as the status bar colours it, whatever the limit', () => {
  const level = (usedBytes: number, driverLimitBytes: number) =>
    kernelCells(
      shapedRow([
        { index: 0, usedBytes, budgetBytes: 7 * GiB, driverLimitBytes }
      ]),
      1,
      trans
    ).level;
  assert.deepEqual(
    [4 * GiB, 6.4 * GiB, 7.2 * GiB].map(used => level(used, 5 * GiB)),
    ['ok', 'warn', 'error'] // 57%, 91%, 103% of the budget
  );
  assert.equal(level(6.4 * GiB, 7.5 * GiB), 'warn'); // 91% of the budget, 85% of the limit
  assert.equal(
    statusText(
      {
        lost: false,
        hidden: false,
        ownBytes: 6.4 * GiB,
        budgetBytes: 7 * GiB,
        driverLimit: { hardBytes: 5 * GiB },
        totalBytes: 8 * GiB
      } as Parameters<typeof statusText>[0],
      trans
    ).level,
    level(6.4 * GiB, 5 * GiB)
  );
});

test("on a MIG slice the driver's limit is weighed against the slice's memory, not the whole GPU's", () => {
  const slice = (sliceBytes: number | null) =>
    kernelCells(
      shapedRow([
        {
          index: 0,
          usedBytes: 3 * GiB,
          budgetBytes: null,
          slice: '1g.5gb',
          sliceBytes,
          driverLimitBytes: 6 * GiB // under the GPU's 8 GiB
        }
      ]),
      1,
      trans
    ).detail;
  // A 5 GiB slice: a 6 GiB limit holds nothing back there, as the status bar counts it from the kernel's sample.
  assert.equal(slice(5 * GiB), 'no budget · MIG slice 1g.5gb · idle 12 min');
  // The slice's memory not known: the limit is shown, not weighed against the whole GPU's 8 GiB.
  assert.equal(
    slice(null),
    'MIG slice 1g.5gb · driver limit 6.0 GiB · idle 12 min'
  );
});

test("a driver limit at or above the GPU's memory holds nothing back: the row leaves it, as the status bar does", () => {
  const cells = kernelCells(
    shapedRow([
      {
        index: 0,
        usedBytes: 7.9 * GiB,
        budgetBytes: null,
        driverLimitBytes: 8 * GiB
      }
    ]),
    1,
    trans
  );
  assert.equal(cells.detail, 'no budget · idle 12 min');
  assert.equal(cells.level, 'ok');
});

test("on several GPUs each says its own slice and limit; a slice's profile from the GPU host is escaped", () => {
  const cells = kernelCells(
    shapedRow([
      {
        index: 1,
        usedBytes: 1.5 * GiB,
        budgetBytes: null,
        driverLimitBytes: 6 * GiB
      },
      {
        index: 0,
        usedBytes: 3 * GiB,
        budgetBytes: 4 * GiB,
        slice: '1g.5gb\u202e'
      }
    ]),
    2,
    trans
  );
  assert.equal(
    cells.detail,
    'GPU 0: 3.0 GiB of 4.0 GiB, MIG slice 1g.5gb\\u202e · GPU 1: 1.5 GiB, driver limit 6.0 GiB · idle 12 min'
  );
  assert.equal(
    kernelCells(
      shapedRow([{ index: 0, usedBytes: 0, budgetBytes: null, slice: '' }]),
      1,
      trans
    ).detail,
    'no budget · MIG slice ? · idle 12 min' // on a slice whose profile was not told
  );
});

test('a kernel no session names, over budget, busy; a hostile notebook name is escaped', () => {
  const rows = kernelRows(
    body([
      {
        id: 'abcdef0123456789',
        executionState: 'busy',
        lastActivity: 1,
        gpus: [{ index: 0, usedBytes: 5 * GiB, budgetBytes: 4 * GiB }]
      },
      {
        id: 'x',
        executionState: null,
        lastActivity: null,
        gpus: []
      }
    ]),
    new Map([['x', notebook('evil\u202e\n<b>.ipynb')]]),
    null
  );
  const cells = kernelCells(rows[0], 1, trans);
  assert.equal(cells.name, 'Kernel abcdef01');
  assert.equal(cells.level, 'error');
  assert.equal(cells.detail, 'budget 4.0 GiB · busy');
  assert.equal(cells.badge, '');
  const hostile = kernelCells(rows[1], 1, trans);
  assert.equal(hostile.name, 'evil\\u202e\\n<b>.ipynb');
  assert.equal(hostile.memory, '0 MiB');
  assert.equal(hostile.detail, '');
});

test('idle times as people say them (units.format_duration)', () => {
  assert.deepEqual(
    [45, 90, 7140, 7200, 7500].map(s => duration(s)),
    ['45 s', '2 min', '119 min', '2 h', '2 h 5 min']
  );
});

test('every phrase of the kernel list goes through the translation bundle', () => {
  const [row] = kernelRows(
    body([
      {
        id: 'k',
        executionState: 'idle',
        lastActivity: 9_000,
        gpus: [{ index: 0, usedBytes: GiB, budgetBytes: null }]
      }
    ]),
    new Map(),
    'k'
  );
  const cells = kernelCells(row, 1, bracketed);
  assert.equal(cells.memory, '1.0 GiB'); // a figure and its unit: as nvidia-smi writes them in every language
  const shaped = shapedRow([
    {
      index: 0,
      usedBytes: GiB,
      budgetBytes: null,
      slice: '1g.5gb',
      driverLimitBytes: 6 * GiB
    }
  ]);
  for (const text of [
    cells.name,
    ...kernelCells(shaped, 1, bracketed).detail.split(' · '),
    ...kernelCells(shaped, 2, bracketed).detail.split(' · '),
    cells.nameTitle,
    cells.detail,
    cells.badge,
    cells.shutDown,
    kernelsTitle(1, bracketed),
    kernelsNote(0, null, bracketed)!,
    kernelsNote(1, 'boom', bracketed)!,
    kernelsSummary([row], bracketed),
    kernelsSummary([], bracketed),
    ...Object.values(shutDownDialog('b.ipynb', bracketed))
  ]) {
    assert.match(text, /^⟦.*⟧$/s, text);
  }
  assert.equal(kernelsNote(1, null, trans), null);
});
