"""Story S1 on a real NVIDIA GPU: does a fraction hold as nvidia-smi counts it, and how much of it can
tensors use? Not part of CI: it needs a GPU and a framework built for it.

    python benchmarks/gpu_acceptance.py [--fractions 0.25 0.5] [--frameworks torch jax tensorflow]
                                        [--sections fractions largest] [--limits-mib 2048 8192]

For each framework installed and each fraction, a fresh process applies `%gpumem fraction=F gpus=0`
(through the same Controller the magic uses) before the framework starts, then allocates tensors on
GPU 0 until the framework runs out of memory, reading NVML after every allocation. Printed per case:
the budget, NVML's peak for the process, the tensor bytes allocated, the overhead measured outside
the allocator's pool, whether the budget held, and the share of the budget tensors could use.
Target: held in every case, >= 90% usable.

Second section, `jupyter_gpumem.largest_batch` on the GPU (issue 36, Must 3), skipped with --sections fractions:
a PyTorch transformer encoder (2 layers, width 512, sequence 256) and a jitted JAX MLP (784-4096-4096-10), each a
training step, each limit in a fresh process where the framework's own cap holds it to the limit
(torch.cuda.set_per_process_memory_fraction; XLA_PYTHON_CLIENT_MEM_FRACTION, preallocation off). largest_batch is
called with that limit= (its 5% margin by default, verify=True), then the largest batch that actually runs under
the cap is found by real steps, galloping from the answer and bisecting; each out-of-memory error there is caught
and counted. Printed per case: the answer, the largest that runs, the answer's share of it, the verified peak,
the out-of-memory errors while searching, the call's steps (compiles for JAX) and wall time.
Target: the answer at most the largest that runs, and at least 90% of it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

MiB = 1024**2
TARGET_USABLE = 0.90
CHUNKS = (256 * MiB, 32 * MiB, 4 * MiB, MiB)  # big first, then fill the remainder finer
LARGEST_FRAMEWORKS = ("torch", "jax")  # the largest_batch section: a PyTorch model, a jitted JAX step


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


def out_of_memory(error: BaseException) -> bool:
    """PyTorch's OutOfMemoryError, or XLA's RESOURCE_EXHAUSTED (its class moved between JAX releases)."""
    name = type(error).__name__
    return name == "OutOfMemoryError" or "RESOURCE_EXHAUSTED" in str(error) or "out of memory" in str(error).lower()


def largest_model(framework: str) -> tuple[Callable[..., Any], Callable[[int], tuple[Any, ...]], list[int], str]:
    """A training step on GPU 0, the function that makes its arguments at batch size n, the sizes it has run at
    (PyTorch; for a jitted JAX step largest_batch compiles, and the search's runs are not recorded) and its name."""
    runs: list[int] = []
    if framework == "torch":
        import torch

        torch.manual_seed(0)
        layer = torch.nn.TransformerEncoderLayer(512, 8, 2048, dropout=0.0, batch_first=True)
        model = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).cuda()
        optimiser = torch.optim.AdamW(model.parameters(), lr=1e-4)

        def step(x: Any, y: Any) -> None:
            runs.append(len(x))
            optimiser.zero_grad(set_to_none=True)
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimiser.step()

        def batch_of(n: int) -> tuple[Any, ...]:
            return torch.randn(n, 256, 512, device="cuda:0"), torch.randn(n, 256, 512, device="cuda:0")

        return step, batch_of, runs, "transformer, 2 layers"
    import jax
    import jax.numpy as jnp

    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    sizes = (784, 4096, 4096, 10)
    params = [
        (jax.random.normal(k, (a, b)) / a**0.5, jnp.zeros(b))
        for k, a, b in zip(keys, sizes[:-1], sizes[1:], strict=True)
    ]

    def loss(params: Any, x: Any, y: Any) -> Any:
        for w, b in params[:-1]:
            x = jax.nn.relu(x @ w + b)
        w, b = params[-1]
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(x @ w + b) * y, axis=-1))

    @jax.jit
    def jitted(params: Any, x: Any, y: Any) -> Any:
        value, grads = jax.value_and_grad(loss)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads), value

    def batch_of(n: int) -> tuple[Any, ...]:
        return params, jnp.ones((n, 784)), jax.nn.one_hot(jnp.zeros(n, dtype=int), 10)

    return jitted, batch_of, runs, "MLP 784-4096-4096-10, jitted"


def run_largest_case(framework: str, limit: int, fraction: float) -> dict[str, Any]:
    """In a fresh process: the framework capped at ``fraction`` of GPU 0 (about ``limit`` bytes), largest_batch
    under ``limit``, then the largest batch that runs under the cap, by real steps."""
    import gc
    import time

    if framework == "jax":  # read when JAX's backend starts
        os.environ.update(XLA_PYTHON_CLIENT_PREALLOCATE="false", XLA_PYTHON_CLIENT_MEM_FRACTION=f"{fraction:.4f}")
    from jupyter_gpumem import largest_batch

    step, batch_of, runs, model = largest_model(framework)
    if framework == "torch":
        import torch

        torch.cuda.set_per_process_memory_fraction(fraction, 0)

        def run(n: int) -> None:
            step(*batch_of(n))
            torch.cuda.synchronize()

        def settle() -> None:
            gc.collect()
            torch.cuda.empty_cache()

    else:
        import jax

        def run(n: int) -> None:
            jax.block_until_ready(step(*batch_of(n)))

        def settle() -> None:
            gc.collect()

    start = time.perf_counter()
    try:
        fit = largest_batch(step, batch_of, limit=limit, verify=True)
    except Exception as error:
        if not out_of_memory(error):
            raise
        return {"error": f"largest_batch itself ran out of memory: {str(error).splitlines()[0]}"}
    wall = time.perf_counter() - start
    called = list(runs) if framework == "torch" else list(fit.sizes)
    errors = 0
    fits: dict[int, bool] = {}

    def runs_at(n: int) -> bool:
        nonlocal errors
        if n not in fits:
            try:
                run(n)
                fits[n] = True
            except Exception as error:
                if not out_of_memory(error):
                    raise
                errors += 1
                fits[n] = False
            settle()
        return fits[n]

    answer = fit.batch_size
    truth = 0
    if answer:
        # Gallop from the answer (up by half, or down by halves), then bisect.
        if runs_at(answer):
            low, high = answer, answer * 3 // 2 + 1
            while runs_at(high):
                low, high = high, high * 3 // 2 + 1
        else:
            low, high = answer // 2, answer
            while low > 0 and not runs_at(low):
                low, high = low // 2, low
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if runs_at(middle) else (low, middle)
        truth = low
    return {
        "model": model,
        "answer": answer,
        "truth": truth,
        "verified": fit.verified_bytes,
        "margin": fit.margin_bytes,
        "errors": errors,
        "steps": len(called),
        "largest_run": max(called, default=0),
        "wall_s": wall,
        "problem": fit.problem,
    }


def fractions_section(args: argparse.Namespace) -> int:
    """Story S1: the budget held, and how much of it tensors use. Returns the failures."""
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
    return failures


def largest_section(args: argparse.Namespace, total_bytes: int) -> int:
    """Issue 36: largest_batch's answer against the largest batch that runs under the same limit."""
    print()
    print(
        f"{'framework':<11}{'limit':>7}{'answer':>8}{'runs':>7}{'share':>7}{'verified':>9}{'OOMs':>6}"
        f"{'steps':>6}{'wall s':>7}  model"
    )
    failures = cases = good = 0
    for framework in LARGEST_FRAMEWORKS:
        if importlib.util.find_spec(framework) is None:
            print(f"{framework:<11} not installed")
            continue
        for limit_mib in args.limits_mib:
            cases += 1
            fraction = limit_mib * MiB / total_bytes
            done = subprocess.run(
                [sys.executable, __file__, "--largest-case", framework, str(limit_mib), f"{fraction:.6f}"],
                capture_output=True,
                text=True,
            )
            try:
                result = json.loads(done.stdout.strip().splitlines()[-1])
            except (IndexError, ValueError):
                result = {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
            if "error" in result:
                print(f"{framework:<11}{limit_mib:>7}  {result['error']}")
                failures += 1
                continue
            answer, truth = result["answer"], result["truth"]
            passed = truth > 0 and TARGET_USABLE * truth <= answer <= truth
            good += passed
            failures += not passed
            share = f"{answer / truth:.0%}" if truth else "-"
            verified = "N/A" if result["verified"] is None else f"{result['verified'] // MiB}"
            note = f"; {result['problem']}" if result["problem"] else ""
            print(
                f"{framework:<11}{limit_mib:>7}{answer:>8}{truth:>7}{share:>7}{verified:>9}{result['errors']:>6}"
                f"{result['steps']:>6}{result['wall_s']:>7.1f}  {result['model']}{'' if passed else ' FAIL'}{note}"
            )
    print(
        f"(MiB. runs: the largest batch that runs under the framework's cap at the limit; OOMs: out-of-memory "
        f"errors caught while searching for it. Target: answer <= runs and >= {TARGET_USABLE:.0%} of it.)"
    )
    print(f"largest_batch on the GPU: {good}/{cases} cases within target")
    return failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.25, 0.5])
    parser.add_argument("--frameworks", nargs="+", default=["torch", "jax", "tensorflow"])
    parser.add_argument("--sections", nargs="+", choices=["fractions", "largest"], default=["fractions", "largest"])
    parser.add_argument("--limits-mib", type=int, nargs="+", default=[2048, 8192])
    parser.add_argument("--case", nargs=2, metavar=("FRAMEWORK", "FRACTION"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--largest-case", nargs=3, metavar=("FRAMEWORK", "LIMIT_MIB", "FRACTION"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case[0], float(args.case[1]))))
        return
    if args.largest_case:
        framework, limit_mib, fraction = args.largest_case
        print(json.dumps(run_largest_case(framework, int(limit_mib) * MiB, float(fraction))))
        return

    from jupyter_gpumem.gpu.snapshot import take_snapshot

    snapshot = take_snapshot()
    if snapshot.problem or not snapshot.devices or snapshot.simulated_scenario:
        print(f"No real NVIDIA GPU here ({snapshot.problem or 'stand-in NVML or no GPUs'}); nothing was measured.")
        sys.exit(2)
    device = snapshot.devices[0]
    print(f"GPU 0: {device.name}, {(device.total_bytes or 0) // MiB} MiB, driver {snapshot.driver_version}")
    failures = 0
    if "fractions" in args.sections:
        failures += fractions_section(args)
    if "largest" in args.sections:
        failures += largest_section(args, device.total_bytes or 0)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
