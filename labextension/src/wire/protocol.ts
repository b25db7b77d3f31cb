/**
 * The comm protocol between a kernel and the sidebar, version 1 (docs/protocol.md).
 *
 * Kernel to sidebar: `hello` (the comm_open data: settings and the history to replay), then one
 * `sample` per interval. Sidebar to kernel: `configure`. The reference is the schema,
 * jupyter_gpumem/wire/schemas/comm.v1.json: a message is checked against it (schema.ts, validate.ts)
 * and anything it does not admit is dropped with one console warning. Its fields arrive in camelCase,
 * with the schema's defaults for those an older kernel leaves out; the fields of a newer kernel that this
 * release does not know are left alone. A kernel of another protocol (another major release) is refused
 * with one sentence naming both releases and what to upgrade (`VersionError`, docs/protocol.md,
 * "Versioning and releases mixing"). Pure: no JupyterLab imports, so the unit tests run it in Node
 * against tests/fixtures/protocol/ and tests/fixtures/releases/.
 */

import { COMM_SCHEMA, PACKAGE_VERSION } from './schema';
import { problem } from './validate';

export const PROTOCOL = 1;
export const TARGET = 'jupyter_gpumem';

/** The sampling interval and history window until the settings say otherwise. The settings
 * schema (labextension/schema/plugin.json) repeats them as its defaults; a unit test keeps the
 * two equal. */
export const DEFAULT_INTERVAL_S = 1;
export const DEFAULT_HISTORY_S = 900;

/** One process on one GPU. `null`: not known (N/A), never 0. */
export interface IProcess {
  pid: number;
  name: string | null;
  user: string | null;
  usedBytes: number | null;
  cpuPercent: number | null;
  /** The host sees the process but has not measured its CPU% yet (cpuPercent is null); false from
   * a kernel that does not say. */
  cpuPending: boolean;
  self: boolean;
  /** A process of this kernel's PID namespace running the program the driver names; null: not told. */
  local?: boolean | null;
}

/** Other users' processes on one GPU as one figure, where privacy does not list them (docs/hub.md). */
export interface IOthers {
  processes: number;
  /** null: the driver cannot tell for one of them (N/A). */
  usedBytes: number | null;
  /** Per Unix user (privacy "names"; user null: not told); null: the total only ("aggregate"). */
  users:
    | { user: string | null; processes: number; usedBytes: number | null }[]
    | null;
}

export type OverheadSource = 'estimated' | 'remembered' | 'measured';

export interface IGpu {
  index: number;
  uuid: string | null;
  name: string | null;
  lost: boolean;
  /** The policy keeps this kernel off this GPU (gpus=). */
  hidden: boolean;
  totalBytes: number | null;
  usedBytes: number | null;
  /** This kernel's memory as nvidia-smi counts it; null when the driver cannot tell. */
  ownBytes: number | null;
  budgetBytes: number | null;
  /** The framework's allocator pool: reserved from the GPU if `poolKnown`, else its planned limit. */
  poolBytes: number | null;
  poolKnown: boolean;
  /** Memory outside the pool (CUDA context, libraries): measured, remembered or estimated. */
  overheadBytes: number | null;
  overheadSource: OverheadSource | null;
  /** Why this kernel is over its budget on this GPU, when it is. */
  overReason: string | null;
  frameworkBytes: number | null;
  frameworkPeakBytes: number | null;
  processesKnown: boolean;
  /** This GPU's budget is in force in the framework (false from a kernel that does not say). */
  inForce: boolean;
  /** How `ownBytes` is known (null from a kernel that does not say) and what it rests on. */
  ownSource: OwnSource | null;
  ownReason: string | null;
  /** The PID taken for this kernel (exact or matched): the process row to mark. */
  ownPid: number | null;
  /** Listed processes that could be this kernel's when none is taken for it. */
  ownCandidates: number;
  /** Memory the driver uses but lists under no process (other containers'): "not listed". */
  unlistedBytes: number | null;
  limitKind: LimitKind | null;
  limitHard: boolean;
  /** The partition's memory, the MPS limit or the budget; null when not known. */
  limitBytes?: number | null;
  /** Absent in replayed history, which keeps the charted figures only. */
  processes: IProcess[] | null;
  /** Other users' processes, not in `processes`; null: every process is listed (or history). */
  others: IOthers | null;
}

/**
 * Where the kernel's policy stands: recorded (waiting for the framework's import), in force on at
 * least one GPU, or applied (or too late) but in force on none. Null: no policy.
 */
export type PolicyState = 'recorded' | 'in_force' | 'not_in_force';

/**
 * How the kernel knows its own memory on a GPU (docs/containers.md): its PID in NVML's list; the
 * one process that appeared with its CUDA context and follows its pool; its pool plus the overhead;
 * or not at all (then `ownBytes` is null, never 0).
 */
export type OwnSource = 'exact' | 'matched' | 'estimated' | 'unknown';
/** What holds the kernel on a GPU: a MIG partition or an MPS limit (hard), or %gpumem (cooperative). */
export type LimitKind = 'mig' | 'mps' | 'cooperative';
/** Where the kernel stands towards the PIDs the driver reports. */
export type PidNamespace = 'host' | 'translated' | 'untranslated' | 'unlisted';

/** What the Jupyter server tells this kernel's user (the idle culler, docs/hub.md): shown as is. */
export interface INotice {
  kind: 'idle_warning' | 'idle_shutdown';
  text: string;
  /** When the server wrote it (seconds since the epoch): a new notice has a new `t`. */
  t: number;
  shutdownAt: number | null;
}

/** A notebook cell the kernel ran (or is running), for a span on the chart whose hover names it. */
export interface ICell {
  /** Its execution count ([12]); null while it runs (the notebook's [*]). */
  count: number | null;
  /** Its first line that is not blank, cut to 40 characters: the user's own code, shown as text. */
  line: string;
  /** Seconds since the epoch (kernel clock); `endT` null: it is running. */
  startT: number;
  endT: number | null;
  error: boolean;
}

export interface ISample {
  /** Seconds since the epoch (kernel clock). */
  t: number;
  problem: string | null;
  /** The NVIDIA driver did not answer this sample in time: it has not answered since then (seconds since the
   * epoch, kernel clock) and the figures are the last it gave. Null: they are its answer. */
  stalledSince: number | null;
  simulated: string | null;
  policy: string | null;
  framework: string | null;
  frameworkStarted: boolean;
  /** What the policy's framework(s) take of a GPU without a budget, a phrase that starts with
   * the framework's name ("TensorFlow takes nearly all the memory …"); null: not known. */
  takes: string | null;
  policyState: PolicyState | null;
  /** One sentence to show next to the policy ("applies when "import tensorflow" completes"). */
  policyNote: string | null;
  pidNamespace: PidNamespace | null;
  /** A sentence about hard limits (an MPS limit that cannot be read, or the mps=on offer). */
  limitNote: string | null;
  gpus: IGpu[];
  /** Null: nothing to tell (and in replayed history). */
  notice: INotice | null;
  /** The cells that ended since the kernel's previous sample and the one running, oldest first. */
  cells: ICell[];
}

export interface IHello {
  protocol: typeof PROTOCOL;
  type: 'hello';
  packageVersion: string;
  intervalS: number;
  historyS: number;
  history: ISample[];
}

export interface ISampleMessage {
  protocol: typeof PROTOCOL;
  type: 'sample';
  sample: ISample;
}

export type KernelMessage = IHello | ISampleMessage;

export class ProtocolError extends Error {}

/** A package version as a kernel says it, before it goes into a sentence: PEP 440's characters, bounded. */
const RELEASE = /^[0-9A-Za-z][0-9A-Za-z.+!_-]{0,39}$/;

/**
 * A message of another protocol than this extension's: its kernel runs a release of another major
 * version; format/channel.ts's incompatibleLine is the one sentence the sidebar shows (both releases, what to
 * upgrade). `packageVersion`: the kernel's release where the message says it (a hello does; a sample does not).
 */
export class VersionError extends ProtocolError {
  constructor(
    readonly protocol: number,
    readonly packageVersion: string | null
  ) {
    // For the console; the sidebar words it (format/channel.ts's incompatibleLine).
    super(
      `message.protocol is ${protocol} (jupyter-gpumem ${packageVersion ?? 'release not named'}); ` +
        `this extension (jupyter-gpumem ${PACKAGE_VERSION}) reads protocol ${PROTOCOL}`
    );
  }
}

/** The VersionError for a message of another protocol (an integer that is not ours); null otherwise. */
function otherProtocol(data: unknown): VersionError | null {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    return null;
  }
  const { protocol, package_version: release } = data as Record<
    string,
    unknown
  >;
  if (!Number.isInteger(protocol) || protocol === PROTOCOL) {
    return null;
  }
  const named =
    typeof release === 'string' && RELEASE.test(release) ? release : null;
  return new VersionError(protocol as number, named);
}

/** snake_case keys, as the kernel sends them, to the camelCase of the interfaces above. */
function camelize(value: unknown): unknown {
  if (Array.isArray(value)) {
    return value.map(camelize);
  }
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([key, v]) => [
        key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()),
        camelize(v)
      ])
    );
  }
  return value;
}

/** Throws ProtocolError (what is wrong) unless `value` is a sample the schema admits. */
export function parseSample(value: unknown, where = 'sample'): ISample {
  const found = problem(COMM_SCHEMA, value, where, COMM_SCHEMA.$defs.sample);
  if (found !== null) {
    throw new ProtocolError(found);
  }
  return camelize(value) as ISample;
}

/** Throws ProtocolError (what is wrong) for anything but a protocol 1 message from a kernel: a
 * VersionError for a message of another protocol. */
export function parseMessage(data: unknown): KernelMessage {
  const other = otherProtocol(data);
  if (other !== null) {
    throw other;
  }
  const found = problem(COMM_SCHEMA, data, 'message');
  if (found !== null) {
    throw new ProtocolError(found);
  }
  const message = camelize(data) as KernelMessage | { type: 'configure' };
  if (message.type === 'configure') {
    throw new ProtocolError(
      'message.type is configure, which goes to a kernel'
    );
  }
  return message;
}

/** parseMessage, or null after one console warning: a bad message never breaks the sidebar. A
 * message of another protocol is also handed to `refused`, whose sentence the sidebar shows. */
export function receive(
  data: unknown,
  refused?: (error: VersionError) => void
): KernelMessage | null {
  try {
    return parseMessage(data);
  } catch (error) {
    if (error instanceof ProtocolError) {
      console.warn(
        `jupyter-gpumem: dropped a message from the kernel: ${error.message}`
      );
      if (error instanceof VersionError) {
        refused?.(error);
      }
      return null;
    }
    throw error;
  }
}

export interface ISettings {
  intervalS: number;
  historyS: number;
}

export const DEFAULT_SETTINGS: ISettings = {
  intervalS: DEFAULT_INTERVAL_S,
  historyS: DEFAULT_HISTORY_S
};

/**
 * The settings from the registry's composite values (schema/plugin.json: `intervalSeconds`,
 * `historyMinutes`); a value that is missing or not a number gets its default.
 */
export function readSettings(
  composite: Readonly<Record<string, unknown>> | null
): ISettings {
  const get = (key: string, fallback: number) => {
    const value = composite?.[key];
    return typeof value === 'number' ? value : fallback;
  };
  return {
    intervalS: get('intervalSeconds', DEFAULT_INTERVAL_S),
    historyS: get('historyMinutes', DEFAULT_HISTORY_S / 60) * 60
  };
}

export type ConfigureMessage = {
  protocol: number;
  type: 'configure';
  interval_s: number;
  history_s: number;
};

export function configureMessage(settings: ISettings): ConfigureMessage {
  return {
    protocol: PROTOCOL,
    type: 'configure',
    interval_s: settings.intervalS,
    history_s: settings.historyS
  };
}

/** The code the sidebar runs (silently) to start streaming from a kernel. */
export function connectCode(settings: ISettings): string {
  return (
    "__import__('jupyter_gpumem')._connect_sidebar(" +
    `interval_s=${settings.intervalS}, history_s=${settings.historyS})`
  );
}
