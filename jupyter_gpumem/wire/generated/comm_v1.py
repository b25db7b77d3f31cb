# Generated from wire/schemas/comm.v1.json (its codes from words/en.json) by `python tests/wire/test_generated.py --write`: do not edit.

from __future__ import annotations

from typing import Any, Literal, TypeAlias, TypedDict

from typing_extensions import NotRequired


class CommMessage(TypedDict):
    """
    Every message on the jupyter_gpumem comm (docs/protocol.md). Evolves additively within protocol 1 (docs/protocol.md, 'Versioning and releases mixing'): the required fields are those the first protocol-1 kernel sent, forever; a field added since is optional and its default says what its absence means; readers ignore fields they do not know; a change an older reader would misread is protocol 2, a new file.
    """

    protocol: Literal[1]
    """
    The protocol's version: a change an older reader would misread bumps it.
    """
    type: Literal["hello", "sample", "configure"]
    """
    hello and sample: kernel to frontend; configure: frontend to kernel.
    """


class Configure(TypedDict):
    """
    Frontend to kernel: new settings (Settings → GPU Memory), and the interface's language after each hello.
    """

    protocol: Literal[1]
    """
    The protocol's version: a change an older reader would misread bumps it.
    """
    type: Literal["configure"]
    """
    The message's kind.
    """
    interval_s: float
    """
    The sampling interval in seconds.
    """
    history_s: float
    """
    The history window in seconds.
    """
    language: NotRequired[str]
    """
    The interface's language, a BCP 47 tag as JupyterLab's translator names it ("ja-JP", "zh-CN", "en"): the kernel words its own output (%gpumem's) in it from then on. Absent (a sidebar before 0.2.0): the kernel keeps the language of its locale (LANGUAGE, LC_ALL, LC_MESSAGES, LANG).
    """


PidNamespace: TypeAlias = Literal["host", "translated", "untranslated", "unlisted"] | None
"""
Where this kernel stands towards the PIDs NVML reports (docs/containers.md); null: no GPU to tell it from. Absent means null.
"""


OwnSource: TypeAlias = Literal["exact", "matched", "estimated", "unknown"] | None
"""
What own_bytes rests on (docs/containers.md): exact: NVML lists this kernel's PID (or its PIDs are this namespace's and it is not listed: 0); matched: the one listed process of another namespace that appeared when the framework started and follows its pool; estimated: the framework's pool plus the overhead; unknown: own_bytes is null. Absent or null from an older kernel: shown without a label.
"""


class GpuProcess(TypedDict):
    """
    One process on one GPU.
    """

    pid: int
    """
    Its PID as the driver reports it.
    """
    name: str | None
    """
    The executable's name only, never a command line; null: not told.
    """
    user: str | None
    """
    Its Unix user; null: the host does not say.
    """
    used_bytes: int | None
    """
    Its GPU memory as nvidia-smi counts it; null: N/A (the driver cannot tell, e.g. Windows WDDM).
    """
    cpu_percent: float | None
    """
    Its CPU%; null: not known.
    """
    self: bool
    """
    This kernel, by its own PID.
    """
    local: NotRequired[bool | None]
    """
    The PID is a process of this kernel's PID namespace running the program the driver names; false: missing here, or another program; null: not told. Added after the first release: absent means null.
    """
    cpu_pending: NotRequired[bool]
    """
    The host sees the process but has not measured its CPU% yet (cpu_percent is null; shown as '…', not N/A). Added after the first release: absent means false.
    """
    gpu_instance_id: NotRequired[int | None]
    """
    On a GPU in MIG mode, the GPU instance (slice) it runs on; null elsewhere. Absent means null.
    """


class UserShare(TypedDict):
    """
    One Unix user's processes on one GPU, as one figure.
    """

    user: str | None
    """
    The Unix user; null: the host does not say whose the processes are.
    """
    processes: int
    """
    How many processes.
    """
    used_bytes: int | None
    """
    Their GPU memory; null when the driver cannot tell for one of them (N/A).
    """


NoticeKind: TypeAlias = Literal["idle_warning", "idle_shutdown"]
"""
idle_warning: idle_warn_minutes idle; idle_shutdown: idle_shutdown_minutes idle, the kernel is being shut down.
"""


Code: TypeAlias = Literal[
    "no_driver",
    "driver_not_loaded",
    "nvml_not_started",
    "nvml_not_listing",
    "reader_failed",
    "its_framework",
    "the_framework",
    "frameworks_and",
    "frameworks_or",
    "own_untranslated",
    "own_unlisted",
    "own_listed",
    "own_listed_not_told",
    "own_matched",
    "own_gpu_lost",
    "own_processes_not_listed",
    "own_not_listed",
    "own_estimated",
    "own_unknown",
    "own_not_started",
    "own_framework_untold",
    "own_pool_untold",
    "own_no_pool",
    "own_candidates",
    "own_candidate",
    "over_hidden_gpu",
    "over_not_in_force",
    "not_in_force_no_gpu",
    "not_in_force_started",
    "not_in_force_yet",
    "no_limit_here",
    "over_outside",
    "over_outside_not_strict",
    "over_outside_beyond_aside",
    "sentence",
    "mps_limit_unreadable",
    "mps_limit_empty",
    "mps_limit_no_ordinal",
    "mps_limit_no_unit",
    "mps_limit_zero",
    "mps_limit_twice",
    "mps_limit_without_server",
    "mps_offer",
    "policy_in_force_nowhere",
    "policy_in_force",
    "policy_started_first",
    "policy_applies_on_import",
    "import_statement",
    "framework_takes",
    "takes_each",
    "takes_tensorflow",
    "takes_pytorch",
    "takes_jax",
    "takes_cupy",
    "idle_warning",
    "idle_warning_shutdown",
    "idle_shutdown",
    "not_answering",
    "no_answer_within",
    "not_answering_since",
    "driver_not_answering_since",
    "server_other_version",
    "server_other_version_unnamed",
    "hub_environment",
    "server_environment",
    "body_not_valid",
    "body_too_many",
    "body_not_uuid",
    "body_not_gpu_name",
    "body_not_kernel_id",
    "body_kernel_on_too_many",
    "body_not_time",
    "body_too_large",
    "not_installed",
    "answered_status",
    "answer_too_large",
    "answer_not_json",
    "answer_unreadable",
    "prometheus_not_scraping",
    "prometheus_figures_not_valid",
    "prometheus_too_many",
    "prometheus_unreadable",
    "overhead",
    "overhead_estimated",
    "overhead_remembered",
    "overhead_measured",
    "overhead_generation_unknown",
    "overhead_generation",
    "a_gpu",
    "overhead_earlier_kernel",
    "overhead_this_kernel",
    "driver_stalled",
    "stalled_figures_from_then",
    "stalled_no_figures_yet",
    "stalled_plan_later",
    "no_gpus",
    "driver_limits_no_calls",
    "driver_limits_refused",
    "cgroup_unreadable",
    "no_cgroup_v2",
    "planned_at_driver_limit",
    "driver_limit",
    "mig_slice",
    "memory_shared",
    "mig_slice_not_known",
    "cuda_order_uncertain",
    "no_gpu_visible",
]
"""
Every code this release words: the keys of jupyter_gpumem/words/en.json but its join_* ones, the one list of them. The schema's generators (tests/wire/test_generated.py, labextension/scripts/schema.mjs) make them this type's values. A newer release may add codes: a reader falls back to the sentence field beside a code it does not know.
"""


class Cell(TypedDict):
    """
    One executed cell, for a span on the chart whose hover names it (%gpumem cells has its figures).
    """

    count: int | None
    """
    Its execution count, as the notebook shows it ([12]); null while it runs (the notebook's [*]), and for a cell not stored in the history.
    """
    line: str
    """
    Its first line that is not blank, at most 40 characters (cut with …): the kernel's user's own code, shown as text.
    """
    start_t: float
    """
    When it started: time.time() in the kernel.
    """
    end_t: float | None
    """
    When it ended; null: it is running.
    """
    error: bool
    """
    It raised an exception (false while it runs).
    """


class DriverLimit(TypedDict):
    hard_bytes: int
    """
    The hard limit: an allocation beyond it fails.
    """
    soft_bytes: int | None
    """
    The soft limit (the request); null: none.
    """
    used_bytes: int | None
    """
    What the driver counts against the limit in that cgroup; null: not told.
    """
    cgroup: str
    """
    The cgroup whose limit binds, as /proc/<pid>/cgroup names it.
    """


class MigSlice(TypedDict):
    uuid: str | None
    """
    The slice's MIG- UUID (what CUDA_VISIBLE_DEVICES names).
    """
    name: str | None
    """
    NVML's name for it ("NVIDIA A100-SXM4-40GB MIG 1g.5gb").
    """
    profile: str | None
    """
    Its profile ("1g.5gb").
    """
    total_bytes: int | None
    """
    The slice's memory.
    """
    used_bytes: int | None
    """
    In use on the slice.
    """
    gpu_instance_id: int | None
    """
    Its GPU instance id; processes on it carry the same.
    """


LimitKind: TypeAlias = Literal["mig", "mps", "cooperative"] | None
"""
mig: a MIG partition; mps: an MPS pinned limit (both hard); cooperative: %gpumem's budget; null: nothing.
"""


OverheadSource: TypeAlias = Literal["estimated", "remembered", "measured"] | None
"""
estimated: per GPU generation; remembered: measured by an earlier kernel on this GPU model, driver and framework version; measured: by this kernel; null without a plan.
"""


PolicyState: TypeAlias = Literal["recorded", "in_force", "not_in_force"] | None
"""
recorded: waiting for the framework's import; in_force: applied and in force (on the GPUs whose in_force is true); not_in_force: applied but not in force; null: no policy.
"""


class OtherUsers(TypedDict):
    """
    Other Unix users' processes on one GPU as one figure, where privacy does not list them one by one (docs/hub.md, 'Privacy').
    """

    processes: int
    """
    How many processes.
    """
    used_bytes: int | None
    """
    Their GPU memory; null when the driver cannot tell for one of them (N/A).
    """
    users: list[UserShare] | None
    """
    Per Unix user under privacy 'names'; null under 'aggregate' (the total only).
    """


class Said(TypedDict):
    """
    A reason, problem or note as a code and the values its words need (docs/protocol.md, 'Codes and words'): each surface words it from its language's catalogue, jupyter_gpumem/words/<language>.json, where the code names a template whose {name} placeholders are the values.
    """

    code: Code | str
    """
    A code of $defs/code; a reader that does not know it (a newer sender's) shows the English sentence field beside it.
    """
    values: dict[str, Any]
    """
    What the words need, by the template's placeholder names. Each is a string (data, shown as it is), a number (*_bytes in bytes, *_s in seconds, a time of day in seconds since the epoch: formatted by the surface), another code with its values (worded in its place), or a list of these (joined as the placeholder says).
    """


class SampleGpu(TypedDict):
    """
    One GPU as this kernel sees it.
    """

    index: int
    """
    NVML's index (PCI bus order).
    """
    uuid: str | None
    """
    NVML's UUID; null: not told.
    """
    name: str | None
    """
    NVML's name for it; null: not told.
    """
    lost: bool
    """
    GPU_IS_LOST: it fell off the bus; its figures are null.
    """
    hidden: bool
    """
    The policy keeps this kernel off this GPU (gpus=).
    """
    total_bytes: int | None
    """
    Device memory as nvidia-smi counts it. Null: not known (never 0).
    """
    used_bytes: int | None
    """
    Memory in use as nvidia-smi counts it. Null: not known (never 0).
    """
    own_bytes: int | None
    """
    This kernel's memory on it as nvidia-smi counts it, as attributed (own_source). Null: not known (never 0).
    """
    own_source: NotRequired[OwnSource]
    """
    What own_bytes rests on (docs/containers.md): exact: NVML lists this kernel's PID (or its PIDs are this namespace's and it is not listed: 0); matched: the one listed process of another namespace that appeared when the framework started and follows its pool; estimated: the framework's pool plus the overhead; unknown: own_bytes is null. Absent or null from an older kernel: shown without a label.
    """
    own_reason: NotRequired[str | None]
    """
    For people, a phrase: what own_bytes rests on, or why it is unknown. Absent means null.
    """
    own_reason_said: NotRequired[Said | None]
    """
    What own_bytes rests on, or why it is unknown, as a code and its values (docs/protocol.md, 'Codes and words'); own_reason says it in English for older readers, and is shown where this is absent (an older sender) or its code is not known (a newer one). Absent means null.
    """
    own_pid: NotRequired[int | None]
    """
    The PID NVML lists for this kernel on this GPU (exact or matched): the process row to mark. Absent means null.
    """
    own_candidates: NotRequired[int]
    """
    Listed processes that could be this kernel's when none is matched (2 or more: none is picked). Absent means 0.
    """
    unlisted_bytes: NotRequired[int | None]
    """
    In a container whose driver hides processes: memory in use that no listed process accounts for ('not listed'); null otherwise. Absent means null.
    """
    limit_kind: NotRequired[LimitKind]
    """
    What limits this kernel's memory on the GPU: a MIG partition, an MPS pinned limit, or %gpumem's budget (cooperative); null: nothing. A limit the NVIDIA driver enforces is another field (a closed set gains no value within a major version).
    """
    limit_hard: NotRequired[bool]
    """
    The limit is enforced (mig, mps), not cooperative.
    """
    limit_bytes: NotRequired[int | None]
    """
    The partition's memory, the MPS limit or the budget; null when not known (a MIG partition that is not named). Absent means null.
    """
    memory_shared: NotRequired[bool]
    """
    The GPU has no memory of its own and shares the host's (GB10, Grace Hopper: unified memory): total_bytes, used_bytes and the budgets are the host's memory, under the cgroup's memory.max.
    """
    driver_limit: NotRequired[DriverLimit | None]
    """
    The GPU memory limit the NVIDIA driver enforces on this kernel's cgroup (nvmlDeviceGetMemoryLimits_v1): the lowest hard limit from its cgroup to the root. Null: none set, or none could be read (the sample's driver_limits_unknown says why). Absent means null.
    """
    slice: NotRequired[MigSlice | None]
    """
    The MIG slice of this GPU that this kernel runs on (CUDA_VISIBLE_DEVICES names it, or its process is on it); its budgets are planned against the slice's memory. Null: not in MIG mode, or which slice is not known. Absent means null.
    """
    budget_bytes: int | None
    """
    This kernel's budget on it as nvidia-smi counts it; null: none set.
    """
    in_force: NotRequired[bool]
    """
    The budget is in force on this GPU in the framework (false while only recorded, on a lost or hidden GPU, or when the framework uses no GPU).
    """
    pool_bytes: NotRequired[int | None]
    """
    The framework allocator's pool: what it reserved if pool_known, else the plan's allocator limit; null without a plan for this GPU.
    """
    pool_known: NotRequired[bool]
    """
    The framework reported its pool (TensorFlow: growth off with a limit, after its first allocation).
    """
    overhead_bytes: NotRequired[int | None]
    """
    Memory outside the pool (CUDA context, libraries): this kernel's measurement, else what the plan set aside; null without a plan.
    """
    overhead_source: NotRequired[OverheadSource]
    """
    Where overhead_bytes comes from; null without a plan.
    """
    over_reason: NotRequired[str | None]
    """
    When own_bytes is over budget_bytes: why, as a phrase; null otherwise. Added after the first release: absent means null.
    """
    over_reason_said: NotRequired[Said | None]
    """
    Why own_bytes is over budget_bytes, as a code and its values (docs/protocol.md, 'Codes and words'); over_reason says it in English for older readers, and is shown where this is absent (an older sender) or its code is not known (a newer one). Absent means null.
    """
    framework_bytes: int | None
    """
    The framework allocator's bytes in use; null until its runtime has started (the sampler never starts it).
    """
    framework_peak_bytes: int | None
    """
    The framework allocator's peak bytes; null until its runtime has started.
    """
    processes_known: bool
    """
    False when the driver refused the process query.
    """
    processes: NotRequired[list[GpuProcess]]
    """
    Every process on this GPU that privacy lets this kernel list. Absent in hello.history (figures only).
    """
    others: NotRequired[OtherUsers | None]
    """
    Other users' processes, not in processes; null: every process is listed. Absent in hello.history (figures only).
    """


class Notice(TypedDict):
    """
    What the Jupyter server tells this kernel's user now (its idle culler, docs/hub.md), as the server's notice file says it.
    """

    kind: NoticeKind
    """
    idle_warning: idle_warn_minutes idle; idle_shutdown: idle_shutdown_minutes idle, the kernel is being shut down.
    """
    text: str
    """
    One plain sentence for the user, shown as it is.
    """
    text_said: NotRequired[Said | None]
    """
    The sentence for the user as a code and its values (docs/protocol.md, 'Codes and words'); text says it in English for older readers, and is shown where this is absent (an older sender) or its code is not known (a newer one). Absent means null.
    """
    t: float
    """
    When the server wrote it (seconds since the epoch); a new notice has a new t.
    """
    shutdown_at: float | None
    """
    When the kernel will be shut down (seconds since the epoch); null: a warning with no shutdown set.
    """


class Sample(TypedDict):
    """
    One look at the kernel's GPUs: what the sampler thread sends every interval.
    """

    t: float
    """
    time.time() in the kernel when it was taken.
    """
    problem: str | None
    """
    A sentence when NVML cannot be read at all (no driver); then gpus is [].
    """
    problem_said: NotRequired[Said | None]
    """
    Why NVML cannot be read at all as a code and its values (docs/protocol.md, 'Codes and words'); problem says it in English for older readers, and is shown where this is absent (an older sender) or its code is not known (a newer one). Absent means null.
    """
    stalled_since: NotRequired[float | None]
    """
    The NVIDIA driver did not answer this sample in time: it has not answered since then (time.time() in the kernel), and the figures are the last it gave, at that time (gpus is [] when it never answered). Null or absent: the figures are the driver's answer. The chart leaves a gap for such samples.
    """
    simulated: str | None
    """
    The stand-in NVML's scenario when the 'driver' is the stand-in; null with a real driver.
    """
    policy: str | None
    """
    The kernel's policy as %gpumem shows it ('fraction=0.5 gpus=1'); null: none.
    """
    policy_state: NotRequired[PolicyState]
    policy_note: NotRequired[str | None]
    """
    One sentence for people next to the policy ('applies when "import tensorflow" completes'). Absent means null.
    """
    policy_note_said: NotRequired[Said | None]
    """
    The note next to the policy as a code and its values (docs/protocol.md, 'Codes and words'); policy_note says it in English for older readers, and is shown where this is absent (an older sender) or its code is not known (a newer one). Absent means null.
    """
    framework: str | None
    """
    The framework(s) the figures belong to ('TensorFlow', 'TensorFlow and PyTorch'); null while several are installed and none is imported.
    """
    framework_said: NotRequired[Said | None]
    """
    Several frameworks' names as a code and its values (frameworks_and or frameworks_or, docs/protocol.md, 'Codes and words'), which a reader of this release words in its language; framework says them in English for older readers, and is shown where this is absent (an older sender, or one framework: its name is data) or its code is not known (a newer one). Absent means null.
    """
    framework_started: bool
    """
    Its runtime has started (its settings are fixed).
    """
    takes: NotRequired[str | None]
    """
    What the framework(s) take of a GPU without a budget, a phrase that starts with the framework's name; null: not known. Absent means null.
    """
    takes_said: NotRequired[Said | None]
    """
    What the framework(s) take of a GPU without a budget as a code and its values (docs/protocol.md, 'Codes and words'); takes says it in English for older readers, and is shown where this is absent (an older sender) or its code is not known (a newer one). Absent means null.
    """
    pid_namespace: NotRequired[PidNamespace]
    """
    Where this kernel stands towards the PIDs NVML reports (docs/containers.md); null: no GPU to tell it from. Absent means null.
    """
    limit_note: NotRequired[str | None]
    """
    One sentence about hard limits (an MPS limit that cannot be read, or the mps=on offer); null: nothing to say. Absent means null.
    """
    limit_note_said: NotRequired[Said | None]
    """
    The note about hard limits as a code and its values (docs/protocol.md, 'Codes and words'); limit_note says it in English for older readers, and is shown where this is absent (an older sender) or its code is not known (a newer one). Absent means null.
    """
    gpus: list[SampleGpu]
    """
    NVML order (PCI bus order); [] without a driver.
    """
    notice: NotRequired[Notice | None]
    """
    What the Jupyter server tells this kernel's user now; null: nothing. Absent in hello.history and from an older kernel.
    """
    cells: NotRequired[list[Cell]]
    """
    The notebook's cells this sample marks on the chart: those that ended since the kernel's previous sample, and the one running (end_t null), oldest first. Kept in hello.history, so a replay has every cell in its window. Absent: none (and from an older kernel).
    """
    driver_limits_unknown: NotRequired[Said | None]
    """
    Why no limit the NVIDIA driver enforces could be read (a driver before 615 without nvmlDeviceGetMemoryLimits_v1, no cgroup v2, a call refused); null: they were read, or there was nothing to read. Absent means null.
    """


class Hello(TypedDict):
    """
    Kernel to frontend, the comm_open data: the settings in force and the history to replay.
    """

    protocol: Literal[1]
    """
    The protocol's version: a change an older reader would misread bumps it.
    """
    type: Literal["hello"]
    """
    The message's kind.
    """
    package_version: str
    """
    jupyter-gpumem's version in the kernel.
    """
    interval_s: float
    """
    The sampling interval in seconds.
    """
    history_s: float
    """
    The history window in seconds.
    """
    history: list[Sample]
    """
    The samples in the window, oldest first, without processes and others in each GPU, and without notice.
    """


class SampleMessage(TypedDict):
    """
    Kernel to frontend, one comm_msg per interval from the sampler thread.
    """

    protocol: Literal[1]
    """
    The protocol's version: a change an older reader would misread bumps it.
    """
    type: Literal["sample"]
    """
    The message's kind.
    """
    sample: Sample
