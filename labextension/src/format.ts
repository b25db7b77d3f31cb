/**
 * The one place the sidebar's and the status bar's text is made: every line they show is built here
 * from a parsed sample, pure, so the Node tests read it. Every phrase goes through the translation
 * bundle (`trans.__`, as JupyterLab's own extensions do). Bytes are binary units, as nvidia-smi
 * counts them; `null` is "N/A" (the driver cannot tell), never 0. What the kernel decided (why it
 * is over, what a framework takes, where the policy stands) is its sentence, shown as it is.
 */

import type { TranslationBundle } from '@jupyterlab/translation';

import type { State } from './channel';
import { IKernelRow, holding } from './kernelrows';
import { IGpu, IProcess, ISample, OverheadSource, PROTOCOL } from './protocol';
import { PACKAGE_VERSION } from './schema';

/** The part of a translation bundle the text needs. */
export type Trans = Pick<TranslationBundle, '__'>;

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

export function formatBytes(value: number | null, trans: Trans): string {
  if (value === null) {
    return trans.__('N/A');
  }
  if (value >= GiB) {
    return trans.__('%1 GiB', (value / GiB).toFixed(1));
  }
  return trans.__('%1 MiB', Math.round(value / MiB));
}

export type Level = 'ok' | 'warn' | 'error';

/** A line of the sidebar and the colour it is shown in. */
export interface ILine {
  text: string;
  level: Level;
}

/** At or above this share of the budget the headline turns to the warning colour. */
export const WARN_AT = 0.9;

/** The panel's title (the header shows it in capitals, as the core panels do). */
export function panelTitle(trans: Trans): string {
  return trans.__('GPU Memory');
}

/** The kernel line when no notebook is open. */
export function noNotebook(trans: Trans): string {
  return trans.__('Open a notebook to see its kernel’s GPU memory.');
}

/** "analysis.ipynb — Python 3 (ipykernel)"; a null kernel name: the notebook has no kernel. */
export function notebookLabel(
  path: string,
  kernel: string | null,
  trans: Trans
): string {
  return trans.__('%1 — %2', path, kernel ?? trans.__('no kernel'));
}

/** The banner over a stand-in NVML: its scenario file by name (the full path is the tooltip). */
export function simulatedBanner(scenario: string | null, trans: Trans): string {
  return scenario
    ? trans.__(
        'SIMULATED GPU — stand-in NVML (%1)',
        printable(scenario.split('/').pop() ?? scenario)
      )
    : '';
}

/** What the panel says about the stream when it is not streaming; `detail` as the Channel keeps
 * it (the kernel's language, the error, the seconds without figures). Empty: nothing to say. */
export function channelLine(
  state: State,
  detail: string,
  trans: Trans,
  refused: { protocol: number; packageVersion: string | null } | null = null
): string {
  switch (state) {
    case 'idle':
    case 'streaming':
      return '';
    case 'connecting':
      return trans.__('Connecting to the kernel…');
    case 'restarting':
      return trans.__('Kernel restarted — reconnecting…');
    case 'stalled':
      return trans.__(
        'No figures from the kernel for %1 s — reconnecting…',
        detail
      );
    case 'missing':
      return trans.__(
        "jupyter-gpumem is not installed in this kernel's environment. Install it there, then restart the kernel:"
      );
    case 'unsupported':
      return trans.__(
        'GPU memory is not supported for this kernel (%1); it needs a Python kernel.',
        detail
      );
    case 'unreachable':
      return trans.__('Could not reach the kernel: %1', detail);
    case 'failed':
      return trans.__(
        'The kernel could not start the GPU memory stream: %1',
        detail
      );
    case 'dead':
      return trans.__('The kernel has died; restart it to see its GPU memory.');
    case 'incompatible':
      return refused ? incompatibleLine(refused, trans) : '';
  }
}

/**
 * A kernel of another major release (protocol.ts's VersionError): "This kernel's jupyter-gpumem 1.0.0 speaks
 * protocol 2; this JupyterLab extension (jupyter-gpumem 0.2.0) reads protocol 1: upgrade jupyter-gpumem where
 * JupyterLab runs, then reload this page." The older side is the one to upgrade.
 */
export function incompatibleLine(
  refused: { protocol: number; packageVersion: string | null },
  trans: Trans
): string {
  const theirs =
    refused.packageVersion === null ? '' : ` ${refused.packageVersion}`;
  return refused.protocol > PROTOCOL
    ? trans.__(
        "This kernel's jupyter-gpumem%1 speaks protocol %2; this JupyterLab extension (jupyter-gpumem %3) reads protocol %4: upgrade jupyter-gpumem where JupyterLab runs, then reload this page.",
        theirs,
        refused.protocol,
        PACKAGE_VERSION,
        PROTOCOL
      )
    : trans.__(
        "This kernel's jupyter-gpumem%1 speaks protocol %2; this JupyterLab extension (jupyter-gpumem %3) reads protocol %4: upgrade jupyter-gpumem in this kernel's environment (%pip install -U jupyter-gpumem), then restart the kernel.",
        theirs,
        refused.protocol,
        PACKAGE_VERSION,
        PROTOCOL
      );
}

/** "GPU 0: NVIDIA A100-SXM4-40GB", an entry of the GPU choice; "GPU 1: lost". */
export function gpuOption(
  gpu: Pick<IGpu, 'index' | 'name' | 'lost'>,
  trans: Trans
): string {
  if (gpu.lost) {
    return trans.__('GPU %1: lost', gpu.index);
  }
  return trans.__(
    'GPU %1: %2',
    gpu.index,
    gpu.name === null ? trans.__('unknown') : printable(gpu.name)
  );
}

/** "GPU 0 · NVIDIA A100-SXM4-40GB · 16.1 GiB of 40.0 GiB used", the whole device. */
export function deviceLine(
  gpu: Pick<IGpu, 'index' | 'name' | 'lost' | 'usedBytes' | 'totalBytes'>,
  trans: Trans
): string {
  if (gpu.lost) {
    return gpu.name === null
      ? trans.__('GPU %1: lost (fell off the bus; it needs a reset)', gpu.index)
      : trans.__(
          'GPU %1 %2: lost (fell off the bus; it needs a reset)',
          gpu.index,
          printable(gpu.name)
        );
  }
  return trans.__(
    'GPU %1 · %2 · %3 of %4 used',
    gpu.index,
    gpu.name === null ? trans.__('unknown') : printable(gpu.name),
    formatBytes(gpu.usedBytes, trans),
    formatBytes(gpu.totalBytes, trans)
  );
}

type BudgetGpu = Pick<
  IGpu,
  'index' | 'lost' | 'hidden' | 'ownBytes' | 'budgetBytes' | 'inForce'
>;

/** Own and budget in the budget's unit: ["3.1", "4.0", "GiB"] or ["177", "512", "MiB"]. */
function againstBudget(own: number, budget: number): [string, string, string] {
  const unit = budget >= GiB ? GiB : MiB;
  const digits = unit === GiB ? 1 : 0;
  return [
    (own / unit).toFixed(digits),
    (budget / unit).toFixed(digits),
    unit === GiB ? 'GiB' : 'MiB'
  ];
}

/** Warning from 90% of the budget, error above it. */
function level(own: number, budget: number): Level {
  const share = budget > 0 ? own / budget : Infinity;
  return share > 1 ? 'error' : share >= WARN_AT ? 'warn' : 'ok';
}

/**
 * "3.1 of 4.0 GiB budget (78%)": this kernel's memory against its budget on this GPU. Warning
 * colour from 90%, error colour above the budget. A budget the framework does not hold (yet) says
 * so. Without a budget, this kernel's memory (budgetNote says what the framework takes).
 */
export function headline(
  gpu: BudgetGpu,
  sample: Pick<ISample, 'policy'>,
  trans: Trans
): ILine {
  const { ownBytes, budgetBytes } = gpu;
  if (gpu.lost) {
    return { text: trans.__('GPU %1 is lost: N/A', gpu.index), level: 'error' };
  }
  if (gpu.hidden) {
    return {
      text: trans.__(
        'Hidden from this kernel by its policy (%1)',
        printable(sample.policy ?? 'gpus=')
      ),
      level: 'ok'
    };
  }
  if (budgetBytes === null) {
    return {
      text:
        ownBytes === null
          ? trans.__('N/A used by this kernel (the driver cannot tell)')
          : trans.__('%1 used by this kernel', formatBytes(ownBytes, trans)),
      level: 'ok'
    };
  }
  const unheld = gpu.inForce ? [] : [trans.__('not in force')];
  if (ownBytes === null) {
    const why = [
      ...unheld,
      trans.__("the driver cannot tell this kernel's memory")
    ];
    return {
      text: trans.__(
        'N/A of %1 budget (%2)',
        formatBytes(budgetBytes, trans),
        why.join('; ')
      ),
      level: 'ok'
    };
  }
  const [own, budget, unit] = againstBudget(ownBytes, budgetBytes);
  const share =
    budgetBytes > 0
      ? trans.__('%1%', Math.round((ownBytes / budgetBytes) * 100))
      : '∞';
  return {
    text: trans.__(
      '%1 of %2 %3 budget (%4)',
      own,
      budget,
      unit,
      [share, ...unheld].join(', ')
    ),
    level: level(ownBytes, budgetBytes)
  };
}

/** Without a budget: "No budget set — TensorFlow takes nearly all the memory …" (the kernel's
 * phrase, `takes`). Null where there is a budget, or nothing to say (lost, hidden). */
export function budgetNote(
  gpu: Pick<IGpu, 'lost' | 'hidden' | 'budgetBytes'>,
  sample: Pick<ISample, 'takes'>,
  trans: Trans
): string | null {
  if (gpu.lost || gpu.hidden || gpu.budgetBytes !== null) {
    return null;
  }
  return trans.__(
    'No budget set — %1',
    printable(
      sample.takes ??
        trans.__('a framework takes its default amount when it starts')
    )
  );
}

/**
 * The status-bar item: "GPU 3.1/4.0 GiB" (against the budget, coloured as the headline), "GPU 3.1
 * GiB" without one, "GPU lost" in the error colour.
 */
export function statusText(gpu: BudgetGpu, trans: Trans): ILine {
  if (gpu.lost) {
    return { text: trans.__('GPU lost'), level: 'error' };
  }
  if (gpu.hidden) {
    return { text: trans.__('GPU hidden'), level: 'ok' };
  }
  const { ownBytes, budgetBytes } = gpu;
  if (budgetBytes === null) {
    return {
      text: trans.__('GPU %1', formatBytes(ownBytes, trans)),
      level: 'ok'
    };
  }
  if (ownBytes === null) {
    return {
      text: trans.__('GPU N/A of %1', formatBytes(budgetBytes, trans)),
      level: 'ok'
    };
  }
  const [own, budget, unit] = againstBudget(ownBytes, budgetBytes);
  return {
    text: trans.__('GPU %1/%2 %3', own, budget, unit),
    level: level(ownBytes, budgetBytes)
  };
}

/** The status-bar item's tooltip: the headline, the split, why it is over, the device, the server's
 * kernels (`server`, kernelsSummary's line) and what a click does. */
export function statusTooltip(
  gpu: IGpu,
  sample: ISample,
  trans: Trans,
  server: string | null = null
): string {
  return [
    headline(gpu, sample, trans).text,
    budgetNote(gpu, sample, trans),
    breakdown(gpu, sample.framework, trans),
    overLine(gpu, trans),
    deviceLine(gpu, trans),
    server,
    trans.__('Click to open the GPU Memory panel.')
  ]
    .filter(line => line)
    .join('\n');
}

/**
 * "Policy: fraction=0.5 — applies when "import tensorflow" completes": the policy and the
 * kernel's note on it, in the warning colour when the kernel says it is in force on no GPU.
 * Null without a policy.
 */
export function policyLine(
  sample: Pick<ISample, 'policy' | 'policyState' | 'policyNote'>,
  trans: Trans
): ILine | null {
  if (sample.policy === null) {
    return null;
  }
  return {
    text: sample.policyNote
      ? trans.__(
          'Policy: %1 — %2',
          printable(sample.policy),
          printable(sample.policyNote)
        )
      : trans.__('Policy: %1', printable(sample.policy)),
    level: sample.policyState === 'not_in_force' ? 'warn' : 'ok'
  };
}

/**
 * How this kernel's figure is known, under the headline: "Exact: NVML lists this kernel's PID",
 * "Matched: PID 812345 appeared when PyTorch started …", "Estimated: …", "Unknown: …" — the
 * kernel's own words after its label. Null from a kernel that does not say, or on a lost GPU.
 */
export function ownLine(
  gpu: Pick<IGpu, 'lost' | 'hidden' | 'ownSource' | 'ownReason'>,
  trans: Trans
): ILine | null {
  if (gpu.lost || gpu.hidden || gpu.ownSource === null) {
    return null;
  }
  const labels = {
    exact: trans.__('Exact'),
    matched: trans.__('Matched'),
    estimated: trans.__('Estimated'),
    unknown: trans.__('Unknown')
  };
  const label = labels[gpu.ownSource];
  return {
    text: gpu.ownReason
      ? trans.__('%1: %2', label, printable(gpu.ownReason))
      : label,
    level: gpu.ownSource === 'unknown' ? 'warn' : 'ok'
  };
}

/**
 * What holds this kernel on the GPU: "Hard limit: MIG partition, 19.5 GiB", "Hard limit: MPS,
 * 6.0 GiB for this process", "Cooperative limit (%gpumem)"; then memory the driver lists under
 * no process: "Not listed: 14.0 GiB (processes the driver hides: other containers')".
 */
export function limitLines(
  gpu: Pick<IGpu, 'lost' | 'limitKind' | 'budgetBytes' | 'unlistedBytes'>,
  trans: Trans
): string[] {
  if (gpu.lost) {
    return [];
  }
  const lines: string[] = [];
  if (gpu.limitKind === 'mig') {
    lines.push(trans.__('Hard limit: a MIG partition'));
  } else if (gpu.limitKind === 'mps') {
    lines.push(trans.__('Hard limit: MPS, per process'));
  } else if (gpu.limitKind === 'cooperative' && gpu.budgetBytes !== null) {
    lines.push(
      trans.__('Cooperative limit (%gpumem): code that bypasses it is not held')
    );
  }
  if (gpu.unlistedBytes !== null) {
    lines.push(
      trans.__(
        'Not listed: %1 the driver uses for processes it hides (other containers’)',
        formatBytes(gpu.unlistedBytes, trans)
      )
    );
  }
  return lines;
}

/** "Over budget: <the kernel's reason>", or null when it is not over (or the GPU is hidden). */
export function overLine(
  gpu: Pick<IGpu, 'hidden' | 'overReason'>,
  trans: Trans
): string | null {
  return gpu.overReason && !gpu.hidden
    ? trans.__('Over budget: %1', printable(gpu.overReason))
    : null;
}

/** The lines the sidebar and the inline view show of one GPU under the banner, in view.ts's order. */
export type ViewLine =
  | 'headline'
  | 'own'
  | 'note'
  | 'breakdown'
  | 'reason'
  | 'policy'
  | 'limits'
  | 'device';

/** Each line's text (and colour); null hides it. viewtext.py says the same for the inline view's
 * still picture: tests/fixtures/golden/ holds the words both must show. */
export function viewLines(
  sample: ISample,
  gpu: IGpu,
  trans: Trans
): Record<ViewLine, ILine | string | null> {
  const limits = [...limitLines(gpu, trans), printable(sample.limitNote ?? '')];
  return {
    headline: headline(gpu, sample, trans),
    own: ownLine(gpu, trans),
    note: budgetNote(gpu, sample, trans),
    breakdown: breakdown(gpu, sample.framework, trans),
    reason: overLine(gpu, trans),
    policy: policyLine(sample, trans),
    limits: limits.filter(line => line).join('\n') || null,
    device: deviceLine(gpu, trans)
  };
}

/** The chart's names for its lines, the legend's and the hover's. */
export interface IChartLabels {
  own: string;
  framework: string;
  others: string;
  budget: string;
  total: string;
}

export function chartLabels(
  framework: string | null,
  trans: Trans
): IChartLabels {
  return {
    own: trans.__('this kernel'),
    framework: framework
      ? trans.__('%1 in use', framework)
      : trans.__('framework in use'),
    others: trans.__('others'),
    budget: trans.__('budget'),
    total: trans.__('device total')
  };
}

/** The chart's name for assistive technology. */
export function chartName(trans: Trans): string {
  return trans.__("This kernel's GPU memory over time, against its budget");
}

/** What the chart shows before it has two samples to draw a line between. */
export function collecting(trans: Trans): string {
  return trans.__('Collecting…');
}

/** The chart's note where the device total lies above its scale: "device total 40.0 GiB ↑". */
export function totalAbove(total: number, trans: Trans): string {
  return trans.__('device total %1 ↑', formatBytes(total, trans));
}

/** The tooltip of an over-budget mark. */
export function markTitle(
  t: number,
  reason: string | null,
  trans: Trans
): string {
  return reason
    ? trans.__('Over budget from %1: %2', clock(t, true), reason)
    : trans.__('Over budget from %1', clock(t, true));
}

/** A cell's name on the chart: "[12] model.fit(x, y)", "[*] …" while it runs, "(error)" when it raised. */
export function cellTitle(
  cell: { count: number | null; line: string; error: boolean },
  trans: Trans
): string {
  const count = cell.count === null ? '*' : String(cell.count);
  const name = `[${count}] ${printable(cell.line)}`;
  return cell.error ? trans.__('%1 (error)', name) : name;
}

/** The chart's words that are not figures: a figure in its hover (a plotly template on the value
 * in GiB; a gap has no hover), the way back from a zoomed range to the live view. */
export function chartWords(trans: Trans): {
  hoverFigure: string;
  backToLive: string;
  legend: string;
  download: string;
} {
  return {
    hoverFigure: trans.__('%1 GiB', '%{y:.2f}'),
    backToLive: trans.__('Back to live'),
    legend: trans.__('Lines on the chart: a click hides or shows one'),
    download: trans.__('Download the chart as a PNG')
  };
}

/** The chart's note while the user looks at a range of their own: "Paused on 14:03:10–14:05:40". */
export function pausedOn(from: number, to: number, trans: Trans): string {
  return trans.__('Paused on %1–%2', clock(from, true), clock(to, true));
}

const pad = (n: number) => String(n).padStart(2, '0');

/**
 * "The NVIDIA driver has not answered since 10:42:03 (for 12 s); figures are from then." (gpu/reader.py's
 * sentence, the same words): the sample's figures are the last the driver gave. Null while it answers.
 */
export function stalledLine(
  sample: Pick<ISample, 't' | 'stalledSince' | 'gpus'>,
  trans: Trans
): string | null {
  const since = sample.stalledSince;
  if (since === null || since === undefined) {
    return null;
  }
  const at = clock(since * 1000, true);
  const waited = duration(Math.max(0, sample.t - since), trans);
  return sample.gpus.length > 0
    ? trans.__(
        'The NVIDIA driver has not answered since %1 (for %2); figures are from then.',
        at,
        waited
      )
    : trans.__(
        'The NVIDIA driver has not answered since %1 (for %2); there are no figures yet.',
        at,
        waited
      );
}

/** "14:03" or "14:03:27", the browser's local time (ticks and hover). */
export function clock(ms: number, seconds: boolean): string {
  const d = new Date(ms);
  const hm = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
  return seconds ? `${hm}:${pad(d.getSeconds())}` : hm;
}

/** A y-axis label: "2", "0.5" (the unit is written once, above the axis). */
export function axisNumber(value: number): string {
  return Number.isInteger(value) ? String(value) : String(+value.toFixed(2));
}

/** The table's columns, in order, and their titles. */
export type Column = 'pid' | 'name' | 'user' | 'usedBytes' | 'cpuPercent';

export function columnTitle(column: Column, trans: Trans): string {
  switch (column) {
    case 'pid':
      return trans.__('PID');
    case 'name':
      return trans.__('Name');
    case 'user':
      return trans.__('User');
    case 'usedBytes':
      return trans.__('MiB');
    case 'cpuPercent':
      return trans.__('CPU %');
  }
}

/** What a column's heading means, its tooltip. */
export function columnTooltip(column: Column, trans: Trans): string {
  switch (column) {
    case 'pid':
      return trans.__('Process ID, as nvidia-smi shows it');
    case 'name':
      return trans.__('The executable’s name (never its command line)');
    case 'user':
      return trans.__('The user the process runs as');
    case 'usedBytes':
      return trans.__(
        'GPU memory of the process in MiB, as nvidia-smi counts it'
      );
    case 'cpuPercent':
      return trans.__('CPU use of the process, % of one core');
  }
}

/** The text of one row of the process table, and its tooltips. */
export interface ICells {
  pid: string;
  name: string;
  user: string;
  usedBytes: string;
  cpuPercent: string;
  /** The name cell's tooltip: the whole name, with the PID and user (columns a narrow panel hides). */
  nameTitle: string;
  /** Why the CPU cell shows what it shows, when that needs saying. */
  cpuTitle: string;
  /** The badge on this kernel's row. */
  badge: string;
}

/** Control characters (C0, DEL, C1), invisible formatting (bidi overrides, isolates and marks, zero
 * widths, the BOM), lone surrogates and the line and paragraph separators: a string from the GPU host
 * holding one could forge a line or read backwards on screen. The same set as render/text.py's
 * printable() (tests/fixtures/golden/ pins that both escape it alike). */
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/gu;
const NAMED: Record<string, string> = { '\t': '\\t', '\n': '\\n', '\r': '\\r' };

function escape(c: string): string {
  const code = c.codePointAt(0) ?? 0;
  const hex = code.toString(16);
  return (
    NAMED[c] ??
    (code <= 0xff
      ? `\\x${hex.padStart(2, '0')}`
      : code <= 0xffff
        ? `\\u${hex.padStart(4, '0')}`
        : `\\U${hex.padStart(8, '0')}`)
  );
}

/** A string from the GPU host (a process name, a user, a GPU name, the kernel's sentences about
 * them) with those characters written as escapes ("\\u202e"): a row stays one line and reads in
 * its own order. Everything else, non-ASCII included, stays as it is. */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, escape);
}

/** A row: MiB as nvidia-smi's process table counts them, CPU% to one decimal; N/A where the
 * driver or the host cannot tell, "…" where the host has not measured the CPU yet. */
export function processCells(p: IProcess, trans: Trans): ICells {
  const na = trans.__('N/A');
  const name = p.name === null ? na : printable(p.name);
  const user = p.user === null ? na : printable(p.user);
  const pending = p.cpuPercent === null && p.cpuPending;
  return {
    pid: String(p.pid),
    name,
    user,
    usedBytes:
      p.usedBytes === null ? na : String(Math.round(p.usedBytes / MiB)),
    cpuPercent:
      p.cpuPercent !== null ? p.cpuPercent.toFixed(1) : pending ? '…' : na,
    nameTitle: trans.__('%1 (PID %2, user %3)', name, p.pid, user),
    cpuTitle: pending
      ? trans.__('CPU not measured yet')
      : p.cpuPercent === null
        ? trans.__('CPU not available: the host cannot see this process')
        : '',
    badge: p.self ? trans.__('this kernel') : ''
  };
}

function processCount(count: number, trans: Trans): string {
  return count === 1
    ? trans.__('%1 process', count)
    : trans.__('%1 processes', count);
}

/**
 * Other users' processes where privacy shows them as one figure: "other users: 3 processes, 9.2
 * GiB", per user under "names"; null when every process is listed (viewtext.others_note).
 */
export function othersNote(
  gpu: Pick<IGpu, 'others'>,
  trans: Trans
): string | null {
  const others = gpu.others;
  if (others === null || others.processes === 0) {
    return null;
  }
  const line = trans.__(
    'other users: %1, %2',
    processCount(others.processes, trans),
    formatBytes(others.usedBytes, trans)
  );
  if (!others.users || others.users.length === 0) {
    return line;
  }
  const each = others.users.map(u =>
    trans.__(
      '%1: %2, %3',
      u.user === null ? trans.__('user unknown') : printable(u.user),
      processCount(u.processes, trans),
      formatBytes(u.usedBytes, trans)
    )
  );
  return `${line} (${each.join('; ')})`;
}

/** What the process table says instead of (or before) its rows; null: just the rows. */
export function processNote(
  gpu: Pick<IGpu, 'lost' | 'processesKnown'>,
  trans: Trans
): string | null {
  if (gpu.lost) {
    return trans.__('This GPU is lost: no figures until it is reset.');
  }
  if (!gpu.processesKnown) {
    return trans.__('The driver does not list the processes on this GPU.');
  }
  return null;
}

function sourceWords(source: OverheadSource, trans: Trans): string {
  switch (source) {
    case 'estimated':
      return trans.__('estimated');
    case 'remembered':
      return trans.__('measured by an earlier kernel');
    case 'measured':
      return trans.__('measured');
  }
}

/**
 * How the budget splits: "TensorFlow pool 3.6 GiB + 504 MiB outside it (measured) = 4.1 GiB" once
 * the framework reports its pool, else "TensorFlow limit 3.6 GiB + 400 MiB set aside for CUDA and
 * libraries (estimated)"; "Allocator …" when the framework is not known yet. Null when there is no
 * budget to split (or the GPU is hidden or lost).
 */
export function breakdown(
  gpu: IGpu,
  framework: string | null,
  trans: Trans
): string | null {
  if (
    gpu.hidden ||
    gpu.lost ||
    gpu.budgetBytes === null ||
    gpu.poolBytes === null ||
    gpu.overheadBytes === null ||
    gpu.overheadSource === null
  ) {
    return null;
  }
  const source = sourceWords(gpu.overheadSource, trans);
  const who = framework ?? trans.__('Allocator'); // several installed, none imported yet
  if (gpu.poolKnown && gpu.ownBytes !== null) {
    const outside = Math.max(0, gpu.ownBytes - gpu.poolBytes);
    return trans.__(
      '%1 pool %2 + %3 outside it (%4) = %5',
      who,
      formatBytes(gpu.poolBytes, trans),
      formatBytes(outside, trans),
      source,
      formatBytes(gpu.ownBytes, trans)
    );
  }
  return trans.__(
    '%1 limit %2 + %3 set aside for CUDA and libraries (%4)',
    who,
    formatBytes(gpu.poolBytes, trans),
    formatBytes(gpu.overheadBytes, trans),
    source
  );
}

/** The panel's toolbar and the command. */
export function uiText(trans: Trans) {
  return {
    chooseGpu: trans.__('GPU to show'),
    settings: trans.__('GPU Memory settings'),
    reconnect: trans.__(
      'Reconnect to the kernel (restart the GPU memory stream)'
    ),
    command: trans.__('Show GPU Memory'),
    commandCaption: trans.__(
      "This kernel's GPU memory against its budget, live"
    ),
    category: trans.__('GPU Memory'),
    processes: trans.__('Processes on this GPU')
  };
}

/** "45 s", "30 min", "2 h 5 min": an idle time as people say it (units.format_duration). */
export function duration(seconds: number, trans: Trans): string {
  if (seconds < 60) {
    return trans.__('%1 s', Math.round(seconds));
  }
  const minutes = Math.round(seconds / 60);
  if (minutes < 120) {
    return trans.__('%1 min', minutes);
  }
  const hours = Math.floor(minutes / 60);
  return minutes % 60
    ? trans.__('%1 h %2 min', hours, minutes % 60)
    : trans.__('%1 h', hours);
}

/** The kernel list's header: "Kernels on this server (3)". */
export function kernelsTitle(count: number, trans: Trans): string {
  return trans.__('Kernels on this server (%1)', count);
}

/** What the kernel list says instead of rows; null: just the rows. */
export function kernelsNote(
  rows: number,
  error: string | null,
  trans: Trans
): string | null {
  if (error !== null) {
    return trans.__(
      'Could not read the server’s GPU memory: %1',
      printable(error)
    );
  }
  return rows === 0 ? trans.__('No kernels are running.') : null;
}

/** The words of one row of the kernel list, its tooltips and its Shut down button. */
export interface IKernelCells {
  /** The notebook's (or console's) name; "Kernel 5f0c1a2b" where no session names it. */
  name: string;
  /** The name's tooltip: the path and the kernel's id. */
  nameTitle: string;
  /** Its memory on every GPU together, as nvidia-smi counts it. */
  memory: string;
  /** The warning colour from 90% of a budget on one of its GPUs, the error colour above one. */
  level: Level;
  /** The budget (per GPU with several) and how long it has been idle. */
  detail: string;
  badge: string;
  shutDown: string;
}

/** One kernel of the list: "train.ipynb … 3.4 GiB", then "budget 4.0 GiB · idle 12 min" (on one
 * GPU) or "GPU 0: 3.4 of 4.0 GiB · GPU 1: 500 MiB · busy" (on several). */
export function kernelCells(
  row: IKernelRow,
  gpuCount: number,
  trans: Trans
): IKernelCells {
  const name = row.session
    ? printable(row.session.name)
    : trans.__('Kernel %1', row.id.slice(0, 8));
  const parts: string[] = [];
  for (const gpu of row.gpus) {
    const budget =
      gpu.budgetBytes === null ? null : formatBytes(gpu.budgetBytes, trans);
    if (gpuCount > 1 || row.gpus.length > 1) {
      const used = formatBytes(gpu.usedBytes, trans);
      parts.push(
        budget === null
          ? trans.__('GPU %1: %2', gpu.index, used)
          : trans.__('GPU %1: %2 of %3', gpu.index, used, budget)
      );
    } else {
      parts.push(
        budget === null ? trans.__('no budget') : trans.__('budget %1', budget)
      );
    }
  }
  if (row.busy) {
    parts.push(trans.__('busy'));
  } else if (row.idleS !== null) {
    parts.push(trans.__('idle %1', duration(row.idleS, trans)));
  }
  const levels = row.gpus.map(g =>
    g.usedBytes === null || g.budgetBytes === null
      ? 'ok'
      : level(g.usedBytes, g.budgetBytes)
  );
  return {
    name,
    nameTitle: row.session
      ? trans.__('%1 (kernel %2)', printable(row.session.path), row.id)
      : trans.__('Kernel %1, not in a notebook or console', row.id),
    memory: formatBytes(row.heldBytes, trans),
    level: levels.includes('error')
      ? 'error'
      : levels.includes('warn')
        ? 'warn'
        : 'ok',
    detail: parts.join(' · '),
    badge: row.current ? trans.__('this kernel') : '',
    shutDown: trans.__('Shut down the kernel of %1', name)
  };
}

/** The status bar's tooltip line: "2 kernels on this server hold 7.5 GiB of GPU memory". */
export function kernelsSummary(rows: IKernelRow[], trans: Trans): string {
  const { kernels, bytes, unknown } = holding(rows);
  const line =
    kernels === 0
      ? trans.__('No kernel on this server holds GPU memory')
      : kernels === 1
        ? trans.__(
            '1 kernel on this server holds %1 of GPU memory',
            formatBytes(bytes, trans)
          )
        : trans.__(
            '%1 kernels on this server hold %2 of GPU memory',
            kernels,
            formatBytes(bytes, trans)
          );
  return unknown > 0 ? trans.__('%1 (N/A for %2 more)', line, unknown) : line;
}

/** JupyterLab's confirmation dialog before a kernel is shut down. */
export function shutDownDialog(name: string, trans: Trans) {
  return {
    title: trans.__('Shut down kernel?'),
    body: trans.__(
      'Shut down the kernel of “%1”? Its variables are lost and the GPU memory it holds is freed.',
      name
    ),
    cancel: trans.__('Cancel'),
    accept: trans.__('Shut Down'),
    ok: trans.__('OK')
  };
}

/** A shutdown the server refused or could not do. */
export function shutDownFailed(name: string, error: string, trans: Trans) {
  return trans.__(
    'Could not shut down the kernel of %1: %2',
    name,
    printable(error)
  );
}
