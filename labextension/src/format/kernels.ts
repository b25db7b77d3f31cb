/** The kernel list's words: its rows, its notes, the status bar's line about the server's kernels. */

import type { IKernelRow, RowGpu } from '../model/kernelrows';
import { duration, formatBytes, level, limitBinds } from './number';
import { printable } from './printable';
import type { Level, Trans } from './trans';

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
  /** The warning colour from 90% of a budget on one of its GPUs, the error colour above one; without a budget,
   * of the NVIDIA driver's hard limit where it binds (as the status bar). */
  level: Level;
  /** The budget, the MIG slice and the driver's limit (per GPU with several) and how long it has been idle. */
  detail: string;
  badge: string;
  shutDown: string;
}

/** The NVIDIA driver's hard limit on the kernel's cgroup where it binds (below the GPU's memory, as the
 * status bar and the chart count it); null: none. */
function driverLimit(gpu: RowGpu): number | null {
  const limit = gpu.driverLimitBytes ?? null;
  return limitBinds(limit, gpu.totalBytes) ? limit : null;
}

/** What a shared GPU adds to a row: "MIG slice 1g.5gb", "driver limit 6.0 GiB". The profile is text from the
 * GPU host: it goes through printable(). */
function shapeWords(gpu: RowGpu, trans: Trans): string[] {
  const words: string[] = [];
  const slice = gpu.slice ?? null;
  if (slice !== null) {
    words.push(trans.__('MIG slice %1', printable(slice || '?')));
  }
  const limit = driverLimit(gpu);
  if (limit !== null) {
    words.push(trans.__('driver limit %1', formatBytes(limit, trans)));
  }
  return words;
}

/** The colour of a kernel's memory on one GPU, as the status bar colours it (statusbar.ts statusText): against
 * its budget, or without one against the driver's limit where it binds; the kernel's own memory, where the status
 * bar takes the driver's count on the cgroup when it is more (the server's list does not carry that count). */
function gpuLevel(gpu: RowGpu): Level {
  const bound = gpu.budgetBytes ?? driverLimit(gpu);
  return gpu.usedBytes === null || bound === null
    ? 'ok'
    : level(gpu.usedBytes, bound);
}

/** One kernel of the list: "train.ipynb … 3.4 GiB", then "budget 4.0 GiB · MIG slice 1g.5gb · idle 12 min"
 * (on one GPU; without a budget the driver's limit stands alone: "driver limit 6.0 GiB · busy") or
 * "GPU 0: 3.4 GiB of 4.0 GiB, driver limit 6.0 GiB · GPU 1: 500 MiB · busy" (on several). */
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
    const shape = shapeWords(gpu, trans);
    if (gpuCount > 1 || row.gpus.length > 1) {
      const used = formatBytes(gpu.usedBytes, trans);
      const figures =
        budget === null
          ? trans.__('GPU %1: %2', gpu.index, used)
          : trans.__('GPU %1: %2 of %3', gpu.index, used, budget);
      parts.push(
        [figures, ...shape].reduce((all, one) => trans.__('%1, %2', all, one))
      );
    } else {
      if (budget !== null) {
        parts.push(trans.__('budget %1', budget));
      } else if (driverLimit(gpu) === null) {
        parts.push(trans.__('no budget'));
      }
      parts.push(...shape);
    }
  }
  if (row.busy) {
    parts.push(trans.__('busy'));
  } else if (row.idleS !== null) {
    parts.push(trans.__('idle %1', duration(row.idleS)));
  }
  const levels = row.gpus.map(gpuLevel);
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

/** How many kernels hold GPU memory, and how much they hold together (the known part). */
function holding(rows: IKernelRow[]): {
  kernels: number;
  bytes: number;
  unknown: number;
} {
  const held = rows.filter(r => r.heldBytes !== null && r.heldBytes > 0);
  return {
    kernels: held.length,
    bytes: held.reduce((a, r) => a + (r.heldBytes ?? 0), 0),
    unknown: rows.filter(r => r.heldBytes === null).length
  };
}

/** The status bar's tooltip line: "2 kernels on this server hold 7.5 GiB of GPU memory". */
export function kernelsSummary(rows: IKernelRow[], trans: Trans): string {
  const { kernels, bytes, unknown } = holding(rows);
  const line =
    kernels === 0
      ? trans.__('No kernel on this server holds GPU memory')
      : trans._n(
          '%1 kernel on this server holds %2 of GPU memory',
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
