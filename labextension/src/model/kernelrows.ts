/**
 * Every kernel of this server, as the sidebar's kernel list shows them: the server extension's
 * `GET /api/gpumem/v1` body (docs/server.md) read into plain rows, largest first, and named from
 * JupyterLab's sessions (the server's API has no paths: a hub aggregates it across users). Pure, so
 * the Node tests read it; the text is format/kernels.ts's.
 */

/** One GPU a kernel is on: its processes' memory as nvidia-smi counts it, its budget there. */
export interface IKernelGpu {
  index: number;
  /** null: N/A (the driver cannot tell), or no process of it listed there. */
  usedBytes: number | null;
  /** null: no budget set there. */
  budgetBytes: number | null;
}

/** One kernel as the server extension sees it. */
export interface IServerKernel {
  id: string;
  /** `idle`, `busy`, `starting`…; null: not known. */
  executionState: string | null;
  /** When the user last ran code there (the server's `time.time()`); null: not known. */
  lastActivity: number | null;
  gpus: IKernelGpu[];
}

/** What the list needs of the body. */
export interface IServerBody {
  /** When the server read NVML (its clock, which `lastActivity` is on); null before its first reading. */
  t: number | null;
  /** A sentence when NVML cannot be read at all. */
  problem: string | null;
  /** How many GPUs the server sees: with one, the rows do not name it. */
  gpuCount: number;
  kernels: IServerKernel[];
}

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
  gpus: IKernelGpu[];
  busy: boolean;
  /** Seconds since the user last ran code there; null while busy or not known. */
  idleS: number | null;
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const intOrNull = (v: unknown): number | null =>
  Number.isInteger(v) ? (v as number) : null;
const numberOrNull = (v: unknown): number | null =>
  typeof v === 'number' && Number.isFinite(v) ? v : null;

/** The body, or null when it is not a version-1 body at all; a kernel entry without an id is left out. */
export function readBody(body: unknown): IServerBody | null {
  if (
    !isRecord(body) ||
    body.version !== 1 ||
    !Array.isArray(body.kernels) ||
    !Array.isArray(body.gpus)
  ) {
    return null;
  }
  const kernels: IServerKernel[] = [];
  for (const k of body.kernels) {
    if (!isRecord(k) || typeof k.id !== 'string') {
      continue;
    }
    const gpus = Array.isArray(k.gpus) ? k.gpus.filter(isRecord) : [];
    kernels.push({
      id: k.id,
      executionState:
        typeof k.execution_state === 'string' ? k.execution_state : null,
      lastActivity: numberOrNull(k.last_activity),
      gpus: gpus
        .filter(g => Number.isInteger(g.index))
        .map(g => ({
          index: g.index as number,
          usedBytes: intOrNull(g.used_bytes),
          budgetBytes: intOrNull(g.budget_bytes)
        }))
    });
  }
  return {
    t: numberOrNull(body.t),
    problem: typeof body.problem === 'string' ? body.problem : null,
    gpuCount: body.gpus.length,
    kernels
  };
}

/** A kernel's memory summed over its GPUs: 0 on none, null when none of its figures is known. */
export function heldBytes(gpus: IKernelGpu[]): number | null {
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
  body: IServerBody,
  sessions: ReadonlyMap<string, ISessionName>,
  current: string | null
): IKernelRow[] {
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
      gpus: [...k.gpus].sort((a, b) => a.index - b.index),
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
