"""Issue 45, Must 3 (issue 36): `jupyter_gpumem.largest_batch` on the GPU against the largest batch that really
runs, three training steps per framework, each model and limit in a fresh process where the framework's own cap
holds it to the limit (torch.cuda.set_per_process_memory_fraction; XLA_PYTHON_CLIENT_MEM_FRACTION, preallocation
off). largest_batch is called with that limit= (its 5% margin, verify=True); then the largest batch that runs
under the cap is found by real steps, galloping from the answer and bisecting, each out-of-memory error caught and
counted. Target: the answer at most the largest that runs, and at least 90% of it."""

from __future__ import annotations

import gc
import itertools
import os
import time
from collections.abc import Callable
from typing import Any

from gpu.common import CANNOT_RUN, MISSED, Deadline, MiB, Section, frameworks_present, mib, out_of_memory, run_case

TARGET = 0.90
MODELS = {"torch": ("transformer", "mlp", "cnn"), "jax": ("mlp", "cnn", "attention")}


def torch_model(model: str) -> tuple[Callable[..., Any], Callable[[int], tuple[Any, ...]], str]:
    import torch

    torch.manual_seed(0)
    nn = torch.nn
    if model == "transformer":
        layer = nn.TransformerEncoderLayer(512, 8, 2048, dropout=0.0, batch_first=True)
        net: Any = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        shape, name = (256, 512), "transformer encoder, 2 layers, width 512, sequence 256"
    elif model == "mlp":
        net = nn.Sequential(nn.Linear(784, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 784))
        shape, name = (784,), "MLP 784-4096-4096-784"
    else:
        net = nn.Sequential(
            nn.Conv2d(3, 64, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(64, 128, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(128, 256, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(256, 10),
        )
        shape, name = (3, 64, 64), "CNN 3 convolutions on 64x64"
    net = net.cuda()
    optimiser = torch.optim.AdamW(net.parameters(), lr=1e-4)

    def step(x: Any, y: Any) -> None:
        optimiser.zero_grad(set_to_none=True)
        out = net(x)
        torch.nn.functional.mse_loss(out, y[..., : out.shape[-1]] if out.dim() == 2 else y).backward()
        optimiser.step()

    def batch_of(n: int) -> tuple[Any, ...]:
        x = torch.randn(n, *shape, device="cuda:0")
        y = torch.randn(n, 10, device="cuda:0") if model == "cnn" else torch.randn(n, *shape, device="cuda:0")
        return x, y

    return step, batch_of, name


def jax_model(model: str) -> tuple[Callable[..., Any], Callable[[int], tuple[Any, ...]], str]:
    import jax
    import jax.numpy as jnp

    keys = iter(jax.random.split(jax.random.PRNGKey(0), 8))

    def dense(a: int, b: int) -> tuple[Any, Any]:
        return jax.random.normal(next(keys), (a, b)) / a**0.5, jnp.zeros(b)

    if model == "mlp":
        params: Any = [dense(784, 4096), dense(4096, 4096), dense(4096, 10)]
        shape, name = (784,), "MLP 784-4096-4096-10, jitted"

        def forward(params: Any, x: Any) -> Any:
            for w, b in params[:-1]:
                x = jax.nn.relu(x @ w + b)
            w, b = params[-1]
            return x @ w + b

    elif model == "cnn":
        params = [jax.random.normal(next(keys), (3, 3, c_in, c_out)) * 0.05 for c_in, c_out in ((3, 64), (64, 128))]
        params.append(dense(128, 10))
        shape, name = (64, 64, 3), "CNN 2 convolutions on 64x64, jitted"

        def forward(params: Any, x: Any) -> Any:
            for kernel in params[:-1]:
                x = jax.nn.relu(
                    jax.lax.conv_general_dilated(x, kernel, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
                )
            w, b = params[-1]
            return jnp.mean(x, axis=(1, 2)) @ w + b

    else:
        params = [dense(512, 1536), dense(512, 512), dense(512, 2048), dense(2048, 512), dense(512, 10)]
        shape, name = (256, 512), "attention block, width 512, sequence 256, jitted"

        def forward(params: Any, x: Any) -> Any:
            (wqkv, bqkv), (wo, bo), (w1, b1), (w2, b2), (wh, bh) = params
            q, k, v = jnp.split(x @ wqkv + bqkv, 3, axis=-1)
            attention = jax.nn.softmax(q @ jnp.swapaxes(k, -1, -2) / 512**0.5, axis=-1)
            x = x + (attention @ v) @ wo + bo
            x = x + jax.nn.relu(x @ w1 + b1) @ w2 + b2
            return jnp.mean(x, axis=1) @ wh + bh

    def loss(params: Any, x: Any, y: Any) -> Any:
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(forward(params, x)) * y, axis=-1))

    @jax.jit
    def step(params: Any, x: Any, y: Any) -> Any:
        value, grads = jax.value_and_grad(loss)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads), value

    def batch_of(n: int) -> tuple[Any, ...]:
        return params, jnp.ones((n, *shape)), jax.nn.one_hot(jnp.zeros(n, dtype=int), 10)

    return step, batch_of, name


def largest_that_runs(answer: int, runs: Callable[[int], bool]) -> int:
    """The largest n for which ``runs(n)``, galloping from ``answer`` (up by half, or down by halves), then
    bisecting; 0 where even 1 does not run. It stops galloping at 8 times the answer (a cap that does not hold
    would otherwise grow the batch until the host runs out of memory)."""
    if answer <= 0:
        return 0
    if runs(answer):
        low, high = answer, answer * 3 // 2 + 1
        while runs(high):
            low, high = high, high * 3 // 2 + 1
            if low > 8 * answer:
                return low
    else:
        low, high = answer // 2, answer
        while low > 0 and not runs(low):
            low, high = low // 2, low
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if runs(middle) else (low, middle)
    return low


def case(framework: str, model: str, limit_mib: int, fraction: float) -> dict[str, Any]:
    """In a fresh process: the framework capped at ``fraction`` of GPU 0 (about ``limit_mib``), largest_batch
    under that limit, then the largest batch that runs under the cap, by real steps."""
    if framework == "jax":  # read when JAX's backend starts
        os.environ.update(XLA_PYTHON_CLIENT_PREALLOCATE="false", XLA_PYTHON_CLIENT_MEM_FRACTION=f"{fraction:.4f}")
    from jupyter_gpumem import largest_batch

    if framework == "jax":
        import jax

        jax.devices("gpu")  # raises where JAX has no GPU: nothing of this runs on the CPU
    step, batch_of, name = torch_model(model) if framework == "torch" else jax_model(model)
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
        fit = largest_batch(step, batch_of, limit=limit_mib * MiB, verify=True)
    except Exception as error:
        if not out_of_memory(error):
            raise
        return {"error": f"largest_batch itself ran out of memory: {str(error).splitlines()[0]}"}
    wall = time.perf_counter() - start
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

    return {
        "model": name,
        "answer": fit.batch_size,
        "truth": largest_that_runs(fit.batch_size, runs_at),
        "verified": fit.verified_bytes,
        "errors": errors,
        "steps": len(fit.sizes),
        "wall_s": round(wall, 1),
        "problem": fit.problem,
    }


def section(args: Any, deadline: Deadline, total_bytes: int) -> Section:
    result = Section(
        "largest",
        "largest_batch against the largest batch that runs (issue 45, Must 3; issue 36)",
        ["framework", "model", "limit MiB", "answer", "runs", "share", "verified peak", "OOMs", "sizes", "wall s"],
    )
    present = frameworks_present([f for f in args.frameworks if f in MODELS])
    good = cases = 0
    # Model by model, the frameworks in turn: a section cut short by its cap still has some of each.
    order = [(f, MODELS[f][i]) for i in range(3) for f in present]
    for (framework, model), limit_mib in itertools.product(order, args.limits_mib):
        cases += 1
        fraction = limit_mib * MiB / total_bytes
        arguments = {"framework": framework, "model": model, "limit_mib": limit_mib, "fraction": fraction}
        found = run_case("largest", arguments, deadline)
        result.data.append({**arguments, **found})
        if "error" in found:
            result.rows.append([framework, model, str(limit_mib), found["error"]])
            result.fail(MISSED, f"{framework} {model} at {limit_mib} MiB: {found['error']}.")
            continue
        answer, truth = found["answer"], found["truth"]
        passed = truth > 0 and TARGET * truth <= answer <= truth
        good += passed
        if not passed:
            result.fail(MISSED, f"{framework} {found['model']} at {limit_mib} MiB: answer {answer}, runs {truth}.")
        note = f" ({found['problem']})" if found["problem"] else ""
        result.rows.append(
            [
                framework,
                found["model"] + note,
                str(limit_mib),
                str(answer),
                str(truth),
                f"{answer / truth:.0%}" if truth else "-",
                mib(found["verified"]),
                str(found["errors"]),
                str(found["steps"]),
                f"{found['wall_s']:.1f}",
            ]
        )
    if not present:
        result.fail(CANNOT_RUN, "Neither PyTorch nor JAX is installed: nothing was measured.")
    result.notes.append(
        f"{good}/{cases} cases within target. runs: the largest batch that runs under the framework's cap at the "
        f"limit; OOMs: out-of-memory errors caught while finding it; sizes: the sizes largest_batch measured (JAX: "
        f"compiled). Target: answer <= runs and >= {TARGET:.0%} of it."
    )
    return result
