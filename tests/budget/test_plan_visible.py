"""A kernel started with a plain CUDA_VISIBLE_DEVICES (a hub's spawner gives each user their GPUs: "1", "0,2",
"GPU-<uuid>") plans on those GPUs only, and gpus= cannot reach past them. NVML still lists every GPU of the machine."""

from __future__ import annotations

import pytest
from controller_fixtures import GPU_A, GPU_B, Framework, Machine, a100, make  # noqa: F401 (make: a fixture)

from jupyter_gpumem.budget.environ import EnvironmentChanges
from jupyter_gpumem.budget.framework_interface import Allocator
from jupyter_gpumem.budget.overhead import Overhead
from jupyter_gpumem.budget.plan import make_plan
from jupyter_gpumem.budget.policy import PolicyError, parse
from jupyter_gpumem.gpu.model import Device, MigDevice, Snapshot
from jupyter_gpumem.units import GiB, MiB

OVERHEAD = Overhead(450 * MiB, "estimated", "a test figure")
GPU_C = "GPU-c3c3c3c3-0000-4000-8000-000000000003"
ORDER_NOTE = "CUDA may number them in another order than nvidia-smi"


def a10(index: int, uuid: str, name: str = "NVIDIA A10") -> Device:
    return Device(index, uuid, name, total_bytes=24 * GiB)


SAME = (a10(0, GPU_A), a10(1, GPU_B), a10(2, GPU_C))  # all one model: CUDA's default order is NVML's
MIXED = (a10(0, GPU_A), a10(1, GPU_B, "NVIDIA L4"), a10(2, GPU_C))


def plan(line: str, visible: str | None, devices: tuple[Device, ...] = SAME, order: str | None = None):
    snapshot = Snapshot(taken_at=0.0, own_pid=1, devices=devices)
    return make_plan(parse(line.split()), snapshot, lambda device: OVERHEAD, visible=visible, order=order)


def indices(gpus) -> list[int]:
    return [g.index for g in gpus]


@pytest.mark.parametrize(
    ("visible", "planned"),
    [
        ("1", [1]),
        ("0,2", [0, 2]),
        (" 2 , 0 ", [0, 2]),  # spaces around entries are CUDA's to ignore; the plan is in NVML order
        (GPU_B, [1]),
        ("GPU-c3c3", [2]),  # a prefix that only one GPU's UUID has, as CUDA takes it
        (f"GPU-c3c3,{GPU_A}", [0, 2]),
        ("1,7,0", [1]),  # CUDA stops at the first entry that names no GPU
        ("1,GPU-ffff,0", [1]),
        ("1,1,0", [1]),  # and at one it already named
        ("2,MIG,0", [2]),
    ],
)
def test_a_fraction_plans_only_on_the_gpus_the_kernel_started_with(visible, planned):
    made = plan("fraction=0.5", visible)
    assert indices(made.gpus) == planned
    assert indices(made.hidden) == [i for i in (0, 1, 2) if i not in planned]
    assert all(g.budget_bytes == 12 * GiB for g in made.gpus)
    assert made.cuda_visible_devices is None  # no gpus= given: the server's CUDA_VISIBLE_DEVICES stays as it is
    assert made.notes == () and made.no_gpu is None


@pytest.mark.parametrize("visible", ["-1", "", " ", "7", "GPU-", "GPU-ffff", "-1,0"])
def test_a_list_that_names_no_gpu_leaves_the_kernel_none_and_says_why(visible):
    made = plan("fraction=0.5", visible)
    assert made.gpus == () and indices(made.hidden) == [0, 1, 2]
    assert made.no_gpu == (
        f"This kernel started with CUDA_VISIBLE_DEVICES={visible}, which names none of this machine's GPUs, so CUDA "
        "gives it none."
    )


def test_without_cuda_visible_devices_every_gpu_is_planned_as_before():
    made = plan("fraction=0.5", None, MIXED)
    assert indices(made.gpus) == [0, 1, 2] and made.hidden == () and made.notes == ()
    assert plan("fraction=0.5 gpus=0", None).cuda_visible_devices == GPU_A


@pytest.mark.parametrize(
    ("visible", "line", "sentence"),
    [
        (
            "1",
            "fraction=0.5 gpus=0",
            "gpus=0: this kernel started with CUDA_VISIBLE_DEVICES=1, so it can use GPU 1 only (the GPU the server "
            "gave it); pick it, or ask whoever runs the server for others.",
        ),
        (
            "0,2",
            f"gpus=0,{GPU_B}",
            f"gpus=0,{GPU_B}: this kernel started with CUDA_VISIBLE_DEVICES=0,2, so it can use GPUs 0 and 2 only (the "
            "GPUs the server gave it); pick from those, or ask whoever runs the server for others.",
        ),
        (
            GPU_B,
            "gpus=5",
            f"gpus=5: this kernel started with CUDA_VISIBLE_DEVICES={GPU_B}, so it can use GPU 1 only",
        ),
        (
            "-1",
            "gpus=0",
            "gpus=0: this kernel started with CUDA_VISIBLE_DEVICES=-1, so it can use no GPU (the server gave it none); "
            "leave gpus= out, or ask whoever runs the server for a GPU.",
        ),
    ],
)
def test_gpus_outside_the_ones_the_kernel_started_with_are_refused(visible, line, sentence):
    with pytest.raises(PolicyError) as refused:
        plan(line, visible)
    assert str(refused.value).startswith(sentence)


def test_gpus_among_the_ones_the_kernel_started_with_are_made_visible_by_uuid():
    made = plan("fraction=0.5 gpus=2", "0,2")
    assert indices(made.gpus) == [2] and indices(made.hidden) == [0, 1]
    assert made.cuda_visible_devices == GPU_C
    assert plan(f"gpus={GPU_A}", "GPU-a1a1").cuda_visible_devices == GPU_A
    assert plan("gpus=none", "1").cuda_visible_devices == "-1"


@pytest.mark.parametrize(
    ("visible", "devices", "order", "noted"),
    [
        ("1", MIXED, None, True),  # CUDA counts fastest first: an L4 and two A10s may not count in PCI order
        ("1", MIXED, "FASTEST_FIRST", True),
        ("1", MIXED, "PCI_BUS_ID", False),
        ("1", SAME, None, False),  # equal GPUs count in PCI order either way
        (GPU_B, MIXED, None, False),  # a UUID names one GPU whatever the order
        ("-1", MIXED, None, False),
    ],
)
def test_indices_whose_order_cuda_may_count_otherwise_are_planned_as_nvml_counts_with_a_note(
    visible, devices, order, noted
):
    made = plan("fraction=0.5", visible, devices, order)
    assert indices(made.gpus) == ([1] if visible != "-1" else [])
    assert [n.code for n in made.notes] == (["cuda_order_uncertain"] if noted else [])
    if noted:
        assert str(made.notes[0]).startswith("This kernel started with CUDA_VISIBLE_DEVICES=1 (GPUs by index) and")
        assert "start the kernel with CUDA_DEVICE_ORDER=PCI_BUS_ID, or with GPU UUIDs in CUDA_VISIBLE_DEVICES" in str(
            made.notes[0]
        )


def test_a_refusal_on_indices_of_uncertain_order_says_so_too():
    with pytest.raises(PolicyError, match=f"so it can use GPU 1 only .*{ORDER_NOTE}"):
        plan("gpus=0", "1", MIXED)


def test_a_mig_slice_named_in_cuda_visible_devices_is_still_planned_on_its_own_gpu():
    slice_ = MigDevice("MIG-11111111-0000-4000-8000-000000000001", 5 * GiB, 0, gpu_instance_id=7)
    sliced = Device(1, GPU_B, "NVIDIA A100", total_bytes=40 * GiB, mig_enabled=True, mig_devices=(slice_,))
    made = plan("fraction=0.5 gpus=1", slice_.uuid or "", (a10(0, GPU_A), sliced))
    (gpu,) = made.gpus
    assert (gpu.index, gpu.slice, gpu.budget_bytes) == (1, slice_, int(2.5 * GiB))
    assert made.cuda_visible_devices == slice_.uuid and indices(made.hidden) == [0] and made.notes == ()


# ---------------------------------------------------------------------- the Controller: what it passes on


def test_the_controller_plans_with_the_variables_the_kernel_started_with(make):  # noqa: F811
    environment = {"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    machine = Machine(a100(0, GPU_A), Device(1, GPU_B, "NVIDIA L4", total_bytes=24 * GiB))
    tf = Framework("TensorFlow")
    control = make(machine, tf)
    control._environment = EnvironmentChanges(environment)
    before = control.state
    with pytest.raises(PolicyError, match="gpus=0: this kernel started with CUDA_VISIBLE_DEVICES=1"):
        control.request(parse(["fraction=0.5", "gpus=0"]))
    assert control.state == before and environment == {"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    lines = control.request(parse(["fraction=0.5"]))
    assert not any(ORDER_NOTE in line for line in lines)  # PCI_BUS_ID: the index is NVML's
    assert control.state.plan is not None and indices(control.state.plan.gpus) == [1]
    # Its framework's GPU:0 is NVML's GPU 1: its memory shows there, not on GPU 0.
    tf.is_imported = tf.started = True
    tf.pools = (Allocator(in_use=100 * MiB, peak=100 * MiB, pool=200 * MiB),)
    reading = control.read(machine())
    assert control.framework_uuids(reading) == [GPU_B]


@pytest.mark.kernel
def test_a_kernel_given_gpu_1_plans_there_and_cannot_take_gpu_0(kernel_with):
    kernel = kernel_with("s1_two_gpus", env={"CUDA_VISIBLE_DEVICES": "1"})
    assert kernel.run("%load_ext jupyter_gpumem").status == "ok"
    said = kernel.run("%gpumem fraction=0.5")
    assert said.status == "ok", said
    assert "GPU 1 NVIDIA GeForce GTX 1080: budget 4096 MiB" in said.stdout, said.stdout
    assert "GPU 0 NVIDIA GeForce GTX 1080 Ti: budget" not in said.stdout
    assert ORDER_NOTE in said.stdout  # a 1080 Ti and a 1080, and no CUDA_DEVICE_ORDER: the index may mislead
    refused = kernel.run("%gpumem fraction=0.5 gpus=0")
    shown = refused.stdout + refused.stderr + refused.error
    assert "gpus=0: this kernel started with CUDA_VISIBLE_DEVICES=1, so it can use GPU 1 only" in shown, shown
    env = kernel.run("import os; print(os.environ['CUDA_VISIBLE_DEVICES'])").stdout.strip()
    assert env == "1"
