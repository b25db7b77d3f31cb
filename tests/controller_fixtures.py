"""A Controller without a kernel, for test_control.py and test_magic.py: frameworks whose import,
start and GPU support the test decides, and a machine whose NVML answer the test sets. The real
adapters run in test_*_adapter.py, the real kernels in test_kernel_*.py."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_gpumem.budget.config import GpumemConfig
from jupyter_gpumem.budget.environ import EnvironmentChanges
from jupyter_gpumem.budget.framework_interface import Allocator
from jupyter_gpumem.budget.overhead import Calibration
from jupyter_gpumem.budget.plan import Plan
from jupyter_gpumem.frameworks.base import Adapter
from jupyter_gpumem.gpu.model import Device, GpuProcess, Snapshot
from jupyter_gpumem.kernel.control import Controller
from jupyter_gpumem.kernel.magic import GpumemMagics
from jupyter_gpumem.kernel.runtime import Runtime
from jupyter_gpumem.units import GiB, MiB

OWN = 4242
GPU_A = "GPU-a1a1a1a1-0000-4000-8000-000000000001"
GPU_B = "GPU-b2b2b2b2-0000-4000-8000-000000000002"


class Framework(Adapter):
    """A framework whose import, start and GPU support the test sets."""

    distributions = ()
    library_bytes = 100 * MiB
    array_modules = ()
    placing = "fw.device(1)"
    free_earlier = None

    def __init__(self, name: str, sees_gpu: bool = True):
        self.name = name
        self.module = f"jupyter_gpumem_test_{name.lower()}"
        self.takes = "takes everything"
        self.is_imported = False
        self.started = False
        self.sees_gpu = sees_gpu
        self.installed = True
        self.applied: list[Plan] = []
        self.pools: tuple[Allocator, ...] = ()

    def imported(self) -> bool:
        return self.is_imported

    def importable(self) -> bool:
        return self.installed

    def version(self) -> str:
        return "1.0"

    def initialised(self) -> bool:
        return self.started

    def apply(self, plan: Plan) -> list[str]:
        self.applied.append(plan)
        return []

    def gpu_problem(self, plan: Plan) -> str | None:
        if not plan.gpus or self.sees_gpu:  # as the real adapters: a plan on no GPU is in force nowhere anyway
            return None
        return f"{self.name} 1.0 is a CPU-only build, so the budget is not in force."

    def in_force(self) -> list[str]:
        return [f"{self.name}: as started"]

    def memory_in_use(self, cell: bool = False) -> tuple[Allocator, ...]:
        return self.pools

    def concatenate(self, values: list[Any]) -> Any:
        return values


def a100(index: int, uuid: str, own_mib: int | None = None, lost: bool = False) -> Device:
    if lost:
        return Device(index, uuid, "NVIDIA A100-SXM4-40GB", lost=True)
    own = (GpuProcess(OWN, uuid, own_mib * MiB, "compute", "python", "alice", 50.0, True),) if own_mib else ()
    return Device(
        index,
        uuid,
        "NVIDIA A100-SXM4-40GB",
        total_bytes=40 * GiB,
        used_bytes=(own_mib or 0) * MiB,
        free_bytes=40 * GiB - (own_mib or 0) * MiB,
        compute_capability=(8, 0),
        processes=own,
    )


class Machine:
    """What NVML says now; the test changes it between calls."""

    def __init__(self, *devices: Device):
        self.devices = devices

    def __call__(self, cpu_window_s: float = 0.0) -> Snapshot:
        return Snapshot(1763740800.0, OWN, self.devices, driver_version="550.54.15")


@pytest.fixture
def make(tmp_path, monkeypatch):
    """make(machine, *frameworks, **GpumemConfig settings) -> a Controller, closed after the test."""
    for name in ("FRACTION", "LIMIT", "GROWTH", "GPUS", "THREADS", "MAX_FRACTION", "MAX_LIMIT"):
        monkeypatch.delenv(f"JUPYTER_GPUMEM_{name}", raising=False)
    made: list[Controller] = []

    def make(machine: Machine, *frameworks: Framework, **config: Any) -> Controller:
        control = Controller(
            GpumemConfig(**config),
            adapters={f.name.lower(): f for f in frameworks},
            snapshot=machine,
            calibration=Calibration(tmp_path / "overhead.json"),
            environment=EnvironmentChanges({}),
        )
        made.append(control)
        return control

    yield make
    for control in made:
        control.close()


def magics_on(control: Controller) -> GpumemMagics:
    """The magic on a Runtime of this Controller, as a kernel's is (no sampler thread until one is asked for)."""
    parts = Runtime(control)
    return GpumemMagics(None, parts.control, parts.cells, parts.stream)


@pytest.fixture
def gpumem(make, capsys):
    """gpumem(line) -> (stdout, stderr), on one A100 with TensorFlow installed, not imported."""
    control = make(Machine(a100(0, GPU_A, own_mib=900)), Framework("TensorFlow"))
    magics = magics_on(control)

    def run(line: str) -> tuple[str, str]:
        magics.gpumem(line)
        out = capsys.readouterr()
        return out.out, out.err

    run.control = control  # type: ignore[attr-defined]
    return run
