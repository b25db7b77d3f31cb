"""What every framework adapter provides (TensorFlow now; PyTorch and JAX implement the same)."""

from __future__ import annotations

import importlib.util
import sys
from abc import ABC, abstractmethod

from ..plan import Plan


class Adapter(ABC):
    name: str  # for people: "TensorFlow"
    module: str  # for imports: "tensorflow"
    overhead_bytes: int  # estimated CUDA context + libraries per GPU, outside the allocator's limit

    def imported(self) -> bool:
        return self.module in sys.modules

    def importable(self) -> bool:
        return self.imported() or importlib.util.find_spec(self.module) is not None

    def environment(self, plan: Plan) -> dict[str, str]:
        """Variables to set before the framework is imported (it reads them at import or start-up)."""
        env = {"CUDA_MODULE_LOADING": "LAZY"}  # halves the CUDA context for most models
        if plan.cuda_visible_devices is not None:
            env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"  # CUDA's order = NVML's order
            env["CUDA_VISIBLE_DEVICES"] = plan.cuda_visible_devices
        return env

    @abstractmethod
    def initialised(self) -> bool:
        """True once the framework's runtime has started: configuring it is too late. Must not start it."""

    @abstractmethod
    def apply(self, plan: Plan) -> list[str]:
        """Apply the plan to the imported, not yet initialised framework; lines saying what took effect."""

    @abstractmethod
    def in_force(self) -> list[str]:
        """What the framework runs with now, read without initialising it."""

    @abstractmethod
    def memory_in_use(self) -> tuple[tuple[int, int], ...]:
        """The allocator's in-use and peak bytes per framework GPU, in the framework's order; empty until
        the runtime has started. Must not start it (the sampler calls this every interval)."""
