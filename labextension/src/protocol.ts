/**
 * The comm protocol between a kernel and the sidebar, version 1 (docs/protocol.md).
 *
 * Kernel to sidebar: `hello` (the comm_open data: settings and the history to replay), then one
 * `sample` per interval. Sidebar to kernel: `configure`. Anything that is not a well-formed
 * protocol 1 message is dropped with one console warning. Pure: no JupyterLab imports, so the
 * unit tests run it in Node against tests/fixtures/protocol/.
 */

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
const OVERHEAD_SOURCES: OverheadSource[] = [
  'estimated',
  'remembered',
  'measured'
];

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
const POLICY_STATES: PolicyState[] = ['recorded', 'in_force', 'not_in_force'];

/**
 * How the kernel knows its own memory on a GPU (docs/containers.md): its PID in NVML's list; the
 * one process that appeared with its CUDA context and follows its pool; its pool plus the overhead;
 * or not at all (then `ownBytes` is null, never 0).
 */
export type OwnSource = 'exact' | 'matched' | 'estimated' | 'unknown';
const OWN_SOURCES: OwnSource[] = ['exact', 'matched', 'estimated', 'unknown'];
/** What holds the kernel on a GPU: a MIG partition or an MPS limit (hard), or %gpumem (cooperative). */
export type LimitKind = 'mig' | 'mps' | 'cooperative';
const LIMIT_KINDS: LimitKind[] = ['mig', 'mps', 'cooperative'];
/** Where the kernel stands towards the PIDs the driver reports. */
export type PidNamespace = 'host' | 'translated' | 'untranslated' | 'unlisted';
const PID_NAMESPACES: PidNamespace[] = [
  'host',
  'translated',
  'untranslated',
  'unlisted'
];

/** What the Jupyter server tells this kernel's user (the idle culler, docs/hub.md): shown as is. */
export interface INotice {
  kind: 'idle_warning' | 'idle_shutdown';
  text: string;
  /** When the server wrote it (seconds since the epoch): a new notice has a new `t`. */
  t: number;
  shutdownAt: number | null;
}
const NOTICE_KINDS: INotice['kind'][] = ['idle_warning', 'idle_shutdown'];

export interface ISample {
  /** Seconds since the epoch (kernel clock). */
  t: number;
  problem: string | null;
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
}

export interface IHello {
  type: 'hello';
  packageVersion: string;
  intervalS: number;
  historyS: number;
  history: ISample[];
}

export interface ISampleMessage {
  type: 'sample';
  sample: ISample;
}

export type KernelMessage = IHello | ISampleMessage;

export class ProtocolError extends Error {}

type Json = Record<string, unknown>;

function object(value: unknown, where: string): Json {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ProtocolError(`${where} is not an object`);
  }
  return value as Json;
}

function array(value: unknown, where: string): unknown[] {
  if (!Array.isArray(value)) {
    throw new ProtocolError(`${where} is not an array`);
  }
  return value;
}

function number(value: unknown, where: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new ProtocolError(`${where} is not a number`);
  }
  return value;
}

function bytes(value: unknown, where: string): number | null {
  if (value === null) {
    return null;
  }
  const n = number(value, where);
  if (n < 0) {
    throw new ProtocolError(`${where} is negative`);
  }
  return n;
}

function nullable(value: unknown, where: string): number | null {
  return value === null ? null : number(value, where);
}

function text(value: unknown, where: string): string | null {
  if (value === null) {
    return null;
  }
  if (typeof value !== 'string') {
    throw new ProtocolError(`${where} is not a string`);
  }
  return value;
}

function flag(value: unknown, where: string): boolean {
  if (typeof value !== 'boolean') {
    throw new ProtocolError(`${where} is not true or false`);
  }
  return value;
}

/** A parser for a string that must be one of `names` (or null). */
function oneOf<T extends string>(
  names: readonly T[]
): (value: unknown, where: string) => T | null {
  return (value, where) => {
    const name = text(value, where);
    if (name !== null && !names.includes(name as T)) {
      throw new ProtocolError(`${where} is not one of ${names.join(', ')}`);
    }
    return name as T | null;
  };
}

const source = oneOf(OVERHEAD_SOURCES);
const policyState = oneOf(POLICY_STATES);
const ownSource = oneOf(OWN_SOURCES);
const limitKind = oneOf(LIMIT_KINDS);
const pidNamespace = oneOf(PID_NAMESPACES);
const noticeKind = oneOf(NOTICE_KINDS);

/** A field added to protocol 1 after its first release: an older kernel leaves it out. */
function optional<T>(
  value: unknown,
  where: string,
  parse: (value: unknown, where: string) => T,
  absent: T
): T {
  return value === undefined ? absent : parse(value, where);
}

function parseProcess(value: unknown, where: string): IProcess {
  const p = object(value, where);
  return {
    pid: number(p.pid, `${where}.pid`),
    name: text(p.name, `${where}.name`),
    user: text(p.user, `${where}.user`),
    usedBytes: bytes(p.used_bytes, `${where}.used_bytes`),
    cpuPercent: nullable(p.cpu_percent, `${where}.cpu_percent`),
    cpuPending: optional(p.cpu_pending, `${where}.cpu_pending`, flag, false),
    self: flag(p.self, `${where}.self`)
  };
}

function parseOthers(value: unknown, where: string): IOthers {
  const o = object(value, where);
  return {
    processes: number(o.processes, `${where}.processes`),
    usedBytes: bytes(o.used_bytes, `${where}.used_bytes`),
    users:
      o.users === null
        ? null
        : array(o.users, `${where}.users`).map((u, i) => {
            const share = object(u, `${where}.users[${i}]`);
            return {
              user: text(share.user, `${where}.users[${i}].user`),
              processes: number(
                share.processes,
                `${where}.users[${i}].processes`
              ),
              usedBytes: bytes(
                share.used_bytes,
                `${where}.users[${i}].used_bytes`
              )
            };
          })
  };
}

function parseNotice(value: unknown, where: string): INotice | null {
  if (value === null) {
    return null;
  }
  const n = object(value, where);
  const kind = noticeKind(n.kind, `${where}.kind`);
  const said = text(n.text, `${where}.text`);
  if (kind === null || said === null) {
    throw new ProtocolError(`${where} needs a kind and a text`);
  }
  return {
    kind,
    text: said,
    t: number(n.t, `${where}.t`),
    shutdownAt: nullable(n.shutdown_at, `${where}.shutdown_at`)
  };
}

function parseGpu(value: unknown, where: string): IGpu {
  const g = object(value, where);
  return {
    index: number(g.index, `${where}.index`),
    uuid: text(g.uuid, `${where}.uuid`),
    name: text(g.name, `${where}.name`),
    lost: flag(g.lost, `${where}.lost`),
    hidden: flag(g.hidden, `${where}.hidden`),
    totalBytes: bytes(g.total_bytes, `${where}.total_bytes`),
    usedBytes: bytes(g.used_bytes, `${where}.used_bytes`),
    ownBytes: bytes(g.own_bytes, `${where}.own_bytes`),
    budgetBytes: bytes(g.budget_bytes, `${where}.budget_bytes`),
    poolBytes: bytes(g.pool_bytes, `${where}.pool_bytes`),
    poolKnown: flag(g.pool_known, `${where}.pool_known`),
    overheadBytes: bytes(g.overhead_bytes, `${where}.overhead_bytes`),
    overheadSource: source(g.overhead_source, `${where}.overhead_source`),
    overReason: text(g.over_reason, `${where}.over_reason`),
    frameworkBytes: bytes(g.framework_bytes, `${where}.framework_bytes`),
    frameworkPeakBytes: bytes(
      g.framework_peak_bytes,
      `${where}.framework_peak_bytes`
    ),
    processesKnown: flag(g.processes_known, `${where}.processes_known`),
    inForce: optional(g.in_force, `${where}.in_force`, flag, false),
    ownSource: optional(g.own_source, `${where}.own_source`, ownSource, null),
    ownReason: optional(g.own_reason, `${where}.own_reason`, text, null),
    ownPid: optional(g.own_pid, `${where}.own_pid`, nullable, null),
    ownCandidates: optional(
      g.own_candidates,
      `${where}.own_candidates`,
      number,
      0
    ),
    unlistedBytes: optional(
      g.unlisted_bytes,
      `${where}.unlisted_bytes`,
      bytes,
      null
    ),
    limitKind: optional(g.limit_kind, `${where}.limit_kind`, limitKind, null),
    limitHard: optional(g.limit_hard, `${where}.limit_hard`, flag, false),
    processes:
      g.processes === undefined
        ? null
        : array(g.processes, `${where}.processes`).map((p, i) =>
            parseProcess(p, `${where}.processes[${i}]`)
          ),
    others:
      g.others === undefined || g.others === null
        ? null
        : parseOthers(g.others, `${where}.others`)
  };
}

export function parseSample(value: unknown, where = 'sample'): ISample {
  const s = object(value, where);
  return {
    t: number(s.t, `${where}.t`),
    problem: text(s.problem, `${where}.problem`),
    simulated: text(s.simulated, `${where}.simulated`),
    policy: text(s.policy, `${where}.policy`),
    framework: text(s.framework, `${where}.framework`),
    frameworkStarted: flag(s.framework_started, `${where}.framework_started`),
    takes: optional(s.takes, `${where}.takes`, text, null),
    policyState: optional(
      s.policy_state,
      `${where}.policy_state`,
      policyState,
      null
    ),
    policyNote: optional(s.policy_note, `${where}.policy_note`, text, null),
    pidNamespace: optional(
      s.pid_namespace,
      `${where}.pid_namespace`,
      pidNamespace,
      null
    ),
    limitNote: optional(s.limit_note, `${where}.limit_note`, text, null),
    notice: optional(s.notice, `${where}.notice`, parseNotice, null),
    gpus: array(s.gpus, `${where}.gpus`).map((g, i) =>
      parseGpu(g, `${where}.gpus[${i}]`)
    )
  };
}

/** Throws ProtocolError (what is wrong) for anything but a well-formed protocol 1 message. */
export function parseMessage(data: unknown): KernelMessage {
  const m = object(data, 'message');
  if (m.protocol !== PROTOCOL) {
    throw new ProtocolError(
      `protocol ${JSON.stringify(m.protocol)} is not ${PROTOCOL}`
    );
  }
  if (m.type === 'hello') {
    return {
      type: 'hello',
      packageVersion: String(text(m.package_version, 'package_version')),
      intervalS: number(m.interval_s, 'interval_s'),
      historyS: number(m.history_s, 'history_s'),
      history: array(m.history, 'history').map((s, i) =>
        parseSample(s, `history[${i}]`)
      )
    };
  }
  if (m.type === 'sample') {
    return { type: 'sample', sample: parseSample(m.sample) };
  }
  throw new ProtocolError(`unknown message type ${JSON.stringify(m.type)}`);
}

/** parseMessage, or null after one console warning: a bad message never breaks the sidebar. */
export function receive(data: unknown): KernelMessage | null {
  try {
    return parseMessage(data);
  } catch (error) {
    if (error instanceof ProtocolError) {
      console.warn(
        `jupyter-gpumem: dropped a message from the kernel: ${error.message}`
      );
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
