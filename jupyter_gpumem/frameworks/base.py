"""What every framework adapter provides (each of frameworks.ADAPTERS implements the same)."""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import math
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from jupyter_gpumem.budget.framework_interface import Allocator
from jupyter_gpumem.budget.plan import Plan
from jupyter_gpumem.i18n import gettext as _
from jupyter_gpumem.words import Said


class Released(NamedTuple):
    """What ``%gpumem free`` got from a framework: a sentence, and whether only a restart gives its pool back."""

    sentence: str
    restart_only: bool = False


class Peak(NamedTuple):
    """One step's peak memory as a framework's allocator counted it (``largest_batch``)."""

    bytes: int | None  # None: not counted; ``how`` is then the sentence saying why and what to do
    how: str  # how it was counted, a phrase ("torch.cuda.max_memory_allocated on cuda:0")
    on_gpu: bool = False  # counted on the GPU; else on the CPU, where the framework can count it there
    # The count includes what the allocator held before the step (weights, earlier results), as
    # max_memory_allocated after a reset does; False: the step's own buffers only (XLA's compiled analysis).
    includes_held: bool = True


def N_(message: str) -> str:
    """Marks a class attribute's phrase for the catalogue (``jlpm i18n:extract`` reads ``N_``) and leaves it English:
    it is made once at import, so the code that shows it translates it then (``gettext(adapter.free_earlier)``)."""
    return message


class Adapter(ABC):
    name: str  # for people: "TensorFlow"
    module: str  # for imports: "tensorflow"
    distributions: tuple[str, ...]  # the packages that install the module, for its version before import
    library_bytes: int  # its libraries' handles and workspaces per GPU, outside the allocator (estimate)
    takes: Said  # what it takes of a GPU without a policy, after its name: "takes nearly all ..."
    array_modules: tuple[str, ...]  # the top-level modules its arrays' types come from
    placing: str  # how code places work on GPU 1, which users take for choosing the GPU
    free_earlier: str | None  # how to free tensors of earlier cells from its pool (N_); None: it has no pool to free
    aliases: tuple[str, ...] = ()  # other spellings framework= takes ("tf"); its key and its module count already
    threads: bool  # threads=, intra=, inter= set its CPU thread pools (the magic's help lists those that do)
    growth: str  # what growth=on|off does to it, for the magic's help (N_): "off takes the pool at start"
    # step_peak's count of one size moves with what ran before (a BFC allocator counts the chunks it handed out):
    # largest_batch counts its answer thrice, after other steps. False where it counts what tensors asked for.
    count_moves: bool = True

    @property
    def default_phrase(self) -> Said:
        """ "TensorFlow takes nearly all ..." """
        return Said("framework_takes", framework=self.name, takes=self.takes)

    def imported(self) -> bool:
        return self.module in sys.modules

    def importable(self) -> bool:
        return self.imported() or importlib.util.find_spec(self.module) is not None

    def version(self) -> str | None:
        """The installed version, without importing the framework."""
        module = sys.modules.get(self.module)
        if module is not None and getattr(module, "__version__", None):
            return str(module.__version__)
        return installed_version(self.distributions)

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

    def too_late(self, plan: Plan) -> str | None:
        """Why ``plan`` can no longer take effect (a phrase), or None while it can."""
        if self.imported() and self.initialised():
            return _(
                "{framework} has already started in this kernel and fixes its GPU memory and thread settings then"
            ).format(framework=self.name)
        return None

    def gpu_problem(self, plan: Plan) -> str | None:
        """Why the plan's GPU budget holds on no GPU in this framework although NVML sees GPUs (a
        sentence naming the build and what to install), or None. Asked once the plan is applied;
        must not start the framework."""
        return None

    @abstractmethod
    def concatenate(self, values: list[Any]) -> Any:
        """This framework's arrays (tensors) joined along the first dimension."""

    @abstractmethod
    def apply(self, plan: Plan) -> list[str]:
        """Apply the plan to the imported, not yet initialised framework; lines saying what took effect."""

    @abstractmethod
    def in_force(self) -> list[str]:
        """What the framework runs with now, read without initialising it."""

    @abstractmethod
    def memory_in_use(self, cell: bool = False) -> tuple[Allocator, ...]:
        """The allocator per framework GPU, in the framework's order; empty until the runtime has
        started. Must not start it (the sampler calls this every interval). The peak is the kernel's;
        ``cell``: since the last ``reset_peak`` (the running cell's), where the framework can reset it."""

    def reset_peak(self) -> bool:
        """Start the allocator's peak afresh for the cell about to run, keeping the kernel's own peak for
        memory_in_use; False where the framework cannot reset it (JAX) or has not started (never starts it)."""
        return False

    def step_peak(self, run: Callable[[], object], objects: Sequence[object] = ()) -> Peak:
        """Run ``run()`` once (one step of the user's work) and count its peak memory through this framework's
        allocator: on the GPU where the framework uses one, else on the CPU where it can count it there.
        ``objects``: the step and its arguments (a framework may track models and optimisers among them)."""
        run()
        return Peak(None, _("jupyter-gpumem cannot count a step's memory in {framework}.").format(framework=self.name))

    def owns(self, value: object) -> bool:
        """``value`` is one of this framework's arrays, models or functions (by the module its type comes from)."""
        return any(
            module.split(".")[0] in self.array_modules
            for module in (type(value).__module__, *(getattr(c, "__module__", "") for c in type(value).__mro__))
        )

    def release(self) -> Released | None:
        """Give back to the driver what the started framework holds but no live array uses (``%gpumem free``,
        after a garbage collection); None where it has not started. Never starts it."""
        return None


class PeakKeeper:
    """The kernel's own peak per GPU across the per-cell resets of a framework's peak counter."""

    def __init__(self) -> None:
        self.peaks: list[int] = []

    def before_reset(self, peaks: list[int]) -> None:
        self.peaks = [max(p, self.peaks[i] if i < len(self.peaks) else 0) for i, p in enumerate(peaks)]

    def kernel(self, index: int, peak: int) -> int:
        return max(peak, self.peaks[index] if index < len(self.peaks) else 0)


@functools.cache
def installed_version(distributions: tuple[str, ...]) -> str | None:
    """The first of these packages that is installed (looked up once: the sampler plans every interval)."""
    for distribution in distributions:
        try:
            return importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def one_fraction(plan: Plan) -> float | None:
    """One fraction of each GPU's total for every GPU, where a framework takes one for all (JAX; PyTorch's
    environment): each GPU's allocator limit (its budget minus the CUDA context and libraries) over its total,
    the smallest, so that the whole process stays inside every budget."""
    fractions = [fraction_of(g.allocator_limit_bytes, g.total_bytes) for g in plan.gpus if g.allocator_limit_bytes]
    return min(fractions) if fractions else None


def fraction_of(limit: int, total: int) -> float:
    return math.floor(limit / total * 10_000) / 10_000  # rounded down: never above the limit
