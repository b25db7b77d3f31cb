"""TensorFlow 2.x: the only module that touches tf.config.

All tf.config calls go through TfConfig, one narrow interface: the translation from a plan to calls
is tested against a recording TfConfig on machines where TensorFlow has no GPU, and the real one
(RealTfConfig) is exercised by tensorflow-cpu for everything a CPU build can do (threads, the
initialisation check, an empty GPU list).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from jupyter_gpumem.budget.framework_interface import Allocator
from jupyter_gpumem.budget.plan import Plan
from jupyter_gpumem.frameworks.base import N_, Adapter, Peak, PeakKeeper, Released
from jupyter_gpumem.i18n import gettext as _
from jupyter_gpumem.i18n import pgettext
from jupyter_gpumem.units import MiB, format_mib
from jupyter_gpumem.words import Said

# cuDNN/cuBLAS handles and workspaces TensorFlow creates with each GPU device, on top of the CUDA
# context (overhead.py); none of it is inside its memory_limit.
LIBRARY_BYTES = 150 * MiB


class TfConfig(Protocol):
    def version(self) -> str: ...
    def initialised(self) -> bool: ...
    def physical_gpus(self) -> list[Any]: ...
    def visible_gpus(self) -> list[Any]: ...
    def set_visible_gpus(self, gpus: list[Any]) -> None: ...
    def set_memory_limit(self, gpu: Any, limit_mib: int) -> None: ...
    def set_memory_growth(self, gpu: Any, on: bool) -> None: ...
    def gpu_settings(self, gpu: Any) -> tuple[bool | None, int | None]: ...  # growth, limit in MiB
    def set_threads(self, intra: int | None, inter: int | None) -> None: ...
    def threads(self) -> tuple[int, int]: ...  # 0: TensorFlow's default (all cores)
    def memory_info(self) -> list[tuple[int, int]]: ...  # in use, peak per GPU; only once initialised
    def reset_peaks(self) -> None: ...  # each GPU's peak starts again from its in use; only once initialised
    def build_info(self) -> dict[str, Any]: ...  # tf.sysconfig.get_build_info(): is_cuda_build, cuda_version...


class RealTfConfig:
    """tf.config itself. Nothing here initialises TensorFlow's runtime."""

    @property
    def _tf(self) -> Any:
        return sys.modules["tensorflow"]

    def version(self) -> str:
        return str(self._tf.__version__)

    def initialised(self) -> bool:
        from tensorflow.python.eager import context

        return context.context()._context_handle is not None

    def physical_gpus(self) -> list[Any]:
        return list(self._tf.config.list_physical_devices("GPU"))

    def visible_gpus(self) -> list[Any]:
        return list(self._tf.config.get_visible_devices("GPU"))

    def set_visible_gpus(self, gpus: list[Any]) -> None:
        self._tf.config.set_visible_devices(gpus, "GPU")

    def set_memory_limit(self, gpu: Any, limit_mib: int) -> None:
        config = self._tf.config
        config.set_logical_device_configuration(gpu, [config.LogicalDeviceConfiguration(memory_limit=limit_mib)])

    def set_memory_growth(self, gpu: Any, on: bool) -> None:
        self._tf.config.experimental.set_memory_growth(gpu, on)

    def gpu_settings(self, gpu: Any) -> tuple[bool | None, int | None]:
        config = self._tf.config
        growth = config.experimental.get_memory_growth(gpu)
        logical = config.get_logical_device_configuration(gpu)
        limit = logical[0].memory_limit if logical else None
        return growth, limit

    def set_threads(self, intra: int | None, inter: int | None) -> None:
        threading = self._tf.config.threading
        if intra is not None:
            threading.set_intra_op_parallelism_threads(intra)
        if inter is not None:
            threading.set_inter_op_parallelism_threads(inter)

    def threads(self) -> tuple[int, int]:
        threading = self._tf.config.threading
        return threading.get_intra_op_parallelism_threads(), threading.get_inter_op_parallelism_threads()

    def memory_info(self) -> list[tuple[int, int]]:
        # get_memory_info and list_logical_devices start the runtime: callers check initialised() first.
        experimental = self._tf.config.experimental
        stats = []
        for position in range(len(self._tf.config.list_logical_devices("GPU"))):
            info = experimental.get_memory_info(f"GPU:{position}")
            stats.append((int(info["current"]), int(info["peak"])))
        return stats

    def reset_peaks(self) -> None:
        experimental = self._tf.config.experimental
        for position in range(len(self._tf.config.list_logical_devices("GPU"))):
            experimental.reset_memory_stats(f"GPU:{position}")

    def build_info(self) -> dict[str, Any]:
        return dict(self._tf.sysconfig.get_build_info())


class TensorFlow(Adapter):
    name = "TensorFlow"
    module = "tensorflow"
    distributions = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel", "tf-nightly")
    library_bytes = LIBRARY_BYTES
    takes = Said("takes_tensorflow")
    array_modules = ("tensorflow",)
    placing = 'tf.device("/gpu:1")'
    free_earlier = N_("del them and call tf.keras.backend.clear_session()")
    aliases = ("tf",)
    threads = True
    growth = N_("off takes the pool at start")

    def __init__(self, config: TfConfig | None = None):
        self.config: TfConfig = config or RealTfConfig()
        self._peaks = PeakKeeper()

    def environment(self, plan: Plan) -> dict[str, str]:
        env = super().environment(plan)
        policy = plan.policy
        if policy.growth is not None:
            # Read when the allocator is created; unlike set_memory_growth it combines with a memory limit.
            env["TF_FORCE_GPU_ALLOW_GROWTH"] = "true" if policy.growth else "false"
        if policy.intra_threads is not None:
            env["TF_NUM_INTRAOP_THREADS"] = str(policy.intra_threads)
        if policy.inter_threads is not None:
            env["TF_NUM_INTEROP_THREADS"] = str(policy.inter_threads)
        return env

    def initialised(self) -> bool:
        return self.config.initialised()

    def apply(self, plan: Plan) -> list[str]:
        policy = plan.policy
        lines = []
        for key, value in self.environment(plan).items():
            if key.startswith("TF_FORCE"):
                os.environ[key] = value  # still in time: read when the GPU allocator is created
        if policy.intra_threads is not None or policy.inter_threads is not None:
            self.config.set_threads(policy.intra_threads, policy.inter_threads)
        if plan.gpus or plan.hidden:
            lines.extend(self._apply_gpus(plan))
        return lines

    def gpu_problem(self, plan: Plan) -> str | None:
        if not plan.gpus:
            return None
        found = self.config.physical_gpus()
        if not found:
            return _no_gpu(self.config.version(), self.config.build_info())
        if len(found) not in (len(plan.gpus), len(plan.gpus) + len(plan.hidden)):
            return _(
                "TensorFlow sees {found} GPU(s) but NVML {listed}, so jupyter-gpumem cannot tell which is which and "
                "changed no GPU setting. Restart the kernel and run %gpumem before importing TensorFlow."
            ).format(found=len(found), listed=len(plan.gpus) + len(plan.hidden))
        return None

    def _apply_gpus(self, plan: Plan) -> list[str]:
        if self.gpu_problem(plan):
            return []  # the controller says why, with the state it publishes
        found = self.config.physical_gpus()
        if len(found) == len(plan.gpus):
            targets = found  # CUDA_VISIBLE_DEVICES was set before import: TensorFlow sees just these
        elif len(found) == len(plan.gpus) + len(plan.hidden):
            # TensorFlow was imported before %gpumem: hide the others through its own API instead.
            # With CUDA_DEVICE_ORDER=PCI_BUS_ID its order is NVML's.
            by_index = sorted([*(g.index for g in plan.gpus), *(d.index for d in plan.hidden)])
            targets = [found[by_index.index(g.index)] for g in plan.gpus]
            self.config.set_visible_gpus(targets)
        for gpu, target in zip(plan.gpus, targets, strict=True):
            if gpu.allocator_limit_bytes is not None:
                self.config.set_memory_limit(target, gpu.allocator_limit_bytes // MiB)
            elif plan.policy.growth is not None:
                self.config.set_memory_growth(target, plan.policy.growth)
        return []

    def concatenate(self, values: list[Any]) -> Any:
        return sys.modules["tensorflow"].concat(values, axis=0)

    def memory_in_use(self, cell: bool = False) -> tuple[Allocator, ...]:
        if not (self.imported() and self.initialised()):
            return ()
        pools = [self._pool(gpu) for gpu in self.config.visible_gpus()]
        allocators = []
        for index, ((in_use, peak), pool) in enumerate(zip(self.config.memory_info(), pools, strict=False)):
            ever = self._peaks.kernel(index, peak)
            # With growth off the allocator takes its whole memory_limit at its first allocation.
            allocators.append(Allocator(in_use, peak if cell else ever, pool if ever else None))
        return tuple(allocators)

    def reset_peak(self) -> bool:
        if not (self.imported() and self.initialised()):
            return False
        self._peaks.before_reset([peak for _, peak in self.config.memory_info()])
        self.config.reset_peaks()
        return True

    def owns(self, value: object) -> bool:
        # Keras 3 models and layers come from keras (or tf_keras), which runs on TensorFlow here.
        modules = {getattr(c, "__module__", "").split(".")[0] for c in type(value).__mro__}
        return bool(modules & {"tensorflow", "keras", "tf_keras"})

    def step_peak(self, run: Callable[[], object], objects: Sequence[object] = ()) -> Peak:
        """``tf.config.experimental.get_memory_info(device)['peak']`` after ``reset_memory_stats(device)``, on GPU:0
        where TensorFlow has a GPU (the kernel's own peak kept for the sidebar), else on CPU:0, which TensorFlow's
        allocator counts only when TF_CPU_ALLOCATOR_USE_BFC=true was set before it was imported. Either counts
        every tensor allocated, the step's and those held before it."""
        experimental = sys.modules["tensorflow"].config.experimental
        if self.config.memory_info():  # starts the runtime, as the step is about to
            self.reset_peak()
            run()
            return Peak(self.config.memory_info()[0][1], "tf.config.experimental.get_memory_info('GPU:0')", True)
        counted = os.environ.get("TF_CPU_ALLOCATOR_USE_BFC", "").lower() == "true"
        if counted:
            experimental.reset_memory_stats("CPU:0")
        run()
        peak = int(experimental.get_memory_info("CPU:0")["peak"]) if counted else 0
        if peak <= 0:
            return Peak(
                None,
                _(
                    "TensorFlow has no GPU here and does not count its memory on the CPU: set the environment "
                    "variable TF_CPU_ALLOCATOR_USE_BFC=true before TensorFlow is imported (in the kernel's "
                    "environment, or os.environ at the notebook's top, then restart the kernel) to measure the step "
                    "there."
                ),
            )
        return Peak(peak, "tf.config.experimental.get_memory_info('CPU:0') (TF_CPU_ALLOCATOR_USE_BFC=true)", False)

    def release(self) -> Released | None:
        if not (self.imported() and self.initialised()):
            return None
        return Released(
            _(
                "TensorFlow's allocator never gives memory back to the driver (tensorflow#17048): what it has "
                "taken stays this kernel's until a restart."
            ),
            restart_only=True,
        )

    def _pool(self, gpu: Any) -> int | None:
        growth, limit = self.config.gpu_settings(gpu)
        return limit * MiB if limit and not _grows(growth) else None  # without a limit it takes "nearly all"

    def in_force(self) -> list[str]:
        intra, inter = self.config.threads()
        lines = [
            _("TensorFlow {version}: CPU threads intra-op {intra}, inter-op {inter}").format(
                version=self.config.version(),
                intra=intra or pgettext("thread count", "default (all cores)"),
                inter=inter or pgettext("thread count", "default"),
            )
        ]
        gpus = self.config.visible_gpus()
        if not gpus:
            lines.append(_("TensorFlow uses no GPU."))
        for position, gpu in enumerate(gpus):
            growth, limit = self.config.gpu_settings(gpu)
            cap = f"memory_limit {format_mib(limit * MiB)}" if limit else _("no memory limit (takes nearly all)")
            said = (
                _("TensorFlow GPU:{position}: {cap}, growth on")
                if _grows(growth)
                else _("TensorFlow GPU:{position}: {cap}, growth off")
            )
            lines.append(said.format(position=position, cap=cap))
        return lines


def _no_gpu(version: str, build: dict[str, Any]) -> str:
    """Why TensorFlow found no GPU, from its own build information, and what to install."""
    if not build.get("is_cuda_build") and not build.get("is_rocm_build"):
        return _(
            "TensorFlow {version} is a CPU-only build (tensorflow-cpu, or a platform without GPU wheels), so it "
            "uses no GPU and the budget is not in force; for the GPU build: pip install 'tensorflow[and-cuda]'."
        ).format(version=version)
    needs = pgettext("list separator", ", ").join(
        f"{name} {build[key]}" for key, name in (("cuda_version", "CUDA"), ("cudnn_version", "cuDNN")) if build.get(key)
    )
    return _(
        "TensorFlow {version} is built for {needs} but found no GPU: those libraries are not installed or not "
        "found (TensorFlow's log names the missing one), so the budget is not in force; pip install "
        "'tensorflow[and-cuda]' installs the matching ones."
    ).format(version=version, needs=needs or _("a GPU"))


def _grows(growth: bool | None) -> bool:
    """The allocator grows on demand: TF_FORCE_GPU_ALLOW_GROWTH (read when it is made) overrides the option."""
    return os.environ.get("TF_FORCE_GPU_ALLOW_GROWTH") == "true" or bool(growth)
