"""Issue 46, Must 6: jupyter_gpumem/frameworks/cupy.py on a real GPU, each case in a fresh process.

- limit before / after: `%gpumem limit=` through the Controller before CuPy makes its pool (CUPY_GPU_MEMORY_LIMIT)
  and after (MemoryPool.set_limit through the adapter's apply); then arrays until CuPy's OutOfMemoryError, against
  the budget; the pool figures the adapter reads against cupy's own and NVML's; the adapter's release
  (free_all_blocks) with the pool and NVML before and after.
- largest: largest_batch on a CuPy step (counted by the adapter's memory hook) against the pool's own used_bytes
  read inside the step, and against the largest batch that runs under the pool's limit.
- context: in a fresh process, whether reading the pool on device 0 (the adapter's started() and memory_in_use())
  starts a CUDA context: NVML's process list and the GPU's used memory before and after.
"""

from __future__ import annotations

import os
import time
from typing import Any

from gpu.common import CANNOT_RUN, MISSED, Deadline, MiB, Section, mib, run_case
from gpu.frameworks import CHUNKS, _controller, _fresh_cache
from gpu.largest import largest_that_runs

WIDTH = 4096


def _own(control: Any) -> int | None:
    from jupyter_gpumem.gpu.snapshot import take_snapshot

    return control.read(take_snapshot()).snapshot.devices[0].listed_own_bytes


def limit_case(when: str, limit_mib: int) -> dict[str, Any]:
    from jupyter_gpumem.budget.policy import parse

    _fresh_cache()
    control = _controller()
    early: list[Any] = []
    if when == "after":
        import cupy

        early.append(cupy.zeros(64 * MiB, dtype=cupy.uint8))  # the pool is made, with CUDA
    notes = control.request(parse([f"limit={limit_mib}MiB", "gpus=0", "framework=cupy"]))
    import cupy

    adapter = control.adapters["cupy"]
    gpu = control.state.plan.gpus[0]
    pool = cupy.get_default_memory_pool()
    kept, allocated, nvml_peak = [], 0, 0
    for chunk in CHUNKS:
        while True:
            try:
                kept.append(cupy.empty(chunk, dtype=cupy.uint8))
            except cupy.cuda.memory.OutOfMemoryError:
                break
            allocated += chunk
            nvml_peak = max(nvml_peak, _own(control) or 0)
    ours = adapter.memory_in_use()
    figures = {
        "adapter": list(ours[0]) if ours else None,  # in use, peak, held
        "cupy": [pool.used_bytes(), pool.total_bytes()],
        "nvml": _own(control),
    }
    kept.clear()
    early.clear()
    before = [pool.total_bytes(), _own(control)]
    released = adapter.release()
    time.sleep(0.2)
    after = [pool.total_bytes(), _own(control)]
    return {
        "when": when,
        "budget": gpu.budget_bytes,
        "allocator_limit": gpu.allocator_limit_bytes,
        "pool_limit": pool.get_limit(),
        "variable": os.environ.get("CUPY_GPU_MEMORY_LIMIT"),
        "allocated": allocated + 64 * MiB * (when == "after"),
        "nvml_peak": nvml_peak,
        "figures": figures,
        "release": {"said": released.sentence if released else None, "before": before, "after": after},
        "notes": [str(n) for n in notes],
    }


def largest_case(limit_mib: int) -> dict[str, Any]:
    import cupy

    from jupyter_gpumem import largest_batch
    from jupyter_gpumem.frameworks.cupy import CuPy

    pool = cupy.get_default_memory_pool()
    pool.set_limit(size=limit_mib * MiB)
    weights = [cupy.random.standard_normal((WIDTH, WIDTH), dtype=cupy.float32) for _ in range(2)]
    seen: list[int] = []

    def step(x: Any) -> None:
        for w in weights:
            y = x @ w
            seen.append(pool.used_bytes())  # x and y both held: the step's peak, as CuPy counts it
            x = cupy.maximum(y, 0, out=y)
        float(x.sum())

    def batch_of(n: int) -> tuple[Any, ...]:
        return (cupy.ones((n, WIDTH), dtype=cupy.float32),)

    fit = largest_batch(step, batch_of, limit=limit_mib * MiB, verify=True)
    seen.clear()
    counted = CuPy().step_peak(lambda: step(*batch_of(fit.batch_size)))

    def runs(n: int) -> bool:
        try:
            step(*batch_of(n))
            return True
        except cupy.cuda.memory.OutOfMemoryError:
            return False
        finally:
            pool.free_all_blocks()

    return {
        "answer": fit.batch_size,
        "verified": fit.verified_bytes,
        "hook_peak": counted.bytes,
        "pool_peak_seen": max(seen, default=0),
        "truth": largest_that_runs(fit.batch_size, runs),
    }


def context_case() -> dict[str, Any]:
    import pynvml

    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)

    def look() -> dict[str, Any]:
        pids = [p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle)]
        return {
            "listed": os.getpid() in pids,
            "processes": len(pids),
            "used": pynvml.nvmlDeviceGetMemoryInfo(handle).used,
        }

    before = look()
    import cupy

    from jupyter_gpumem.frameworks.cupy import CuPy

    adapter = CuPy()
    started = adapter.initialised()
    figures = adapter.memory_in_use()
    time.sleep(0.5)
    after = look()
    return {
        "cupy": cupy.__version__,
        "started": started,
        "figures": [list(f) for f in figures],
        "before": before,
        "after": after,
    }


def section(args: Any, deadline: Deadline) -> Section:
    result = Section(
        "cupy",
        "CuPy's adapter on the GPU (issue 46, Must 6)",
        [
            "case",
            "budget",
            "pool limit",
            "allocated",
            "NVML peak",
            "held",
            "adapter (in use/peak/held)",
            "cupy (used/held)",
            "NVML now",
            "release: pool, NVML before -> after",
        ],
    )
    context = run_case("cupy_context", {}, deadline)
    if "error" in context:
        return result.fail(CANNOT_RUN, f"The cupy section measured nothing: {context['error']}.")
    result.data.append({"case": "context", **context})
    for when in ("before", "after"):
        case = run_case("cupy_limit", {"when": when, "limit_mib": args.limit_mib}, deadline)
        result.data.append({"case": f"limit {when}", **case})
        if "error" in case:
            result.rows.append([f"limit {when} the pool", case["error"]])
            result.fail(MISSED, f"limit set {when} the pool: {case['error']}.")
            continue
        held = case["nvml_peak"] <= case["budget"]
        in_force = case["pool_limit"] == case["allocator_limit"] and case["allocated"] <= case["pool_limit"]
        figures, release = case["figures"], case["release"]
        agree = figures["adapter"] is not None and figures["adapter"][0] == figures["cupy"][0]
        freed = release["after"][0] == 0
        if not (held and in_force and agree and freed):
            result.fail(
                MISSED,
                f"limit set {when} the pool: held {held}, in force {in_force}, figures agree "
                f"{agree}, released {freed}.",
            )
        adapter = "/".join(mib(v) for v in figures["adapter"]) if figures["adapter"] else "none"
        result.rows.append(
            [
                f"limit {when} the pool",
                mib(case["budget"]),
                mib(case["pool_limit"]),
                mib(case["allocated"]),
                mib(case["nvml_peak"]),
                "yes" if held else "NO",
                adapter,
                "/".join(mib(v) for v in figures["cupy"]),
                mib(figures["nvml"]),
                f"{mib(release['before'][0])}, {mib(release['before'][1])} -> "
                f"{mib(release['after'][0])}, {mib(release['after'][1])}",
            ]
        )
    largest = run_case("cupy_largest", {"limit_mib": args.limit_mib}, deadline)
    result.data.append({"case": "largest", **largest})
    if "error" in largest:
        result.fail(MISSED, f"largest_batch with CuPy: {largest['error']}.")
        result.notes.append(f"largest_batch with CuPy: {largest['error']}.")
    else:
        # The hook sees every block; used_bytes read between the step's operations can miss a transient one.
        same = largest["hook_peak"] is not None and largest["hook_peak"] >= largest["pool_peak_seen"]
        fits = largest["truth"] > 0 and 0.9 * largest["truth"] <= largest["answer"] <= largest["truth"]
        if not (same and fits):
            result.fail(MISSED, "largest_batch with CuPy: the hook's count or the answer is off.")
        result.notes.append(
            f"largest_batch with CuPy (a {WIDTH}-wide 2-layer step, pool limit {args.limit_mib} MiB): answer "
            f"{largest['answer']}, largest that runs {largest['truth']}; the adapter's hook counted "
            f"{mib(largest['hook_peak'])} MiB at the answer, the pool's used_bytes inside the step reached "
            f"{mib(largest['pool_peak_seen'])} MiB ({'at most the hook' if same else 'ABOVE the hook'})."
        )
    b, a = context["before"], context["after"]
    started = b["listed"] != a["listed"] or b["processes"] != a["processes"] or a["used"] - b["used"] > 64 * MiB
    if started:
        result.fail(MISSED, "Reading CuPy's pool in a fresh process started a CUDA context.")
    result.notes.append(
        f"CuPy {context['cupy']}, a fresh process: the adapter read the pool (started: {context['started']}); NVML "
        f"before/after: this process listed {b['listed']}/{a['listed']}, {b['processes']}/{a['processes']} processes, "
        f"GPU used {mib(b['used'])}/{mib(a['used'])} MiB: {'a context STARTED' if started else 'no context started'}."
    )
    result.notes.append(
        "MiB. Target: held, the pool's limit the allocator limit, the adapter's figures cupy's, "
        "the pool empty after release, no context from reading, the hook's count at least what used_bytes saw."
    )
    return result
