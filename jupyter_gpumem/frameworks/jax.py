"""JAX: the only module that touches jax.

JAX (XLA's GPU client) reads its memory settings from the environment when its backend starts, at the
first operation or jax.devices(): XLA_PYTHON_CLIENT_PREALLOCATE (take the pool at start, the default),
XLA_PYTHON_CLIENT_MEM_FRACTION (the pool's cap, a share of each GPU's total; 0.75 by default) and
XLA_PYTHON_CLIENT_ALLOCATOR (only its BFC allocator keeps to the fraction). After that nothing changes
them: the backend is the point of no return, as TensorFlow's runtime is.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from jupyter_gpumem.budget.framework_interface import Allocator
from jupyter_gpumem.budget.plan import Plan
from jupyter_gpumem.frameworks.base import N_, Adapter, Peak, Released, installed_version
from jupyter_gpumem.frameworks.base import fraction_of as _fraction
from jupyter_gpumem.frameworks.base import one_fraction as pool_fraction
from jupyter_gpumem.i18n import gettext as _
from jupyter_gpumem.i18n import ngettext, pgettext
from jupyter_gpumem.units import MiB
from jupyter_gpumem.words import Said

# cuBLAS/cuDNN handles and XLA's autotuning workspaces per GPU, outside its allocator pool.
LIBRARY_BYTES = 150 * MiB
DEFAULT_FRACTION = 0.75
GPU_PLUGINS = ("jax-cuda12-plugin", "jax-cuda13-plugin", "jax-cuda12-pjrt", "jax-cuda13-pjrt", "jax-rocm7-plugin")


class Jax(Adapter):
    name = "JAX"
    module = "jax"
    distributions = ("jax",)
    library_bytes = LIBRARY_BYTES
    takes = Said("takes_jax")
    array_modules = ("jax", "jaxlib")
    placing = "jax.device_put(x, jax.devices()[1])"
    free_earlier = N_("del them (JAX frees an array's memory when its last reference goes)")
    threads = False
    growth = N_("off takes the pool at start")

    def environment(self, plan: Plan) -> dict[str, str]:
        env = super().environment(plan)
        policy = plan.policy
        if policy.growth is not None:
            env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false" if policy.growth else "true"
        fraction = pool_fraction(plan)
        if fraction is not None:
            # jaxlib 0.7+ also reads XLA_CLIENT_MEM_FRACTION and refuses both at once: keep to the user's.
            name = (
                "XLA_CLIENT_MEM_FRACTION"
                if "XLA_CLIENT_MEM_FRACTION" in os.environ
                else "XLA_PYTHON_CLIENT_MEM_FRACTION"
            )
            env[name] = f"{fraction:.4f}"
            env["XLA_PYTHON_CLIENT_ALLOCATOR"] = "bfc"  # the platform and async allocators ignore the fraction
        return env

    def initialised(self) -> bool:
        bridge = sys.modules.get("jax._src.xla_bridge")
        return bridge is not None and bool(bridge.backends_are_initialized())

    def too_late(self, plan: Plan) -> str | None:
        if self.imported() and self.initialised():
            return _(
                "JAX's backend has started in this kernel (its first operation or jax.devices()), and it reads "
                "its GPU memory settings (XLA_PYTHON_CLIENT_*) and which GPUs it may use only when it starts"
            )
        return None

    def apply(self, plan: Plan) -> list[str]:
        # The environment, set by the controller, is all JAX reads; its backend reads it when it starts.
        notes = []
        policy = plan.policy
        if policy.intra_threads is not None or policy.inter_threads is not None:
            notes.append(
                _("JAX has no setting for its CPU thread pools, so threads=/intra=/inter= do not apply to JAX.")
            )
        fractions = {_fraction(g.allocator_limit_bytes, g.total_bytes) for g in plan.gpus if g.allocator_limit_bytes}
        if len(fractions) > 1:
            notes.append(
                _(
                    "JAX takes one memory fraction for every GPU: {fraction}, the smallest, so that each GPU stays "
                    "inside its budget (the larger GPUs keep some of theirs unused)."
                ).format(fraction=f"{min(fractions):.4f}")
            )
        return notes

    def gpu_problem(self, plan: Plan) -> str | None:
        if not plan.gpus or _gpu_plugin() is not None:
            return None
        return _(
            "JAX {version} has only its CPU backend here (no jax-cuda12-plugin or jax-cuda13-plugin installed), so it "
            "uses no GPU and the budget is not in force; for the GPU: pip install -U 'jax[cuda12]'."
        ).format(version=self.version() or _("(version unknown)"))

    def concatenate(self, values: list[Any]) -> Any:
        return sys.modules["jax.numpy"].concatenate(values, axis=0)

    def memory_in_use(self, cell: bool = False) -> tuple[Allocator, ...]:
        # JAX cannot reset peak_bytes_in_use: the cell's peak is told only where it raised the kernel's.
        if not (self.imported() and self.initialised()):
            return ()
        return tuple(_allocator(device.memory_stats() or {}) for device in _gpus())

    def step_peak(self, run: Callable[[], object], objects: Sequence[object] = ()) -> Peak:
        """``peak_bytes_in_use`` of JAX's default device's ``memory_stats()``, around the step (its result waited
        for). JAX cannot reset that peak, so a step whose peak stays below one the process reached before is not
        counted; on the CPU JAX counts nothing (memory_stats() is None): for both, a jitted step is measured by
        XLA's compiler instead (compiled_peak)."""
        device = sys.modules["jax"].devices()[0]
        before = (device.memory_stats() or {}).get("peak_bytes_in_use")
        sys.modules["jax"].block_until_ready(run())
        stats = device.memory_stats()
        if stats is None or before is None:
            return Peak(
                None,
                _(
                    "JAX does not count memory on its {platform} device (memory_stats() is None): pass a jitted step "
                    "(jax.jit(f)), whose peak XLA's compiler tells without running it."
                ).format(platform=device.platform.upper()),
            )
        peak = int(stats.get("peak_bytes_in_use", 0))
        if peak <= before:
            return Peak(
                None,
                _(
                    "JAX cannot reset its peak (memory_stats()'s peak_bytes_in_use), and this step stayed below the "
                    "peak this kernel reached earlier: pass a jitted step (jax.jit(f)) to have XLA's compiler tell it."
                ),
            )
        how = _("memory_stats()['peak_bytes_in_use'] on {device}").format(device=device)
        return Peak(peak, how, device.platform != "cpu")

    def compiled_peak(self, jitted: Any, args: Sequence[object]) -> Peak:
        """A jitted function's peak as XLA plans it, without running it: ``jitted.lower(*args).compile()``'s
        ``memory_analysis()``: its ``peak_memory_in_bytes``, or argument + output + temporary − aliased bytes where
        that is larger (XLA's CPU backend leaves its temporary buffer out of the peak). Only the step's own
        buffers: arrays the kernel holds that are not its arguments are not in it."""
        compiled = jitted.lower(*args).compile()
        analysis = compiled.memory_analysis()
        device = sys.modules["jax"].devices()[0]
        if analysis is None:
            said = _("XLA gives no memory analysis of a compiled function on {platform}.")
            return Peak(None, said.format(platform=device.platform.upper()))
        buffers = (
            analysis.argument_size_in_bytes
            + analysis.output_size_in_bytes
            + analysis.temp_size_in_bytes
            - analysis.alias_size_in_bytes
        )
        peak = max(int(getattr(analysis, "peak_memory_in_bytes", 0) or 0), int(buffers))
        how = _("XLA's memory analysis of the compiled step on {platform} (not run)").format(
            platform=device.platform.upper()
        )
        return Peak(peak, how, device.platform != "cpu", includes_held=False)

    def release(self) -> Released | None:
        if not (self.imported() and self.initialised()):
            return None
        sys.modules["jax"].clear_caches()
        if os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR", "").lower() == "platform":
            return Released(
                _(
                    "JAX cleared its compilation caches (jax.clear_caches()); its platform allocator has "
                    "given freed arrays back to the driver."
                )
            )
        return Released(
            _(
                "JAX cleared its compilation caches (jax.clear_caches()); its allocator keeps the pool it has taken "
                "(preallocated, or grown) for its own reuse, so only a restart gives that back."
            ),
            restart_only=True,
        )

    def in_force(self) -> list[str]:
        version = sys.modules["jax"].__version__
        fraction = os.environ.get("XLA_CLIENT_MEM_FRACTION") or os.environ.get("XLA_PYTHON_CLIENT_MEM_FRACTION")
        preallocate = os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "true").lower() not in ("false", "0")
        allocator = os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR") or pgettext("allocator", "default (bfc)")
        said = (
            _("JAX {version}: memory fraction {fraction}, preallocate on, allocator {allocator} (as read at its start)")
            if preallocate
            else _(
                "JAX {version}: memory fraction {fraction}, preallocate off, allocator {allocator} "
                "(as read at its start)"
            )
        )
        default = _("{fraction} (default)").format(fraction=DEFAULT_FRACTION)
        lines = [said.format(version=version, fraction=fraction or default, allocator=allocator)]
        if self.initialised():
            gpus = _gpus()
            count = ngettext("JAX uses {count} GPU.", "JAX uses {count} GPUs.", len(gpus))
            lines.append(count.format(count=len(gpus)) if gpus else _("JAX uses no GPU."))
        return lines


def _gpu_plugin() -> str | None:
    """The installed package that gives JAX a GPU backend, found without importing it."""
    for distribution in GPU_PLUGINS:
        if installed_version((distribution,)) is not None:
            return distribution
    jaxlib = installed_version(("jaxlib",)) or ""
    return "jaxlib" if "cuda" in jaxlib or "rocm" in jaxlib else None  # before plugins: jaxlib 0.4.x+cuda12


def _gpus() -> list[Any]:
    return [d for d in sys.modules["jax"].devices() if d.platform in ("gpu", "cuda")]


def _allocator(stats: dict[str, int]) -> Allocator:
    pool = stats.get("pool_bytes")  # the BFC allocator's pool: its whole limit once preallocated
    return Allocator(int(stats.get("bytes_in_use", 0)), int(stats.get("peak_bytes_in_use", 0)), pool)
