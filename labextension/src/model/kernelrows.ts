/**
 * Every kernel of this server, as the sidebar's kernel list shows them: the server extension's
 * `GET /api/gpumem/v1` body (docs/server.md, wire/api.ts) read into plain rows, largest first, and named from
 * JupyterLab's sessions (the server's API has no paths: a hub aggregates it across users). Pure, so
 * the Node tests read it; the text is format/kernels.ts's.
 */

import type {
  KernelGpu,
  ServerBody,
  ServerGpu,
  ServerKernel
} from '../wire/types';

/** What a row needs of a kernel's GPU: its processes' memory (null: N/A, or none listed), its budget (null: none),
 * and what a shared GPU adds: the NVIDIA driver's hard limit on the kernel's cgroup, the profile of its MIG
 * slice and that slice's memory (null or absent: none, or not known; a server older than 0.2.0 sends none). */
export type ListedGpu = Pick<KernelGpu, 'index' | 'usedBytes' | 'budgetBytes'> &
  Partial<Pick<KernelGpu, 'driverLimitBytes' | 'slice' | 'sliceBytes'>>;

/** A row's GPU: the kernel's figures there and the GPU's memory as the kernel sees it (its MIG slice's on a
 * slice; null: not known), which decides whether the driver's limit holds anything back (number.ts's
 * limitBinds), as the status bar and the chart decide it from the kernel's own sample. */
export type RowGpu = ListedGpu & Pick<ServerGpu, 'totalBytes'>;

/** What the list needs of a kernel. */
export type ListedKernel = Pick<
  ServerKernel,
  'id' | 'executionState' | 'lastActivity'
> & { gpus: ListedGpu[] };

/** What the list needs of the body: its kernels, the server's clock (`lastActivity` is on it), and its GPUs' memory. */
export type ListedBody = Pick<ServerBody, 't'> & {
  kernels: ListedKernel[];
  gpus: Pick<ServerGpu, 'index' | 'totalBytes'>[];
};

/** What JupyterLab's sessions say of a kernel: the notebook (or console) it serves. */
export interface ISessionName {
  /** The notebook's file name, or the console's name. */
  name: string;
  /** The notebook's path (the tooltip). */
  path: string;
  type: string;
}

/** One row of the list. */
export interface IKernelRow {
  id: string;
  /** null: no session names it (a kernel started through the REST API alone). */
  session: ISessionName | null;
  /** The followed notebook's kernel ("this kernel"). */
  current: boolean;
  /** The sum of its known memory on every GPU; null when it is on GPUs and none is known. */
  heldBytes: number | null;
  gpus: RowGpu[];
  busy: boolean;
  /** Seconds since the user last ran code there; null while busy or not known. */
  idleS: number | null;
}

/** A kernel's memory summed over its GPUs: 0 on none, null when none of its figures is known. */
export function heldBytes(gpus: ListedGpu[]): number | null {
  const known = gpus
    .map(g => g.usedBytes)
    .filter((b): b is number => b !== null);
  if (gpus.length > 0 && known.length === 0) {
    return null;
  }
  return known.reduce((a, b) => a + b, 0);
}

/** The rows, largest first (unknown memory last, then by name), `current` the followed kernel's id. */
export function kernelRows(
  body: ListedBody,
  sessions: ReadonlyMap<string, ISessionName>,
  current: string | null
): IKernelRow[] {
  const totals = new Map(body.gpus.map(g => [g.index, g.totalBytes]));
  const rows = body.kernels.map(k => {
    const busy = k.executionState === 'busy';
    const idle =
      !busy && k.lastActivity !== null && body.t !== null
        ? Math.max(0, body.t - k.lastActivity)
        : null;
    return {
      id: k.id,
      session: sessions.get(k.id) ?? null,
      current: k.id === current,
      heldBytes: heldBytes(k.gpus),
      gpus: k.gpus
        .map(g => ({
          ...g,
          totalBytes:
            (g.slice ?? null) === null
              ? (totals.get(g.index) ?? null)
              : (g.sliceBytes ?? null)
        }))
        .sort((a, b) => a.index - b.index),
      busy,
      idleS: idle
    };
  });
  const name = (r: IKernelRow) => r.session?.name ?? r.id;
  return rows.sort(
    (a, b) =>
      (b.heldBytes ?? -1) - (a.heldBytes ?? -1) ||
      name(a).localeCompare(name(b)) ||
      a.id.localeCompare(b.id)
  );
}
