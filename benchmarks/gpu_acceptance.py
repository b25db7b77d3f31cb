"""Story S1 on a real NVIDIA GPU: does a fraction hold as nvidia-smi counts it, and how much of it can
tensors use? Not part of CI: it needs a GPU and a framework built for it.

    python benchmarks/gpu_acceptance.py [--fractions 0.25 0.5] [--frameworks torch jax tensorflow]

For each framework installed and each fraction, a fresh process applies `%gpumem fraction=F gpus=0`
(through the same Controller the magic uses) before the framework starts, then allocates tensors on
GPU 0 until the framework runs out of memory, reading NVML after every allocation. Printed per case:
the budget, NVML's peak for the process, the tensor bytes allocated, the overhead measured outside
the allocator's pool, whether the budget held, and the share of the budget tensors could use.
Target: held in every case, >= 90% usable.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

MiB = 1024**2
TARGET_USABLE = 0.90
CHUNKS = (256 * MiB, 32 * MiB, 4 * MiB, MiB)  # big first, then fill the remainder finer


def allocator(framework: str) -> tuple[Callable[[int], Any], type[BaseException] | tuple[type[BaseException], ...]]:
    """A function that puts n bytes on GPU 0, and what the framework raises when it is out of memory."""
    if framework == "torch":
        import torch

        return (lambda n: torch.empty(n, dtype=torch.uint8, device="cuda:0")), torch.cuda.OutOfMemoryError
    if framework == "jax":
        import jax
        import jax.numpy as jnp

        def put(n: int) -> Any:
            return jnp.zeros((n,), dtype=jnp.uint8, device=jax.devices("gpu")[0]).block_until_ready()

        return put, Exception  # XlaRuntimeError: RESOURCE_EXHAUSTED; its class moved between releases
    import tensorflow as tf

    def place(n: int) -> Any:
        with tf.device("/GPU:0"):
            return tf.zeros([n], dtype=tf.uint8)

    return place, tf.errors.ResourceExhaustedError


def run_case(framework: str, fraction: float) -> dict[str, Any]:
    """In a fresh process: apply the policy, start the framework, fill GPU 0."""
    from jupyter_gpumem.budget.policy import PolicyError, parse
    from jupyter_gpumem.gpu.snapshot import take_snapshot
    from jupyter_gpumem.kernel.runtime import runtime

    control = runtime().control
    name = {"torch": "pytorch"}.get(framework, framework)
    try:
        control.request(parse([f"fraction={fraction}", "gpus=0", f"framework={name}"]))
    except PolicyError as error:
        return {"error": str(error)}
    put, out_of_memory = allocator(framework)
    plan = control.state.plan
    if plan is None or not plan.gpus:
        return {"error": "no GPU to plan for"}
    gpu = plan.gpus[0]
    kept, allocated, nvml_peak, pool = [], 0, 0, None
    for chunk in CHUNKS:
        while True:
            try:
                kept.append(put(chunk))
            except out_of_memory:
                break
            allocated += chunk
            reading = control.read(take_snapshot())
            own = reading.snapshot.devices[gpu.index].listed_own_bytes or 0
            nvml_peak = max(nvml_peak, own)
            allocation = reading.allocators.get(gpu.uuid)
            pool = allocation.pool if allocation else pool
    measured = control.calibration.measured(gpu.uuid)
    return {
        "budget": gpu.budget_bytes,
        "nvml_peak": nvml_peak,
        "allocated": allocated,
        "pool": pool,
        "overhead": measured.bytes if measured else None,
        "planned_overhead": gpu.overhead_bytes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.25, 0.5])
    parser.add_argument("--frameworks", nargs="+", default=["torch", "jax", "tensorflow"])
    parser.add_argument("--case", nargs=2, metavar=("FRAMEWORK", "FRACTION"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case[0], float(args.case[1]))))
        return

    from jupyter_gpumem.gpu.snapshot import take_snapshot

    snapshot = take_snapshot()
    if snapshot.problem or not snapshot.devices or snapshot.simulated_scenario:
        print(f"No real NVIDIA GPU here ({snapshot.problem or 'stand-in NVML or no GPUs'}); nothing was measured.")
        sys.exit(2)
    device = snapshot.devices[0]
    print(f"GPU 0: {device.name}, {(device.total_bytes or 0) // MiB} MiB, driver {snapshot.driver_version}")
    header = f"{'framework':<11}{'fraction':>9}{'budget':>10}{'NVML peak':>11}{'tensors':>10}{'overhead':>10}"
    print(header + f"{'held':>6}{'usable':>8}")
    failures = 0
    for framework in args.frameworks:
        if importlib.util.find_spec(framework) is None:
            print(f"{framework:<11} not installed")
            continue
        for fraction in args.fractions:
            done = subprocess.run(
                [sys.executable, __file__, "--case", framework, str(fraction)], capture_output=True, text=True
            )
            try:
                result = json.loads(done.stdout.strip().splitlines()[-1])
            except (IndexError, ValueError):
                result = {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
            if "error" in result:
                print(f"{framework:<11}{fraction:>9g}  {result['error']}")
                failures += 1
                continue
            held = result["nvml_peak"] <= result["budget"]
            usable = result["allocated"] / result["budget"]
            overhead = "N/A" if result["overhead"] is None else f"{result['overhead'] // MiB}"
            failures += not held or usable < TARGET_USABLE
            print(
                f"{framework:<11}{fraction:>9g}{result['budget'] // MiB:>10}{result['nvml_peak'] // MiB:>11}"
                f"{result['allocated'] // MiB:>10}{overhead:>10}{'yes' if held else 'NO':>6}{usable:>8.0%}"
            )
    print(f"(MiB. Target: held in every case and >= {TARGET_USABLE:.0%} of the budget usable by tensors.)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
