"""Plan -> tf.config calls. TensorFlow's GPU calls cannot run without a GPU, so they go through one
narrow interface (TfConfig); here a recorder stands in for tf.config's GPU side, fed with plans made
from real stand-in NVML readings. The real tf.config is exercised in test_kernel_tensorflow.py."""

from __future__ import annotations

import os
import sys
import types
from typing import Any

import pytest

from jupyter_gpumem.budget.framework_interface import Allocator
from jupyter_gpumem.budget.overhead import Overhead
from jupyter_gpumem.budget.plan import make_plan
from jupyter_gpumem.budget.policy import parse
from jupyter_gpumem.frameworks.tensorflow import TensorFlow
from jupyter_gpumem.gpu import nvml
from jupyter_gpumem.gpu.host import HostProcesses
from jupyter_gpumem.units import MiB

OVERHEAD = Overhead(450 * MiB, "estimated", "a test figure")


CPU_BUILD = {"is_cuda_build": False, "is_rocm_build": False, "is_tensorrt_build": False}  # tensorflow-cpu 2.21
CUDA_BUILD = {"is_cuda_build": True, "cuda_version": "12.5.1", "cudnn_version": "9"}  # tensorflow 2.21 on Linux


class RecordingTfConfig:
    def __init__(self, gpus: int, build: dict[str, Any] | None = None):
        self.gpus = [f"PhysicalDevice(GPU:{i})" for i in range(gpus)]
        self.build = build or CUDA_BUILD
        self.calls: list[tuple[Any, ...]] = []

    def version(self) -> str:
        return "2.x"

    def initialised(self) -> bool:
        return False

    def physical_gpus(self) -> list[Any]:
        return self.gpus

    def visible_gpus(self) -> list[Any]:
        return self.gpus

    def set_visible_gpus(self, gpus: list[Any]) -> None:
        self.calls.append(("set_visible_devices", gpus))

    def set_memory_limit(self, gpu: Any, limit_mib: int) -> None:
        self.calls.append(("memory_limit", gpu, limit_mib))

    def set_memory_growth(self, gpu: Any, on: bool) -> None:
        self.calls.append(("memory_growth", gpu, on))

    def gpu_settings(self, gpu: Any) -> tuple[bool | None, int | None]:
        return None, None

    def set_threads(self, intra: int | None, inter: int | None) -> None:
        self.calls.append(("threads", intra, inter))

    def threads(self) -> tuple[int, int]:
        return 0, 0

    def memory_info(self) -> list[tuple[int, int]]:
        return []

    def build_info(self) -> dict[str, Any]:
        return self.build


@pytest.fixture(autouse=True)
def clean_growth_variable(monkeypatch):
    monkeypatch.delenv("TF_FORCE_GPU_ALLOW_GROWTH", raising=False)


def apply(line: str, tf_sees: int, build: dict[str, Any] | None = None) -> tuple[list[tuple[Any, ...]], list[str]]:
    """The calls TensorFlow got, and what it says: its notes, then why the budget holds on no GPU."""
    plan = make_plan(parse(line.split()), nvml.read(os.getpid(), HostProcesses().lookup), lambda device: OVERHEAD)
    config = RecordingTfConfig(tf_sees, build)
    tensorflow = TensorFlow(config)
    notes = tensorflow.apply(plan)
    problem = tensorflow.gpu_problem(plan)
    return config.calls, [*notes, *([problem] if problem else [])]


def test_s1_imported_after_the_magic_tf_sees_only_gpu_1_and_caps_it(scenario):
    scenario("s1_two_gpus")
    calls, notes = apply("fraction=0.5 gpus=1", tf_sees=1)  # CUDA_VISIBLE_DEVICES hid GPU 0 before import
    assert calls == [("memory_limit", "PhysicalDevice(GPU:0)", 4096 - 450)]
    assert notes == []


def test_s1_imported_before_the_magic_hides_gpu_0_through_tf_config(scenario):
    scenario("s1_two_gpus")
    calls, _ = apply("fraction=0.5 gpus=1", tf_sees=2)
    assert calls == [
        ("set_visible_devices", ["PhysicalDevice(GPU:1)"]),
        ("memory_limit", "PhysicalDevice(GPU:1)", 4096 - 450),
    ]


def test_a_fraction_caps_every_visible_gpu(scenario):
    scenario("s1_two_gpus")
    calls, _ = apply("fraction=0.5", tf_sees=2)
    assert calls == [
        ("memory_limit", "PhysicalDevice(GPU:0)", 5711 - 450),
        ("memory_limit", "PhysicalDevice(GPU:1)", 4096 - 450),
    ]


def test_growth_with_a_limit_goes_through_the_environment_variable(scenario):
    scenario("s1_two_gpus")
    calls, _ = apply("limit=4GiB gpus=0 growth=on", tf_sees=1)
    assert calls == [("memory_limit", "PhysicalDevice(GPU:0)", 4096 - 450)]  # no set_memory_growth: TF refuses both
    assert os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] == "true"


def test_growth_alone_uses_set_memory_growth(scenario):
    scenario("s2_seven_jobs")
    calls, _ = apply("growth=on threads=1", tf_sees=1)
    assert calls == [("threads", 1, 1), ("memory_growth", "PhysicalDevice(GPU:0)", True)]


def test_a_count_mismatch_changes_no_gpu_setting_and_says_so(scenario):
    scenario("s1_two_gpus")
    calls, notes = apply("fraction=0.5", tf_sees=3)
    assert calls == []
    assert "TensorFlow sees 3 GPU(s) but NVML 2" in notes[0]


def test_a_cpu_only_tensorflow_says_in_one_sentence_why_the_budget_is_not_in_force(scenario):
    scenario("s1_two_gpus")
    calls, notes = apply("fraction=0.5 threads=2", tf_sees=0, build=CPU_BUILD)
    assert calls == [("threads", 2, 2)]
    assert notes == [
        "TensorFlow 2.x is a CPU-only build (tensorflow-cpu, or a platform without GPU wheels), so it uses no GPU "
        "and the budget is not in force; for the GPU build: pip install 'tensorflow[and-cuda]'."
    ]


def test_a_cuda_build_without_its_libraries_names_the_versions_it_needs(scenario):
    scenario("s1_two_gpus")
    calls, notes = apply("fraction=0.5", tf_sees=0, build=CUDA_BUILD)
    assert calls == []
    assert notes == [
        "TensorFlow 2.x is built for CUDA 12.5.1, cuDNN 9 but found no GPU: those libraries are not installed or "
        "not found (TensorFlow's log names the missing one), so the budget is not in force; "
        "pip install 'tensorflow[and-cuda]' installs the matching ones."
    ]


def test_a_tensorflow_that_sees_the_gpus_has_no_problem_to_report(scenario):
    scenario("s1_two_gpus")
    _, notes = apply("fraction=0.5", tf_sees=2, build=CPU_BUILD)  # what it sees decides, not the label
    assert notes == []


def test_variables_set_before_import():
    plan = make_plan(parse(["gpus=none", "threads=1", "growth=off"]), _no_gpu_snapshot(), lambda device: OVERHEAD)
    assert TensorFlow(RecordingTfConfig(0)).environment(plan) == {
        "CUDA_MODULE_LOADING": "LAZY",
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "CUDA_VISIBLE_DEVICES": "-1",
        "TF_FORCE_GPU_ALLOW_GROWTH": "false",
        "TF_NUM_INTRAOP_THREADS": "1",
        "TF_NUM_INTEROP_THREADS": "1",
    }


def _no_gpu_snapshot():
    from jupyter_gpumem.gpu.model import Snapshot

    return Snapshot(taken_at=0.0, own_pid=os.getpid(), problem="no driver")


class StartedTfConfig(RecordingTfConfig):
    """TensorFlow after its first op on one GPU: settings (growth, limit in MiB) and allocator figures."""

    def __init__(self, growth: bool | None, limit_mib: int | None, in_use: int, peak: int):
        super().__init__(1)
        self.settings = (growth, limit_mib)
        self.stats = [(in_use, peak)]

    def initialised(self) -> bool:
        return True

    def gpu_settings(self, gpu: Any) -> tuple[bool | None, int | None]:
        return self.settings

    def memory_info(self) -> list[tuple[int, int]]:
        return self.stats

    def reset_peaks(self) -> None:
        self.stats = [(in_use, in_use) for in_use, _ in self.stats]  # reset_memory_stats: peak = in use now


@pytest.mark.parametrize(
    ("growth", "limit_mib", "peak", "forced_growth", "pool"),
    [
        (False, 3696, 200, None, 3696 * MiB),  # growth off: the whole limit is taken at the first allocation
        (None, 3696, 200, None, 3696 * MiB),
        (False, 3696, 0, None, None),  # nothing allocated yet: nothing reserved yet
        (True, None, 200, None, None),  # grows on demand: TensorFlow does not say how far
        (False, 3696, 200, "true", None),  # TF_FORCE_GPU_ALLOW_GROWTH overrides the option
        (False, None, 200, None, None),  # no limit: "nearly all", an amount TensorFlow does not report
    ],
)
def test_the_pool_is_known_only_when_tensorflow_preallocated_its_limit(
    monkeypatch, growth, limit_mib, peak, forced_growth, pool
):
    monkeypatch.setitem(sys.modules, "tensorflow", types.ModuleType("tensorflow"))  # imported, as far as it asks
    if forced_growth:
        monkeypatch.setenv("TF_FORCE_GPU_ALLOW_GROWTH", forced_growth)
    adapter = TensorFlow(StartedTfConfig(growth, limit_mib, in_use=100, peak=peak))
    assert adapter.memory_in_use() == (Allocator(100, peak, pool),)


def test_a_cells_peak_starts_afresh_and_the_pool_stays_known(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorflow", types.ModuleType("tensorflow"))
    config = StartedTfConfig(False, 3696, in_use=0, peak=200 * MiB)
    adapter = TensorFlow(config)
    assert adapter.reset_peak()
    assert adapter.memory_in_use(cell=True) == (Allocator(0, 0, 3696 * MiB),)  # taken before this cell
    assert adapter.memory_in_use() == (Allocator(0, 200 * MiB, 3696 * MiB),)  # the kernel's peak


def test_free_says_only_a_restart_gives_tensorflows_memory_back(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorflow", types.ModuleType("tensorflow"))
    released = TensorFlow(StartedTfConfig(None, None, in_use=0, peak=0)).release()
    assert released is not None and released.restart_only and "never gives memory back" in released.sentence
