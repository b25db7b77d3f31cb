"""Which limits are hard: MIG partitions and MPS pinned limits (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT), and
`%gpumem … mps=on`, which makes the budget this process's MPS limit before CUDA starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from controller_fixtures import GPU_A, GPU_B, Framework, Machine, a100

from jupyter_gpumem.budget.config import GpumemConfig
from jupyter_gpumem.budget.environ import EnvironmentChanges
from jupyter_gpumem.budget.limits import PINNED, PIPE, Limit, PinnedError, cuda_order, format_pinned, parse_pinned, read
from jupyter_gpumem.budget.overhead import Calibration
from jupyter_gpumem.budget.policy import Policy, PolicyError, parse
from jupyter_gpumem.gpu.model import Device, MigDevice, Snapshot
from jupyter_gpumem.kernel import protocol
from jupyter_gpumem.kernel.control import Controller
from jupyter_gpumem.units import GiB, MiB

# ---------------------------------------------------------------------- CUDA_MPS_PINNED_DEVICE_MEM_LIMIT


@pytest.mark.parametrize(
    ("text", "limits"),
    [
        ("0=1G,1=512MB", {0: GiB, 1: 512 * MiB}),
        ("0=2048M", {0: 2048 * MiB}),
        (" 1 = 1.5G ", {1: 1536 * MiB}),
        ("0=4gb,2=100K", {0: 4 * GiB, 2: 100 * 1024}),
        ("3=1T", {3: 1 << 40}),
    ],
)
def test_pinned_limits_are_read_per_device_ordinal(text, limits):
    assert parse_pinned(text) == limits


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "it is empty"),
        ("1G", "'1G' does not start with a device ordinal and '='"),
        ("-1=1G", "'-1=1G' does not start with a device ordinal and '='"),
        ("gpu0=1G", "'gpu0=1G' does not start with a device ordinal and '='"),
        ("0=", "'' is not a size with a unit: K, M, G or T"),
        ("0=1024", "'1024' is not a size with a unit: K, M, G or T"),
        ("0=1GiB", "'1GiB' is not a size with a unit: K, M, G or T"),
        ("0=1G,", "'' does not start with a device ordinal and '='"),
        ("0=0G", "the limit of device 0 is zero"),
        ("0=1G,0=2G", "device 0 is given twice"),
    ],
)
def test_a_pinned_limit_in_another_form_is_refused_with_a_sentence(text, why):
    with pytest.raises(PinnedError) as refused:
        parse_pinned(text)
    assert str(refused.value) == (
        f"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT={text} is not in the form 0=1G,1=512MB ({why}), so jupyter-gpumem "
        "cannot tell this process's MPS limit"
    )


def test_pinned_limits_are_written_in_whole_mib_and_read_back():
    limits = {1: 512 * MiB, 0: 4 * GiB + 123}
    assert format_pinned(limits) == "0=4096MB,1=512MB"
    assert parse_pinned(format_pinned(limits)) == {0: 4 * GiB, 1: 512 * MiB}


def test_cuda_ordinals_follow_cuda_visible_devices_as_cuda_reads_it():
    devices = [(1, GPU_B), (0, GPU_A)]
    assert cuda_order(None, devices) == [GPU_A, GPU_B]
    assert cuda_order("1,0", devices) == [GPU_B, GPU_A]
    assert cuda_order("GPU-b2b2", devices) == [GPU_B]  # a unique prefix, as CUDA accepts
    assert cuda_order("0,-1,1", devices) == [GPU_A]  # CUDA stops at the first entry that names no GPU
    assert cuda_order("GPU-,1", devices) == []  # a prefix that names two GPUs names none
    assert cuda_order("1,1", devices) == [GPU_B]


# ---------------------------------------------------------------------- the limit kind per GPU


def mig_a100(*partitions: MigDevice) -> Device:
    return Device(
        0,
        GPU_A,
        "NVIDIA A100-SXM4-80GB",
        total_bytes=81920 * MiB,
        used_bytes=0,
        mig_enabled=True,
        mig_devices=partitions,
    )


def mps_server(tmp_path: Path) -> dict[str, str]:
    """An environment whose MPS pipe directory holds a control daemon's pipe."""
    pipe = tmp_path / "mps"
    pipe.mkdir(exist_ok=True)
    (pipe / "control").touch()
    return {PIPE: str(pipe)}


def test_a_mig_partition_is_hard_and_its_size_is_the_one_cuda_is_given():
    big = MigDevice("MIG-11111111-0000-4000-8000-000000000001", 40192 * MiB, 0)
    small = MigDevice("MIG-22222222-0000-4000-8000-000000000002", 19968 * MiB, 0)
    snapshot = Snapshot(0.0, 1, (mig_a100(big, small),))
    chosen = read(snapshot, {"CUDA_VISIBLE_DEVICES": small.uuid or ""}, {})
    assert chosen.gpus[GPU_A] == Limit("mig", 19968 * MiB) and chosen.gpus[GPU_A].hard
    assert read(snapshot, {}, {}).gpus[GPU_A] == Limit("mig", None)  # two partitions, none named
    assert read(Snapshot(0.0, 1, (mig_a100(small),)), {}, {GPU_A: GiB}).gpus[GPU_A] == Limit("mig", 19968 * MiB)
    assert Limit("mig", None).describe() == "hard: a MIG partition (which one is not known)"


def test_an_mps_limit_is_hard_only_where_an_mps_server_is_in_use(tmp_path):
    snapshot = Snapshot(0.0, 1, (a100(0, GPU_A), a100(1, GPU_B)))
    served = read(snapshot, {**mps_server(tmp_path), PINNED: "1=2G"}, {GPU_A: 4 * GiB})
    assert served.gpus == {GPU_A: Limit("cooperative", 4 * GiB), GPU_B: Limit("mps", 2 * GiB)}
    assert not served.gpus[GPU_A].hard and served.gpus[GPU_B].hard and served.problems == ()
    alone = read(snapshot, {PIPE: str(tmp_path / "none"), PINNED: "1=2G"}, {})
    assert alone.gpus == {} and alone.problems == (
        f"{PINNED} is set, but no MPS server is in use here (no control pipe in {tmp_path / 'none'}), so it limits "
        "nothing.",
    )
    bad = read(snapshot, {**mps_server(tmp_path), PINNED: "2G"}, {})
    assert bad.gpus == {} and bad.problems[0].startswith(f"{PINNED}=2G is not in the form 0=1G,1=512MB")
    visible = read(snapshot, {**mps_server(tmp_path), PINNED: "0=2G", "CUDA_VISIBLE_DEVICES": "1"}, {})
    assert visible.gpus == {GPU_B: Limit("mps", 2 * GiB)}  # ordinal 0 is the first GPU CUDA is given


# ---------------------------------------------------------------------- %gpumem … mps=on


def test_mps_is_a_setting_of_its_own():
    assert parse(["fraction=0.4", "mps=on"]) == Policy(fraction=0.4, mps=True)
    assert parse(["mps=on"]).describe() == "mps=on"
    assert Policy(mps=True).then(parse(["growth=on"])).mps is True
    with pytest.raises(PolicyError, match=r"^mps=maybe is not on or off; use mps=on or mps=off\.$"):
        parse(["mps=maybe"])
    with pytest.raises(PolicyError, match="gpus=none and mps=on contradict each other"):
        parse(["gpus=none", "mps=on"])


@pytest.fixture
def kernel(tmp_path):
    """kernel(environment, *frameworks) -> a Controller on two A100s whose environment is ``environment``."""
    made = []

    def start(environ: dict[str, str], *frameworks: Framework) -> Controller:
        control = Controller(
            GpumemConfig(),
            adapters={f.name.lower(): f for f in frameworks or (Framework("TensorFlow"),)},
            snapshot=Machine(a100(0, GPU_A), a100(1, GPU_B)),
            calibration=Calibration(tmp_path / "overhead.json"),
            environment=EnvironmentChanges(environ),
        )
        made.append(control)
        return control

    yield start
    for control in made:
        control.close()


def test_mps_on_without_an_mps_server_is_refused_and_nothing_changes(kernel, tmp_path):
    environ = {PIPE: str(tmp_path / "none")}
    control = kernel(environ)
    with pytest.raises(PolicyError) as refused:
        control.request(parse(["fraction=0.25", "mps=on"]))
    assert str(refused.value) == (
        f"mps=on needs an MPS server, and none is in use here (no control pipe in {tmp_path / 'none'}): an "
        "administrator starts one (nvidia-cuda-mps-control -d; docs/containers.md). Without it %gpumem's budget is "
        "cooperative."
    )
    assert control.state.policy == Policy() and environ == {PIPE: str(tmp_path / "none")}


def test_mps_on_needs_a_budget_and_a_cuda_that_has_not_started(kernel, tmp_path):
    control = kernel(mps_server(tmp_path))
    with pytest.raises(PolicyError, match=r"^mps=on caps each GPU at this kernel's budget, and no budget is set"):
        control.request(parse(["mps=on"]))
    torch = Framework("PyTorch")
    torch.is_imported = torch.started = True
    late = kernel(mps_server(tmp_path), Framework("TensorFlow"), torch)
    with pytest.raises(PolicyError) as refused:
        late.request(parse(["framework=tensorflow", "fraction=0.25", "mps=on"]))
    assert str(refused.value) == (
        f"mps=on is too late: PyTorch started CUDA in this kernel, and CUDA reads {PINNED} only when it starts. "
        "Restart the kernel and run %gpumem fraction=0.25 framework=tensorflow mps=on first."
    )


def test_mps_on_makes_the_budget_this_processs_pinned_limit_in_cuda_order(kernel, tmp_path):
    environ = mps_server(tmp_path)
    control = kernel(environ)
    lines = control.request(parse(["limit=4GiB", "mps=on"]))
    assert environ[PINNED] == "0=4096MB,1=4096MB" and environ["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert lines[-1] == (
        f"  MPS: {PINNED}=0=4096MB,1=4096MB, a hard cap on this process's memory per GPU from when CUDA starts "
        "(per process, not per container; it limits what MPS counts: docs/containers.md)."
    )
    sample = protocol.encode_sample(control.read(control.snapshot()))
    assert [(g["limit_kind"], g["limit_hard"], g["limit_bytes"]) for g in sample["gpus"]] == [
        ("mps", True, 4 * GiB)
    ] * 2
    assert "  GPU 1: hard: the MPS limit of 4096 MiB on this process's memory" in control.status_lines(
        control.read(control.snapshot())
    )
    control.request(parse(["gpus=1"]))  # GPU 1 is now CUDA's device 0
    assert (environ["CUDA_VISIBLE_DEVICES"], environ[PINNED]) == (GPU_B, "0=4096MB")
    control.request(parse(["limit=6GiB"]))  # its own earlier limit does not hold a new budget down
    assert environ[PINNED] == "0=6144MB"
    control.request(parse(["mps=off"]))
    assert PINNED not in environ


def test_an_administrators_lower_mps_limit_is_kept_and_reset_puts_it_back(kernel, tmp_path):
    environ = {**mps_server(tmp_path), PINNED: "0=1G"}
    control = kernel(environ)
    control.request(parse(["limit=4GiB", "mps=on"]))
    assert environ[PINNED] == "0=1024MB,1=4096MB"
    control.reset()
    assert environ[PINNED] == "0=1G"


def test_where_an_mps_server_is_in_use_status_and_the_sidebar_offer_mps_on(kernel, tmp_path):
    control = kernel(mps_server(tmp_path))
    control.request(parse(["fraction=0.25"]))
    reading = control.read(control.snapshot())
    offer = (
        "An MPS server is in use here: %gpumem fraction=0.25 mps=on, before CUDA starts, makes the budget a hard "
        "cap for this process (docs/containers.md)."
    )
    assert f"  {offer}" in control.status_lines(reading)
    assert protocol.encode_sample(reading)["limit_note"] == offer
    assert protocol.encode_sample(kernel({PIPE: str(tmp_path / "none")}).read(control.snapshot()))["limit_note"] is None


def test_mps_on_is_accepted_while_the_framework_is_imported_but_has_not_started_cuda(kernel, tmp_path):
    tf = Framework("TensorFlow")
    tf.is_imported = True  # imported: CUDA starts with its first operation, after the variables are set
    environ = mps_server(tmp_path)
    lines = kernel(environ, tf).request(parse(["limit=4GiB", "mps=on"]))
    assert environ[PINNED] == "0=4096MB,1=4096MB" and lines[-1].startswith(f"  MPS: {PINNED}=0=4096MB,1=4096MB")


def test_an_administrators_mps_limit_is_not_announced_for_a_budget_without_mps_on(kernel, tmp_path):
    environ = {**mps_server(tmp_path), PINNED: "0=1G"}
    lines = kernel(environ).request(parse(["limit=4GiB"]))
    assert not any("MPS:" in line for line in lines) and environ[PINNED] == "0=1G"
