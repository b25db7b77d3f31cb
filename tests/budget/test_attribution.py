"""This kernel's own memory where the driver's PIDs are not its own (containers): exact, matched, estimated
or unknown, and never 0 for unknown. Real kernels in a PID namespace: test_kernel_containers.py."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from controller_fixtures import GPU_A, OWN, Framework, Machine, make

from jupyter_gpumem.budget import reading as budget
from jupyter_gpumem.budget.attribution import APPEAR_S, Match, Matcher, Own, attribute, listed, pid_stance
from jupyter_gpumem.budget.framework_interface import Allocator
from jupyter_gpumem.budget.overhead import Overhead
from jupyter_gpumem.budget.policy import parse
from jupyter_gpumem.budget.state import State
from jupyter_gpumem.gpu.host import HostProcesses, _reads_as_host
from jupyter_gpumem.gpu.model import Device, GpuProcess, Snapshot
from jupyter_gpumem.kernel import protocol
from jupyter_gpumem.kernel.alerts import Alerts
from jupyter_gpumem.render.explain import explain
from jupyter_gpumem.render.text import render
from jupyter_gpumem.units import GiB, MiB
from jupyter_gpumem.words import Said

__all__ = ["make"]  # the fixture

HOST_PID = 812345  # this kernel as a driver that does not translate PIDs lists it
OTHER = 700001


def proc(pid: int, mib: int | None, *, local: bool | None = False, own: bool = False) -> GpuProcess:
    return GpuProcess(pid, GPU_A, None if mib is None else mib * MiB, "compute", "python", None, None, own, local)


def a10(*processes: GpuProcess, used_mib: int | None = None, known: bool = True) -> Device:
    used = used_mib if used_mib is not None else sum((p.used_bytes or 0) for p in processes) // MiB
    return Device(
        0,
        GPU_A,
        "NVIDIA A10",
        total_bytes=23028 * MiB,
        used_bytes=used * MiB,
        compute_capability=(8, 6),
        processes=processes,
        processes_known=known,
    )


def contained(*devices: Device, at: float = 1000.0) -> Snapshot:
    """A snapshot taken by a kernel in a PID namespace of its own."""
    return Snapshot(at, OWN, devices, host_pid_namespace=False)


class Samples:
    """Feeds a Matcher one sample a second, as the sampler thread does."""

    def __init__(self) -> None:
        self.matcher = Matcher()
        self.at = 1000.0

    def __call__(self, *processes: GpuProcess, pool_mib: int | None = None):
        self.at += 1.0
        started = [GPU_A] if pool_mib is not None else []
        pools = {GPU_A: None if pool_mib is None else pool_mib * MiB}
        return self.matcher.observe(contained(a10(*processes), at=self.at), pools, started)[GPU_A]


# ---------------------------------------------------------------------- where this kernel stands


def test_where_the_kernel_stands_is_read_from_its_namespace_and_the_pids_nvml_lists():
    host = Snapshot(0.0, OWN, (a10(proc(OTHER, 900)),), host_pid_namespace=True)
    assert pid_stance(host) == "host"
    assert pid_stance(contained(a10(proc(OWN, 900, local=True, own=True)))) == "translated"
    assert pid_stance(contained(a10(proc(OTHER, 900, local=True)))) == "translated"  # a neighbour, by its PID here
    assert pid_stance(contained(a10(proc(HOST_PID, 900), proc(OTHER, 500)))) == "untranslated"
    assert pid_stance(contained(a10())) == "unlisted"
    assert pid_stance(contained(a10(proc(OTHER, 900, local=None)))) == "unlisted"  # a PID whose program is not told
    assert pid_stance(Snapshot(0.0, OWN, problem="No driver")) is None


def test_the_host_pid_namespace_is_where_pid_2_is_kthreadd(tmp_path: Path):
    (tmp_path / "self").mkdir()
    assert not _reads_as_host(tmp_path)  # no PID 2 at all: a small container
    (tmp_path / "2").mkdir()
    (tmp_path / "2" / "stat").write_text("2 (sleep) S 1 1 1 0 -1 4194560 97 0 0 0 0 0 0 0 20 0 1 0\n")
    assert not _reads_as_host(tmp_path)
    (tmp_path / "2" / "stat").write_text("2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0\n")
    assert _reads_as_host(tmp_path)
    assert _reads_as_host(tmp_path / "elsewhere")  # no /proc: no PID namespaces to tell apart


def test_a_pid_is_local_only_where_it_runs_the_program_the_driver_names():
    me = os.getpid()
    missing = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1  # no process can have it
    names = {me: "/usr/bin/python3", missing: "python", 1: "python"}
    found = HostProcesses().lookup([me, missing, 1], names.get)
    program = Path(f"/proc/{me}/comm").read_text().strip()
    assert found[me].local is program.startswith("python")
    assert found[missing].local is False  # a PID of another namespace
    assert found[1].local is False  # PID 1 here runs another program: the driver's PID is someone else's
    assert HostProcesses().lookup([me], lambda pid: None)[me].local is None  # nothing to compare with


# ---------------------------------------------------------------------- the figure, in order


def figure(device: Device, snapshot: Snapshot | None = None, **options):
    settings = {"started": False, "allocator": None, "framework": "PyTorch"}
    settings.update(options)
    snapshot = snapshot or contained(device)
    aside = Overhead(464 * MiB, "remembered", "measured by an earlier kernel")
    return attribute(device, pid_stance(snapshot), None, overhead=lambda: aside, **settings)


def test_in_a_container_whose_pids_are_not_translated_the_figure_is_unknown_until_it_can_be_estimated():
    device = a10(proc(HOST_PID, 3000), proc(OTHER, 2000))
    before = figure(device)
    assert (before.bytes, before.source) == (None, "unknown")
    assert before.reason == (
        "this kernel runs in a container whose PIDs the driver does not translate, and PyTorch has not started, "
        "so there is nothing to estimate"
    )
    started = figure(device, started=True, allocator=Allocator(2000 * MiB, 2100 * MiB, 2560 * MiB))
    assert (started.bytes, started.source) == ((2560 + 464) * MiB, "estimated")
    assert started.reason.startswith("PyTorch's pool 2560 MiB + 464 MiB outside it (remembered: ")
    no_pool = figure(device, started=True, allocator=Allocator(2000 * MiB, 2100 * MiB, None))
    assert (no_pool.bytes, no_pool.source) == (None, "unknown") and "does not tell its pool" in no_pool.reason


def test_where_the_pids_are_this_namespaces_a_kernel_not_listed_holds_exactly_nothing():
    device = a10(proc(OTHER, 2000, local=True))
    assert (figure(device).bytes, figure(device).source) == (0, "exact")
    on_host = Snapshot(0.0, OWN, (a10(proc(OTHER, 2000)),))  # a snapshot made by hand: the host's namespace
    assert figure(on_host.devices[0], on_host).bytes == 0


def test_what_nvml_cannot_tell_is_unknown_with_its_reason():
    na = figure(a10(proc(OWN, None, local=True, own=True)))
    assert (na.bytes, na.source, na.pid) == (None, "unknown", OWN) and "N/A" in na.reason
    refused = figure(a10(known=False))
    assert (refused.bytes, refused.source) == (None, "unknown")
    lost = Device(0, GPU_A, "NVIDIA A10", lost=True)
    assert (figure(lost).bytes, figure(lost).source) == (None, "unknown")


# ---------------------------------------------------------------------- matching over samples


def test_the_one_process_that_appears_with_the_framework_and_follows_its_pool_is_matched():
    sample = Samples()
    sample(proc(OTHER, 2000))  # before the framework starts: OTHER was there already
    sample(proc(OTHER, 2000))
    started = sample(proc(OTHER, 2000), proc(HOST_PID, 2548), pool_mib=2048)
    assert (started.pid, started.candidates) == (None, 1)  # appeared, but has not followed a move yet
    assert sample(proc(OTHER, 2000), proc(HOST_PID, 2548), pool_mib=2048).pid is None
    grown = sample(proc(OTHER, 2000), proc(HOST_PID, 3572), pool_mib=3072)
    assert (grown.pid, grown.candidates) == (HOST_PID, 1)
    shrunk = sample(proc(OTHER, 2000), proc(HOST_PID, 1524), pool_mib=1024)  # empty_cache(): back together
    assert shrunk.pid == HOST_PID


def test_two_processes_that_both_follow_the_pool_are_never_matched():
    sample = Samples()
    sample()
    sample(proc(HOST_PID, 2548), proc(OTHER, 2548), pool_mib=2048)
    both = sample(proc(HOST_PID, 3572), proc(OTHER, 3572), pool_mib=3072)
    assert (both.pid, both.candidates) == (None, 2)


def test_a_process_that_does_not_follow_the_pool_is_ruled_out_and_the_other_matched():
    sample = Samples()
    sample()
    sample(proc(HOST_PID, 2548), proc(OTHER, 2548), pool_mib=2048)
    sample(proc(HOST_PID, 3572), proc(OTHER, 2548), pool_mib=3072)  # OTHER stays: a sample may be mid-move
    result = sample(proc(HOST_PID, 3572), proc(OTHER, 2548), pool_mib=3072)  # twice: it does not follow
    assert (result.pid, result.candidates) == (HOST_PID, 1)


def test_a_sample_taken_between_an_allocation_and_nvmls_figure_rules_nothing_out():
    sample = Samples()
    sample()
    sample(proc(HOST_PID, 2548), pool_mib=2048)
    mid = sample(proc(HOST_PID, 2548), pool_mib=3072)  # the allocator has it, NVML not yet
    assert (mid.pid, mid.candidates) == (None, 1)
    assert sample(proc(HOST_PID, 3572), pool_mib=3072).pid == HOST_PID


def test_a_process_holding_less_than_the_pool_cannot_be_this_kernels_and_one_holding_just_the_pool_can():
    sample = Samples()
    sample()
    sample(proc(OTHER, 900), proc(HOST_PID, 2048), pool_mib=2048)
    assert sample(proc(OTHER, 900), proc(HOST_PID, 2048), pool_mib=2048).candidates == 1
    assert sample(proc(OTHER, 900), proc(HOST_PID, 2048), pool_mib=2048).candidates == 1  # OTHER stays out


def test_a_static_process_does_not_fit_a_shrinking_pool():
    sample = Samples()
    sample()
    sample(proc(OTHER, 4000), pool_mib=3072)
    sample(proc(OTHER, 4000), pool_mib=2048)
    assert sample(proc(OTHER, 4000), pool_mib=2048).candidates == 0


def test_nothing_appeared_without_a_look_before_the_framework_started():
    sample = Samples()  # the extension is loaded after the framework started: every PID was "there"
    sample(proc(HOST_PID, 2548), pool_mib=2048)
    assert sample(proc(HOST_PID, 3572), pool_mib=3072).candidates == 0


def test_a_process_that_appears_long_after_the_framework_started_is_no_candidate():
    sample = Samples()
    sample()
    sample(pool_mib=2048)
    sample.at += APPEAR_S
    sample(proc(HOST_PID, 2548), pool_mib=2048)
    assert sample(proc(HOST_PID, 3572), pool_mib=3072).candidates == 0


# ---------------------------------------------------------------------- every surface shows one figure


class ContainerMachine(Machine):
    """A machine read from inside a container whose PIDs the driver does not translate."""

    def __call__(self, cpu_window_s: float = 0.0) -> Snapshot:
        self.at = getattr(self, "at", 1000.0) + 1.0
        return Snapshot(self.at, OWN, self.devices, driver_version="550.54.15", host_pid_namespace=False)


def test_every_surface_shows_the_matched_figure_and_measures_the_overhead_from_it(make):
    machine = ContainerMachine(a10(proc(OTHER, 2000)))
    torch = Framework("PyTorch")
    torch.is_imported = True
    control = make(machine, torch)
    control.request(parse(["limit=3GiB"]))
    assert protocol.encode_sample(control.read(machine()))["gpus"][0]["own_bytes"] is None  # not 0
    torch.started, torch.pools = True, (Allocator(1800 * MiB, 1900 * MiB, 2048 * MiB),)
    machine.devices = (a10(proc(OTHER, 2000), proc(HOST_PID, 2548)),)
    control.read(machine())
    torch.pools = (Allocator(2800 * MiB, 2900 * MiB, 3072 * MiB),)
    machine.devices = (a10(proc(OTHER, 2000), proc(HOST_PID, 3572)),)
    reading = control.read(machine())
    gpu = protocol.encode_sample(reading)["gpus"][0]
    assert (gpu["own_bytes"], gpu["own_source"], gpu["own_pid"]) == (3572 * MiB, "matched", HOST_PID)
    assert (gpu["overhead_bytes"], gpu["overhead_source"]) == (500 * MiB, "measured")
    assert gpu["over_reason"].startswith("CUDA context + cuDNN/cuBLAS: 500 MiB outside PyTorch's limit")
    assert Alerts().check(reading)[0].startswith("jupyter-gpumem: this kernel uses 3572 MiB (matched) on GPU 0")
    status = "\n".join(control.status_lines(reading))
    assert "Now on GPU 0: 3572 MiB as nvidia-smi counts it (matched: PID 812345 appeared when PyTorch" in status
    assert "  GPU 0: cooperative: %gpumem's budget of 3072 MiB, which the framework keeps to" in status
    told = explain(reading)
    assert told[2].startswith("GPU 0 NVIDIA A10: this kernel uses 3572 MiB; its budget is 3072 MiB")
    assert told[3].startswith("  This kernel's figure is matched: PID 812345 appeared when PyTorch started")
    table = render(reading.snapshot, reading)
    assert "this kernel holds 3572 MiB (matched: PID 812345" in table and "<- this kernel (matched)" in table


def test_an_estimated_figure_warns_as_an_estimate_and_an_unknown_one_never_as_0(make):
    machine = ContainerMachine(a10(proc(OTHER, 2000), used_mib=2000))
    torch = Framework("PyTorch")
    torch.is_imported = True
    control = make(machine, torch)
    control.request(parse(["limit=3GiB"]))
    alerts = Alerts()
    assert alerts.check(control.read(machine())) == []  # unknown: no budget warning, and no "0%"
    torch.started, torch.pools = True, (Allocator(2700 * MiB, 2800 * MiB, 2900 * MiB),)
    (warning,) = alerts.check(control.read(machine()))
    assert warning.startswith("jupyter-gpumem: this kernel uses about 3350 MiB (estimated) on GPU 0 NVIDIA A10")


def test_a_full_gpu_whose_holders_cannot_be_told_apart_is_said_so():
    device = a10(proc(HOST_PID, 11000), proc(OTHER, 11000))
    reading = budget.reading(
        contained(device),
        State(parse([]), None, (Framework("PyTorch"),), True, "PyTorch"),
        started=False,
        allocators={},
        measured=lambda uuid: None,
    )
    (warning,) = Alerts().check(reading)
    assert "is 96% full" in warning and "this kernel's own share is unknown (this kernel runs in a container" in warning


@pytest.mark.parametrize("name", ["sample_container.json", "sample_hidden.json"])
def test_unknown_is_null_and_every_figure_says_what_it_rests_on(name):
    sample = json.loads((Path(__file__).parents[1] / "fixtures" / "protocol" / name).read_text())["sample"]
    for gpu in sample["gpus"]:
        assert gpu["own_source"] in ("exact", "matched", "estimated", "unknown") and gpu["own_reason"]
        assert (gpu["own_bytes"] is None) == (gpu["own_source"] == "unknown")
    if name == "sample_hidden.json":
        (gpu,) = sample["gpus"]
        assert gpu["unlisted_bytes"] == 14336 * MiB and sample["limit_note"].startswith("An MPS server is in use")
    else:
        assert [g["limit_kind"] for g in sample["gpus"]] == ["mps", "mig", "cooperative"]
        assert [g["own_candidates"] for g in sample["gpus"]] == [0, 0, 2]
        assert sample["gpus"][0]["limit_bytes"] == 6 * GiB


# ---------------------------------------------------------------------- what each figure says it rests on


def test_each_unknown_figure_says_why_in_full():
    na = figure(a10(proc(OWN, None, local=True, own=True)))
    assert na.reason == "NVML lists this kernel here but cannot tell its memory (N/A: Windows WDDM, some MIG setups)"
    assert figure(a10(known=False)).reason == "the driver does not list processes on this GPU"
    unlisted = figure(a10(), framework=None)
    assert unlisted.reason == (
        "NVML lists no process of this kernel's container (its own PID namespace), and its framework has not "
        "started, so there is nothing to estimate"
    )
    no_pool_yet = figure(a10(proc(HOST_PID, 3000)), started=True, allocator=Allocator(0, 0, 0))  # nothing reserved
    assert no_pool_yet.reason.endswith(", and PyTorch holds no pool here yet")


def test_the_status_says_why_an_unknown_figure_is_unknown_from_the_reasons_values_not_its_words():
    reason = Said("own_unknown", where="in a pod", why=Said("own_no_pool", framework="JAX"), candidates="")
    assert Own(None, "unknown", reason).because == "JAX holds no pool here yet"
    unlisted = figure(a10(proc(HOST_PID, 3000)), started=True, allocator=Allocator(0, 0, 0))
    assert unlisted.because == "PyTorch holds no pool here yet"
    assert figure(a10(known=False)).because == "the driver does not list processes on this GPU"


@pytest.mark.parametrize(
    ("candidates", "said"),
    [
        (0, ""),
        (1, "; 1 listed process could be this kernel's, matched once its memory moves with PyTorch's pool"),
        (2, "; 2 listed processes could be this kernel's, so none is taken for it"),
    ],
)
def test_an_unknown_figure_says_how_many_listed_processes_could_be_this_kernels(candidates, said):
    device = a10(proc(HOST_PID, 3000), proc(OTHER, 3000))
    snapshot = contained(device)
    own = attribute(
        device,
        pid_stance(snapshot),
        Match(None, candidates),
        started=False,
        allocator=None,
        framework="PyTorch",
        overhead=lambda: Overhead(0, "estimated", ""),
    )
    assert own.reason.endswith(f"has not started, so there is nothing to estimate{said}")
    assert own.candidates == candidates


@pytest.mark.parametrize("local", [False, None])  # untranslated PIDs, or PIDs whose program is not told
def test_a_matched_process_is_this_kernels_figure_and_says_so(local):
    device = a10(proc(HOST_PID, 3572, local=local), proc(OTHER, 2000, local=local))
    stance = pid_stance(contained(device))
    own = listed(device, stance, Match(HOST_PID, 1))
    assert (own.bytes, own.source, own.pid) == (3572 * MiB, "matched", HOST_PID)
    assert own.reason == (
        f"PID {HOST_PID} appeared when its framework started and its memory moves with its framework's pool"
    )
    gone = a10(proc(OTHER, 2000, local=local))  # the matched process has exited since
    assert listed(gone, stance, Match(HOST_PID, 1)) is None


# ---------------------------------------------------------------------- matching: edges


def test_before_the_framework_starts_nothing_could_be_this_kernels():
    sample = Samples()
    assert sample(proc(OTHER, 2000)) == Match(None, 0)


def test_gpus_without_a_uuid_lost_or_without_a_process_list_are_left_out_and_the_others_matched():
    matcher = Matcher()
    devices = (
        Device(0, None, "NVIDIA A10", total_bytes=23028 * MiB, used_bytes=0, processes=()),
        Device(1, "GPU-lost", "NVIDIA A10", lost=True),
        Device(2, "GPU-refused", "NVIDIA A10", total_bytes=23028 * MiB, used_bytes=0, processes_known=False),
        a10(),
    )
    assert list(matcher.observe(contained(*devices), {}, []).keys()) == [GPU_A]


def test_processes_that_exit_are_forgotten_candidates_or_not():
    sample = Samples()
    sample(proc(OTHER, 2000))
    sample(proc(HOST_PID, 2548), pool_mib=2048)
    assert sample(pool_mib=2048) == Match(None, 0)  # both gone: OTHER was there before, HOST_PID a candidate


@pytest.mark.parametrize("offset_s", [-APPEAR_S, APPEAR_S])
def test_a_process_first_listed_just_within_appear_s_of_the_start_is_a_candidate(offset_s):
    sample = Samples()
    sample()  # the first look
    if offset_s < 0:
        sample(proc(HOST_PID, 2548))  # listed 10 s before the framework starts here
        sample.at += APPEAR_S - 1.0
        sample(proc(HOST_PID, 2548), pool_mib=2048)
    else:
        sample(pool_mib=2048)  # the start
        sample.at += APPEAR_S - 1.0
        sample(proc(HOST_PID, 2548), pool_mib=2048)  # listed 10 s after it
    assert sample(proc(HOST_PID, 3572), pool_mib=3072) == Match(HOST_PID, 1)


def test_a_pool_move_of_exactly_64_mib_is_followed():
    sample = Samples()
    sample()
    sample(proc(HOST_PID, 2548), pool_mib=2048)
    assert sample(proc(HOST_PID, 2612), pool_mib=2112) == Match(HOST_PID, 1)


def test_growth_that_loads_the_libraries_along_with_the_pool_is_still_followed():
    sample = Samples()
    sample()
    sample(proc(HOST_PID, 2548), pool_mib=2048)
    assert sample(proc(HOST_PID, 4072), pool_mib=3072) == Match(HOST_PID, 1)  # +1024 pool, +500 cuBLAS


def test_a_candidate_whose_memory_is_n_a_for_a_while_is_kept_and_matched_later():
    sample = Samples()
    sample()
    sample(proc(HOST_PID, None), pool_mib=2048)  # appears before NVML tells its memory
    assert sample(proc(HOST_PID, None), pool_mib=2048).candidates == 1
    sample(proc(HOST_PID, 2548), pool_mib=2048)
    assert sample(proc(HOST_PID, 3572), pool_mib=3072) == Match(HOST_PID, 1)
