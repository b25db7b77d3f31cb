/**
 * The one place the sidebar's text is made: every line the panel shows is built here from a
 * parsed sample, pure, so the Node tests read it. Bytes are binary units, as nvidia-smi counts
 * them; `null` is "N/A" (the driver cannot tell), never 0. What the kernel decided (why it is over,
 * what a framework takes, where the policy stands) is its sentence, shown as it is.
 */

import { IGpu, IProcess, ISample, OverheadSource } from './protocol';

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

export function formatBytes(value: number | null): string {
  if (value === null) {
    return 'N/A';
  }
  if (value >= GiB) {
    return `${(value / GiB).toFixed(1)} GiB`;
  }
  return `${Math.round(value / MiB)} MiB`;
}

/** Always MiB, as nvidia-smi's process table prints it (for comparing the two). */
export function formatMiB(value: number | null): string {
  return value === null ? 'N/A' : `${Math.round(value / MiB)} MiB`;
}

export function formatPercent(value: number | null): string {
  return value === null ? 'N/A' : `${value.toFixed(1)}%`;
}

export type Level = 'ok' | 'warn' | 'error';

/** A line of the sidebar and the colour it is shown in. */
export interface ILine {
  text: string;
  level: Level;
}

/** At or above this share of the budget the headline turns to the warning colour. */
export const WARN_AT = 0.9;

/** The kernel line when no notebook is open. */
export const NO_NOTEBOOK = 'Open a notebook to see its kernel’s GPU memory.';

/** "analysis.ipynb — Python 3 (ipykernel)"; a null kernel name: the notebook has no kernel. */
export function notebookLabel(path: string, kernel: string | null): string {
  return `${path} — ${kernel ?? 'no kernel'}`;
}

/** The banner over a stand-in NVML: its scenario file by name (the full path is the tooltip). */
export function simulatedBanner(scenario: string | null): string {
  return scenario
    ? `SIMULATED GPU — stand-in NVML (${scenario.split('/').pop()})`
    : '';
}

/** "GPU 0: NVIDIA A100-SXM4-40GB", an entry of the GPU choice. */
export function gpuOption(gpu: Pick<IGpu, 'index' | 'name'>): string {
  return `GPU ${gpu.index}: ${gpu.name ?? 'unknown'}`;
}

/** "GPU 0 · NVIDIA A100-SXM4-40GB · 16.1 GiB of 40.0 GiB used", the whole device. */
export function deviceLine(
  gpu: Pick<IGpu, 'index' | 'name' | 'lost' | 'usedBytes' | 'totalBytes'>
): string {
  if (gpu.lost) {
    const name = gpu.name === null ? '' : ` ${gpu.name}`;
    return `GPU ${gpu.index}${name}: lost (fell off the bus; it needs a reset)`;
  }
  return (
    `GPU ${gpu.index} · ${gpu.name ?? 'unknown'} · ` +
    `${formatBytes(gpu.usedBytes)} of ${formatBytes(gpu.totalBytes)} used`
  );
}

/** Without a budget and without the kernel's word on what its framework takes. */
const TAKES_UNKNOWN = 'a framework takes its default amount when it starts';

/**
 * "3.1 of 4.0 GiB budget (78%)": this kernel's memory against its budget on this GPU. Warning
 * colour from 90%, error colour above the budget. A budget the framework does not hold (yet) says
 * so; without a budget, what the framework takes (the kernel's phrase, `takes`).
 */
export function headline(
  gpu: Pick<IGpu, 'hidden' | 'ownBytes' | 'budgetBytes' | 'inForce'>,
  sample: Pick<ISample, 'policy' | 'takes'>
): ILine {
  const { ownBytes, budgetBytes } = gpu;
  if (gpu.hidden) {
    return {
      text: `Hidden from this kernel by its policy (${sample.policy ?? 'gpus='})`,
      level: 'ok'
    };
  }
  if (budgetBytes === null) {
    const own =
      ownBytes === null
        ? 'N/A'
        : `${formatBytes(ownBytes)} used by this kernel`;
    return {
      text: `${own}; no budget set — ${sample.takes ?? TAKES_UNKNOWN}`,
      level: 'ok'
    };
  }
  const unheld = gpu.inForce ? [] : ['not in force'];
  if (ownBytes === null) {
    const why = [...unheld, "the driver cannot tell this kernel's memory"];
    return {
      text: `N/A of ${formatBytes(budgetBytes)} budget (${why.join('; ')})`,
      level: 'ok'
    };
  }
  const share = budgetBytes > 0 ? ownBytes / budgetBytes : Infinity;
  const unit = budgetBytes >= GiB ? GiB : MiB;
  const digits = unit === GiB ? 1 : 0;
  const name = unit === GiB ? 'GiB' : 'MiB';
  const notes = [`${Math.round(share * 100)}%`, ...unheld];
  return {
    text:
      `${(ownBytes / unit).toFixed(digits)} of ${(budgetBytes / unit).toFixed(digits)} ${name} ` +
      `budget (${notes.join(', ')})`,
    level: share > 1 ? 'error' : share >= WARN_AT ? 'warn' : 'ok'
  };
}

/**
 * "Policy: fraction=0.5 — applies when "import tensorflow" completes": the policy and the
 * kernel's note on it, in the warning colour when the kernel says it is in force on no GPU.
 * Null without a policy.
 */
export function policyLine(
  sample: Pick<ISample, 'policy' | 'policyState' | 'policyNote'>
): ILine | null {
  if (sample.policy === null) {
    return null;
  }
  return {
    text: sample.policyNote
      ? `Policy: ${sample.policy} — ${sample.policyNote}`
      : `Policy: ${sample.policy}`,
    level: sample.policyState === 'not_in_force' ? 'warn' : 'ok'
  };
}

/** "Over budget: <the kernel's reason>", or null when it is not over (or the GPU is hidden). */
export function overLine(
  gpu: Pick<IGpu, 'hidden' | 'overReason'>
): string | null {
  return gpu.overReason && !gpu.hidden
    ? `Over budget: ${gpu.overReason}`
    : null;
}

/** The chart's name for the framework allocator's line. */
export function inUseLabel(framework: string | null): string {
  return `${framework ?? 'Framework'} in use`;
}

/** The cells of one row of the process table: PID, name, user, GPU memory, CPU. */
export function processCells(p: IProcess): string[] {
  return [
    String(p.pid),
    (p.name ?? '?') + (p.self ? ' (this kernel)' : ''),
    p.user ?? '',
    formatMiB(p.usedBytes),
    formatPercent(p.cpuPercent)
  ];
}

/** What the process table says instead of (or before) its rows; null: just the rows. */
export function processNote(
  gpu: Pick<IGpu, 'lost' | 'processesKnown'>
): string | null {
  if (gpu.lost) {
    return 'This GPU is lost: no figures until it is reset.';
  }
  if (!gpu.processesKnown) {
    return 'The driver does not list the processes on this GPU.';
  }
  return null;
}

const SOURCE_WORDS: Record<OverheadSource, string> = {
  estimated: 'estimated',
  remembered: 'measured by an earlier kernel',
  measured: 'measured'
};

/**
 * How the budget splits: "TensorFlow pool 3.6 GiB + 504 MiB outside it (measured) = 4.1 GiB" once
 * the framework reports its pool, else "TensorFlow limit 3.6 GiB + 400 MiB set aside for CUDA and
 * libraries (estimated)"; "Allocator limit …" when the framework is not known yet. Null when there
 * is no budget to split (or the GPU is hidden).
 */
export function breakdown(gpu: IGpu, framework: string | null): string | null {
  if (
    gpu.hidden ||
    gpu.budgetBytes === null ||
    gpu.poolBytes === null ||
    gpu.overheadBytes === null ||
    gpu.overheadSource === null
  ) {
    return null;
  }
  const source = SOURCE_WORDS[gpu.overheadSource];
  const who = framework ?? 'Allocator'; // several frameworks installed, none imported yet
  if (gpu.poolKnown && gpu.ownBytes !== null) {
    const outside = Math.max(0, gpu.ownBytes - gpu.poolBytes);
    return (
      `${who} pool ${formatBytes(gpu.poolBytes)} + ${formatBytes(outside)} outside it ` +
      `(${source}) = ${formatBytes(gpu.ownBytes)}`
    );
  }
  return (
    `${who} limit ${formatBytes(gpu.poolBytes)} + ${formatBytes(gpu.overheadBytes)} ` +
    `set aside for CUDA and libraries (${source})`
  );
}
