"""Plan -> CuPy calls. CuPy's pool figures and limits need a GPU (without one each raises CUDARuntimeError), so they
go through one narrow interface (CupyConfig); here a recorder stands in for CuPy's pool, fed with plans made from
real stand-in NVML readings. The real cupy, where it is installed, runs at the end of this file for everything it
does without a GPU: its import, its pool object, its reading of CUPY_GPU_MEMORY_LIMIT, its memory hook class."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import pytest

from jupyter_gpumem.budget.framework_interface import Allocator
from jupyter_gpumem.budget.overhead import Overhead
from jupyter_gpumem.budget.plan import make_plan
from jupyter_gpumem.budget.policy import parse
from jupyter_gpumem.frameworks.cupy import LIMIT_VARIABLE, CuPy, PeakHook, RealCupyConfig
from jupyter_gpumem.gpu import nvml
from jupyter_gpumem.gpu.host import HostProcesses
from jupyter_gpumem.units import MiB

OVERHEAD = Overhead(450 * MiB, "estimated", "a test figure")


class RecordingCupyConfig:
    """CuPy's pool on device 0 as the test sets it: what it holds, and every call that would reach the GPU."""

    def __init__(self, started: bool = False, available: bool = True, used: int = 0, held: int = 0):
        self.is_started, self.is_available = started, available
        self.used, self.held = used, held
        # Device 0's pool reads CUPY_GPU_MEMORY_LIMIT once, as it is made (by a figure asked of it, or a limit set).
        self.cap: int | None = self._made_with() if started else None
        self.calls: list[tuple[object, ...]] = []
        self.step_blocks: list[int] = []  # what the step's allocations take, one block each, then all freed

    def version(self) -> str:
        return "14.x"

    def available(self) -> bool:
        return self.is_available

    @staticmethod
    def _made_with() -> int:
        return int(os.environ.get(LIMIT_VARIABLE) or 0)

    def _make(self) -> None:
        if self.cap is None:
            self.cap = self._made_with()

    def started(self) -> bool:
        self._make()  # as CuPy's total_bytes() makes device 0's pool
        return self.is_started

    def pool(self) -> tuple[int, int]:
        assert self.is_started, "a pool's figures make the pool, and with a share a context"
        return self.used, self.held

    def limit(self) -> int:
        assert self.is_started and self.cap is not None
        return self.cap

    def set_limit(self, size: int) -> None:
        assert self.is_available, "without a usable GPU, CuPy's set_limit raises"
        self.cap = size
        self.calls.append(("set_limit", size))

    def free_blocks(self) -> None:
        assert self.is_started
        self.held = self.used
        self.calls.append(("free_all_blocks",))

    def count(self, run: Callable[[], object]) -> int:
        peak = PeakHook(self.used)
        run()
        for block in self.step_blocks:
            peak.malloc(block)
        for block in self.step_blocks:
            peak.free(block)
        self.calls.append(("count",))
        return peak.peak


def plan_for(line: str):
    return make_plan(parse(line.split()), nvml.read(os.getpid(), HostProcesses().lookup), lambda device: OVERHEAD)


@pytest.fixture
def cupy_imported(monkeypatch):
    """``cupy`` in sys.modules, as imported() looks for it: the real one where installed, else a bare module."""
    if "cupy" not in sys.modules:
        monkeypatch.setitem(sys.modules, "cupy", type(sys)("cupy"))


def test_the_limit_is_cupys_variable_in_bytes_before_its_pool_is_made(scenario):
    scenario("s1_two_gpus")  # GPU 0: 11422 MiB, GPU 1: 8192 MiB
    env = CuPy(RecordingCupyConfig()).environment(plan_for("limit=4GiB gpus=1"))
    assert env[LIMIT_VARIABLE] == str((4096 - 450) * MiB)  # the budget less the CUDA context and libraries
    assert env["CUDA_VISIBLE_DEVICES"].startswith("GPU-")
    assert LIMIT_VARIABLE not in CuPy(RecordingCupyConfig()).environment(plan_for("growth=on"))


def test_one_limit_for_every_gpu_the_smallest_and_the_notes_say_what_does_not_apply(scenario, monkeypatch):
    scenario("s1_two_gpus")
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    config = RecordingCupyConfig()
    plan = plan_for("fraction=0.5 threads=2 growth=off")
    env = CuPy(config).environment(plan)
    assert env[LIMIT_VARIABLE] == str((4096 - 450) * MiB)  # half of the smaller GPU
    notes = CuPy(config).apply(plan)
    assert config.calls == []  # CuPy not imported: the variable alone applies, as each pool is made
    assert any("threads=/intra=/inter= do not apply to CuPy" in n for n in notes)
    assert any("growth= changes nothing" in n for n in notes)
    assert any("CuPy takes one pool limit for every GPU" in n for n in notes)


def test_once_its_pool_is_in_use_the_limit_applies_at_once_and_a_pool_above_it_is_said(scenario, cupy_imported):
    scenario("s1_two_gpus")
    config = RecordingCupyConfig(started=True, used=512 * MiB, held=5000 * MiB)
    notes = CuPy(config).apply(plan_for("limit=2GiB gpus=0"))
    assert config.calls == [("set_limit", (2048 - 450) * MiB)]
    assert any("CuPy's pool already holds 5000 MiB, above its new limit of 1598 MiB" in n for n in notes)


def test_a_pool_made_before_the_budget_gets_the_limit_all_the_same(scenario, cupy_imported, monkeypatch):
    # import cupy; the sidebar's sample asks the pool a figure (which makes device 0's pool, reading no limit);
    # then %gpumem limit=2GiB: the variable comes too late for that pool, so the limit is set on it.
    scenario("s1_two_gpus")
    monkeypatch.delenv(LIMIT_VARIABLE, raising=False)
    config = RecordingCupyConfig()
    adapter = CuPy(config)
    assert adapter.memory_in_use() == () and config.cap == 0  # made, with no limit
    plan = plan_for("limit=2GiB gpus=0")
    monkeypatch.setenv(LIMIT_VARIABLE, adapter.environment(plan)[LIMIT_VARIABLE])
    adapter.apply(plan)
    assert config.calls == [("set_limit", (2048 - 450) * MiB)] and config.cap == (2048 - 450) * MiB


def test_gpus_is_too_late_once_cuda_started_in_cupy_and_a_budget_never_is(scenario, cupy_imported):
    scenario("s1_two_gpus")
    assert CuPy(RecordingCupyConfig(started=False)).too_late(plan_for("fraction=0.5 gpus=1")) is None
    started = CuPy(RecordingCupyConfig(started=True))
    assert started.too_late(plan_for("fraction=0.4")) is None  # set_limit takes a new limit at any time
    late = started.too_late(plan_for("fraction=0.5 gpus=1"))
    assert late is not None and "CUDA reads which GPUs it may use (CUDA_VISIBLE_DEVICES) only when it starts" in late


def test_its_figures_are_the_pools_in_use_held_and_the_largest_in_use_seen(cupy_imported):
    assert CuPy(RecordingCupyConfig(started=False)).memory_in_use() == ()  # never asks before its pool is made
    config = RecordingCupyConfig(started=True, used=300 * MiB, held=1024 * MiB)
    adapter = CuPy(config)
    assert adapter.memory_in_use() == (Allocator(300 * MiB, 300 * MiB, 1024 * MiB),)
    config.used = 100 * MiB
    assert adapter.memory_in_use() == (Allocator(100 * MiB, 300 * MiB, 1024 * MiB),)
    assert adapter.reset_peak() is False  # CuPy keeps no peak to reset


def test_free_gives_the_pools_free_blocks_back_and_leaves_the_pinned_pool(cupy_imported):
    assert CuPy(RecordingCupyConfig(started=False)).release() is None
    config = RecordingCupyConfig(started=True, used=100 * MiB, held=900 * MiB)
    released = CuPy(config).release()
    assert config.calls == [("free_all_blocks",)] and config.held == 100 * MiB
    assert (
        released is not None
        and not released.restart_only
        and "pinned host memory pool is left alone" in (released.sentence)
    )


def test_largest_batch_counts_a_step_by_the_pools_blocks_from_what_it_held():
    config = RecordingCupyConfig(started=True, used=64 * MiB)
    config.step_blocks = [100 * MiB, 20 * MiB]
    ran: list[int] = []
    peak = CuPy(config).step_peak(lambda: ran.append(1))
    assert ran == [1] and peak.bytes == 184 * MiB and peak.on_gpu and peak.includes_held
    none = CuPy(RecordingCupyConfig(available=False)).step_peak(lambda: ran.append(2))
    assert ran == [1, 2] and none.bytes is None and "cupy.cuda.is_available() is False" in none.how


def test_without_a_usable_gpu_the_budget_is_said_not_in_force(scenario):
    scenario("s1_two_gpus")
    problem = CuPy(RecordingCupyConfig(available=False)).gpu_problem(plan_for("fraction=0.5"))
    assert problem is not None and problem.startswith("CuPy 14.x finds no GPU it can use")
    assert CuPy(RecordingCupyConfig(available=True)).gpu_problem(plan_for("fraction=0.5")) is None


def test_the_peak_hook_counts_blocks_in_use_and_keeps_the_highest():
    peak = PeakHook(10)
    for size, freed in ((100, False), (50, False), (100, True), (30, False)):
        peak.free(size) if freed else peak.malloc(size)
    assert (peak.in_use, peak.peak) == (90, 160)


# ------------------------------------------------------------------ the real cupy, where installed (no GPU needed)


def test_the_real_cupy_without_a_gpu_is_read_without_starting_anything(scenario):
    cupy = pytest.importorskip("cupy", reason="cupy is not installed here (pip install cupy-cuda12x)")
    adapter = CuPy()
    assert adapter.imported() and adapter.version() == cupy.__version__
    if cupy.cuda.is_available():
        pytest.skip("a GPU is usable here: this test is of a machine without one")
    assert not adapter.initialised()  # its pool raises CUDARuntimeError without a driver: not started
    assert adapter.memory_in_use() == () and adapter.release() is None
    assert adapter.step_peak(lambda: None).bytes is None
    scenario("s1_two_gpus")
    assert adapter.gpu_problem(plan_for("fraction=0.5")).startswith(f"CuPy {cupy.__version__} finds no GPU")
    lines = adapter.in_force()
    assert lines[0].startswith(f"CuPy {cupy.__version__}: memory pool limit") and "holds nothing yet" in lines[1]


def test_cupy_reads_the_limit_as_the_bytes_the_plan_gives(scenario):
    cupy = pytest.importorskip("cupy", reason="cupy is not installed here (pip install cupy-cuda12x)")
    scenario("s1_two_gpus")
    written = CuPy(RealCupyConfig()).environment(plan_for("limit=3GiB"))[LIMIT_VARIABLE]
    # CuPy's own parser of the variable, which each GPU's pool runs as it is made.
    assert cupy.cuda.memory._parse_limit_string(written) == {"size": (3072 - 450) * MiB, "fraction": None}


def test_the_peak_hook_is_a_cupy_memory_hook_fed_as_cupy_calls_it():
    cupy = pytest.importorskip("cupy", reason="cupy is not installed here (pip install cupy-cuda12x)")
    peak = PeakHook(0)
    hook = peak.installed(cupy.cuda.memory_hook.MemoryHook)
    assert isinstance(hook, cupy.cuda.memory_hook.MemoryHook) and hook.name == "jupyter_gpumem_peak"
    # The keywords CuPy's pool passes (cupy/cuda/memory.pyx, MemoryPool.malloc and PooledMemory.free).
    hook.malloc_postprocess(device_id=0, size=1000, mem_size=1024, mem_ptr=1, pmem_id=2)
    hook.free_postprocess(device_id=0, mem_size=1024, mem_ptr=1, pmem_id=2)
    assert (peak.in_use, peak.peak) == (0, 1024)
    hook.malloc_postprocess(device_id=1, size=4000, mem_size=4096, mem_ptr=3, pmem_id=4)  # GPU 1's pool: not ours
    assert (peak.in_use, peak.peak) == (0, 1024)
    with hook:  # installs it on this thread, as step_peak does around the step
        assert cupy.cuda.memory_hook.get_memory_hooks()["jupyter_gpumem_peak"] is hook
    assert "jupyter_gpumem_peak" not in cupy.cuda.memory_hook.get_memory_hooks()
