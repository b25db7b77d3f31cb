"""Plan -> torch calls. PyTorch's CUDA calls cannot run without a GPU, so they go through one narrow
interface (TorchConfig); here a recorder stands in for torch.cuda, fed with plans made from real
stand-in NVML readings. The real torch (the CPU build) runs at the end of this file and in
test_kernel_frameworks.py."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from jupyter_gpumem.budget.framework_interface import Allocator
from jupyter_gpumem.budget.overhead import Overhead
from jupyter_gpumem.budget.plan import make_plan
from jupyter_gpumem.budget.policy import parse
from jupyter_gpumem.frameworks.pytorch import PyTorch, RealTorchConfig
from jupyter_gpumem.gpu import nvml
from jupyter_gpumem.gpu.host import HostProcesses
from jupyter_gpumem.units import MiB

OVERHEAD = Overhead(450 * MiB, "estimated", "a test figure")
GPU_A = ("GPU-a1a1a1a1-0000-4000-8000-000000000001", 11422 * MiB)  # s1_two_gpus: NVML index 0
GPU_B = ("GPU-b2b2b2b2-0000-4000-8000-000000000002", 8192 * MiB)  # NVML index 1


class RecordingTorchConfig:
    def __init__(
        self,
        devices: list[tuple[str, int]],
        started: bool = False,
        interop_started: bool = False,
        reads_fraction: bool = False,
    ):
        self.devices = devices
        self.reads_fraction = reads_fraction  # PyTorch with per_process_memory_fraction in its allocator settings
        self.started = started
        self.interop_started = interop_started
        self.queued: list[Callable[[], None]] = []
        self.calls: list[tuple[Any, ...]] = []
        self.fractions = [1.0] * len(devices)
        self.peaks: dict[int, int] = {}  # max_memory_allocated per GPU, once reset
        self.inter = 4

    def version(self) -> str:
        return "2.x"

    def reads_fraction_setting(self) -> bool:
        return self.reads_fraction

    def initialised(self) -> bool:
        return self.started

    def on_cuda_start(self, call: Callable[[], None]) -> None:
        if self.started:
            call()
        else:
            self.queued.append(call)

    def start_cuda(self) -> None:
        self.started = True
        for call in self.queued:
            call()

    def device_count(self) -> int:
        return len(self.devices)

    def device(self, index: int) -> tuple[str, int]:
        assert self.started, "device properties start CUDA"
        return self.devices[index]

    def set_fraction(self, fraction: float, index: int) -> None:
        assert self.started
        self.fractions[index] = fraction
        self.calls.append(("fraction", index, fraction))

    def fraction(self, index: int) -> float | None:
        return self.fractions[index]

    def allocator_settings(self) -> str:
        return ""

    def set_allocator_settings(self, settings: str) -> None:
        self.calls.append(("allocator", settings))

    def set_threads(self, intra: int | None, inter: int | None) -> None:
        if inter is not None and self.interop_started:
            raise RuntimeError("Error: cannot set number of interop threads after parallel work has started")
        self.calls.append(("threads", intra, inter))

    def threads(self) -> tuple[int, int]:
        return 2, self.inter

    def memory(self, index: int) -> tuple[int, int, int]:
        peak = self.peaks.get(index, (200 + index) * MiB)
        return (100 + index) * MiB, peak, (300 + index) * MiB

    def reset_peak(self, index: int) -> None:
        assert self.started, "reset_peak_memory_stats starts CUDA"
        self.peaks[index] = (100 + index) * MiB  # back to what is allocated now
        self.calls.append(("reset_peak", index))

    def empty_cache(self) -> None:
        assert self.started, "empty_cache before CUDA starts does nothing"
        self.calls.append(("empty_cache",))


def plan_for(line: str):
    return make_plan(parse(line.split()), nvml.read(os.getpid(), HostProcesses().lookup), lambda device: OVERHEAD)


def test_fractions_wait_for_cuda_and_find_each_gpu_by_uuid(scenario):
    scenario("s1_two_gpus")
    config = RecordingTorchConfig([GPU_B, GPU_A])  # CUDA's order (fastest first) is not NVML's
    assert PyTorch(config).apply(plan_for("fraction=0.5")) == []
    assert config.calls == [] and len(config.queued) == 1  # nothing touches CUDA before it starts
    config.start_cuda()
    assert config.calls == [
        ("fraction", 0, (4096 - 450) / 8192),  # cuda:0 is the GTX 1080 (NVML 1)
        ("fraction", 1, (5711 - 450) / 11422),
    ]


def test_after_cuda_started_a_fraction_applies_at_once_but_gpus_is_too_late(scenario):
    scenario("s1_two_gpus")
    config = RecordingTorchConfig([GPU_A, GPU_B], started=True)
    adapter = PyTorch(config)
    import torch  # noqa: F401  (imported(): the adapter looks in sys.modules)

    assert adapter.too_late(plan_for("limit=2GiB")) is None
    adapter.apply(plan_for("limit=2GiB"))
    assert config.calls == [("fraction", 0, (2048 - 450) / 11422), ("fraction", 1, (2048 - 450) / 8192)]
    late = adapter.too_late(plan_for("fraction=0.5 gpus=1"))
    assert late is not None and "CUDA reads which GPUs it may use (CUDA_VISIBLE_DEVICES) only when it starts" in late


def test_only_the_selected_gpu_is_capped(scenario):
    scenario("s1_two_gpus")
    config = RecordingTorchConfig([GPU_B])  # CUDA_VISIBLE_DEVICES=<GPU B's uuid>
    PyTorch(config).apply(plan_for("fraction=0.5 gpus=1"))
    config.start_cuda()
    assert config.calls == [("fraction", 0, (4096 - 450) / 8192)]


def test_no_budget_queues_nothing_and_threads_apply(scenario):
    scenario("s2_seven_jobs")
    config = RecordingTorchConfig([GPU_A])
    assert PyTorch(config).apply(plan_for("threads=1")) == []
    assert config.queued == [] and config.calls == [("threads", 1, 1)]


def test_inter_op_threads_fixed_already_keep_intra_and_say_so(scenario):
    scenario("s2_seven_jobs")
    config = RecordingTorchConfig([GPU_A], interop_started=True)
    notes = PyTorch(config).apply(plan_for("threads=1"))
    assert config.calls == [("threads", 1, None)]
    assert notes == [
        "PyTorch keeps 4 inter-op threads: it fixes them once parallel work has started. "
        "To get inter=1, restart the kernel and run %gpumem first."
    ]


def test_growth_is_expandable_segments_and_keeps_the_users_other_settings(scenario, monkeypatch):
    scenario("s2_seven_jobs")
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:128,expandable_segments:False")
    monkeypatch.delenv("PYTORCH_ALLOC_CONF", raising=False)
    adapter = PyTorch(RecordingTorchConfig([GPU_A]))
    env = adapter.environment(plan_for("growth=on"))
    assert env["PYTORCH_CUDA_ALLOC_CONF"] == "max_split_size_mb:128,expandable_segments:True"
    monkeypatch.setenv("PYTORCH_ALLOC_CONF", "garbage_collection_threshold:0.6")  # 2.9+: read first
    env = adapter.environment(plan_for("growth=off"))
    assert env["PYTORCH_ALLOC_CONF"] == "garbage_collection_threshold:0.6,expandable_segments:False"
    assert "PYTORCH_CUDA_ALLOC_CONF" not in env
    assert "PYTORCH_CUDA_ALLOC_CONF" not in adapter.environment(plan_for("threads=1"))


def test_where_pytorch_reads_the_fraction_setting_processes_started_from_the_kernel_inherit_it(scenario, monkeypatch):
    scenario("s1_two_gpus")
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:128")
    monkeypatch.delenv("PYTORCH_ALLOC_CONF", raising=False)
    plan = plan_for("fraction=0.5")
    smallest = min(g.allocator_limit_bytes / g.total_bytes for g in plan.gpus if g.allocator_limit_bytes)
    env = PyTorch(RecordingTorchConfig([GPU_A, GPU_B], reads_fraction=True)).environment(plan)
    kept, fraction = env["PYTORCH_CUDA_ALLOC_CONF"].split(",")
    assert kept == "max_split_size_mb:128" and fraction.startswith("per_process_memory_fraction:")
    assert smallest - 0.0001 < float(fraction.split(":")[1]) <= smallest < 0.5  # each GPU's budget holds


def test_an_older_pytorch_keeps_the_call_alone(scenario, monkeypatch):
    scenario("s1_two_gpus")
    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF", raising=False)
    monkeypatch.delenv("PYTORCH_ALLOC_CONF", raising=False)
    config = RecordingTorchConfig([GPU_A, GPU_B])
    adapter = PyTorch(config)
    assert "PYTORCH_CUDA_ALLOC_CONF" not in adapter.environment(plan_for("fraction=0.5"))
    adapter.apply(plan_for("fraction=0.5"))
    config.start_cuda()
    assert [call[0] for call in config.calls] == ["fraction", "fraction"]


def test_a_failure_at_cuda_start_never_reaches_the_users_call(scenario, capsys):
    scenario("s1_two_gpus")
    config = RecordingTorchConfig([GPU_A, GPU_B])

    def refuse(fraction: float, index: int) -> None:
        raise RuntimeError("no properties")

    config.set_fraction = refuse  # type: ignore[method-assign]
    adapter = PyTorch(config)
    adapter.apply(plan_for("fraction=0.5"))
    config.start_cuda()  # does not raise
    assert capsys.readouterr().err == (
        "jupyter-gpumem: PyTorch: the memory fraction could not be set (RuntimeError: no properties); "
        "it runs without a cap.\n"
    )
    assert "PyTorch: the memory fraction could not be set (RuntimeError: no properties)" in adapter.in_force()


def test_allocator_stats_only_once_cuda_has_started():
    config = RecordingTorchConfig([GPU_A, GPU_B])
    import torch  # noqa: F401  (imported(): the adapter looks in sys.modules)

    adapter = PyTorch(config)
    assert adapter.memory_in_use() == ()
    config.started = True
    assert adapter.memory_in_use() == (
        Allocator(100 * MiB, 200 * MiB, 300 * MiB),
        Allocator(101 * MiB, 201 * MiB, 301 * MiB),
    )


def test_a_cells_peak_starts_afresh_while_the_kernels_peak_is_kept():
    config = RecordingTorchConfig([GPU_A, GPU_B], started=True)
    import torch  # noqa: F401

    adapter = PyTorch(config)
    assert adapter.reset_peak()
    assert config.calls == [("reset_peak", 0), ("reset_peak", 1)]
    config.peaks[0] = 150 * MiB  # the cell reached 150 MiB on GPU 0
    assert [a.peak for a in adapter.memory_in_use(cell=True)] == [150 * MiB, 101 * MiB]
    assert [a.peak for a in adapter.memory_in_use()] == [200 * MiB, 201 * MiB]  # the kernel's, from before


def test_free_empties_the_cache_only_once_cuda_has_started():
    config = RecordingTorchConfig([GPU_A])
    import torch  # noqa: F401

    adapter = PyTorch(config)
    assert adapter.release() is None and not adapter.reset_peak()
    assert config.calls == []
    config.started = True
    released = adapter.release()
    assert released is not None and "torch.cuda.empty_cache()" in released.sentence and not released.restart_only
    assert config.calls == [("empty_cache",)]


# ---------------------------------------------------------------------- the real torch (CPU build)


def test_real_torch_queues_the_fraction_and_reads_stats_without_starting_cuda(scenario):
    import torch

    scenario("s1_two_gpus")
    adapter = PyTorch(RealTorchConfig())
    queued = len(torch.cuda._queued_calls)
    assert adapter.apply(plan_for("fraction=0.5")) == []
    assert len(torch.cuda._queued_calls) == queued + 1  # runs when CUDA starts, as torch.manual_seed's do
    torch.cuda._queued_calls.pop()
    assert adapter.memory_in_use() == ()
    assert adapter.release() is None and not adapter.reset_peak()  # %gpumem free and the cells never start CUDA
    assert not adapter.initialised() and not torch.cuda.is_initialized()
    assert adapter.in_force()[-1] == "PyTorch has not started CUDA yet."
    assert adapter.version() == torch.__version__ == "2.13.0+cpu"
    assert RealTorchConfig().reads_fraction_setting()  # 2.13's CUDAAllocatorConfig.h lists per_process_memory_fraction
