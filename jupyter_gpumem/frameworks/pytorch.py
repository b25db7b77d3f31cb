"""PyTorch: the only module that touches torch.

PyTorch never preallocates: its caching allocator takes memory as tensors need it and keeps what they
free for reuse. So a budget is a cap, torch.cuda.set_per_process_memory_fraction per GPU, set the moment
CUDA starts in PyTorch (or at once when it has started: PyTorch, unlike TensorFlow and JAX, takes a new
fraction at any time). What is fixed when CUDA starts is which GPUs it sees (CUDA_VISIBLE_DEVICES).

All torch calls go through TorchConfig: the translation from a plan to calls is tested against a
recording TorchConfig, and the real one (RealTorchConfig) runs on the CPU build for everything a CPU
build can do (threads, the initialisation check, stats that must not start CUDA).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from jupyter_gpumem.budget.framework_interface import Allocator
from jupyter_gpumem.budget.plan import Plan
from jupyter_gpumem.frameworks.base import N_, Adapter, Peak, PeakKeeper, Released, one_fraction
from jupyter_gpumem.i18n import gettext as _
from jupyter_gpumem.i18n import pgettext
from jupyter_gpumem.units import MiB, format_mib
from jupyter_gpumem.words import Said

# cuBLAS/cuDNN handles and workspaces PyTorch creates per GPU on first use, outside its allocator.
LIBRARY_BYTES = 100 * MiB


class TorchConfig(Protocol):
    def version(self) -> str: ...
    def reads_fraction_setting(self) -> bool: ...  # per_process_memory_fraction in its allocator settings; no import
    def cuda_version(self) -> str | None: ...  # torch.version.cuda (or .hip); None: a CPU-only build
    def initialised(self) -> bool: ...
    def on_cuda_start(self, call: Callable[[], None]) -> None: ...  # now, if CUDA has started
    def device_count(self) -> int: ...
    def device(self, index: int) -> tuple[str, int]: ...  # NVML-style uuid, total bytes; CUDA has started
    def set_fraction(self, fraction: float, index: int) -> None: ...
    def fraction(self, index: int) -> float | None: ...  # CUDA has started; None: this PyTorch cannot tell
    def allocator_settings(self) -> str: ...
    def set_allocator_settings(self, settings: str) -> None: ...
    def set_threads(self, intra: int | None, inter: int | None) -> None: ...
    def threads(self) -> tuple[int, int]: ...
    def memory(self, index: int) -> tuple[int, int, int]: ...  # allocated, max allocated, reserved
    def reset_peak(self, index: int) -> None: ...  # max allocated starts again from allocated; CUDA has started
    def empty_cache(self) -> None: ...  # CUDA has started


class RealTorchConfig:
    """torch itself. Nothing here starts CUDA unless it has started already."""

    @property
    def _torch(self) -> Any:
        return sys.modules["torch"]

    def version(self) -> str:
        return str(self._torch.__version__)

    def reads_fraction_setting(self) -> bool:
        return reads_fraction_setting()

    def cuda_version(self) -> str | None:
        built = self._torch.version
        found = getattr(built, "cuda", None) or getattr(built, "hip", None)
        return str(found) if found else None

    def initialised(self) -> bool:
        return bool(self._torch.cuda.is_initialized())

    def on_cuda_start(self, call: Callable[[], None]) -> None:
        # The queue torch.cuda itself uses for calls made before CUDA starts (manual_seed does the same).
        self._torch.cuda._lazy_call(call)

    def device_count(self) -> int:
        return int(self._torch.cuda.device_count())  # NVML or the runtime's count: does not start CUDA

    def device(self, index: int) -> tuple[str, int]:
        properties = self._torch.cuda.get_device_properties(index)
        return f"GPU-{properties.uuid}", int(properties.total_memory)

    def set_fraction(self, fraction: float, index: int) -> None:
        self._torch.cuda.set_per_process_memory_fraction(fraction, index)

    def fraction(self, index: int) -> float | None:
        read = getattr(self._torch.cuda, "get_per_process_memory_fraction", None)  # PyTorch 2.8+
        return float(read(index)) if read else None

    def allocator_settings(self) -> str:
        read = getattr(self._torch._C, "_accelerator_getAllocatorSettings", None)  # PyTorch 2.9+
        return str(read()) if read else os.environ.get(_settings_variable(), "")

    def set_allocator_settings(self, settings: str) -> None:
        # PyTorch 2.9+; before, torch.cuda.memory._set_allocator_settings (2.1+), which 2.9 deprecates.
        write = getattr(self._torch._C, "_accelerator_setAllocatorSettings", None)
        write = write or getattr(self._torch.cuda.memory, "_set_allocator_settings", None)
        if write is not None:
            write(settings)

    def set_threads(self, intra: int | None, inter: int | None) -> None:
        if intra is not None:
            self._torch.set_num_threads(intra)
        if inter is not None:
            self._torch.set_num_interop_threads(inter)  # RuntimeError once inter-op work has started

    def threads(self) -> tuple[int, int]:
        return self._torch.get_num_threads(), self._torch.get_num_interop_threads()

    def memory(self, index: int) -> tuple[int, int, int]:
        cuda = self._torch.cuda
        return cuda.memory_allocated(index), cuda.max_memory_allocated(index), cuda.memory_reserved(index)

    def reset_peak(self, index: int) -> None:
        self._torch.cuda.reset_peak_memory_stats(index)

    def empty_cache(self) -> None:
        self._torch.cuda.empty_cache()


class PyTorch(Adapter):
    name = "PyTorch"
    module = "torch"
    distributions = ("torch",)
    library_bytes = LIBRARY_BYTES
    takes = Said("takes_pytorch")
    array_modules = ("torch",)
    placing = 'torch.device("cuda:1")'
    free_earlier = None  # no pool taken at start: what tensors free stays cached (fragmentation is its cause)
    threads = True
    growth = N_("always allocates on demand; on turns on expandable segments")
    count_moves = False  # MemTracker and the caching allocator count what tensors asked for, the same every time

    def __init__(self, config: TorchConfig | None = None):
        self.config: TorchConfig = config or RealTorchConfig()
        self.problems: list[str] = []  # what went wrong when CUDA started, for in_force
        self._peaks = PeakKeeper()

    def environment(self, plan: Plan) -> dict[str, str]:
        env = super().environment(plan)
        name = _settings_variable()
        settings = os.environ.get(name, "")
        if plan.policy.growth is not None:
            settings = _with_setting(settings, "expandable_segments", str(plan.policy.growth))
        fraction = one_fraction(plan)
        if fraction is not None and self.config.reads_fraction_setting():
            # For the processes this kernel starts (they inherit it): one fraction for every GPU, the smallest. In
            # this kernel each GPU's own fraction replaces it when CUDA starts (apply).
            settings = _with_setting(settings, "per_process_memory_fraction", f"{fraction:.4f}")
        if settings != os.environ.get(name, ""):
            env[name] = settings
        return env

    def initialised(self) -> bool:
        return self.config.initialised()

    def too_late(self, plan: Plan) -> str | None:
        if plan.policy.gpus is not None and self.imported() and self.initialised():
            return _(
                "CUDA has started in PyTorch (torch.cuda.is_initialized()), and CUDA reads which GPUs it may "
                "use (CUDA_VISIBLE_DEVICES) only when it starts, so gpus= cannot take effect"
            )
        return None

    def apply(self, plan: Plan) -> list[str]:
        policy = plan.policy
        notes = []
        if policy.growth is not None:
            # PYTORCH_CUDA_ALLOC_CONF is read when the allocator is first used; this also holds after that.
            self.config.set_allocator_settings(f"expandable_segments:{policy.growth}")
        if policy.intra_threads is not None or policy.inter_threads is not None:
            try:
                self.config.set_threads(policy.intra_threads, policy.inter_threads)
            except RuntimeError:
                self.config.set_threads(policy.intra_threads, None)
                notes.append(
                    _(
                        "PyTorch keeps {threads} inter-op threads: it fixes them once parallel work has started. To "
                        "get inter={inter}, restart the kernel and run %gpumem first."
                    ).format(threads=self.config.threads()[1], inter=policy.inter_threads)
                )
        limits = [g.allocator_limit_bytes for g in plan.gpus]
        if any(limit is not None for limit in limits):
            by_uuid = {g.uuid: g.allocator_limit_bytes for g in plan.gpus}
            self.config.on_cuda_start(lambda: self._set_fractions(by_uuid, limits))
        return notes

    def gpu_problem(self, plan: Plan) -> str | None:
        if not plan.gpus:
            return None
        version, cuda = self.config.version(), self.config.cuda_version()
        if cuda is None:
            return _(
                "PyTorch {version} is a CPU-only build (torch.version.cuda is None), so it uses no GPU and the "
                "budget is not in force; for a CUDA build: pip install torch --index-url "
                "https://download.pytorch.org/whl/cu128 (pytorch.org lists the others)."
            ).format(version=version)
        if self.config.device_count() == 0:
            return _(
                "PyTorch {version} is built for CUDA {cuda} but sees no GPU (torch.cuda.device_count() is 0): "
                "the NVIDIA driver is too old for CUDA {cuda}, or CUDA_VISIBLE_DEVICES hides every GPU; "
                "the budget is not in force."
            ).format(version=version, cuda=cuda)
        return None

    def concatenate(self, values: list[Any]) -> Any:
        return sys.modules["torch"].cat(values, dim=0)

    def _set_fractions(self, by_uuid: dict[str, int | None], in_order: list[int | None]) -> None:
        """At CUDA start: each GPU's fraction of its total, found by UUID (CUDA's order need not be NVML's)."""
        try:
            for index in range(self.config.device_count()):
                uuid, total = self.config.device(index)
                limit = by_uuid.get(uuid, in_order[index] if index < len(in_order) else None)
                if limit is not None:
                    self.config.set_fraction(min(1.0, limit / total), index)
        except Exception as error:  # never break the user's first CUDA call
            problem = _("the memory fraction could not be set ({error_type}: {error})")
            self.problems.append(problem.format(error_type=type(error).__name__, error=error))
            said = _("jupyter-gpumem: PyTorch: {problem}; it runs without a cap.")
            print(said.format(problem=self.problems[-1]), file=sys.stderr)

    def memory_in_use(self, cell: bool = False) -> tuple[Allocator, ...]:
        if not (self.imported() and self.initialised()):
            return ()
        return tuple(
            Allocator(in_use, peak if cell else self._peaks.kernel(index, peak), reserved)
            for index, (in_use, peak, reserved) in enumerate(map(self.config.memory, range(self.config.device_count())))
        )

    def reset_peak(self) -> bool:
        if not (self.imported() and self.initialised()):
            return False
        indices = range(self.config.device_count())
        self._peaks.before_reset([self.config.memory(index)[1] for index in indices])
        for index in indices:
            self.config.reset_peak(index)
        return True

    def step_peak(self, run: Callable[[], object], objects: Sequence[object] = ()) -> Peak:
        """On a GPU: ``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats`` (the kernel's own peak
        kept for the sidebar), which counts every tensor allocated, the step's and those held before it. Without
        CUDA: PyTorch's memory tracker (torch.distributed._tools.mem_tracker.MemTracker) on the CPU, which counts
        the tensors the step makes and the parameters, gradients and optimiser states of the modules and
        optimisers among ``objects``, not tensors held from before it."""
        torch = sys.modules["torch"]
        if torch.cuda.is_available():
            self.reset_peak()  # where CUDA has started; else the step starts it, and its count with it
            run()
            torch.cuda.synchronize()
            index = torch.cuda.current_device()
            how = _("torch.cuda.max_memory_allocated on cuda:{index}").format(index=index)
            return Peak(int(torch.cuda.max_memory_allocated(index)), how, True)
        from torch.distributed._tools.mem_tracker import MemTracker

        tracker = MemTracker()
        external = [o for o in objects if isinstance(o, torch.nn.Module | torch.optim.Optimizer)]
        if external:
            tracker.track_external(*external)
        with tracker:
            run()
        peaks = tracker.get_tracker_snapshot("peak")
        counted = sum(int(by_kind.get("Total", 0)) for by_kind in peaks.values())
        return Peak(counted, _("PyTorch's memory tracker (MemTracker) on the CPU"), False, includes_held=False)

    def release(self) -> Released | None:
        if not (self.imported() and self.initialised()):
            return None
        self.config.empty_cache()
        return Released(_("PyTorch gave its cache of freed blocks back to the driver (torch.cuda.empty_cache())."))

    def in_force(self) -> list[str]:
        intra, inter = self.config.threads()
        settings = self.config.allocator_settings() or pgettext("allocator settings", "defaults")
        lines = [
            _("PyTorch {version}: CPU threads intra-op {intra}, inter-op {inter}; allocator {settings}").format(
                version=self.config.version(), intra=intra, inter=inter, settings=settings
            )
        ]
        lines.extend(f"PyTorch: {problem}" for problem in self.problems)
        if not self.initialised():
            lines.append(_("PyTorch has not started CUDA yet."))
            return lines
        for index in range(self.config.device_count()):
            total = self.config.device(index)[1]
            fraction = self.config.fraction(index)
            if fraction is None:
                cap = _("a cap this PyTorch cannot report")
            elif fraction < 1:
                cap = _("at most {limit} ({fraction})").format(
                    limit=format_mib(int(fraction * total)), fraction=f"{fraction:.2f}"
                )
            else:
                cap = _("no cap")
            lines.append(f"PyTorch cuda:{index}: {cap}")
        return lines


def _settings_variable() -> str:
    """PyTorch 2.9+ reads PYTORCH_ALLOC_CONF first; older ones only PYTORCH_CUDA_ALLOC_CONF."""
    return "PYTORCH_ALLOC_CONF" if "PYTORCH_ALLOC_CONF" in os.environ else "PYTORCH_CUDA_ALLOC_CONF"


def _with_setting(settings: str, key: str, value: str) -> str:
    """The user's allocator settings with ``key`` set, everything else kept."""
    kept = [item for item in settings.split(",") if item.strip() and item.split(":")[0].strip() != key]
    return ",".join([*kept, f"{key}:{value}"])


# Where PyTorch's allocator lists the settings it reads (CUDAAllocatorConfig::getAllocatorConfigKeys), in the
# headers its wheels carry: a build reads per_process_memory_fraction if its own header names it (pytorch#161035).
CONFIG_HEADERS = ("include/c10/cuda/CUDAAllocatorConfig.h", "include/c10/core/AllocatorConfig.h")


@functools.cache
def reads_fraction_setting() -> bool:
    """Whether the installed PyTorch reads per_process_memory_fraction from PYTORCH_CUDA_ALLOC_CONF, from its
    own headers, found without importing it; False where they are not installed (then only the call applies)."""
    spec = importlib.util.find_spec("torch") if "torch" not in sys.modules else sys.modules["torch"].__spec__
    for location in (spec.submodule_search_locations or []) if spec else []:
        for header in CONFIG_HEADERS:
            path = Path(location) / header
            if path.is_file() and '"per_process_memory_fraction"' in path.read_text(errors="replace"):
                return True
    return False
