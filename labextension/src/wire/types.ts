// Generated from jupyter_gpumem/wire/schemas/comm.v1.json and api.v1.json (the codes from
// jupyter_gpumem/words/en.json) by `jlpm build:schema` (labextension/scripts/schema.mjs,
// json-schema-to-typescript): do not edit; edit the schemas.
// The values as protocol.ts and api.ts give them: camelCase, defaults filled in (the script says how).

/**
 * Every message on the jupyter_gpumem comm (docs/protocol.md). Evolves additively within protocol 1 (docs/protocol.md, 'Versioning and releases mixing'): the required fields are those the first protocol-1 kernel sent, forever; a field added since is optional and its default says what its absence means; readers ignore fields they do not know; a change an older reader would misread is protocol 2, a new file.
 */
export type CommMessage = {
  /**
   * The protocol's version: a change an older reader would misread bumps it.
   */
  protocol: 1;
  /**
   * hello and sample: kernel to frontend; configure: frontend to kernel.
   */
  type: 'hello' | 'sample' | 'configure';
};
/**
 * Every code this release words: the keys of jupyter_gpumem/words/en.json but its join_* ones, the one list of them. The schema's generators (tests/wire/test_generated.py, labextension/scripts/schema.mjs) make them this type's values. A newer release may add codes: a reader falls back to the sentence field beside a code it does not know.
 */
export type Code =
  | 'no_driver'
  | 'driver_not_loaded'
  | 'nvml_not_started'
  | 'nvml_not_listing'
  | 'reader_failed'
  | 'its_framework'
  | 'the_framework'
  | 'frameworks_and'
  | 'frameworks_or'
  | 'own_untranslated'
  | 'own_unlisted'
  | 'own_listed'
  | 'own_listed_not_told'
  | 'own_matched'
  | 'own_gpu_lost'
  | 'own_processes_not_listed'
  | 'own_not_listed'
  | 'own_estimated'
  | 'own_unknown'
  | 'own_not_started'
  | 'own_framework_untold'
  | 'own_pool_untold'
  | 'own_no_pool'
  | 'own_candidates'
  | 'own_candidate'
  | 'over_hidden_gpu'
  | 'over_not_in_force'
  | 'not_in_force_no_gpu'
  | 'not_in_force_started'
  | 'not_in_force_yet'
  | 'no_limit_here'
  | 'over_outside'
  | 'over_outside_not_strict'
  | 'over_outside_beyond_aside'
  | 'sentence'
  | 'mps_limit_unreadable'
  | 'mps_limit_empty'
  | 'mps_limit_no_ordinal'
  | 'mps_limit_no_unit'
  | 'mps_limit_zero'
  | 'mps_limit_twice'
  | 'mps_limit_without_server'
  | 'mps_offer'
  | 'policy_in_force_nowhere'
  | 'policy_in_force'
  | 'policy_started_first'
  | 'policy_applies_on_import'
  | 'import_statement'
  | 'framework_takes'
  | 'takes_each'
  | 'takes_tensorflow'
  | 'takes_pytorch'
  | 'takes_jax'
  | 'takes_cupy'
  | 'idle_warning'
  | 'idle_warning_shutdown'
  | 'idle_shutdown'
  | 'not_answering'
  | 'no_answer_within'
  | 'not_answering_since'
  | 'driver_not_answering_since'
  | 'server_other_version'
  | 'server_other_version_unnamed'
  | 'hub_environment'
  | 'server_environment'
  | 'body_not_valid'
  | 'body_too_many'
  | 'body_not_uuid'
  | 'body_not_gpu_name'
  | 'body_not_kernel_id'
  | 'body_kernel_on_too_many'
  | 'body_not_time'
  | 'body_too_large'
  | 'not_installed'
  | 'answered_status'
  | 'answer_too_large'
  | 'answer_not_json'
  | 'answer_unreadable'
  | 'prometheus_not_scraping'
  | 'prometheus_figures_not_valid'
  | 'prometheus_too_many'
  | 'prometheus_unreadable'
  | 'overhead'
  | 'overhead_estimated'
  | 'overhead_remembered'
  | 'overhead_measured'
  | 'overhead_generation_unknown'
  | 'overhead_generation'
  | 'a_gpu'
  | 'overhead_earlier_kernel'
  | 'overhead_this_kernel'
  | 'driver_stalled'
  | 'stalled_figures_from_then'
  | 'stalled_no_figures_yet'
  | 'stalled_plan_later'
  | 'no_gpus'
  | 'driver_limits_no_calls'
  | 'driver_limits_refused'
  | 'cgroup_unreadable'
  | 'no_cgroup_v2'
  | 'planned_at_driver_limit'
  | 'driver_limit'
  | 'mig_slice'
  | 'memory_shared'
  | 'mig_slice_not_known'
  | 'cuda_order_uncertain'
  | 'no_gpu_visible';
/**
 * Where this kernel stands towards the PIDs NVML reports (docs/containers.md); null: no GPU to tell it from. Absent means null.
 */
export type PidNamespace =
  'host' | 'translated' | 'untranslated' | 'unlisted' | null;
/**
 * What own_bytes rests on (docs/containers.md): exact: NVML lists this kernel's PID (or its PIDs are this namespace's and it is not listed: 0); matched: the one listed process of another namespace that appeared when the framework started and follows its pool; estimated: the framework's pool plus the overhead; unknown: own_bytes is null. Absent or null from an older kernel: shown without a label.
 */
export type OwnSource = 'exact' | 'matched' | 'estimated' | 'unknown' | null;
/**
 * idle_warning: idle_warn_minutes idle; idle_shutdown: idle_shutdown_minutes idle, the kernel is being shut down.
 */
export type NoticeKind = 'idle_warning' | 'idle_shutdown';
/**
 * mig: a MIG partition; mps: an MPS pinned limit (both hard); cooperative: %gpumem's budget; null: nothing.
 */
export type LimitKind = 'mig' | 'mps' | 'cooperative' | null;
/**
 * estimated: per GPU generation; remembered: measured by an earlier kernel on this GPU model, driver and framework version; measured: by this kernel; null without a plan.
 */
export type OverheadSource = 'estimated' | 'remembered' | 'measured' | null;
/**
 * recorded: waiting for the framework's import; in_force: applied and in force (on the GPUs whose in_force is true); not_in_force: applied but not in force; null: no policy.
 */
export type PolicyState = 'recorded' | 'in_force' | 'not_in_force' | null;

/**
 * Kernel to frontend, the comm_open data: the settings in force and the history to replay.
 */
export interface Hello {
  /**
   * The protocol's version: a change an older reader would misread bumps it.
   */
  protocol: 1;
  /**
   * The message's kind.
   */
  type: 'hello';
  /**
   * jupyter-gpumem's version in the kernel.
   */
  packageVersion: string;
  /**
   * The sampling interval in seconds.
   */
  intervalS: number;
  /**
   * The history window in seconds.
   */
  historyS: number;
  /**
   * The samples in the window, oldest first, without processes and others in each GPU, and without notice.
   */
  history: Sample[];
}
/**
 * One look at the kernel's GPUs: what the sampler thread sends every interval.
 */
export interface Sample {
  /**
   * time.time() in the kernel when it was taken.
   */
  t: number;
  /**
   * A sentence when NVML cannot be read at all (no driver); then gpus is [].
   */
  problem: string | null;
  /**
   * Why NVML cannot be read at all as a code and its values (docs/protocol.md, 'Codes and words'); problem says it in English for older readers, and is shown where this is absent (an older sender) or its code is not known (a newer one). Absent means null.
   */
  problemSaid: Said | null;
  /**
   * The NVIDIA driver did not answer this sample in time: it has not answered since then (time.time() in the kernel), and the figures are the last it gave, at that time (gpus is [] when it never answered). Null or absent: the figures are the driver's answer. The chart leaves a gap for such samples.
   */
  stalledSince: number | null;
  /**
   * The stand-in NVML's scenario when the 'driver' is the stand-in; null with a real driver.
   */
  simulated: string | null;
  /**
   * The kernel's policy as %gpumem shows it ('fraction=0.5 gpus=1'); null: none.
   */
  policy: string | null;
  policyState: PolicyState;
  /**
   * One sentence for people next to the policy ('applies when "import tensorflow" completes'). Absent means null.
   */
  policyNote: string | null;
  /**
   * The note next to the policy as a code and its values (docs/protocol.md, 'Codes and words'); policy_note says it in English for older readers, and is shown where this is absent (an older sender) or its code is not known (a newer one). Absent means null.
   */
  policyNoteSaid: Said | null;
  /**
   * The framework(s) the figures belong to ('TensorFlow', 'TensorFlow and PyTorch'); null while several are installed and none is imported.
   */
  framework: string | null;
  /**
   * Several frameworks' names as a code and its values (frameworks_and or frameworks_or, docs/protocol.md, 'Codes and words'), which a reader of this release words in its language; framework says them in English for older readers, and is shown where this is absent (an older sender, or one framework: its name is data) or its code is not known (a newer one). Absent means null.
   */
  frameworkSaid: Said | null;
  /**
   * Its runtime has started (its settings are fixed).
   */
  frameworkStarted: boolean;
  /**
   * What the framework(s) take of a GPU without a budget, a phrase that starts with the framework's name; null: not known. Absent means null.
   */
  takes: string | null;
  /**
   * What the framework(s) take of a GPU without a budget as a code and its values (docs/protocol.md, 'Codes and words'); takes says it in English for older readers, and is shown where this is absent (an older sender) or its code is not known (a newer one). Absent means null.
   */
  takesSaid: Said | null;
  pidNamespace: PidNamespace;
  /**
   * One sentence about hard limits (an MPS limit that cannot be read, or the mps=on offer); null: nothing to say. Absent means null.
   */
  limitNote: string | null;
  /**
   * The note about hard limits as a code and its values (docs/protocol.md, 'Codes and words'); limit_note says it in English for older readers, and is shown where this is absent (an older sender) or its code is not known (a newer one). Absent means null.
   */
  limitNoteSaid: Said | null;
  /**
   * NVML order (PCI bus order); [] without a driver.
   */
  gpus: SampleGpu[];
  /**
   * What the Jupyter server tells this kernel's user now; null: nothing. Absent in hello.history and from an older kernel.
   */
  notice: Notice | null;
  /**
   * The notebook's cells this sample marks on the chart: those that ended since the kernel's previous sample, and the one running (end_t null), oldest first. Kept in hello.history, so a replay has every cell in its window. Absent: none (and from an older kernel).
   */
  cells: Cell[];
  /**
   * Why no limit the NVIDIA driver enforces could be read (a driver before 615 without nvmlDeviceGetMemoryLimits_v1, no cgroup v2, a call refused); null: they were read, or there was nothing to read. Absent means null.
   */
  driverLimitsUnknown: Said | null;
}
/**
 * A reason, problem or note as a code and the values its words need (docs/protocol.md, 'Codes and words'): each surface words it from its language's catalogue, jupyter_gpumem/words/<language>.json, where the code names a template whose {name} placeholders are the values.
 */
export interface Said {
  /**
   * A code of $defs/code; a reader that does not know it (a newer sender's) shows the English sentence field beside it.
   */
  code: Code | string;
  /**
   * What the words need, by the template's placeholder names. Each is a string (data, shown as it is), a number (*_bytes in bytes, *_s in seconds, a time of day in seconds since the epoch: formatted by the surface), another code with its values (worded in its place), or a list of these (joined as the placeholder says).
   */
  values: {
    [k: string]: unknown | undefined;
  };
}
/**
 * One GPU as this kernel sees it.
 */
export interface SampleGpu {
  /**
   * NVML's index (PCI bus order).
   */
  index: number;
  /**
   * NVML's UUID; null: not told.
   */
  uuid: string | null;
  /**
   * NVML's name for it; null: not told.
   */
  name: string | null;
  /**
   * GPU_IS_LOST: it fell off the bus; its figures are null.
   */
  lost: boolean;
  /**
   * The policy keeps this kernel off this GPU (gpus=).
   */
  hidden: boolean;
  /**
   * Device memory as nvidia-smi counts it. Null: not known (never 0).
   */
  totalBytes: number | null;
  /**
   * Memory in use as nvidia-smi counts it. Null: not known (never 0).
   */
  usedBytes: number | null;
  /**
   * This kernel's memory on it as nvidia-smi counts it, as attributed (own_source). Null: not known (never 0).
   */
  ownBytes: number | null;
  ownSource: OwnSource;
  /**
   * For people, a phrase: what own_bytes rests on, or why it is unknown. Absent means null.
   */
  ownReason: string | null;
  /**
   * What own_bytes rests on, or why it is unknown, as a code and its values (docs/protocol.md, 'Codes and words'); own_reason says it in English for older readers, and is shown where this is absent (an older sender) or its code is not known (a newer one). Absent means null.
   */
  ownReasonSaid: Said | null;
  /**
   * The PID NVML lists for this kernel on this GPU (exact or matched): the process row to mark. Absent means null.
   */
  ownPid: number | null;
  /**
   * Listed processes that could be this kernel's when none is matched (2 or more: none is picked). Absent means 0.
   */
  ownCandidates: number;
  /**
   * In a container whose driver hides processes: memory in use that no listed process accounts for ('not listed'); null otherwise. Absent means null.
   */
  unlistedBytes: number | null;
  /**
   * What limits this kernel's memory on the GPU: a MIG partition, an MPS pinned limit, or %gpumem's budget (cooperative); null: nothing. A limit the NVIDIA driver enforces is another field (a closed set gains no value within a major version).
   */
  limitKind: LimitKind;
  /**
   * The limit is enforced (mig, mps), not cooperative.
   */
  limitHard: boolean;
  /**
   * The partition's memory, the MPS limit or the budget; null when not known (a MIG partition that is not named). Absent means null.
   */
  limitBytes: number | null;
  /**
   * The GPU has no memory of its own and shares the host's (GB10, Grace Hopper: unified memory): total_bytes, used_bytes and the budgets are the host's memory, under the cgroup's memory.max.
   */
  memoryShared: boolean;
  /**
   * The GPU memory limit the NVIDIA driver enforces on this kernel's cgroup (nvmlDeviceGetMemoryLimits_v1): the lowest hard limit from its cgroup to the root. Null: none set, or none could be read (the sample's driver_limits_unknown says why). Absent means null.
   */
  driverLimit: DriverLimit | null;
  /**
   * The MIG slice of this GPU that this kernel runs on (CUDA_VISIBLE_DEVICES names it, or its process is on it); its budgets are planned against the slice's memory. Null: not in MIG mode, or which slice is not known. Absent means null.
   */
  slice: MigSlice | null;
  /**
   * This kernel's budget on it as nvidia-smi counts it; null: none set.
   */
  budgetBytes: number | null;
  /**
   * The budget is in force on this GPU in the framework (false while only recorded, on a lost or hidden GPU, or when the framework uses no GPU).
   */
  inForce: boolean;
  /**
   * The framework allocator's pool: what it reserved if pool_known, else the plan's allocator limit; null without a plan for this GPU.
   */
  poolBytes: number | null;
  /**
   * The framework reported its pool (TensorFlow: growth off with a limit, after its first allocation).
   */
  poolKnown: boolean;
  /**
   * Memory outside the pool (CUDA context, libraries): this kernel's measurement, else what the plan set aside; null without a plan.
   */
  overheadBytes: number | null;
  /**
   * Where overhead_bytes comes from; null without a plan.
   */
  overheadSource: OverheadSource;
  /**
   * When own_bytes is over budget_bytes: why, as a phrase; null otherwise. Added after the first release: absent means null.
   */
  overReason: string | null;
  /**
   * Why own_bytes is over budget_bytes, as a code and its values (docs/protocol.md, 'Codes and words'); over_reason says it in English for older readers, and is shown where this is absent (an older sender) or its code is not known (a newer one). Absent means null.
   */
  overReasonSaid: Said | null;
  /**
   * The framework allocator's bytes in use; null until its runtime has started (the sampler never starts it).
   */
  frameworkBytes: number | null;
  /**
   * The framework allocator's peak bytes; null until its runtime has started.
   */
  frameworkPeakBytes: number | null;
  /**
   * False when the driver refused the process query.
   */
  processesKnown: boolean;
  /**
   * Every process on this GPU that privacy lets this kernel list. Absent in hello.history (figures only).
   */
  processes: GpuProcess[] | null;
  /**
   * Other users' processes, not in processes; null: every process is listed. Absent in hello.history (figures only).
   */
  others: OtherUsers | null;
}
/**
 * This interface was referenced by `undefined`'s JSON-Schema
 * via the `definition` "driverLimit".
 */
export interface DriverLimit {
  /**
   * The hard limit: an allocation beyond it fails.
   */
  hardBytes: number;
  /**
   * The soft limit (the request); null: none.
   */
  softBytes: number | null;
  /**
   * What the driver counts against the limit in that cgroup; null: not told.
   */
  usedBytes: number | null;
  /**
   * The cgroup whose limit binds, as /proc/<pid>/cgroup names it.
   */
  cgroup: string;
}
/**
 * This interface was referenced by `undefined`'s JSON-Schema
 * via the `definition` "migSlice".
 */
export interface MigSlice {
  /**
   * The slice's MIG- UUID (what CUDA_VISIBLE_DEVICES names).
   */
  uuid: string | null;
  /**
   * NVML's name for it ("NVIDIA A100-SXM4-40GB MIG 1g.5gb").
   */
  name: string | null;
  /**
   * Its profile ("1g.5gb").
   */
  profile: string | null;
  /**
   * The slice's memory.
   */
  totalBytes: number | null;
  /**
   * In use on the slice.
   */
  usedBytes: number | null;
  /**
   * Its GPU instance id; processes on it carry the same.
   */
  gpuInstanceId: number | null;
}
/**
 * One process on one GPU.
 */
export interface GpuProcess {
  /**
   * Its PID as the driver reports it.
   */
  pid: number;
  /**
   * The executable's name only, never a command line; null: not told.
   */
  name: string | null;
  /**
   * Its Unix user; null: the host does not say.
   */
  user: string | null;
  /**
   * Its GPU memory as nvidia-smi counts it; null: N/A (the driver cannot tell, e.g. Windows WDDM).
   */
  usedBytes: number | null;
  /**
   * Its CPU%; null: not known.
   */
  cpuPercent: number | null;
  /**
   * This kernel, by its own PID.
   */
  self: boolean;
  /**
   * The PID is a process of this kernel's PID namespace running the program the driver names; false: missing here, or another program; null: not told. Added after the first release: absent means null.
   */
  local: boolean | null;
  /**
   * The host sees the process but has not measured its CPU% yet (cpu_percent is null; shown as '…', not N/A). Added after the first release: absent means false.
   */
  cpuPending: boolean;
  /**
   * On a GPU in MIG mode, the GPU instance (slice) it runs on; null elsewhere. Absent means null.
   */
  gpuInstanceId: number | null;
}
/**
 * Other Unix users' processes on one GPU as one figure, where privacy does not list them one by one (docs/hub.md, 'Privacy').
 */
export interface OtherUsers {
  /**
   * How many processes.
   */
  processes: number;
  /**
   * Their GPU memory; null when the driver cannot tell for one of them (N/A).
   */
  usedBytes: number | null;
  /**
   * Per Unix user under privacy 'names'; null under 'aggregate' (the total only).
   */
  users: UserShare[] | null;
}
/**
 * One Unix user's processes on one GPU, as one figure.
 */
export interface UserShare {
  /**
   * The Unix user; null: the host does not say whose the processes are.
   */
  user: string | null;
  /**
   * How many processes.
   */
  processes: number;
  /**
   * Their GPU memory; null when the driver cannot tell for one of them (N/A).
   */
  usedBytes: number | null;
}
/**
 * What the Jupyter server tells this kernel's user now (its idle culler, docs/hub.md), as the server's notice file says it.
 */
export interface Notice {
  kind: NoticeKind;
  /**
   * One plain sentence for the user, shown as it is.
   */
  text: string;
  /**
   * The sentence for the user as a code and its values (docs/protocol.md, 'Codes and words'); text says it in English for older readers, and is shown where this is absent (an older sender) or its code is not known (a newer one). Absent means null.
   */
  textSaid: Said | null;
  /**
   * When the server wrote it (seconds since the epoch); a new notice has a new t.
   */
  t: number;
  /**
   * When the kernel will be shut down (seconds since the epoch); null: a warning with no shutdown set.
   */
  shutdownAt: number | null;
}
/**
 * One executed cell, for a span on the chart whose hover names it (%gpumem cells has its figures).
 */
export interface Cell {
  /**
   * Its execution count, as the notebook shows it ([12]); null while it runs (the notebook's [*]), and for a cell not stored in the history.
   */
  count: number | null;
  /**
   * Its first line that is not blank, at most 40 characters (cut with …): the kernel's user's own code, shown as text.
   */
  line: string;
  /**
   * When it started: time.time() in the kernel.
   */
  startT: number;
  /**
   * When it ended; null: it is running.
   */
  endT: number | null;
  /**
   * It raised an exception (false while it runs).
   */
  error: boolean;
}
/**
 * Kernel to frontend, one comm_msg per interval from the sampler thread.
 */
export interface SampleMessage {
  /**
   * The protocol's version: a change an older reader would misread bumps it.
   */
  protocol: 1;
  /**
   * The message's kind.
   */
  type: 'sample';
  sample: Sample;
}
/**
 * Frontend to kernel: new settings (Settings → GPU Memory), and the interface's language after each hello.
 */
export interface Configure {
  /**
   * The protocol's version: a change an older reader would misread bumps it.
   */
  protocol: 1;
  /**
   * The message's kind.
   */
  type: 'configure';
  /**
   * The sampling interval in seconds.
   */
  interval_s: number;
  /**
   * The history window in seconds.
   */
  history_s: number;
  /**
   * The interface's language, a BCP 47 tag as JupyterLab's translator names it ("ja-JP", "zh-CN", "en"): the kernel words its own output (%gpumem's) in it from then on. Absent (a sidebar before 0.2.0): the kernel keeps the language of its locale (LANGUAGE, LC_ALL, LC_MESSAGES, LANG).
   */
  language?: string;
}

/**
 * Its report file is fresh / older than stale_after_s / missing or unreadable.
 */
export type KernelStatus = 'reporting' | 'stale' | 'not_reporting';

/**
 * The Jupyter server extension's figures as JSON (docs/server.md). Evolves additively within version 1 (docs/protocol.md, 'Versioning and releases mixing'): the required fields are those every release has sent, forever; a field added since is optional and its default says what its absence means (not known); readers ignore fields they do not know; a change an older reader would misread is version 2, a new file and path.
 */
export interface ServerBody {
  /**
   * This schema's version: a change an older reader would misread bumps it (and the path).
   */
  version: 1;
  /**
   * jupyter-gpumem's version in the server.
   */
  packageVersion: string;
  /**
   * Seconds between the server's readings.
   */
  intervalS: number;
  /**
   * When the server read NVML (time.time()); null before its first reading.
   */
  t: number | null;
  /**
   * A sentence when NVML cannot be read at all (no driver); then gpus is [].
   */
  problem: string | null;
  /**
   * Why NVML cannot be read at all as a code and its values (docs/protocol.md, 'Codes and words'); problem says it in English for older readers, and is shown where this is absent (an older sender) or its code is not known (a newer one). Absent means null.
   */
  problemSaid: Said | null;
  /**
   * The NVIDIA driver did not answer the server's last reading in time: it has not answered since then (time.time()), and the figures are the last it gave then. Added after the first release; null or absent: the figures are its answer.
   */
  stalledSince: number | null;
  /**
   * The NVIDIA driver's version; null: not known.
   */
  driverVersion: string | null;
  /**
   * The stand-in NVML's scenario; null with a real driver.
   */
  simulated: string | null;
  /**
   * NVML order (PCI bus order).
   */
  gpus: ServerGpu[];
  /**
   * Every kernel the server's kernel manager knows, by id.
   */
  kernels: ServerKernel[];
}
/**
 * One GPU as the server sees it.
 */
export interface ServerGpu {
  /**
   * NVML's index (PCI bus order).
   */
  index: number;
  /**
   * NVML's UUID; null: not told.
   */
  uuid: string | null;
  /**
   * NVML's name for it; null: not told.
   */
  name: string | null;
  /**
   * GPU_IS_LOST: it fell off the bus; its figures are null.
   */
  lost: boolean;
  /**
   * Device memory as nvidia-smi counts it. Null: not known (never 0).
   */
  totalBytes: number | null;
  /**
   * Memory in use as nvidia-smi counts it. Null: not known (never 0).
   */
  usedBytes: number | null;
  /**
   * GPU utilisation, 0-100; null where not supported (MIG).
   */
  utilizationPercent: number | null;
  /**
   * False when the driver refused the process query (then other_processes and other_bytes are null).
   */
  processesKnown: boolean;
  /**
   * Processes of none of this server's kernels; null: not known.
   */
  otherProcesses: number | null;
  /**
   * Their memory; null when one of them is N/A, or not known.
   */
  otherBytes: number | null;
  /**
   * With privacy names or list: the other processes per Unix user; null otherwise. Added after the first release: absent means null.
   */
  otherUsers: UserShare[] | null;
  /**
   * With privacy list: each other process; null otherwise. Added after the first release: absent means null.
   */
  otherProcessList: OtherProcess[] | null;
}
/**
 * A process of none of this server's kernels (privacy list): never its name or command line.
 */
export interface OtherProcess {
  /**
   * Its PID as the driver reports it.
   */
  pid: number;
  /**
   * Its Unix user; null: the host does not say.
   */
  user: string | null;
  /**
   * Its GPU memory; null: N/A.
   */
  usedBytes: number | null;
}
/**
 * A kernel the server's kernel manager knows.
 */
export interface ServerKernel {
  /**
   * The kernel manager's id.
   */
  id: string;
  /**
   * The kernel manager's PID for it; null: not known.
   */
  pid: number | null;
  status: KernelStatus;
  /**
   * Age of its report file; null without one.
   */
  reportAgeS: number | null;
  /**
   * As the kernel says; null unless reporting.
   */
  packageVersion: string | null;
  /**
   * As the kernel says (docs/protocol.md); null unless reporting.
   */
  policy: string | null;
  /**
   * As the kernel says (docs/protocol.md); null unless reporting.
   */
  policyState: PolicyState;
  /**
   * As the kernel says (docs/protocol.md); null unless reporting.
   */
  policyNote: string | null;
  /**
   * The note next to the kernel's policy as a code and its values (docs/protocol.md, 'Codes and words'); policy_note says it in English for older readers, and is shown where this is absent (an older sender) or its code is not known (a newer one). Absent means null.
   */
  policyNoteSaid: Said | null;
  /**
   * As the kernel says (docs/protocol.md); null unless reporting.
   */
  framework: string | null;
  /**
   * As the kernel says (docs/protocol.md); false unless reporting.
   */
  frameworkStarted: boolean;
  /**
   * GPU out-of-memory errors in its cells; null unless reporting.
   */
  oomErrorsTotal: number | null;
  ceiling: Ceiling;
  /**
   * The server's kernel manager's: idle, busy, starting…; null: not known. Added after the first release: absent means null.
   */
  executionState: string | null;
  /**
   * When the user last ran code (time.time()): the kernel's idle_since where it reports, else its last message as the server saw it; null: not known. Added after the first release: absent means null.
   */
  lastActivity: number | null;
  /**
   * The GPUs where it is.
   */
  gpus: KernelGpu[];
}
/**
 * The administrator's ceiling for this kernel (docs/configuration.md).
 */
export interface Ceiling {
  /**
   * The largest fraction of a GPU a policy may ask for; null: none.
   */
  maxFraction: number | null;
  /**
   * The largest budget a policy may ask for; null: none.
   */
  maxLimitBytes: number | null;
}
/**
 * A kernel on a GPU where it is: NVML lists a process of it there, or its framework reports allocator figures for it.
 */
export interface KernelGpu {
  /**
   * NVML's index (PCI bus order).
   */
  index: number;
  /**
   * The GPU's UUID.
   */
  uuid: string;
  /**
   * Its processes' memory as nvidia-smi counts it; null: N/A, or none listed (containers).
   */
  usedBytes: number | null;
  /**
   * This kernel's budget on it as nvidia-smi counts it; null: none set.
   */
  budgetBytes: number | null;
  /**
   * The budget is in force on this GPU in the framework (false while only recorded, on a lost or hidden GPU, or when the framework uses no GPU).
   */
  inForce: boolean;
  /**
   * used_bytes > budget_bytes; null unless both are known.
   */
  overBudget: boolean | null;
  /**
   * The framework allocator's pool: what it reserved if pool_known, else the plan's allocator limit; null without a plan for this GPU.
   */
  poolBytes: number | null;
  /**
   * The framework reported its pool (TensorFlow: growth off with a limit, after its first allocation).
   */
  poolKnown: boolean;
  /**
   * Memory outside the pool (CUDA context, libraries): this kernel's measurement, else what the plan set aside; null without a plan.
   */
  overheadBytes: number | null;
  /**
   * Where overhead_bytes comes from; null without a plan.
   */
  overheadSource: OverheadSource;
  /**
   * The framework allocator's bytes in use; null until its runtime has started (the sampler never starts it).
   */
  frameworkBytes: number | null;
  /**
   * The framework allocator's peak bytes; null until its runtime has started.
   */
  frameworkPeakBytes: number | null;
  /**
   * What limits this kernel's memory on the GPU: a MIG partition, an MPS pinned limit, or %gpumem's budget (cooperative); null: nothing. A limit the NVIDIA driver enforces is another field (a closed set gains no value within a major version).
   */
  limitKind: LimitKind;
  /**
   * The limit is enforced (mig, mps), not cooperative.
   */
  limitHard: boolean;
  /**
   * The GPU memory limit the NVIDIA driver enforces on the kernel's cgroup (hard; drivers from 615), as the kernel read it; null: none, or not known. Added in 0.2.0: absent means null.
   */
  driverLimitBytes: number | null;
  /**
   * The profile of the MIG slice the kernel runs on ("1g.5gb"); null: not on a MIG slice, or not known. Added in 0.2.0: absent means null.
   */
  slice: string | null;
  /**
   * The memory of the MIG slice the kernel runs on, the GPU's memory as this kernel sees it; null: not on a MIG slice, or not known. Added in 0.2.0: absent means null.
   */
  sliceBytes: number | null;
  /**
   * The GPU has no memory of its own and shares the host's (GB10, Grace Hopper: unified memory): total_bytes, used_bytes and the budgets are the host's memory, under the cgroup's memory.max.
   */
  memoryShared: boolean;
}
