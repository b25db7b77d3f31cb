import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  NO_NOTEBOOK,
  breakdown,
  deviceLine,
  formatBytes,
  formatMiB,
  formatPercent,
  gpuOption,
  headline,
  inUseLabel,
  notebookLabel,
  overLine,
  policyLine,
  processCells,
  processNote,
  simulatedBanner
} from '../../labextension/src/format';
import {
  ISampleMessage,
  PolicyState,
  parseMessage
} from '../../labextension/src/protocol';
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

type HeadlineGpu = Parameters<typeof headline>[0];

/** A GPU this kernel sees, with this budget, in force unless told. */
function gpu(
  ownBytes: number | null,
  budgetBytes: number | null,
  inForce = true
): HeadlineGpu {
  return { hidden: false, ownBytes, budgetBytes, inForce };
}

const POLICY = { policy: 'fraction=0.5', takes: null };
const NO_POLICY = { policy: null, takes: null };

test('the headline reads "3.1 of 4.0 GiB budget (78%)"', () => {
  assert.deepEqual(headline(gpu(3200 * MiB, 4 * GiB), POLICY), {
    text: '3.1 of 4.0 GiB budget (78%)',
    level: 'ok'
  });
});

test('the headline warns from 90% and errs above the budget', () => {
  const level = (own: number) => headline(gpu(own, 4 * GiB), POLICY).level;
  assert.equal(level(0.899 * 4 * GiB), 'ok');
  assert.equal(level(0.9 * 4 * GiB), 'warn');
  assert.equal(level(4 * GiB), 'warn');
  assert.equal(level(4 * GiB + MiB), 'error');
});

test('small budgets are in MiB', () => {
  assert.equal(
    headline(gpu(177 * MiB, 512 * MiB), POLICY).text,
    '177 of 512 MiB budget (35%)'
  );
});

test('a budget the framework does not hold never reads as if it held', () => {
  assert.deepEqual(headline(gpu(3200 * MiB, 4 * GiB, false), POLICY), {
    text: '3.1 of 4.0 GiB budget (78%, not in force)',
    level: 'ok'
  });
  assert.equal(
    headline(gpu(4 * GiB + MiB, 4 * GiB, false), POLICY).level,
    'error'
  );
  assert.equal(
    headline(gpu(null, 4 * GiB, false), POLICY).text,
    "N/A of 4.0 GiB budget (not in force; the driver cannot tell this kernel's memory)"
  );
});

test('without a budget the headline says what the kernel says its framework takes', () => {
  const takes =
    'TensorFlow takes nearly all the memory of every GPU it can see when it starts (and keeps it)';
  assert.equal(
    headline(gpu(1229 * MiB, null), { policy: null, takes }).text,
    `1.2 GiB used by this kernel; no budget set — ${takes}`
  );
  assert.equal(
    headline(gpu(null, null), NO_POLICY).text,
    'N/A; no budget set — a framework takes its default amount when it starts'
  );
  assert.match(
    headline(gpu(null, 4 * GiB), POLICY).text,
    /^N\/A of 4\.0 GiB budget/
  );
});

test('a GPU the policy hides says so instead of any figure', () => {
  const hidden = { ...gpu(0, null), hidden: true };
  assert.deepEqual(headline(hidden, { policy: 'gpus=1', takes: null }), {
    text: 'Hidden from this kernel by its policy (gpus=1)',
    level: 'ok'
  });
});

test("the policy line shows the kernel's note, never a literal null", () => {
  const line = (
    policyState: PolicyState | null,
    policyNote: string | null,
    policy: string | null = 'fraction=0.25'
  ) => policyLine({ policy, policyState, policyNote });
  assert.deepEqual(
    line('recorded', 'applies when "import tensorflow" completes'),
    {
      text: 'Policy: fraction=0.25 — applies when "import tensorflow" completes',
      level: 'ok'
    }
  );
  assert.deepEqual(line('in_force', 'in force in TensorFlow since 10:42:01'), {
    text: 'Policy: fraction=0.25 — in force in TensorFlow since 10:42:01',
    level: 'ok'
  });
  const cpuOnly =
    'TensorFlow 2.20.0 is a CPU-only build (tensorflow-cpu), so it uses no GPU and the budget is not in force';
  assert.deepEqual(line('not_in_force', cpuOnly), {
    text: `Policy: fraction=0.25 — ${cpuOnly}`,
    level: 'warn'
  });
  assert.deepEqual(line(null, null), {
    text: 'Policy: fraction=0.25', // an older kernel: no state, no note
    level: 'ok'
  });
  assert.equal(line(null, null, null), null);
  assert.doesNotMatch(line('recorded', null)!.text, /null/);
});

test('the device line, the GPU choice and the simulated banner', () => {
  const device = {
    index: 0,
    name: 'NVIDIA A100-SXM4-40GB',
    lost: false,
    usedBytes: 16500 * MiB,
    totalBytes: 40960 * MiB
  };
  assert.equal(
    deviceLine(device),
    'GPU 0 · NVIDIA A100-SXM4-40GB · 16.1 GiB of 40.0 GiB used'
  );
  assert.equal(
    deviceLine({ ...device, name: null, usedBytes: null }),
    'GPU 0 · unknown · N/A of 40.0 GiB used'
  );
  assert.equal(
    deviceLine({ ...device, index: 1, lost: true }),
    'GPU 1 NVIDIA A100-SXM4-40GB: lost (fell off the bus; it needs a reset)'
  );
  assert.equal(
    deviceLine({ ...device, name: null, lost: true }),
    'GPU 0: lost (fell off the bus; it needs a reset)'
  );
  assert.equal(gpuOption(device), 'GPU 0: NVIDIA A100-SXM4-40GB');
  assert.equal(gpuOption({ index: 3, name: null }), 'GPU 3: unknown');
  assert.equal(
    simulatedBanner('/srv/scenarios/s1_two_gpus.scenario'),
    'SIMULATED GPU — stand-in NVML (s1_two_gpus.scenario)'
  );
  assert.equal(simulatedBanner(null), '');
});

test('the kernel line names the notebook and its kernel', () => {
  assert.equal(
    notebookLabel('work/a.ipynb', 'Python 3 (ipykernel)'),
    'work/a.ipynb — Python 3 (ipykernel)'
  );
  assert.equal(notebookLabel('a.ipynb', null), 'a.ipynb — no kernel');
  assert.match(NO_NOTEBOOK, /^Open a notebook/);
});

test("over budget, the kernel's reason; the chart names the framework's line", () => {
  assert.equal(
    overLine({ hidden: false, overReason: 'CUDA context: 504 MiB outside' }),
    'Over budget: CUDA context: 504 MiB outside'
  );
  assert.equal(overLine({ hidden: false, overReason: null }), null);
  assert.equal(overLine({ hidden: true, overReason: 'stale' }), null);
  assert.equal(inUseLabel('TensorFlow'), 'TensorFlow in use');
  assert.equal(inUseLabel(null), 'Framework in use');
});

test('a process row is text as the driver and host gave it, N/A where unknown', () => {
  const [, gpu1] = (parseMessage(fixture('sample.json')) as ISampleMessage)
    .sample.gpus;
  assert.deepEqual(gpu1.processes!.map(processCells), [
    ['4242', 'python (this kernel)', 'alice', '4200 MiB', '98.2%'],
    ['1204', 'dwm.exe', '', 'N/A', 'N/A'],
    ['6200', '<img src=x onerror=alert(1)>', 'mallory', '380 MiB', '0.0%']
  ]);
  assert.deepEqual(
    processCells({
      pid: 7,
      name: null,
      user: null,
      usedBytes: null,
      cpuPercent: null,
      self: false
    }),
    ['7', '?', '', 'N/A', 'N/A']
  );
  assert.equal(
    processNote({ lost: true, processesKnown: false }),
    'This GPU is lost: no figures until it is reset.'
  );
  assert.equal(
    processNote({ lost: false, processesKnown: false }),
    'The driver does not list the processes on this GPU.'
  );
  assert.equal(processNote({ lost: false, processesKnown: true }), null);
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
  assert.equal(breakdown({ ...gpu1, hidden: true }, 'TensorFlow'), null);
});
