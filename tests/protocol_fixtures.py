"""The snapshots behind tests/fixtures/protocol/: test_protocol.py checks that the encoder turns
them into exactly the fixture files, which the TypeScript tests parse (tests/ts/)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from jupyter_gpumem.budget.attribution import Match
from jupyter_gpumem.budget.framework_interface import Allocator, label
from jupyter_gpumem.budget.limits import Limit, Limits
from jupyter_gpumem.budget.overhead import Overhead
from jupyter_gpumem.budget.plan import Plan, make_plan
from jupyter_gpumem.budget.policy import Policy, parse
from jupyter_gpumem.budget.privacy import Rule
from jupyter_gpumem.budget.reading import Reading, reading
from jupyter_gpumem.budget.state import State
from jupyter_gpumem.frameworks import ADAPTERS
from jupyter_gpumem.gpu.model import Device, GpuProcess, MigDevice, Snapshot
from jupyter_gpumem.kernel.protocol import encode_sample, figures_only, hello, sample_message
from jupyter_gpumem.units import GiB, MiB

OWN_PID = 4242
GPU_A = "GPU-a1a1a1a1-0000-4000-8000-000000000001"
GPU_B = "GPU-b2b2b2b2-0000-4000-8000-000000000002"


def s1_snapshot(taken_at: float = 1763740800.0, own_bytes: int = 3200 * MiB) -> Snapshot:
    """S1 after `%gpumem fraction=0.5 gpus=1`: this kernel on GPU 1 only, GPU 0 busy with others."""
    return Snapshot(
        taken_at=taken_at,
        own_pid=OWN_PID,
        driver_version="537.58",
        simulated_scenario="s1_two_gpus.scenario",
        devices=(
            Device(
                index=0,
                uuid=GPU_A,
                name="NVIDIA GeForce GTX 1080 Ti",
                total_bytes=11422 * MiB,
                used_bytes=6063 * MiB,
                utilization_percent=97,
                processes=(GpuProcess(788, GPU_A, 5927 * MiB, "compute", "python.exe", "bob", 163.5, False),),
            ),
            Device(
                index=1,
                uuid=GPU_B,
                name="NVIDIA GeForce GTX 1080",
                total_bytes=8192 * MiB,
                used_bytes=330 * MiB + own_bytes + 380 * MiB,
                utilization_percent=35,
                processes=(
                    GpuProcess(OWN_PID, GPU_B, own_bytes, "compute", "python", "alice", 98.25, True),
                    GpuProcess(1204, GPU_B, None, "graphics", "dwm.exe", None, None, False),
                    GpuProcess(
                        6200, GPU_B, 380 * MiB, "compute", "<img src=x onerror=alert(1)>", "mallory", 0.0, False
                    ),
                ),
            ),
        ),
    )


ESTIMATE = Overhead(400 * MiB, "estimated", "TensorFlow on Pascal (compute 6.1)")


def s1_sample(taken_at: float = 1763740800.0, own_bytes: int = 4200 * MiB) -> dict[str, object]:
    return encode_sample(s1_reading(taken_at, own_bytes))


def s1_reading(taken_at: float = 1763740800.0, own_bytes: int = 4200 * MiB) -> Reading:
    """Planned with 400 MiB set aside; TensorFlow's pool is its whole limit (growth off)."""
    snapshot = s1_snapshot(taken_at, own_bytes)
    plan = make_plan(parse(["fraction=0.5", "gpus=1"]), snapshot, lambda device: ESTIMATE)
    pool = plan.gpus[0].allocator_limit_bytes
    allocator = Allocator(own_bytes - 1200 * MiB, own_bytes - 1000 * MiB, pool)
    measured = Overhead(own_bytes - (pool or 0), "measured", "NVML's figure minus TensorFlow's pool")
    return reading(
        snapshot,
        applied(plan, "tensorflow"),
        started=True,
        allocators={GPU_B: allocator},
        measured=lambda uuid: measured if uuid == GPU_B else None,
    )


def two_frameworks_sample() -> dict[str, object]:
    return encode_sample(two_frameworks_reading())


def two_frameworks_reading() -> Reading:
    """S1 with PyTorch imported beside TensorFlow: the plan applied to both, named together, in English in
    ``framework`` and as a code in ``framework_said`` (which the sidebar words in its language)."""
    snapshot = s1_snapshot()
    plan = make_plan(parse(["fraction=0.5", "gpus=1"]), snapshot, lambda device: ESTIMATE)
    adapters = (ADAPTERS["tensorflow"](), ADAPTERS["pytorch"]())
    state = State(plan.policy, plan, adapters, True, label(adapters)[0], applied_at=1763740700.0)
    return reading(snapshot, state, started=True, allocators={}, measured=lambda uuid: None)


def applied(plan: Plan, framework: str) -> State:
    """``plan`` applied to that framework (the controller's State after `import`)."""
    adapter = ADAPTERS[framework]()
    return State(plan.policy, plan, (adapter,), True, adapter.name, applied_at=1763740700.0)


def no_plan(snapshot: Snapshot) -> Reading:
    """No policy, every framework installed and none imported (framework=auto)."""
    state = State(Policy(), None, tuple(a() for a in ADAPTERS.values()), False, None)
    return reading(snapshot, state, started=False, allocators={}, measured=lambda uuid: None)


def lost_sample() -> dict[str, object]:
    return encode_sample(lost_reading())


def lost_reading() -> Reading:
    """`%gpumem fraction=0.4` applied to PyTorch on two A10s; then GPU 1 fell off the bus. GPU 0 keeps
    its budget; GPU 1 is lost: nothing of it can be read, and no budget is in force there."""
    a10 = {"name": "NVIDIA A10", "total_bytes": 23028 * MiB, "used_bytes": 1200 * MiB, "compute_capability": (8, 6)}
    own = (GpuProcess(OWN_PID, GPU_A, 900 * MiB, "compute", "python", "alice", 100.0, True),)
    healthy = (Device(index=0, uuid=GPU_A, processes=own, **a10), Device(index=1, uuid=GPU_B, **a10))  # type: ignore[arg-type]
    plan = make_plan(parse(["fraction=0.4"]), Snapshot(1763740700.0, OWN_PID, healthy), lambda device: ESTIMATE)
    snapshot = Snapshot(
        taken_at=1763740801.5,
        own_pid=OWN_PID,
        devices=(healthy[0], Device(index=1, uuid=GPU_B, name="NVIDIA A10", lost=True)),
    )
    return reading(snapshot, applied(plan, "pytorch"), started=True, allocators={}, measured=lambda u: None)


def no_driver_sample() -> dict[str, object]:
    return encode_sample(no_driver_reading())


def no_driver_reading() -> Reading:
    snapshot = Snapshot(
        taken_at=1763740802.0,
        own_pid=OWN_PID,
        problem="No NVIDIA driver is loaded on this machine, so there is no GPU to show.",
    )
    return no_plan(snapshot)


GPU_C = "GPU-c3c3c3c3-0000-4000-8000-000000000003"
OUTER_PID = 812345  # this kernel as the driver lists it: its PID in the host's namespace


def container_sample() -> dict[str, object]:
    return encode_sample(container_reading())


def container_reading() -> Reading:
    """A kernel in a container whose PIDs the driver does not translate (none of the listed PIDs is a
    process there), `%gpumem limit=6GiB` applied to PyTorch, which has started on three GPUs.
    GPU 0: MPS caps this process at 6 GiB (hard); its host PID appeared when PyTorch started and moved with
    its pool: matched. GPU 1: a MIG partition (hard); PyTorch has no pool there: unknown. GPU 2: two listed
    processes appeared with PyTorch and both follow its pool, so none is taken: estimated."""
    a10 = {"name": "NVIDIA A10", "total_bytes": 23028 * MiB, "compute_capability": (8, 6)}

    def foreign(pid: int, uuid: str, mib: int | None) -> GpuProcess:
        return GpuProcess(pid, uuid, None if mib is None else mib * MiB, "compute", "python", None, None, False, False)

    devices = (
        Device(
            index=0,
            uuid=GPU_A,
            used_bytes=9000 * MiB,
            processes=(foreign(OUTER_PID, GPU_A, 3500), foreign(700001, GPU_A, 5400)),
            **a10,  # type: ignore[arg-type]
        ),
        Device(
            index=1,
            uuid=GPU_B,
            name="NVIDIA A100-SXM4-40GB",
            total_bytes=40960 * MiB,
            used_bytes=5120 * MiB,
            compute_capability=(8, 0),
            mig_enabled=True,
            mig_devices=(MigDevice("MIG-22222222-0000-4000-8000-000000000002", 19968 * MiB, 5120 * MiB),),
            processes=(foreign(700002, GPU_B, None),),
        ),
        Device(
            index=2,
            uuid=GPU_C,
            used_bytes=4000 * MiB,
            processes=(foreign(700003, GPU_C, 2000), foreign(700004, GPU_C, 2000)),
            **a10,  # type: ignore[arg-type]
        ),
    )
    snapshot = Snapshot(taken_at=1763740803.0, own_pid=57, devices=devices, host_pid_namespace=False)
    plan = make_plan(parse(["limit=6GiB"]), snapshot, lambda device: ESTIMATE)
    pools = {GPU_A: Allocator(2800 * MiB, 2900 * MiB, 3072 * MiB), GPU_C: Allocator(1200 * MiB, 1300 * MiB, 1536 * MiB)}
    limits = Limits(
        {GPU_A: Limit("mps", 6 * GiB), GPU_B: Limit("mig", 19968 * MiB), GPU_C: Limit("cooperative", 6 * GiB)},
        mps_server=True,
        pinned={0: 6 * GiB, 2: 6 * GiB},
    )
    return reading(
        snapshot,
        applied(plan, "pytorch"),
        started=True,
        allocators=pools,
        measured=lambda uuid: None,
        matches={GPU_A: Match(OUTER_PID, 1), GPU_B: Match(None, 0), GPU_C: Match(None, 2)},
        overhead=lambda device: REMEMBERED,
        limits=limits,
    )


REMEMBERED = Overhead(
    464 * MiB, "remembered", "measured by an earlier kernel (NVIDIA A10 | driver 550.54.15 | PyTorch)"
)


def hidden_sample() -> dict[str, object]:
    return encode_sample(hidden_reading())


def hidden_reading() -> Reading:
    """A kernel in a container with a driver that translates PIDs into it and hides other containers'
    processes: this kernel is listed (exact), and 14 GiB of the GPU's memory belongs to no listed process.
    An MPS server is in use and no framework has started: the sidebar offers mps=on."""
    own = GpuProcess(57, GPU_A, 3000 * MiB, "compute", "python", "jovyan", 12.5, True, True)
    device = Device(
        index=0,
        uuid=GPU_A,
        name="NVIDIA A10",
        total_bytes=23028 * MiB,
        used_bytes=17336 * MiB,
        compute_capability=(8, 6),
        processes=(own,),
    )
    snapshot = Snapshot(taken_at=1763740804.0, own_pid=57, devices=(device,), host_pid_namespace=False)
    state = State(Policy(), None, tuple(a() for a in ADAPTERS.values()), False, None)
    return reading(
        snapshot, state, started=False, allocators={}, measured=lambda uuid: None, limits=Limits(mps_server=True)
    )


# What the server's idle culler tells the kernel's user (publish.Publisher.notice).
IDLE_NOTICE = {
    "kind": "idle_warning",
    "text": "This kernel has held 3.1 GiB of GPU memory while idle for 30 min; it will be shut down at 14:35.",
    "t": 1763740790.0,
    "shutdown_at": 1763742600.0,
}


def privacy_sample() -> dict[str, object]:
    return encode_sample(privacy_reading(), IDLE_NOTICE)


def privacy_reading() -> Reading:
    """S1 as alice's kernel shows it under a hub with privacy "names": bob's, mallory's and an unnamed
    process summed per user, hers listed; the server's idle culler has warned her."""
    snapshot = s1_snapshot()
    state = State(Policy(), None, (ADAPTERS["tensorflow"](),), True, "TensorFlow")
    privacy = Rule("names", "alice")
    return reading(snapshot, state, started=False, allocators={}, measured=lambda uuid: None, privacy=privacy)


def stalled_sample() -> dict[str, object]:
    return encode_sample(stalled_reading())


def stalled_reading() -> Reading:
    """S1 asked for 12 s after the driver last answered (gpu/reader.py): the figures it gave then, marked with when
    (``stalled_since``, the field release 0.2.0 added to the protocol)."""
    fresh = s1_reading()
    snapshot = replace(fresh.snapshot, taken_at=fresh.snapshot.taken_at + 12.0, stalled_since=fresh.snapshot.taken_at)
    return replace(fresh, snapshot=snapshot)


def hello_message() -> object:
    """The hello a sidebar gets: two samples of history, figures only."""
    history = [figures_only(s1_sample(1763740798.0, 3900 * MiB)), figures_only(s1_sample(1763740799.0, 4000 * MiB))]
    return hello(1.0, 900.0, history)


# Each file of tests/fixtures/protocol/ that the encoder emits, and what makes it: tests/wire/write_samples.py writes
# them, tests/kernel/test_protocol.py holds the encoder to them.
MESSAGES: dict[str, Callable[[], object]] = {
    "hello.json": hello_message,
    "sample.json": lambda: sample_message(s1_sample()),
    "sample_lost_gpu.json": lambda: sample_message(lost_sample()),
    "sample_no_driver.json": lambda: sample_message(no_driver_sample()),
    "sample_two_frameworks.json": lambda: sample_message(two_frameworks_sample()),
    "sample_stalled.json": lambda: sample_message(stalled_sample()),
    "sample_container.json": lambda: sample_message(container_sample()),
    "sample_hidden.json": lambda: sample_message(hidden_sample()),
    "sample_privacy.json": lambda: sample_message(privacy_sample()),
}
