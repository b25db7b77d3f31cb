# Generated from wire/schemas/api.v1.json by `python tests/wire/test_generated.py --write`: do not edit.

from __future__ import annotations

from typing import Literal, TypeAlias, TypedDict

from typing_extensions import NotRequired

from . import comm_v1, report_v1


class OtherProcess(TypedDict):
    """
    A process of none of this server's kernels (privacy list): never its name or command line.
    """

    pid: int
    """
    Its PID as the driver reports it.
    """
    user: str | None
    """
    Its Unix user; null: the host does not say.
    """
    used_bytes: int | None
    """
    Its GPU memory; null: N/A.
    """


KernelStatus: TypeAlias = Literal["reporting", "stale", "not_reporting"]
"""
Its report file is fresh / older than stale_after_s / missing or unreadable.
"""


class ServerGpu(TypedDict):
    """
    One GPU as the server sees it.
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
    total_bytes: int | None
    """
    Device memory as nvidia-smi counts it. Null: not known (never 0).
    """
    used_bytes: int | None
    """
    Memory in use as nvidia-smi counts it. Null: not known (never 0).
    """
    utilization_percent: int | None
    """
    GPU utilisation, 0-100; null where not supported (MIG).
    """
    processes_known: bool
    """
    False when the driver refused the process query (then other_processes and other_bytes are null).
    """
    other_processes: int | None
    """
    Processes of none of this server's kernels; null: not known.
    """
    other_bytes: int | None
    """
    Their memory; null when one of them is N/A, or not known.
    """
    other_users: NotRequired[list[comm_v1.UserShare] | None]
    """
    With privacy names or list: the other processes per Unix user; null otherwise. Added after the first release: absent means null.
    """
    other_process_list: NotRequired[list[OtherProcess] | None]
    """
    With privacy list: each other process; null otherwise. Added after the first release: absent means null.
    """


class KernelGpu(TypedDict):
    """
    A kernel on a GPU where it is: NVML lists a process of it there, or its framework reports allocator figures for it.
    """

    index: int
    """
    NVML's index (PCI bus order).
    """
    uuid: str
    """
    The GPU's UUID.
    """
    used_bytes: int | None
    """
    Its processes' memory as nvidia-smi counts it; null: N/A, or none listed (containers).
    """
    budget_bytes: int | None
    """
    This kernel's budget on it as nvidia-smi counts it; null: none set.
    """
    in_force: bool
    """
    The budget is in force on this GPU in the framework (false while only recorded, on a lost or hidden GPU, or when the framework uses no GPU).
    """
    over_budget: bool | None
    """
    used_bytes > budget_bytes; null unless both are known.
    """
    pool_bytes: int | None
    """
    The framework allocator's pool: what it reserved if pool_known, else the plan's allocator limit; null without a plan for this GPU.
    """
    pool_known: bool
    """
    The framework reported its pool (TensorFlow: growth off with a limit, after its first allocation).
    """
    overhead_bytes: int | None
    """
    Memory outside the pool (CUDA context, libraries): this kernel's measurement, else what the plan set aside; null without a plan.
    """
    overhead_source: comm_v1.OverheadSource
    """
    Where overhead_bytes comes from; null without a plan.
    """
    framework_bytes: int | None
    """
    The framework allocator's bytes in use; null until its runtime has started (the sampler never starts it).
    """
    framework_peak_bytes: int | None
    """
    The framework allocator's peak bytes; null until its runtime has started.
    """
    limit_kind: NotRequired[comm_v1.LimitKind]
    """
    What limits this kernel's memory on the GPU: a MIG partition, an MPS pinned limit, or %gpumem's budget (cooperative); null: nothing. A limit the NVIDIA driver enforces is another field (a closed set gains no value within a major version).
    """
    limit_hard: NotRequired[bool]
    """
    The limit is enforced (mig, mps), not cooperative.
    """
    driver_limit_bytes: NotRequired[int | None]
    """
    The GPU memory limit the NVIDIA driver enforces on the kernel's cgroup (hard; drivers from 615), as the kernel read it; null: none, or not known. Added in 0.2.0: absent means null.
    """
    slice: NotRequired[str | None]
    """
    The profile of the MIG slice the kernel runs on ("1g.5gb"); null: not on a MIG slice, or not known. Added in 0.2.0: absent means null.
    """
    slice_bytes: NotRequired[int | None]
    """
    The memory of the MIG slice the kernel runs on, the GPU's memory as this kernel sees it; null: not on a MIG slice, or not known. Added in 0.2.0: absent means null.
    """
    memory_shared: NotRequired[bool]
    """
    The GPU has no memory of its own and shares the host's (GB10, Grace Hopper: unified memory): total_bytes, used_bytes and the budgets are the host's memory, under the cgroup's memory.max.
    """


class ServerKernel(TypedDict):
    """
    A kernel the server's kernel manager knows.
    """

    id: str
    """
    The kernel manager's id.
    """
    pid: int | None
    """
    The kernel manager's PID for it; null: not known.
    """
    status: KernelStatus
    """
    Its report file is fresh / older than stale_after_s / missing or unreadable.
    """
    report_age_s: float | None
    """
    Age of its report file; null without one.
    """
    package_version: str | None
    """
    As the kernel says; null unless reporting.
    """
    policy: str | None
    """
    As the kernel says (docs/protocol.md); null unless reporting.
    """
    policy_state: comm_v1.PolicyState
    """
    As the kernel says (docs/protocol.md); null unless reporting.
    """
    policy_note: str | None
    """
    As the kernel says (docs/protocol.md); null unless reporting.
    """
    policy_note_said: NotRequired[comm_v1.Said | None]
    """
    The note next to the kernel's policy as a code and its values (docs/protocol.md, 'Codes and words'); policy_note says it in English for older readers, and is shown where this is absent (an older sender) or its code is not known (a newer one). Absent means null.
    """
    framework: str | None
    """
    As the kernel says (docs/protocol.md); null unless reporting.
    """
    framework_started: bool
    """
    As the kernel says (docs/protocol.md); false unless reporting.
    """
    oom_errors_total: int | None
    """
    GPU out-of-memory errors in its cells; null unless reporting.
    """
    ceiling: report_v1.Ceiling
    execution_state: NotRequired[str | None]
    """
    The server's kernel manager's: idle, busy, starting…; null: not known. Added after the first release: absent means null.
    """
    last_activity: NotRequired[float | None]
    """
    When the user last ran code (time.time()): the kernel's idle_since where it reports, else its last message as the server saw it; null: not known. Added after the first release: absent means null.
    """
    gpus: list[KernelGpu]
    """
    The GPUs where it is.
    """


class ServerBody(TypedDict):
    """
    The Jupyter server extension's figures as JSON (docs/server.md). Evolves additively within version 1 (docs/protocol.md, 'Versioning and releases mixing'): the required fields are those every release has sent, forever; a field added since is optional and its default says what its absence means (not known); readers ignore fields they do not know; a change an older reader would misread is version 2, a new file and path.
    """

    version: Literal[1]
    """
    This schema's version: a change an older reader would misread bumps it (and the path).
    """
    package_version: str
    """
    jupyter-gpumem's version in the server.
    """
    interval_s: float
    """
    Seconds between the server's readings.
    """
    t: float | None
    """
    When the server read NVML (time.time()); null before its first reading.
    """
    problem: str | None
    """
    A sentence when NVML cannot be read at all (no driver); then gpus is [].
    """
    problem_said: NotRequired[comm_v1.Said | None]
    """
    Why NVML cannot be read at all as a code and its values (docs/protocol.md, 'Codes and words'); problem says it in English for older readers, and is shown where this is absent (an older sender) or its code is not known (a newer one). Absent means null.
    """
    stalled_since: NotRequired[float | None]
    """
    The NVIDIA driver did not answer the server's last reading in time: it has not answered since then (time.time()), and the figures are the last it gave then. Added after the first release; null or absent: the figures are its answer.
    """
    driver_version: str | None
    """
    The NVIDIA driver's version; null: not known.
    """
    simulated: str | None
    """
    The stand-in NVML's scenario; null with a real driver.
    """
    gpus: list[ServerGpu]
    """
    NVML order (PCI bus order).
    """
    kernels: list[ServerKernel]
    """
    Every kernel the server's kernel manager knows, by id.
    """
