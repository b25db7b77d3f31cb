// Shapes of shared GPUs (issue 44): a MIG slice, the NVIDIA driver's hard limit on the kernel's cgroup, a GPU
// sharing the host's memory. What the sidebar (and the inline view, the same lines), the status bar and the
// chart show of each, worded from the catalogue's codes; an older kernel's sample, without the fields, shows
// nothing new; a hostile cgroup path stays text on one line.
import assert from 'node:assert/strict';
import { test } from 'node:test';

process.env.TZ = 'UTC';

import { chartLabels } from '../../labextension/src/format/chart';
import {
  limitLines,
  shapeLines,
  viewLines
} from '../../labextension/src/format/panel';
import {
  statusText,
  statusTooltip
} from '../../labextension/src/format/statusbar';
import { History } from '../../labextension/src/model/history';
import { readSeries } from '../../labextension/src/model/saved';
import { parseMessage } from '../../labextension/src/wire/protocol';
import type { Sample, SampleMessage } from '../../labextension/src/wire/types';
import { figure } from '../../labextension/src/chart/figure';
import { bindingLimit, yScale } from '../../labextension/src/chart/scale';
import { COLOURS } from './chart-fixtures';
import { bracketed, fixture, trans } from './fixtures';

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

const SLICE_LINE = "this kernel's MIG slice: 1g.5gb, 4864 MiB";
const LIMIT_LINE =
  "hard: the NVIDIA driver's limit of 6144 MiB on cgroup /gpumem-1/hub, 1536 MiB counted against it";
const SHARED_LINE = "shared with the CPU: the host's memory";

type Raw = { type: string; sample: Record<string, unknown> };
type RawGpu = Record<string, unknown>;

/** S1 (sample.json, a kernel before 0.2.0: none of the new fields) with its GPU 1 changed as `gpu` says, sent
 * and read as the sidebar reads a kernel's message: validated (defaults filled) and camelized. */
function sampleWith(gpu: RawGpu = {}, more: Record<string, unknown> = {}) {
  const raw = fixture('sample.json') as Raw;
  const gpus = raw.sample.gpus as RawGpu[];
  gpus[1] = { ...gpus[1], ...gpu };
  raw.sample = { ...raw.sample, ...more };
  const message = parseMessage(raw) as SampleMessage | null;
  assert.ok(message, 'the sample parses');
  return message.sample;
}

const SLICE = {
  uuid: 'MIG-1d7f3b29-6a4e-5c81-9f02-b8e45a7c3d16',
  name: 'NVIDIA A100-SXM4-40GB MIG 1g.5gb',
  profile: '1g.5gb',
  total_bytes: 4864 * MiB,
  used_bytes: 1536 * MiB,
  gpu_instance_id: 7
};

const LIMIT = {
  hard_bytes: 6144 * MiB,
  soft_bytes: null,
  used_bytes: 1536 * MiB,
  cgroup: '/gpumem-1/hub'
};

/** A kernel without a budget holding 1.5 GiB of a 40 GiB GPU. */
const NO_BUDGET = {
  total_bytes: 40960 * MiB,
  used_bytes: 1536 * MiB,
  own_bytes: 1536 * MiB,
  budget_bytes: null,
  in_force: false,
  pool_bytes: null,
  overhead_bytes: null,
  overhead_source: null,
  over_reason: null,
  over_reason_said: null,
  framework_bytes: null,
  framework_peak_bytes: null
};

test('an older kernel’s sample, without the fields, shows nothing new anywhere', () => {
  const older = sampleWith();
  const gpu = older.gpus[1];
  assert.equal(gpu.slice, null); // the validator's defaults
  assert.equal(gpu.driverLimit, null);
  assert.equal(gpu.memoryShared, false);
  assert.equal(older.driverLimitsUnknown, null);
  assert.deepEqual(shapeLines(gpu, trans), []);
  // A GPU object made before the fields existed (no validator in between) is the same.
  const { slice, driverLimit, memoryShared, ...bare } = gpu;
  assert.deepEqual([slice, driverLimit, memoryShared], [null, null, false]);
  assert.deepEqual(shapeLines(bare as Partial<typeof gpu>, trans), []);
  assert.deepEqual(limitLines(bare, trans), limitLines(gpu, trans));
  const tooltip = statusTooltip(gpu, older, trans);
  for (const line of [SLICE_LINE, SHARED_LINE, 'hard: the NVIDIA driver']) {
    assert.ok(!tooltip.includes(line), line);
  }
  assert.deepEqual(statusText(gpu, trans), {
    text: 'GPU 4.1/4.0 GiB',
    level: 'error'
  });
  const series = new History(10);
  series.push(older);
  assert.ok(Number.isNaN(series.series(gpu.uuid!)!.driverLimit[0]));
});

test('a kernel on a MIG slice: the slice and its profile in the limits, the status bar’s tooltip', () => {
  const sample = sampleWith({
    ...NO_BUDGET,
    total_bytes: 4864 * MiB,
    limit_kind: 'mig',
    limit_hard: true,
    slice: SLICE
  });
  const gpu = sample.gpus[1];
  assert.equal(gpu.slice!.gpuInstanceId, 7);
  assert.deepEqual(shapeLines(gpu, trans), [SLICE_LINE]);
  // As the MIG and MPS limits are: under the hard limit's own line.
  assert.deepEqual(limitLines(gpu, trans), [
    'Hard limit: a MIG partition',
    SLICE_LINE
  ]);
  assert.equal(
    viewLines(sample, gpu, trans).limits,
    `Hard limit: a MIG partition\n${SLICE_LINE}`
  );
  // The item's figure is the slice's (its memory is the GPU's in the sample); its tooltip names the profile.
  assert.deepEqual(statusText(gpu, trans), {
    text: 'GPU 1.5 GiB',
    level: 'ok'
  });
  const tooltip = statusTooltip(gpu, sample, trans).split('\n');
  assert.ok(tooltip.includes(SLICE_LINE), tooltip.join('\n'));
  assert.ok(
    tooltip.indexOf(SLICE_LINE) <
      tooltip.findIndex(line => line.startsWith('GPU 1 · ')),
    'before the device line'
  );
  // A slice whose profile or memory the driver did not tell.
  assert.deepEqual(
    shapeLines(
      {
        slice: { ...gpu.slice!, profile: null, totalBytes: null }
      },
      trans
    ),
    ["this kernel's MIG slice: ?, N/A"]
  );
});

test('a driver limit: one hard line in the limits; the status bar shows what the driver counts against it without a budget', () => {
  const sample = sampleWith({ ...NO_BUDGET, driver_limit: LIMIT });
  const gpu = sample.gpus[1];
  assert.deepEqual(gpu.driverLimit, {
    hardBytes: 6144 * MiB,
    softBytes: null,
    usedBytes: 1536 * MiB,
    cgroup: '/gpumem-1/hub'
  });
  assert.deepEqual(shapeLines(gpu, trans), [LIMIT_LINE]);
  assert.ok(
    (viewLines(sample, gpu, trans).limits as string)
      .split('\n')
      .includes(LIMIT_LINE)
  );
  // No budget: against the driver's limit, as against a budget, in its colours; here the driver counts no more
  // than this kernel's own.
  assert.deepEqual(statusText(gpu, trans), {
    text: 'GPU 1.5/6.0 GiB',
    level: 'ok'
  });
  assert.deepEqual(statusText({ ...gpu, ownBytes: 5.8 * GiB }, trans), {
    text: 'GPU 5.8/6.0 GiB',
    level: 'warn'
  });
  // The driver counts the whole cgroup against its limit: the user's other kernels under it too. That count is
  // the figure where it is more than this kernel's (an allocation fails when it reaches the limit), and where
  // NVML does not tell this kernel's own.
  const crowded = {
    ...gpu,
    driverLimit: { ...gpu.driverLimit!, usedBytes: 5.8 * GiB }
  };
  assert.deepEqual(statusText(crowded, trans), {
    text: 'GPU 5.8/6.0 GiB',
    level: 'warn'
  });
  assert.equal(
    statusText({ ...gpu, ownBytes: null }, trans).text,
    'GPU 1.5/6.0 GiB'
  );
  const untold = {
    ...gpu,
    driverLimit: { ...gpu.driverLimit!, usedBytes: null }
  };
  assert.equal(
    statusText({ ...untold, ownBytes: null }, trans).text,
    'GPU N/A of 6.0 GiB'
  );
  assert.equal(statusText(untold, trans).text, 'GPU 1.5/6.0 GiB');
  // Under a budget the figure is this kernel's own, the budget being its own.
  assert.equal(
    statusText({ ...crowded, budgetBytes: 4 * GiB }, trans).text,
    'GPU 1.5/4.0 GiB'
  );
  assert.ok(statusTooltip(gpu, sample, trans).split('\n').includes(LIMIT_LINE));
  // A budget is the figure the item shows (the planner puts it at or below the driver's limit).
  assert.equal(
    statusText({ ...gpu, budgetBytes: 4 * GiB }, trans).text,
    'GPU 1.5/4.0 GiB'
  );
  // A limit at or above the GPU's memory holds nothing back: not shown as the item's figure.
  assert.equal(
    statusText({ ...gpu, totalBytes: 6144 * MiB }, trans).text,
    'GPU 1.5 GiB'
  );
  // Memory the driver counts that it does not tell: N/A, not 0.
  assert.deepEqual(
    shapeLines(
      { driverLimit: { ...gpu.driverLimit!, usedBytes: null } },
      trans
    ),
    [
      "hard: the NVIDIA driver's limit of 6144 MiB on cgroup /gpumem-1/hub, N/A counted against it"
    ]
  );
});

test('a hostile cgroup path is text on one line: no markup read, control and bidi characters escaped', () => {
  const cgroup = '/hub/<img src=x onerror=alert(1)>\n\u202efake';
  const sample = sampleWith({ driver_limit: { ...LIMIT, cgroup } });
  const [line] = shapeLines(sample.gpus[1], trans);
  assert.equal(
    line,
    "hard: the NVIDIA driver's limit of 6144 MiB on cgroup /hub/<img src=x onerror=alert(1)>\\n\\u202efake, 1536 MiB counted against it"
  );
  assert.ok(!/[\n\u202e]/.test(line));
  assert.ok(
    !/[\n\u202e]/.test(
      statusTooltip(sample.gpus[1], sample, trans).replace(/\n/g, ' ')
    )
  );
  // A hostile slice profile alike.
  assert.deepEqual(
    shapeLines(
      {
        slice: {
          ...sampleWith({ slice: SLICE }).gpus[1].slice!,
          profile: '1g\u202e.5gb\r'
        }
      },
      trans
    ),
    ["this kernel's MIG slice: 1g\\u202e.5gb\\r, 4864 MiB"]
  );
  // The schema bounds a cgroup path: a longer one is refused whole, never shown cut.
  const raw = fixture('sample.json') as Raw;
  (raw.sample.gpus as RawGpu[])[1].driver_limit = {
    ...LIMIT,
    cgroup: '/' + 'a'.repeat(4096)
  };
  assert.throws(
    () => parseMessage(raw),
    /cgroup must be at most 4096 characters/
  );
  const fits = fixture('sample.json') as Raw;
  (fits.sample.gpus as RawGpu[])[1].driver_limit = {
    ...LIMIT,
    cgroup: '/' + 'é'.repeat(4095)
  };
  assert.ok(
    parseMessage(fits),
    '4096 characters (more UTF-16 units or bytes) fit'
  );
});

test('a GPU sharing the host’s memory says so beside its memory figure', () => {
  const sample = sampleWith({ memory_shared: true });
  const gpu = sample.gpus[1];
  assert.deepEqual(shapeLines(gpu, trans), [SHARED_LINE]);
  const lines = viewLines(sample, gpu, trans);
  // The limits' last line, right above the device line with the memory figure.
  assert.equal((lines.limits as string).split('\n').at(-1), SHARED_LINE);
  assert.ok((lines.device as string).endsWith('of 8.0 GiB used'));
  assert.ok(statusTooltip(gpu, sample, trans).includes(SHARED_LINE));
});

test('all three at once, in the order viewtext.py words them; a lost GPU shows none; the driver limits unknown are for %gpumem status', () => {
  const sample = sampleWith(
    {
      limit_kind: 'mig',
      limit_hard: true,
      slice: SLICE,
      driver_limit: LIMIT,
      memory_shared: true,
      unlisted_bytes: 512 * MiB
    },
    {
      driver_limits_unknown: {
        code: 'driver_limits_no_calls',
        values: {}
      }
    }
  );
  const gpu = sample.gpus[1];
  assert.deepEqual(limitLines(gpu, trans), [
    'Hard limit: a MIG partition',
    SLICE_LINE,
    LIMIT_LINE,
    SHARED_LINE,
    'Not listed: 512 MiB the driver uses for processes it hides (other containers’)'
  ]);
  const all = Object.values(viewLines(sample, gpu, trans)).join('\n');
  assert.ok(!all.includes('nvmlDeviceGetMemoryLimits_v1'));
  const lost = { ...gpu, lost: true };
  assert.deepEqual(limitLines(lost, trans), []);
  assert.ok(!statusTooltip(lost, sample, trans).includes(SLICE_LINE));
});

test('each new line is its code’s template through the bundle, in the code’s context', () => {
  const sample = sampleWith({
    slice: SLICE,
    driver_limit: LIMIT,
    memory_shared: true
  });
  assert.deepEqual(shapeLines(sample.gpus[1], bracketed), [
    "⟦mig_slice|this kernel's MIG slice: 1g.5gb, 4864 MiB⟧",
    "⟦driver_limit|hard: the NVIDIA driver's limit of 6144 MiB on cgroup /gpumem-1/hub, 1536 MiB counted against it⟧",
    "⟦memory_shared|shared with the CPU: the host's memory⟧"
  ]);
  assert.equal(
    chartLabels(null, bracketed).driverLimit,
    '⟦chart|driver limit⟧'
  );
});

// The chart.

/** A minute of samples, one a second, of S1's GPU 1 as `gpu` has it; its series. */
function minute(gpu: RawGpu) {
  const sample = sampleWith(gpu);
  const history = new History(1000);
  for (let i = 0; i < 60; i++) {
    history.push({ ...sample, t: sample.t + i } as Sample);
  }
  return history.series(sample.gpus[1].uuid!)!;
}

function chartOf(gpu: RawGpu) {
  return figure(
    {
      series: minute(gpu),
      windowMs: 900_000,
      framework: null,
      width: 250,
      height: 180,
      colours: COLOURS,
      range: null
    },
    trans
  );
}

const uids = (fig: ReturnType<typeof figure>) =>
  fig.data.map(d => (d as { uid: string }).uid);

test('the chart draws a binding driver limit as a line of its own, named, in the legend after the budget', () => {
  // No budget: the limit stands in for one, so the scale reaches it (1.5 GiB held, the 6 GiB wall in view).
  const fig = chartOf({ ...NO_BUDGET, driver_limit: LIMIT });
  assert.deepEqual(uids(fig), ['others', 'driverLimit', 'own']);
  assert.ok(fig.yTop >= 6144 * MiB && fig.yTop <= 8 * GiB, `${fig.yTop}`);
  const line = fig.data[1] as {
    name: string;
    y: number[];
    line: { color: string; dash: string; width: number };
    hovertemplate: string;
  };
  assert.equal(line.name, 'driver limit');
  assert.ok(line.y.every(y => y === 6));
  assert.deepEqual(line.line, { color: '#f57c00', width: 2, dash: 'solid' });
  assert.equal(line.hovertemplate, '%{y:.2f} GiB');
  assert.deepEqual(
    fig.legend.map(e => [e.uid, e.name, e.colour, e.style]),
    [
      ['own', 'this kernel', '#1976d2', 'solid'],
      ['others', 'others', '#9e9e9e', 'solid'],
      ['driverLimit', 'driver limit', '#f57c00', 'solid']
    ]
  );
  // With a budget planned at the limit, both: the budget's dashes drawn over the limit.
  const both = chartOf({
    ...NO_BUDGET,
    budget_bytes: 6144 * MiB,
    driver_limit: LIMIT
  });
  assert.deepEqual(uids(both), ['others', 'driverLimit', 'budget', 'own']);
  assert.deepEqual(
    both.legend.map(e => e.uid),
    ['own', 'others', 'budget', 'driverLimit']
  );
});

test('the driver limit is not drawn above the chart’s top, nor where it does not bind; the other lines keep their uids', () => {
  // A 2 GiB budget sets the scale; the 6 GiB limit lies above it: no line (the detail line says it).
  const above = chartOf({
    ...NO_BUDGET,
    budget_bytes: 2 * GiB,
    driver_limit: LIMIT
  });
  assert.ok(above.yTop < 6144 * MiB);
  assert.deepEqual(uids(above), ['others', 'budget', 'own']);
  // A limit at the GPU's memory binds nothing: neither drawn nor scaled to.
  const loose = chartOf({
    ...NO_BUDGET,
    driver_limit: { ...LIMIT, hard_bytes: 40960 * MiB }
  });
  assert.deepEqual(uids(loose), ['others', 'own']);
  assert.ok(loose.yTop < 4 * GiB);
  const s = minute({
    ...NO_BUDGET,
    driver_limit: { ...LIMIT, hard_bytes: 40960 * MiB }
  });
  assert.ok(bindingLimit(s).every(Number.isNaN));
  assert.equal(
    yScale(s).top,
    yScale({ ...s, driverLimit: s.own.map(() => NaN) }).top
  );
  // Without a limit, the figure is what it was.
  assert.deepEqual(uids(chartOf(NO_BUDGET)), ['others', 'own']);
});

test('an inline view saved before the driver limit was drawn reads back, without one', () => {
  const saved = {
    t: [1000, 2000],
    own: [1, 2],
    framework: [null, null],
    others: [3, 4],
    total: [5, 5],
    budget: [6, 6],
    marks: []
  };
  const read = readSeries(saved)!;
  assert.ok(read);
  assert.ok(read.driverLimit.every(Number.isNaN));
  assert.equal(read.driverLimit.length, 2);
  assert.deepEqual(
    readSeries({ ...saved, driverLimit: [7, null] })!.driverLimit,
    [7, NaN]
  );
  assert.equal(readSeries({ ...saved, driverLimit: [7] }), null);
});
