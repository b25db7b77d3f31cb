"""Issue 45, Must 3 (story S1), PyTorch and JAX on GPU 0, each case in a fresh process:

- fractions: `%gpumem fraction=F gpus=0` (or `limit=`) through the Controller the magic uses, before the framework
  starts; then tensors until the framework runs out of memory, NVML read after each. The budget, NVML's peak for
  the process, the allocator's peak, the CUDA context and libraries measured (NVML's figure less the allocator's
  pool) against budget/overhead.py's estimate, held or not, and the share of the budget tensors could use.
- stream: the figure the sidebar's stream sends for this process (kernel/protocol.encode_sample of the
  Controller's reading, as kernel/stream.py sends it) against `nvidia-smi --query-compute-apps` for the same pid,
  read just before and just after ours, at three sizes held still.
- cells: four cells' worth of allocations through the hooks `%gpumem cells` uses (kernel/recorder.Recorder's
  before/after, its observe fed by a thread that samples as kernel/stream.py does), against the allocator's own
  peak (torch.cuda.max_memory_allocated, reset by the recorder as each cell starts; JAX's peak_bytes_in_use).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from gpu.common import CANNOT_RUN, MISSED, Deadline, MiB, Section, frameworks_present, mib, out_of_memory, run_case

TARGET_USABLE = 0.90
CHUNKS = (256 * MiB, 32 * MiB, 4 * MiB, MiB)  # big first, then fill the remainder finer
NAMES = {"torch": "pytorch", "jax": "jax"}  # module -> the policy's framework= (frameworks.ADAPTERS)
STREAM_SIZES_MIB = (1024, 3072, 6144)  # held, one after the other (cumulative)


def _fresh_cache() -> None:
    # A measured overhead is remembered per GPU model (budget/overhead.py): each case plans from the estimate.
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="gpumem-acceptance-")


def allocator(framework: str) -> tuple[Callable[[int], Any], Callable[[], dict[str, int]]]:
    """A function that puts n bytes on GPU 0, and one that reads the allocator's own figures there."""
    if framework == "torch":
        import torch

        def torch_stats() -> dict[str, int]:
            return {
                "in_use": torch.cuda.memory_allocated(0),
                "peak": torch.cuda.max_memory_allocated(0),
                "pool": torch.cuda.memory_reserved(0),
            }

        return (lambda n: torch.empty(n, dtype=torch.uint8, device="cuda:0")), torch_stats
    import jax
    import jax.numpy as jnp

    device = jax.devices("gpu")[0]

    def put(n: int) -> Any:
        return jnp.zeros((n,), dtype=jnp.uint8, device=device).block_until_ready()

    def jax_stats() -> dict[str, int]:
        stats = device.memory_stats() or {}
        pool = stats.get("pool_bytes", stats.get("bytes_reserved", stats.get("bytes_limit", 0)))
        return {"in_use": stats.get("bytes_in_use", 0), "peak": stats.get("peak_bytes_in_use", 0), "pool": pool}

    return put, jax_stats


def _controller() -> Any:
    from jupyter_gpumem.budget.config import GpumemConfig
    from jupyter_gpumem.kernel.control import Controller

    return Controller(GpumemConfig())


def fractions_case(framework: str, fraction: float | None = None, limit_mib: int | None = None) -> dict[str, Any]:
    from jupyter_gpumem.budget.overhead import estimate
    from jupyter_gpumem.budget.policy import PolicyError, parse
    from jupyter_gpumem.gpu.snapshot import take_snapshot

    _fresh_cache()
    control = _controller()
    asked = f"fraction={fraction}" if fraction is not None else f"limit={limit_mib}MiB"
    try:
        control.request(parse([asked, "gpus=0", f"framework={NAMES[framework]}"]))
    except PolicyError as error:
        return {"error": str(error)}
    plan = control.state.plan
    if plan is None or not plan.gpus:
        return {"error": "no GPU to plan for"}
    gpu = plan.gpus[0]
    adapter = control.adapters[NAMES[framework]]
    device = next(d for d in take_snapshot().devices if d.uuid == gpu.uuid)
    estimated = estimate(device, adapter.name, adapter.library_bytes)
    put, stats = allocator(framework)
    kept, allocated, nvml_peak, own = [], 0, 0, None
    for chunk in CHUNKS:
        while True:
            try:
                kept.append(put(chunk))
            except Exception as error:
                if not out_of_memory(error):
                    raise
                break
            allocated += chunk
            reading = control.read(take_snapshot())
            own = reading.snapshot.devices[gpu.index].listed_own_bytes
            nvml_peak = max(nvml_peak, own or 0)
    figures = stats()
    measured = control.calibration.measured(gpu.uuid)
    return {
        "asked": asked,
        "budget": gpu.budget_bytes,
        "allocator_limit": gpu.allocator_limit_bytes,
        "nvml_peak": nvml_peak,
        "nvml_listed": own is not None,
        "allocated": allocated,
        "allocator_peak": figures["peak"],
        "pool": figures["pool"],
        "outside_pool": (own - figures["pool"]) if own is not None else None,
        "measured_overhead": measured.bytes if measured else None,
        "planned_overhead": gpu.overhead_bytes,
        "planned_source": gpu.overhead.source,
        "estimated_overhead": estimated.bytes,
    }


def fractions_section(args: Any, deadline: Deadline) -> Section:
    result = Section(
        "fractions",
        "A fraction or limit as nvidia-smi counts it (issue 45, Must 3; story S1)",
        [
            "framework",
            "asked",
            "budget",
            "NVML peak",
            "allocator peak",
            "tensors",
            "context+libs measured",
            "estimate",
            "planned",
            "held",
            "usable",
        ],
    )
    present = frameworks_present(args.frameworks)
    asks: list[dict[str, Any]] = [{"fraction": f} for f in args.fractions] + [{"limit_mib": args.limit_mib}]
    for framework in present:
        for ask in asks:
            case = run_case("fractions", {"framework": framework, **ask}, deadline)
            result.data.append({"framework": framework, **ask, **case})
            asked = f"fraction={ask['fraction']}" if "fraction" in ask else f"limit={ask['limit_mib']}MiB"
            if "error" in case:
                result.rows.append([framework, asked, case["error"]])
                result.fail(MISSED, f"{framework} {asked}: {case['error']}.")
                continue
            held = case["nvml_peak"] <= case["budget"]
            usable = case["allocated"] / case["budget"]
            if not held or usable < TARGET_USABLE:
                result.fail(MISSED, f"{framework} {asked}: {'not held' if not held else 'too little usable'}.")
            outside = case["measured_overhead"] if case["measured_overhead"] is not None else case["outside_pool"]
            result.rows.append(
                [
                    framework,
                    asked,
                    mib(case["budget"]),
                    mib(case["nvml_peak"] if case["nvml_listed"] else None),
                    mib(case["allocator_peak"]),
                    mib(case["allocated"]),
                    mib(outside),
                    mib(case["estimated_overhead"]),
                    f"{mib(case['planned_overhead'])} ({case['planned_source']})",
                    "yes" if held else "NO",
                    f"{usable:.0%}",
                ]
            )
    if not present:
        result.fail(CANNOT_RUN, f"None of {', '.join(args.frameworks)} is installed: nothing was measured.")
    result.notes.append(
        f"MiB. context+libs measured: NVML's figure for the process less the allocator's pool, as the Controller's "
        f"calibration measured it. Target: held in every case, >= {TARGET_USABLE:.0%} of the budget usable."
    )
    return result


def _smi(pid: int) -> tuple[int | None, int]:
    """nvidia-smi's used_memory for ``pid`` (bytes; None: not listed) and how many compute apps it lists."""
    done = subprocess.run(
        ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        timeout=20,
        check=True,
    )
    rows = [line.split(",") for line in done.stdout.strip().splitlines() if "," in line]
    mine = [int(used) * MiB for p, used in rows if p.strip() == str(pid) and used.strip().isdigit()]
    return (sum(mine) if mine else None), len(rows)


def stream_case(framework: str) -> dict[str, Any]:
    from jupyter_gpumem.gpu.snapshot import take_snapshot
    from jupyter_gpumem.kernel.protocol import encode_sample

    if shutil.which("nvidia-smi") is None:
        return {"error": "nvidia-smi is not on PATH: nothing to compare with"}
    if framework == "jax":
        os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    control = _controller()
    put, stats = allocator(framework)
    kept, rows, held = [], [], 0
    for size in STREAM_SIZES_MIB:
        kept.append(put(size * MiB - held))
        held = size * MiB
        time.sleep(0.2)
        smi_before, apps = _smi(os.getpid())
        sample = encode_sample(control.read(take_snapshot()))
        smi_after, _ = _smi(os.getpid())
        gpu = sample["gpus"][0]
        rows.append(
            {
                "held": held,
                "ours": gpu["own_bytes"],
                "source": gpu["own_source"],
                "ours_pid": gpu["own_pid"],
                "smi_before": smi_before,
                "smi_after": smi_after,
                "apps": apps,
                "pool": stats()["pool"],
            }
        )
    return {"pid": os.getpid(), "rows": rows}


def stream_section(args: Any, deadline: Deadline) -> Section:
    result = Section(
        "stream",
        "The stream's figure for the process against nvidia-smi --query-compute-apps (issue 45, Must 3)",
        [
            "framework",
            "tensors held",
            "stream own",
            "source",
            "nvidia-smi before",
            "nvidia-smi after",
            "difference",
            "allocator pool",
        ],
    )
    present = frameworks_present([f for f in args.frameworks if f in NAMES])
    for framework in present:
        case = run_case("stream", {"framework": framework}, deadline)
        result.data.append({"framework": framework, **case})
        if "error" in case:
            result.rows.append([framework, case["error"]])
            result.fail(MISSED, f"{framework}: {case['error']}.")
            continue
        for row in case["rows"]:
            smi = row["smi_after"] if row["smi_before"] == row["smi_after"] else None
            difference = None if smi is None or row["ours"] is None else row["ours"] - smi
            if smi is None or difference is None or abs(difference) > MiB:
                result.fail(MISSED, f"{framework} at {mib(row['held'])} MiB: the figures differ or moved.")
            result.rows.append(
                [
                    framework,
                    mib(row["held"]),
                    mib(row["ours"]),
                    str(row["source"]),
                    mib(row["smi_before"]),
                    mib(row["smi_after"]),
                    mib(difference) if difference is not None else "N/A",
                    mib(row["pool"]),
                ]
            )
        result.notes.append(f"{framework}: pid {case['pid']}; nvidia-smi listed {case['rows'][-1]['apps']} apps.")
    if not present:
        result.fail(CANNOT_RUN, "Neither PyTorch nor JAX is installed: nothing was measured.")
    result.notes.append("MiB. Target: the stream's figure equals nvidia-smi's (to 1 MiB, its unit) at each size.")
    return result


CELLS = (  # (first line, bytes kept, bytes of a temporary freed before the cell ends)
    ("x = zeros(512 MiB)", 512 * MiB, 0),
    ("y = f(x)  # a 2 GiB temporary", 0, 2048 * MiB),
    ("z = zeros(1 GiB); w = a 3 GiB temporary", 1024 * MiB, 3072 * MiB),
    ("del x, z", -1, 0),
)


def cells_case(framework: str) -> dict[str, Any]:
    from jupyter_gpumem.gpu.snapshot import take_snapshot
    from jupyter_gpumem.kernel.protocol import encode_sample
    from jupyter_gpumem.kernel.recorder import Recorder

    if framework == "jax":
        os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    control = _controller()
    recorder = Recorder(control)
    put, stats = allocator(framework)
    stop = threading.Event()

    def sample() -> None:  # kernel/stream.py's path from a reading to the cells, at 20 readings a second
        while not stop.is_set():
            taken = encode_sample(control.read(take_snapshot()))
            recorder.observe(taken["t"], {g["uuid"]: g["own_bytes"] for g in taken["gpus"] if g["uuid"]})
            stop.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    kept: list[Any] = []
    direct = []
    for count, (line, keep, temporary) in enumerate(CELLS, 1):
        recorder.before(SimpleNamespace(raw_cell=line))
        if keep > 0:
            kept.append(put(keep))
        elif keep < 0:
            kept.clear()
        if temporary:
            scratch = put(temporary)
            time.sleep(0.3)  # long enough for the sampler to see it, as a real cell's work would be
            del scratch
        time.sleep(0.3)
        direct.append(stats()["peak"])
        recorder.after(SimpleNamespace(execution_count=count, error_in_exec=None))
    stop.set()
    sampler.join()
    uuid = control.read(take_snapshot()).snapshot.devices[0].uuid
    cells = recorder.finished()
    return {
        "cells": [
            {
                "line": c.line,
                "nvml_peak": c.peak.get(uuid),
                "recorded_allocator_peak": c.allocator_peak(0),
                "allocator_peak": peak,
                "exact": c.peak_exact,
            }
            for c, peak in zip(cells, direct, strict=True)
        ]
    }


def cells_section(args: Any, deadline: Deadline) -> Section:
    result = Section(
        "cells",
        "%gpumem cells' peaks against the allocator's (issue 45, Must 3)",
        ["framework", "cell", "NVML peak (cells)", "allocator peak (cells)", "allocator's own peak", "same"],
    )
    present = frameworks_present([f for f in args.frameworks if f in NAMES])
    for framework in present:
        case = run_case("cells", {"framework": framework}, deadline)
        result.data.append({"framework": framework, **case})
        if "error" in case:
            result.rows.append([framework, case["error"]])
            result.fail(MISSED, f"{framework}: {case['error']}.")
            continue
        for cell in case["cells"]:
            recorded = cell["recorded_allocator_peak"]
            # JAX cannot reset its peak: a cell below an earlier peak has none (None), which is right, not a miss.
            same = recorded == cell["allocator_peak"] if recorded is not None else framework == "jax"
            if not same:
                result.fail(MISSED, f"{framework} cell {cell['line']!r}: the peaks differ.")
            result.rows.append(
                [
                    framework,
                    cell["line"],
                    mib(cell["nvml_peak"]),
                    mib(recorded),
                    mib(cell["allocator_peak"]),
                    "yes" if same else "NO",
                ]
            )
    if not present:
        result.fail(CANNOT_RUN, "Neither PyTorch nor JAX is installed: nothing was measured.")
    result.notes.append(
        "MiB. NVML peak: the largest reading while the cell ran (sampled every 0.05 s here, 1 s in a kernel). "
        "Target: the cells' allocator peak equals the allocator's own (JAX: shown only where the cell raised it)."
    )
    return result
