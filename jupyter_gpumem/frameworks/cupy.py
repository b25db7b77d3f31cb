"""CuPy: the only module that touches cupy.

CuPy never preallocates: its default memory pool takes device memory as arrays need it and keeps what they free
for reuse, without a cap. A budget is the pool's limit: CUPY_GPU_MEMORY_LIMIT, which CuPy reads as it makes each
GPU's pool (at the first array there, or the first figure asked of it: so also after `import cupy`), and, once CuPy
is imported, ``MemoryPool.set_limit(size=...)`` on device 0's pool, made or not (it takes a new limit at any time,
as PyTorch does; a pool made before the variable was set never reads it). The pinned (host) memory pool is left
alone: it is the CPU's memory. What is fixed when CUDA starts is which GPUs it sees (CUDA_VISIBLE_DEVICES).

CuPy counts no peak and tells its figures for the current device only; asking a device's pool anything makes it
current, and making another GPU current starts a CUDA context there (CUDA 12's cudaSetDevice). So the figures
here are those of CuPy's first GPU (its device 0, the first of ``gpus=``): the only GPU of a one-GPU budget.

All cupy calls go through CupyConfig: the translation from a plan to calls is tested against a recording
CupyConfig, and the real one (RealCupyConfig) runs wherever CuPy imports, a GPU or not (without one, CuPy imports
and makes its pool object, and every figure or limit raises CUDARuntimeError).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from jupyter_gpumem.budget.framework_interface import Allocator
from jupyter_gpumem.budget.plan import Plan
from jupyter_gpumem.frameworks.base import N_, Adapter, Peak, Released
from jupyter_gpumem.i18n import gettext as _
from jupyter_gpumem.units import MiB, format_mib
from jupyter_gpumem.words import Said

# cuBLAS/cuSOLVER/cuFFT handles and plan caches CuPy creates per GPU on first use, outside its pool (estimate).
LIBRARY_BYTES = 100 * MiB
LIMIT_VARIABLE = "CUPY_GPU_MEMORY_LIMIT"  # bytes, or a share of each GPU ("40%"); read as each GPU's pool is made
GPU_DISTRIBUTIONS = ("cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x", "cupy-rocm-6-0", "cupy-rocm-5-0", "cupy")


class CupyConfig(Protocol):
    def version(self) -> str: ...
    def available(self) -> bool: ...  # cupy.cuda.is_available(): a GPU and a driver it can use; starts no context
    def started(self) -> bool: ...  # its pool on device 0 holds memory (makes that pool); never starts CUDA
    def pool(self) -> tuple[int, int]: ...  # used, held (total) bytes of device 0's pool; started only
    def limit(self) -> int: ...  # device 0's pool limit in bytes, 0: none; started only
    def set_limit(self, size: int) -> None: ...  # device 0's pool, made here if it is not yet; available only
    def free_blocks(self) -> None: ...  # the pool's free blocks back to the driver; started only
    def count(self, run: Callable[[], object]) -> int: ...  # the pool's peak in use while run() runs; available only


class RealCupyConfig:
    """cupy itself. Nothing here makes a GPU current or starts a CUDA context that has not started."""

    @property
    def _cupy(self) -> Any:
        return sys.modules["cupy"]

    def version(self) -> str:
        return str(self._cupy.__version__)

    def available(self) -> bool:
        return bool(self._cupy.cuda.is_available())

    def started(self) -> bool:
        if os.environ.get(LIMIT_VARIABLE, "").strip().endswith("%"):
            # A share is turned into bytes with cudaMemGetInfo as the pool is made: asking now could make it, and a
            # context with it. Without a budget of ours (which writes bytes), such a CuPy is not read.
            return False
        try:
            return bool(self._cupy.get_default_memory_pool().total_bytes())  # device 0 on this (the asking) thread
        except Exception:  # CUDARuntimeError: no driver, no GPU
            return False

    def pool(self) -> tuple[int, int]:
        pool = self._cupy.get_default_memory_pool()
        return int(pool.used_bytes()), int(pool.total_bytes())

    def limit(self) -> int:
        return int(self._cupy.get_default_memory_pool().get_limit())

    def set_limit(self, size: int) -> None:
        with self._cupy.cuda.Device(0):
            self._cupy.get_default_memory_pool().set_limit(size=size)

    def free_blocks(self) -> None:
        with self._cupy.cuda.Device(0):
            self._cupy.get_default_memory_pool().free_all_blocks()

    def count(self, run: Callable[[], object]) -> int:
        cupy = self._cupy
        with cupy.cuda.Device(0):
            peak = PeakHook(cupy.get_default_memory_pool().used_bytes())  # device 0's pool, as the hook counts
            with peak.installed(cupy.cuda.memory_hook.MemoryHook):
                run()
                cupy.cuda.Device(0).synchronize()
        return peak.peak


class PeakHook:
    """The pool's bytes in use and their peak, from CuPy's memory hook calls (``malloc_postprocess`` and
    ``free_postprocess``: each block's ``mem_size``, as the pool hands it out), starting from ``in_use``."""

    def __init__(self, in_use: int):
        self.in_use = self.peak = in_use

    def malloc(self, mem_size: int) -> None:
        self.in_use += mem_size
        self.peak = max(self.peak, self.in_use)

    def free(self, mem_size: int) -> None:
        self.in_use -= mem_size

    def installed(self, base: type[Any]) -> Any:
        """A cupy.cuda.memory_hook.MemoryHook (``base``) feeding this count; ``with`` installs it on this thread."""
        counter = self

        class Hook(base):  # type: ignore[misc]
            name = "jupyter_gpumem_peak"

            # Device 0's blocks only: the figures here are its pool's (a step may place arrays on other GPUs).
            def malloc_postprocess(self, **call: Any) -> None:
                if call.get("device_id", 0) == 0:
                    counter.malloc(int(call["mem_size"]))

            def free_postprocess(self, **call: Any) -> None:
                if call.get("device_id", 0) == 0:
                    counter.free(int(call["mem_size"]))

        return Hook()


class CuPy(Adapter):
    name = "CuPy"
    module = "cupy"
    distributions = GPU_DISTRIBUTIONS
    library_bytes = LIBRARY_BYTES
    takes = Said("takes_cupy")
    array_modules = ("cupy", "cupyx")
    placing = "with cupy.cuda.Device(1): ..."
    free_earlier = None  # no pool taken at start: what arrays free stays in its pool until %gpumem free
    threads = False
    growth = N_("always allocates on demand, so growth= changes nothing")
    count_moves = False  # its hook counts the blocks the pool hands out, the same every time

    def __init__(self, config: CupyConfig | None = None):
        self.config: CupyConfig = config or RealCupyConfig()
        self._peak = 0  # the largest in use seen: CuPy keeps no peak of its own

    def environment(self, plan: Plan) -> dict[str, str]:
        env = super().environment(plan)
        limit = _limit(plan)
        if limit is not None:
            env[LIMIT_VARIABLE] = str(limit)  # bytes: a share would start CUDA as the pool is made (started())
        return env

    def initialised(self) -> bool:
        return self.config.started()

    def too_late(self, plan: Plan) -> str | None:
        if plan.policy.gpus is not None and self.imported() and self.initialised():
            return _(
                "CUDA has started in CuPy (its memory pool holds memory), and CUDA reads which GPUs it may use "
                "(CUDA_VISIBLE_DEVICES) only when it starts, so gpus= cannot take effect"
            )
        return None

    def apply(self, plan: Plan) -> list[str]:
        # The controller has set CUPY_GPU_MEMORY_LIMIT (environment): every GPU's pool made from now on reads it.
        policy = plan.policy
        notes = []
        if policy.intra_threads is not None or policy.inter_threads is not None:
            notes.append(_("CuPy has no setting for CPU threads, so threads=/intra=/inter= do not apply to CuPy."))
        if policy.growth is not None:
            notes.append(
                _("CuPy always allocates on demand (its pool grows as arrays need it): growth= changes nothing.")
            )
        limits = {g.allocator_limit_bytes for g in plan.gpus if g.allocator_limit_bytes is not None}
        limit = _limit(plan)
        if len(limits) > 1 and limit is not None:
            notes.append(
                _(
                    "CuPy takes one pool limit for every GPU: {limit}, the smallest, so that each GPU stays inside "
                    "its budget (the larger GPUs keep some of theirs unused)."
                ).format(limit=format_mib(limit))
            )
        if limit is not None and self.imported() and self.config.available():
            # Device 0's pool reads the variable once, as it is made, and anything may have made it since the import
            # (a figure asked of it, an array): the limit is set on it, which makes it where it is not made yet and
            # starts no CUDA context (a size, not a share). CuPy takes a new limit at any time.
            self.config.set_limit(limit)
        if limit is not None and self.imported() and self.initialised():
            held = self.config.pool()[1]
            if held > limit:
                notes.append(
                    _(
                        "CuPy's pool already holds {held}, above its new limit of {limit}: %gpumem free gives back "
                        "its free blocks; arrays still in use keep theirs."
                    ).format(held=format_mib(held), limit=format_mib(limit))
                )
        return notes

    def gpu_problem(self, plan: Plan) -> str | None:
        if not plan.gpus or self.config.available():
            return None
        return _(
            "CuPy {version} finds no GPU it can use (cupy.cuda.is_available() is False): the NVIDIA driver is missing "
            "or older than the CUDA this CuPy is built for (its package's name says which: cupy-cuda12x, "
            "cupy-cuda13x), or CUDA_VISIBLE_DEVICES hides every GPU; the budget is not in force."
        ).format(version=self.config.version())

    def concatenate(self, values: list[Any]) -> Any:
        return sys.modules["cupy"].concatenate(values, axis=0)

    def memory_in_use(self, cell: bool = False) -> tuple[Allocator, ...]:
        # CuPy keeps no peak: the largest in use seen by these readings (and by largest_batch's counts), which a
        # peak shorter than the sampling interval can escape; it cannot be reset (as JAX's cannot).
        if not (self.imported() and self.initialised()):
            return ()
        used, held = self.config.pool()
        self._peak = max(self._peak, used)
        return (Allocator(used, self._peak, held),)

    def step_peak(self, run: Callable[[], object], objects: Sequence[object] = ()) -> Peak:
        """The pool's peak in use during one step, counted by a CuPy memory hook on every block the pool hands out
        and takes back (``cupy.cuda.MemoryHook``'s ``malloc_postprocess``/``free_postprocess``), on CuPy's device 0,
        from what it held in use before the step. CuPy uses no CPU: without a GPU nothing is counted."""
        if not self.config.available():
            run()
            return Peak(
                None,
                _(
                    "CuPy finds no GPU here (cupy.cuda.is_available() is False) and runs nothing on the CPU, so "
                    "jupyter-gpumem cannot count the step's memory in CuPy."
                ),
            )
        peak = self.config.count(run)
        self._peak = max(self._peak, peak)
        return Peak(peak, _("a CuPy memory hook on its memory pool, on GPU 0"), True)

    def release(self) -> Released | None:
        if not (self.imported() and self.initialised()):
            return None
        self.config.free_blocks()
        return Released(
            _(
                "CuPy gave its memory pool's free blocks back to the driver (free_all_blocks()); its pinned host "
                "memory pool is left alone."
            )
        )

    def in_force(self) -> list[str]:
        limit = os.environ.get(LIMIT_VARIABLE, "").strip()
        lines = [
            _("CuPy {version}: memory pool limit {limit} ({variable}, read as each GPU's pool is made)").format(
                version=self.config.version(), limit=limit or _("none"), variable=LIMIT_VARIABLE
            )
        ]
        if not self.initialised():
            lines.append(_("CuPy's memory pool holds nothing yet."))
            return lines
        used, held = self.config.pool()
        cap = self.config.limit()
        lines.append(
            _("CuPy GPU 0: pool holds {held}, {used} in use; limit {limit}").format(
                held=format_mib(held), used=format_mib(used), limit=format_mib(cap) if cap else _("none")
            )
        )
        return lines


def _limit(plan: Plan) -> int | None:
    """One pool limit for every GPU, the smallest allocator limit: CuPy's variable takes one for all."""
    limits = [g.allocator_limit_bytes for g in plan.gpus if g.allocator_limit_bytes is not None]
    return min(limits) if limits else None
