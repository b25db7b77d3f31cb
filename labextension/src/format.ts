/**
 * The one place numbers become text in the sidebar. Bytes are binary units, as nvidia-smi counts
 * them; `null` is "N/A" (the driver cannot tell), never 0.
 */

import { IGpu, OverheadSource } from './protocol';

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

export interface IHeadline {
  text: string;
  level: Level;
}

/** At or above this share of the budget the headline turns to the warning colour. */
export const WARN_AT = 0.9;

/** What each framework takes of a GPU without a budget. */
const TAKES: Record<string, string> = {
  TensorFlow: 'TensorFlow will take nearly all memory',
  JAX: 'JAX will take 75% of it',
  PyTorch: 'PyTorch takes what it needs, without a cap'
};

/**
 * "3.1 of 4.0 GiB budget (78%)": this kernel's memory against its budget. Warning colour from
 * 90%, error colour above the budget.
 */
export function headline(
  ownBytes: number | null,
  budgetBytes: number | null,
  framework: string | null
): IHeadline {
  if (budgetBytes === null) {
    const who =
      framework === null
        ? 'a framework will take its default (TensorFlow: nearly all memory)'
        : (TAKES[framework] ?? `${framework} will take their defaults`);
    const own =
      ownBytes === null
        ? 'N/A'
        : `${formatBytes(ownBytes)} used by this kernel`;
    return {
      text: `${own}; no budget set — ${who}`,
      level: 'ok'
    };
  }
  if (ownBytes === null) {
    return {
      text: `N/A of ${formatBytes(budgetBytes)} budget (the driver cannot tell this kernel's memory)`,
      level: 'ok'
    };
  }
  const share = budgetBytes > 0 ? ownBytes / budgetBytes : Infinity;
  const unit = budgetBytes >= GiB ? GiB : MiB;
  const digits = unit === GiB ? 1 : 0;
  const name = unit === GiB ? 'GiB' : 'MiB';
  return {
    text:
      `${(ownBytes / unit).toFixed(digits)} of ${(budgetBytes / unit).toFixed(digits)} ${name} ` +
      `budget (${Math.round(share * 100)}%)`,
    level: share > 1 ? 'error' : share >= WARN_AT ? 'warn' : 'ok'
  };
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
 * is no budget to split.
 */
export function breakdown(gpu: IGpu, framework: string | null): string | null {
  if (
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
