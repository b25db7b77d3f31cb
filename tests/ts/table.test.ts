import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { GpuProcess } from '../../labextension/src/wire/types';
import { columnTitle } from '../../labextension/src/format/table';
import {
  COLUMNS,
  FIRST_SORT,
  NUMERIC,
  nextSort,
  sortProcesses
} from '../../labextension/src/widgets/table';
import { trans } from './fixtures';

const MiB = 1024 ** 2;

function process(
  pid: number,
  usedMiB: number | null,
  name: string | null = null,
  user: string | null = null,
  cpuPercent: number | null = null
): GpuProcess {
  return {
    pid,
    name,
    user,
    usedBytes: usedMiB === null ? null : usedMiB * MiB,
    cpuPercent,
    cpuPending: false,
    self: false,
    local: null,
    gpuInstanceId: null
  };
}

const PROCESSES = [
  process(31338, 1024, 'zeta', 'bob', 0.5),
  process(1204, null, 'dwm.exe', null, null),
  process(4242, 3174, 'python', 'alice', 98.2),
  process(31337, 12000, 'Alpha', null, 12)
];

const pids = (processes: GpuProcess[]) => processes.map(p => p.pid);

test('the table opens with the largest GPU memory first', () => {
  assert.deepEqual(FIRST_SORT, { key: 'usedBytes', descending: true });
  assert.deepEqual(
    pids(sortProcesses(PROCESSES, 'usedBytes', true)),
    [31337, 4242, 31338, 1204]
  );
});

test('an unknown (N/A) value sorts last in either direction', () => {
  assert.deepEqual(
    pids(sortProcesses(PROCESSES, 'usedBytes', false)),
    [31338, 4242, 31337, 1204]
  );
  assert.deepEqual(
    pids(sortProcesses(PROCESSES, 'user', false)),
    [4242, 31338, 1204, 31337]
  );
  assert.deepEqual(
    pids(sortProcesses(PROCESSES, 'cpuPercent', true)),
    [4242, 31337, 31338, 1204]
  );
});

test('names sort as people read them, ties by PID', () => {
  assert.deepEqual(
    pids(sortProcesses(PROCESSES, 'name', false)),
    [31337, 1204, 4242, 31338]
  );
  const twins = [process(9, 10, 'same'), process(3, 10, 'same')];
  assert.deepEqual(pids(sortProcesses(twins, 'name', true)), [3, 9]);
  assert.deepEqual(pids(sortProcesses(twins, 'usedBytes', true)), [3, 9]);
});

test("sorting leaves the kernel's list as it was", () => {
  const before = pids(PROCESSES);
  sortProcesses(PROCESSES, 'pid', true);
  assert.deepEqual(pids(PROCESSES), before);
});

test('a second click on a column flips it; a new column starts largest first, names A to Z', () => {
  let sort = FIRST_SORT;
  sort = nextSort(sort, 'usedBytes');
  assert.deepEqual(sort, { key: 'usedBytes', descending: false });
  sort = nextSort(sort, 'pid');
  assert.deepEqual(sort, { key: 'pid', descending: true });
  sort = nextSort(sort, 'pid');
  assert.deepEqual(sort, { key: 'pid', descending: false });
  assert.deepEqual(nextSort(sort, 'name'), { key: 'name', descending: false });
  assert.deepEqual(nextSort(sort, 'user'), { key: 'user', descending: false });
  assert.deepEqual(nextSort(sort, 'cpuPercent'), {
    key: 'cpuPercent',
    descending: true
  });
});

test('the columns are PID, name, user, GPU memory (MiB) and CPU, numbers right-aligned', () => {
  assert.deepEqual(
    COLUMNS.map(key => columnTitle(key, trans)),
    ['PID', 'Name', 'User', 'MiB', 'CPU %']
  );
  assert.deepEqual(NUMERIC, ['pid', 'usedBytes', 'cpuPercent']);
});
