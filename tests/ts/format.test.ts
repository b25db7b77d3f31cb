import assert from 'node:assert/strict';
import { test } from 'node:test';

import { channelLine } from '../../labextension/src/format/channel';
import {
  chartLabels,
  chartName,
  chartWords,
  markTitle,
  pausedOn,
  totalAbove
} from '../../labextension/src/format/chart';
import { clock, formatBytes } from '../../labextension/src/format/number';
import {
  breakdown,
  budgetNote,
  deviceLine,
  gpuOption,
  headline,
  limitLines,
  noNotebook,
  notebookLabel,
  overLine,
  ownLine,
  panelTitle,
  policyLine,
  simulatedBanner,
  uiText
} from '../../labextension/src/format/panel';
import { printable } from '../../labextension/src/format/printable';
import { statusText } from '../../labextension/src/format/statusbar';
import { ENGLISH, word } from '../../labextension/src/format/words';
import {
  columnTitle,
  othersNote,
  processCells,
  processNote
} from '../../labextension/src/format/table';
import { parseMessage } from '../../labextension/src/wire/protocol';
import type {
  GpuProcess,
  PolicyState,
  SampleGpu,
  SampleMessage
} from '../../labextension/src/wire/types';
import { asked, bracketed, fixture, trans } from './fixtures';

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;
const S1 = (parseMessage(fixture('sample.json')) as SampleMessage).sample;
const LOST = (parseMessage(fixture('sample_lost_gpu.json')) as SampleMessage)
  .sample;

test('bytes are shown as nvidia-smi counts them, and N/A is not zero', () => {
  assert.equal(formatBytes(null, trans), 'N/A');
  assert.equal(formatBytes(0, trans), '0 MiB');
  assert.equal(formatBytes(380 * MiB, trans), '380 MiB');
  assert.equal(formatBytes(8192 * MiB, trans), '8.0 GiB');
});

type HeadlineGpu = Parameters<typeof headline>[0];

/** A GPU this kernel sees, with this budget, in force unless told. */
function gpu(
  ownBytes: number | null,
  budgetBytes: number | null,
  inForce = true
): HeadlineGpu {
  return {
    index: 0,
    lost: false,
    hidden: false,
    ownBytes,
    budgetBytes,
    inForce
  };
}

const POLICY = { policy: 'fraction=0.5', takes: null, takesSaid: null };
const NO_POLICY = { policy: null, takes: null, takesSaid: null };

test('the headline reads "3.1 of 4.0 GiB budget (78%)"', () => {
  assert.deepEqual(headline(gpu(3200 * MiB, 4 * GiB), POLICY, trans), {
    text: '3.1 of 4.0 GiB budget (78%)',
    level: 'ok'
  });
});

test('the headline warns from 90% and errs above the budget', () => {
  const level = (own: number) =>
    headline(gpu(own, 4 * GiB), POLICY, trans).level;
  assert.equal(level(0.899 * 4 * GiB), 'ok');
  assert.equal(level(0.9 * 4 * GiB), 'warn');
  assert.equal(level(4 * GiB), 'warn');
  assert.equal(level(4 * GiB + MiB), 'error');
});

test('small budgets are in MiB', () => {
  assert.equal(
    headline(gpu(177 * MiB, 512 * MiB), POLICY, trans).text,
    '177 of 512 MiB budget (35%)'
  );
});

test('a budget the framework does not hold never reads as if it held', () => {
  assert.deepEqual(headline(gpu(3200 * MiB, 4 * GiB, false), POLICY, trans), {
    text: '3.1 of 4.0 GiB budget (78%, not in force)',
    level: 'ok'
  });
  assert.equal(
    headline(gpu(4 * GiB + MiB, 4 * GiB, false), POLICY, trans).level,
    'error'
  );
  assert.equal(
    headline(gpu(null, 4 * GiB, false), POLICY, trans).text,
    "N/A of 4.0 GiB budget (not in force; the driver cannot tell this kernel's memory)"
  );
});

test('without a budget the headline is this kernel’s memory and a quieter line says what its framework takes', () => {
  const takes =
    'TensorFlow takes nearly all the memory of every GPU it can see when it starts (and keeps it)';
  const sample = { policy: null, takes, takesSaid: null };
  assert.deepEqual(headline(gpu(1229 * MiB, null), sample, trans), {
    text: '1.2 GiB used by this kernel',
    level: 'ok'
  });
  assert.equal(
    budgetNote({ ...gpu(1229 * MiB, null) }, sample, trans),
    `No budget set — ${takes}`
  );
  assert.equal(
    headline(gpu(null, null), NO_POLICY, trans).text,
    'N/A used by this kernel (the driver cannot tell)'
  );
  assert.equal(
    budgetNote(gpu(null, null), NO_POLICY, trans),
    'No budget set — a framework takes its default amount when it starts'
  );
  assert.equal(budgetNote(gpu(null, 4 * GiB), POLICY, trans), null);
});

test('a GPU the policy hides says so instead of any figure', () => {
  const hidden = { ...gpu(0, null), hidden: true };
  assert.deepEqual(headline(hidden, { policy: 'gpus=1' }, trans), {
    text: 'Hidden from this kernel by its policy (gpus=1)',
    level: 'ok'
  });
  assert.equal(budgetNote(hidden, NO_POLICY, trans), null);
  // Without gpus= of its own, the GPUs the kernel started with left it out (a hub's spawner's CUDA_VISIBLE_DEVICES).
  assert.equal(
    headline(hidden, { policy: 'fraction=0.5' }, trans).text,
    "Not this kernel's: it started without this GPU (CUDA_VISIBLE_DEVICES)"
  );
});

test('a lost GPU reads as lost, in the error colour, everywhere: headline, choice, device, status bar', () => {
  const lost = LOST.gpus[1];
  assert.deepEqual(headline(lost, LOST, trans), {
    text: 'GPU 1 is lost: N/A',
    level: 'error'
  });
  assert.equal(budgetNote(lost, LOST, trans), null);
  assert.equal(breakdown(lost, LOST.framework, trans), null); // its budget has no figures
  assert.equal(gpuOption(lost, trans), 'GPU 1: lost');
  assert.equal(gpuOption({ ...lost, name: null }, trans), 'GPU 1: lost');
  assert.equal(
    deviceLine(lost, trans),
    'GPU 1 NVIDIA A10: lost (fell off the bus; it needs a reset)'
  );
  assert.deepEqual(statusText(lost, trans), {
    text: 'GPU lost',
    level: 'error'
  });
  assert.doesNotMatch(headline(lost, LOST, trans).text, /0 MiB|no budget/);
});

test("the policy line shows the kernel's note, never a literal null", () => {
  const line = (
    policyState: PolicyState | null,
    policyNote: string | null,
    policy: string | null = 'fraction=0.25'
  ) =>
    policyLine(
      { policy, policyState, policyNote, policyNoteSaid: null },
      trans
    );
  assert.deepEqual(
    line('recorded', 'applies when "import tensorflow" completes'),
    {
      text: 'Policy: fraction=0.25 — applies when "import tensorflow" completes',
      level: 'ok'
    }
  );
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
    deviceLine(device, trans),
    'GPU 0 · NVIDIA A100-SXM4-40GB · 16.1 GiB of 40.0 GiB used'
  );
  assert.equal(
    deviceLine({ ...device, name: null, usedBytes: null }, trans),
    'GPU 0 · unknown · N/A of 40.0 GiB used'
  );
  assert.equal(
    deviceLine({ ...device, name: null, lost: true }, trans),
    'GPU 0: lost (fell off the bus; it needs a reset)'
  );
  assert.equal(gpuOption(device, trans), 'GPU 0: NVIDIA A100-SXM4-40GB');
  assert.equal(
    gpuOption({ index: 3, name: null, lost: false }, trans),
    'GPU 3: unknown'
  );
  assert.equal(
    simulatedBanner('/srv/scenarios/s1_two_gpus.scenario', trans),
    'SIMULATED GPU — stand-in NVML (s1_two_gpus.scenario)'
  );
  assert.equal(simulatedBanner(null, trans), '');
});

test('the kernel line names the notebook and its kernel', () => {
  assert.equal(
    notebookLabel('work/a.ipynb', 'Python 3 (ipykernel)', trans),
    'work/a.ipynb — Python 3 (ipykernel)'
  );
  assert.equal(notebookLabel('a.ipynb', null, trans), 'a.ipynb — no kernel');
  assert.match(noNotebook(trans), /^Open a notebook/);
});

test('every state of the stream but streaming has its sentence', () => {
  assert.equal(channelLine('streaming', '', trans), '');
  assert.equal(channelLine('idle', '', trans), '');
  assert.equal(
    channelLine('restarting', '', trans),
    'Kernel restarted — reconnecting…'
  );
  assert.equal(
    channelLine('stalled', '7', trans),
    'No figures from the kernel for 7 s — reconnecting…'
  );
  assert.equal(
    channelLine('unsupported', 'R', trans),
    'GPU memory is not supported for this kernel (R); it needs a Python kernel.'
  );
  assert.equal(
    channelLine('failed', 'ValueError: no', trans),
    'The kernel could not start the GPU memory stream: ValueError: no'
  );
  assert.match(channelLine('missing', '', trans), /is not installed/);
  assert.match(channelLine('unreachable', 'timeout', trans), /timeout$/);
  assert.match(channelLine('dead', '', trans), /has died/);
  assert.equal(
    channelLine('connecting', '', trans),
    'Connecting to the kernel…'
  );
});

test("over budget, the kernel's reason; the chart names its lines", () => {
  assert.equal(
    overLine(
      {
        hidden: false,
        overReason: 'CUDA context: 504 MiB outside',
        overReasonSaid: null
      },
      trans
    ),
    'Over budget: CUDA context: 504 MiB outside'
  );
  assert.equal(
    overLine({ hidden: false, overReason: null, overReasonSaid: null }, trans),
    null
  );
  assert.equal(
    overLine(
      { hidden: true, overReason: 'stale', overReasonSaid: null },
      trans
    ),
    null
  );
  assert.equal(chartLabels('TensorFlow', trans).framework, 'TensorFlow in use');
  assert.equal(chartLabels(null, trans).framework, 'framework in use');
  assert.equal(totalAbove(40960 * MiB, trans), 'device total 40.0 GiB ↑');
});

test('times have seconds where they are asked for: the hover, the marks', () => {
  const t = new Date(2025, 10, 21, 9, 5, 7).getTime();
  assert.equal(clock(t, true), '09:05:07');
  assert.equal(clock(t, false), '09:05');
  assert.equal(
    markTitle({ t, reason: 'CUDA context', reasonSaid: null }, trans),
    'Over budget from 09:05:07: CUDA context'
  );
  assert.equal(
    markTitle({ t, reason: null, reasonSaid: null }, trans),
    'Over budget from 09:05:07'
  );
  assert.equal(pausedOn(t, t + 150_000, trans), 'Paused on 09:05:07–09:07:37');
  assert.equal(chartWords(trans).hoverFigure, '%{y:.2f} GiB');
});

const PROCESS: GpuProcess = {
  pid: 7,
  name: null,
  user: null,
  usedBytes: null,
  cpuPercent: null,
  cpuPending: false,
  self: false,
  local: null,
  gpuInstanceId: null
};

test('a process row is text as the driver and host gave it, N/A in every empty cell', () => {
  const [, gpu1] = S1.gpus;
  assert.deepEqual(
    gpu1.processes!.map(p => {
      const c = processCells(p, trans);
      return [c.pid, c.name, c.badge, c.user, c.usedBytes, c.cpuPercent];
    }),
    [
      ['4242', 'python', 'this kernel', 'alice', '4200', '98.3'],
      ['1204', 'dwm.exe', '', 'N/A', 'N/A', 'N/A'],
      ['6200', '<img src=x onerror=alert(1)>', '', 'mallory', '380', '0.0']
    ]
  );
  const unknown = processCells(PROCESS, trans);
  assert.deepEqual(
    [unknown.name, unknown.user, unknown.usedBytes, unknown.cpuPercent],
    ['N/A', 'N/A', 'N/A', 'N/A']
  );
  assert.equal(unknown.nameTitle, 'N/A (PID 7, user N/A)');
});

test('"CPU not measured yet" is not N/A', () => {
  const pending = processCells(
    { ...PROCESS, user: 'alice', cpuPending: true },
    trans
  );
  assert.equal(pending.cpuPercent, '…');
  assert.equal(pending.cpuTitle, 'CPU not measured yet');
  const hidden = processCells(PROCESS, trans);
  assert.equal(hidden.cpuPercent, 'N/A');
  assert.match(hidden.cpuTitle, /cannot see/);
  // A figure wins over a stale "pending".
  assert.equal(
    processCells({ ...PROCESS, cpuPercent: 3, cpuPending: true }, trans)
      .cpuPercent,
    '3.0'
  );
});

test('names keep their spaces; control characters show as escapes, so a row stays one line', () => {
  assert.equal(printable('my  job  '), 'my  job  ');
  assert.equal(printable('a\nb\tc\u0007'), 'a\\nb\\tc\\x07');
  const cells = processCells(
    { ...PROCESS, name: 'train\nrm -rf', user: 'bo b' },
    trans
  );
  assert.equal(cells.name, 'train\\nrm -rf');
  assert.equal(cells.user, 'bo b');
});

test('a name holding a bidi override reads in its own order, escaped as %gpumem status escapes it', () => {
  assert.equal(printable('\u202egnp.exe'), '\\u202egnp.exe');
  assert.equal(
    printable('\u2066a\u2069 \u200eb\u200f \u2028 \ufeff 🚀 显卡'),
    '\\u2066a\\u2069 \\u200eb\\u200f \\u2028 \\ufeff 🚀 显卡'
  );
  assert.equal(printable('\udcff \u{e0001}'), '\\udcff \\U000e0001');
  const gpu = { index: 0, name: 'A10 \u202e', lost: false };
  assert.equal(gpuOption(gpu, trans), 'GPU 0: A10 \\u202e');
});

test('the process note: lost, or processes the driver does not list', () => {
  assert.equal(
    processNote({ lost: true, processesKnown: false }, trans),
    'This GPU is lost: no figures until it is reset.'
  );
  assert.equal(
    processNote({ lost: false, processesKnown: false }, trans),
    'The driver does not list the processes on this GPU.'
  );
  assert.equal(processNote({ lost: false, processesKnown: true }, trans), null);
});

test('other users are one line where privacy sums them, per user under "names"', () => {
  const [gpu0, gpu1] = (
    parseMessage(fixture('sample_privacy.json')) as SampleMessage
  ).sample.gpus;
  assert.deepEqual(gpu0.processes, []);
  assert.equal(
    othersNote(gpu0, trans),
    'other users: 1 process, 5.8 GiB (bob: 1 process, 5.8 GiB)'
  );
  assert.equal(
    othersNote(gpu1, trans),
    'other users: 2 processes, N/A (user unknown: 1 process, N/A; mallory: 1 process, 380 MiB)'
  );
  assert.equal(othersNote(S1.gpus[1], trans), null); // every process listed
  assert.equal(
    othersNote(
      { others: { processes: 3, usedBytes: 9.2 * GiB, users: null } },
      trans
    ),
    'other users: 3 processes, 9.2 GiB'
  );
});

test('the breakdown splits the budget into pool and what lies outside it', () => {
  const [gpu0, gpu1] = S1.gpus;
  assert.equal(
    breakdown(gpu1, 'TensorFlow', trans),
    'TensorFlow pool 3.6 GiB + 504 MiB outside it (measured) = 4.1 GiB'
  );
  const planned: SampleGpu = {
    ...gpu1,
    poolKnown: false,
    overheadBytes: 400 * MiB,
    overheadSource: 'estimated'
  };
  assert.equal(
    breakdown(planned, 'TensorFlow', trans),
    'TensorFlow limit 3.6 GiB + 400 MiB set aside for CUDA and libraries (estimated)'
  );
  assert.equal(
    breakdown({ ...planned, overheadSource: 'remembered' }, 'PyTorch', trans),
    'PyTorch limit 3.6 GiB + 400 MiB set aside for CUDA and libraries (measured by an earlier kernel)'
  );
  assert.equal(
    breakdown(planned, null, trans), // several frameworks installed, none imported
    'Allocator limit 3.6 GiB + 400 MiB set aside for CUDA and libraries (estimated)'
  );
  assert.equal(breakdown(gpu0, 'TensorFlow', trans), null); // hidden: no budget
});

test('every phrase goes through the translation bundle', () => {
  const t = bracketed;
  const [, gpu1] = S1.gpus;
  const lines: (string | null)[] = [
    formatBytes(null, t),
    panelTitle(t),
    chartName(t),
    noNotebook(t),
    notebookLabel('a.ipynb', 'Python 3', t),
    simulatedBanner('x.scenario', t),
    channelLine('restarting', '', t),
    gpuOption(gpu1, t),
    deviceLine(gpu1, t),
    headline(gpu1, S1, t).text,
    headline(LOST.gpus[1], LOST, t).text,
    budgetNote(gpu(0, null), NO_POLICY, t),
    statusText(gpu1, t).text,
    policyLine(S1, t)!.text,
    overLine(gpu1, t),
    breakdown(gpu1, 'TensorFlow', t),
    markTitle({ t: 0, reason: 'x', reasonSaid: null }, t),
    totalAbove(GiB, t),
    pausedOn(0, 1000, t),
    ...Object.entries(chartWords(t))
      .filter(([key]) => key !== 'hoverFigure') // a figure and its unit (below)
      .map(([, text]) => text),
    processNote({ lost: true, processesKnown: true }, t),
    columnTitle('name', t),
    ...Object.values(chartLabels('TensorFlow', t)),
    ...Object.values(uiText(t)),
    ...Object.values(processCells(PROCESS, t)).filter(
      v => v !== '7' && v !== ''
    )
  ];
  for (const line of lines) {
    assert.match(line ?? 'null', /^⟦.*⟧$/s, `not translated: ${line}`);
  }
});

test('a count is one plural message, a code is worded in its own context, a chart word in the chart’s', () => {
  const t = bracketed;
  asked.contexts.length = 0;
  asked.counts.length = 0;
  const [gpu0, gpu1] = (
    parseMessage(fixture('sample_privacy.json')) as SampleMessage
  ).sample.gpus;
  // One `_n` per count, never two `__` chosen in the code (a language with other plural rules is right).
  assert.equal(
    othersNote(gpu0, t),
    '⟦other users, each|⟦other users: ⟦n|1 process⟧, 5.8 GiB⟧ (⟦bob: ⟦n|1 process⟧, 5.8 GiB⟧)⟧'
  );
  // The brackets and the separator between users are words of their own too (Japanese （…／…）).
  assert.match(
    othersNote(gpu1, t)!,
    /^⟦other users, each\|⟦other users: ⟦n\|2 processes⟧, ⟦N\/A⟧⟧ \(.*⟧⟦list separator\|; ⟧⟦mallory/
  );
  assert.deepEqual(asked.counts, [1, 1, 2, 1, 1]);
  // The chart's line names have their own context: a legend 250 px wide may want shorter words.
  assert.deepEqual(Object.values(chartLabels(null, t)), [
    '⟦chart|this kernel⟧',
    '⟦chart|framework in use⟧',
    '⟦chart|others⟧',
    '⟦chart|budget⟧',
    '⟦chart|driver limit⟧',
    '⟦chart|device total⟧'
  ]);
  // A code's template: msgctxt is the code (Python's pgettext(code, template)), the values put in after.
  const plain = Object.keys(ENGLISH).filter(c => !ENGLISH[c].includes('{'));
  assert.ok(plain.length > 0);
  for (const code of plain) {
    assert.equal(word({ code, values: {} }, t), `⟦${code}|${ENGLISH[code]}⟧`);
  }
});

test('figures and units are never words to translate: "3.1 GiB", "45 s", "78%" as nvidia-smi writes them', () => {
  const t = bracketed;
  assert.equal(formatBytes(380 * MiB, t), '380 MiB');
  assert.equal(formatBytes(8192 * MiB, t), '8.0 GiB');
  assert.equal(columnTitle('usedBytes', t), 'MiB');
  assert.equal(chartWords(t).hoverFigure, '%{y:.2f} GiB');
  assert.equal(totalAbove(GiB, t), '⟦device total 1.0 GiB ↑⟧');
  assert.equal(
    channelLine('stalled', '12', t),
    '⟦No figures from the kernel for 12 s — reconnecting…⟧'
  );
});

function containerGpus(): SampleGpu[] {
  const message = parseMessage(
    fixture('sample_container.json')
  ) as SampleMessage;
  return message.sample.gpus;
}

test('under the headline, how this kernel’s figure is known, in the kernel’s words', () => {
  const [matched, unknown, estimated] = containerGpus();
  assert.deepEqual(ownLine(matched, trans), {
    text: "Matched: PID 812345 appeared when PyTorch started and its memory moves with PyTorch's pool",
    level: 'ok'
  });
  assert.equal(ownLine(unknown, trans)!.level, 'warn');
  assert.ok(ownLine(unknown, trans)!.text.startsWith('Unknown: this kernel'));
  assert.ok(ownLine(estimated, trans)!.text.startsWith('Estimated: '));
  assert.equal(ownLine({ ...matched, ownSource: null }, trans), null); // an older kernel
  assert.equal(ownLine({ ...matched, lost: true }, trans), null);
});

test('the limit lines say which limits are hard and what the driver does not list', () => {
  const [mps, mig, cooperative] = containerGpus();
  assert.deepEqual(limitLines(mps, trans), ['Hard limit: MPS, per process']);
  assert.deepEqual(limitLines(mig, trans), ['Hard limit: a MIG partition']);
  assert.deepEqual(limitLines(cooperative, trans), [
    'Cooperative limit (%gpumem): code that bypasses it is not held'
  ]);
  const hidden = (parseMessage(fixture('sample_hidden.json')) as SampleMessage)
    .sample;
  assert.deepEqual(limitLines(hidden.gpus[0], trans), [
    'Not listed: 14.0 GiB the driver uses for processes it hides (other containers’)'
  ]);
  assert.equal(hidden.pidNamespace, 'translated');
  assert.ok(hidden.limitNote!.includes('mps=on'));
});
