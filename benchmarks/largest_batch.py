"""How close is `jupyter_gpumem.largest_batch` to the largest batch that truly fits, and what does it cost?
(issue 36, Must 3 and 4). On the CPU, with an explicit `limit=` in bytes, outside a kernel; not part of CI.

    python benchmarks/largest_batch.py [--quick] [--frameworks jax torch tensorflow]

Three training steps (loss, gradients, an SGD update) per framework: an MLP, a CNN and a transformer block,
each at several limits, every framework in its own fresh process (TensorFlow and PyTorch in one process fight
over threads, and TF_CPU_ALLOCATOR_USE_BFC=true must be set before TensorFlow's import).

- JAX: a jitted step, counted by XLA's compiled ``memory_analysis()`` (never run): ``peak_memory_in_bytes``, or
  argument + output + temp - alias bytes where that is larger, as frameworks/jax.py ``compiled_peak`` counts it
  (computed here again from the analysis, not through the adapter).
- PyTorch: the step run under PyTorch's memory tracker (MemTracker), TensorFlow (Keras models, one
  ``tf.function`` with a batch dimension of None, so one trace) through ``get_memory_info('CPU:0')['peak']``
  after ``reset_memory_stats`` with TF_CPU_ALLOCATOR_USE_BFC=true: both counted by the adapter's own
  ``step_peak``, exactly as largest_batch counts, with the same objects (the step and its arguments).

"True largest": with an explicit limit L, largest_batch answers the largest n whose *predicted* peak is at most
L - margin (margin: 5% of L, budget/batchfit.py ``default_margin``; no limit is taken off for what is held, since
``limit=`` is used as given). The truth is the largest n whose *counted* peak, by the same counter, is at most the
same L - margin, found by galloping from the answer and bisecting, one compile (JAX) or one step (PyTorch,
TensorFlow) per candidate size; it assumes the counted peak does not fall as n grows. Per case: PASS when the
answer is at most the truth and at least 90% of it. Beside it the number of steps (compiles for JAX) the call
made, its wall time (target of Must 4: seconds; here at most 10 s per call on a shared 2-core machine) and a
naive baseline: Ultralytics AutoBatch's method without its 60% safety fraction, a least-squares line through the
peaks at 1, 2, 4, 8 and 16 and the largest n under L with no margin (counted by the same counter); "flat" where
that line has no slope (Ultralytics then falls back to batch 16).

The full run took 190 s on a shared 2-core machine (the truth's bisection runs real steps at sizes of
hundreds to thousands); --quick runs one limit per model. Exit status 1 when a case fails.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

MiB = 1 << 20
GiB = 1 << 30
RATIO = 0.90  # the answer must be at least this share of the truth
WALL_TARGET_S = 10.0
NAIVE_SIZES = (1, 2, 4, 8, 16)

# Limits per framework and model, chosen so that the truth lies between tens and tens of thousands (JAX, compiled
# only) or between tens and a few thousand (PyTorch and TensorFlow, where the truth's bisection runs real steps).
LIMITS = {
    "jax": {
        "MLP": (64 * MiB, 256 * MiB, GiB),
        "CNN": (64 * MiB, 256 * MiB, GiB),
        "transformer": (64 * MiB, 256 * MiB, GiB),
    },
    "torch": {"MLP": (32 * MiB, 64 * MiB), "CNN": (64 * MiB, 256 * MiB), "transformer": (64 * MiB, 256 * MiB)},
    "tensorflow": {"MLP": (64 * MiB, 128 * MiB), "CNN": (64 * MiB, 256 * MiB), "transformer": (128 * MiB, 384 * MiB)},
}


class Counted:
    """A peak counter memoised by batch size, counting what it costs."""

    def __init__(self, peak_of: Callable[[int], int]):
        self.peak_of = peak_of
        self.peaks: dict[int, int] = {}

    def __call__(self, n: int) -> int:
        if n not in self.peaks:
            self.peaks[n] = self.peak_of(n)
        return self.peaks[n]


def true_largest(peak: Counted, room: int, start: int) -> int:
    """The largest n >= 0 with ``peak(n) <= room``: gallop from ``start`` (up by half, or down by halves), then
    bisect between the last size that fits and the first that does not."""
    start = max(1, start)
    if peak(start) <= room:
        fits, over = start, max(start + 1, math.ceil(start * 1.5))
        while peak(over) <= room:
            fits, over = over, max(over + 1, math.ceil(over * 1.5))
    else:
        fits, over = start // 2, start
        while fits > 0 and peak(fits) > room:
            fits, over = fits // 2, fits
        if fits == 0:
            return 0
    while over - fits > 1:
        middle = (fits + over) // 2
        if peak(middle) <= room:
            fits = middle
        else:
            over = middle
    return fits


def naive(peak: Counted, limit: int) -> int | None:
    """Ultralytics AutoBatch's line through 1, 2, 4, 8, 16 without its safety fraction; None where it is flat."""
    xs = list(NAIVE_SIZES)
    ys = [peak(n) for n in xs]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sum((x - mean_x) ** 2 for x in xs)
    if slope <= 0:
        return None
    return max(0, math.floor((limit - (mean_y - slope * mean_x)) / slope))


def case(
    framework: str,
    model: str,
    limit: int,
    step: Callable[..., Any],
    batch_of: Callable[[int], tuple[Any, ...]],
    peak: Counted,
    before: Callable[[], None] = lambda: None,
    runs: list[int] | None = None,
) -> dict[str, Any]:
    """One largest_batch call, timed, against the truth and the naive line. ``runs``: the sizes the step ran at
    (PyTorch, TensorFlow: the step records them); for a jitted JAX step the compiles are the measured sizes."""
    from jupyter_gpumem import largest_batch
    from jupyter_gpumem.budget.batchfit import default_margin

    before()
    ran_before = len(runs) if runs is not None else 0
    start = time.perf_counter()
    fit = largest_batch(step, batch_of, limit=limit)
    wall = time.perf_counter() - start
    sizes = list(runs[ran_before:]) if runs is not None else list(fit.sizes)
    room = limit - default_margin(limit)
    truth = true_largest(peak, room, fit.batch_size or 16)
    return {
        "framework": framework,
        "model": model,
        "limit": limit,
        "answer": fit.batch_size,
        "margin": fit.margin_bytes,
        "expected_margin": default_margin(limit),
        "truth": truth,
        "naive": naive(peak, limit),
        "steps": len(sizes),
        "largest_run": max(sizes, default=0),
        "wall_s": wall,
        "linear": fit.fit.linear if fit.fit is not None else None,
        "problem": fit.problem,
        "counted": fit.counted,
    }


# ---------------------------------------------------------------------- JAX: compiled, never run


def jax_cases(quick: bool) -> list[dict[str, Any]]:
    import jax
    import jax.numpy as jnp

    def dense(key: Any, a: int, b: int) -> tuple[Any, Any]:
        return jax.random.normal(key, (a, b)) / math.sqrt(a), jnp.zeros(b)

    keys = iter(jax.random.split(jax.random.PRNGKey(0), 16))

    # MLP: 784 -> 1024 -> 1024 -> 10, cross-entropy.
    mlp = [dense(next(keys), 784, 1024), dense(next(keys), 1024, 1024), dense(next(keys), 1024, 10)]

    def mlp_loss(params: Any, x: Any, y: Any) -> Any:
        for w, b in params[:-1]:
            x = jax.nn.relu(x @ w + b)
        w, b = params[-1]
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(x @ w + b) * y, axis=-1))

    # CNN: 32x32x3 -> conv 3x3 32 -> conv 3x3 64 -> 2x2 average pool -> dense 10.
    cnn = {
        "c1": jax.random.normal(next(keys), (3, 3, 3, 32)) * 0.1,
        "c2": jax.random.normal(next(keys), (3, 3, 32, 64)) * 0.05,
        "out": dense(next(keys), 16 * 16 * 64, 10),
    }

    def conv(x: Any, w: Any) -> Any:
        return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def cnn_loss(params: Any, x: Any, y: Any) -> Any:
        h = jax.nn.relu(conv(jax.nn.relu(conv(x, params["c1"])), params["c2"]))
        n = h.shape[0]
        h = h.reshape(n, 16, 2, 16, 2, 64).mean(axis=(2, 4)).reshape(n, -1)
        w, b = params["out"]
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(h @ w + b) * y, axis=-1))

    # Transformer block: sequence 128, width 256, 4 heads, MLP 1024, pre-norm, squared-error loss.
    width, heads, seq = 256, 4, 128
    block = {
        "qkv": dense(next(keys), width, 3 * width),
        "proj": dense(next(keys), width, width),
        "up": dense(next(keys), width, 4 * width),
        "down": dense(next(keys), 4 * width, width),
    }

    def norm(x: Any) -> Any:
        return (x - x.mean(-1, keepdims=True)) / jnp.sqrt(x.var(-1, keepdims=True) + 1e-5)

    def block_loss(params: Any, x: Any, y: Any) -> Any:
        n = x.shape[0]
        w, b = params["qkv"]
        q, k, v = jnp.split(norm(x) @ w + b, 3, axis=-1)
        q, k, v = (t.reshape(n, seq, heads, width // heads).transpose(0, 2, 1, 3) for t in (q, k, v))
        attention = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / math.sqrt(width // heads), axis=-1)
        mixed = (attention @ v).transpose(0, 2, 1, 3).reshape(n, seq, width)
        w, b = params["proj"]
        x = x + mixed @ w + b
        (w1, b1), (w2, b2) = params["up"], params["down"]
        x = x + jax.nn.gelu(norm(x) @ w1 + b1) @ w2 + b2
        return jnp.mean((x - y) ** 2)

    def training(loss: Callable[..., Any]) -> Any:
        @jax.jit
        def step(params: Any, x: Any, y: Any) -> Any:
            value, grads = jax.value_and_grad(loss)(params, x, y)
            return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads), value

        return step

    models = {
        "MLP": (training(mlp_loss), lambda n: (mlp, jnp.zeros((n, 784)), jnp.zeros((n, 10)))),
        "CNN": (training(cnn_loss), lambda n: (cnn, jnp.zeros((n, 32, 32, 3)), jnp.zeros((n, 10)))),
        "transformer": (
            training(block_loss),
            lambda n: (block, jnp.zeros((n, seq, width)), jnp.zeros((n, seq, width))),
        ),
    }
    results = []
    for model, (step, batch_of) in models.items():

        def compiled(n: int, step: Any = step, batch_of: Any = batch_of) -> int:
            # batch_of(n) makes the arrays, as largest_batch does: zeros of that shape, small beside the compile.
            analysis = step.lower(*batch_of(n)).compile().memory_analysis()
            buffers = (
                analysis.argument_size_in_bytes
                + analysis.output_size_in_bytes
                + analysis.temp_size_in_bytes
                - analysis.alias_size_in_bytes
            )
            return max(int(getattr(analysis, "peak_memory_in_bytes", 0) or 0), int(buffers))

        peak = Counted(compiled)
        for limit in _limits("jax", model, quick):
            # Cold for every call, as in a fresh notebook: JAX keeps compiled executables in memory.
            results.append(case("JAX", model, limit, step, batch_of, peak, before=jax.clear_caches))
            _emit(results[-1])
    return results


# ---------------------------------------------------------------------- PyTorch: run under MemTracker


def torch_cases(quick: bool) -> list[dict[str, Any]]:
    import torch
    from torch import nn

    from jupyter_gpumem.kernel.runtime import runtime

    torch.manual_seed(0)
    torch.set_num_threads(2)
    adapter = runtime().control.adapters["pytorch"]

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer = nn.TransformerEncoderLayer(128, 4, 512, dropout=0.0, batch_first=True, norm_first=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.layer(x)

    models: dict[str, tuple[nn.Module, Callable[[int], tuple[Any, ...]], Callable[[Any, Any], Any]]] = {
        "MLP": (
            nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)),
            lambda n: (torch.randn(n, 784), torch.randint(0, 10, (n,))),
            nn.functional.cross_entropy,
        ),
        "CNN": (
            nn.Sequential(
                nn.Conv2d(3, 8, 3, padding=1),
                nn.ReLU(),
                nn.Conv2d(8, 16, 3, padding=1),
                nn.ReLU(),
                nn.AvgPool2d(2),
                nn.Flatten(),
                nn.Linear(16 * 16 * 16, 10),
            ),
            lambda n: (torch.randn(n, 3, 32, 32), torch.randint(0, 10, (n,))),
            nn.functional.cross_entropy,
        ),
        "transformer": (
            Block(),
            lambda n: (torch.randn(n, 64, 128), torch.randn(n, 64, 128)),
            nn.functional.mse_loss,
        ),
    }
    results = []
    for model, (module, batch_of, loss) in models.items():
        optimiser = torch.optim.SGD(module.parameters(), lr=0.01, momentum=0.9)
        runs: list[int] = []

        def step(
            x: Any, y: Any, module: Any = module, optimiser: Any = optimiser, loss: Any = loss, runs: list[int] = runs
        ) -> None:
            runs.append(len(x))
            optimiser.zero_grad(set_to_none=True)
            loss(module(x), y).backward()
            optimiser.step()

        def measured(n: int, step: Any = step, batch_of: Any = batch_of) -> int:
            args = batch_of(n)
            return int(adapter.step_peak(lambda: step(*args), (step, *args)).bytes)

        peak = Counted(measured)
        for limit in _limits("torch", model, quick):
            results.append(case("PyTorch", model, limit, step, batch_of, peak, runs=runs))
            _emit(results[-1])
    return results


# ---------------------------------------------------------------------- TensorFlow: run, counted by BFC on CPU:0


def tensorflow_cases(quick: bool) -> list[dict[str, Any]]:
    import numpy as np
    import tensorflow as tf
    from keras import layers

    from jupyter_gpumem.kernel.runtime import runtime

    tf.random.set_seed(0)
    adapter = runtime().control.adapters["tensorflow"]

    inputs = layers.Input((64, 128))
    normed = layers.LayerNormalization()(inputs)
    mixed = inputs + layers.MultiHeadAttention(4, 32)(normed, normed)
    grown = layers.Dense(512, activation="gelu")(layers.LayerNormalization()(mixed))
    transformer = tf.keras.Model(inputs, mixed + layers.Dense(128)(grown))
    rng = np.random.default_rng(0)

    def tensors(*shapes: tuple[int, ...]) -> tuple[Any, ...]:
        return tuple(tf.constant(rng.standard_normal(shape, dtype=np.float32)) for shape in shapes)

    models: dict[str, tuple[Any, Callable[[int], tuple[Any, ...]], Any]] = {
        "MLP": (
            tf.keras.Sequential(
                [layers.Input((784,)), layers.Dense(1024, "relu"), layers.Dense(1024, "relu"), layers.Dense(10)]
            ),
            lambda n: tensors((n, 784), (n, 10)),
            (784,),
        ),
        "CNN": (
            tf.keras.Sequential(
                [
                    layers.Input((32, 32, 3)),
                    layers.Conv2D(8, 3, padding="same", activation="relu"),
                    layers.Conv2D(16, 3, padding="same", activation="relu"),
                    layers.AveragePooling2D(2),
                    layers.Flatten(),
                    layers.Dense(10),
                ]
            ),
            lambda n: tensors((n, 32, 32, 3), (n, 10)),
            (32, 32, 3),
        ),
        "transformer": (transformer, lambda n: tensors((n, 64, 128), (n, 64, 128)), (64, 128)),
    }
    results = []
    for model, (keras_model, batch_of, shape) in models.items():
        optimiser = tf.keras.optimizers.SGD(0.01, momentum=0.9)
        out_shape = keras_model.output_shape[1:]

        @tf.function(
            input_signature=[tf.TensorSpec((None, *shape), tf.float32), tf.TensorSpec((None, *out_shape), tf.float32)],
            reduce_retracing=True,
        )
        def train(x: Any, y: Any, keras_model: Any = keras_model, optimiser: Any = optimiser) -> Any:
            with tf.GradientTape() as tape:
                value = tf.reduce_mean(tf.square(keras_model(x, training=True) - y))
            grads = tape.gradient(value, keras_model.trainable_variables)
            optimiser.apply_gradients(zip(grads, keras_model.trainable_variables, strict=True))
            return value

        runs: list[int] = []

        def step(x: Any, y: Any, train: Any = train, runs: list[int] = runs) -> None:
            runs.append(int(x.shape[0]))
            train(x, y).numpy()

        def measured(n: int, step: Any = step, batch_of: Any = batch_of) -> int:
            args = batch_of(n)
            return int(adapter.step_peak(lambda: step(*args), (step, *args)).bytes)

        peak = Counted(measured)
        for limit in _limits("tensorflow", model, quick):
            results.append(case("TensorFlow", model, limit, step, batch_of, peak, runs=runs))
            _emit(results[-1])
    return results


# ---------------------------------------------------------------------- the table


CASES = {"jax": jax_cases, "torch": torch_cases, "tensorflow": tensorflow_cases}
HEADER = (
    f"{'framework':<11}{'model':<12}{'limit':>7}{'truth':>7}{'answer':>7}{'share':>7}{'naive':>7}{'share':>7}"
    f"{'steps':>6}{'largest':>8}{'wall s':>7}  result"
)


def _limits(framework: str, model: str, quick: bool) -> tuple[int, ...]:
    limits = LIMITS[framework][model]
    return limits[len(limits) // 2 : len(limits) // 2 + 1] if quick else limits


def _emit(result: dict[str, Any]) -> None:
    print("RESULT " + json.dumps(result), flush=True)


def passed(result: dict[str, Any]) -> bool:
    truth, answer = result["truth"], result["answer"]
    return truth > 0 and answer <= truth and answer >= RATIO * truth


def row(result: dict[str, Any]) -> str:
    truth, answer, flat = result["truth"], result["answer"], result["naive"]

    def share(n: int | None) -> str:
        return "-" if n is None or not truth else f"{n / truth:.0%}"

    verdict = "PASS" if passed(result) else "FAIL"
    if answer > truth:
        verdict += " (above the truth)"
    elif truth and answer < RATIO * truth:
        verdict += f" (below {RATIO:.0%})"
    if result["problem"]:
        verdict += f": {result['problem']}"
    limit = result["limit"]
    limit_text = f"{limit // GiB}G" if limit % GiB == 0 else f"{limit // MiB}M"
    return (
        f"{result['framework']:<11}{result['model']:<12}{limit_text:>7}{truth:>7}{answer:>7}{share(answer):>7}"
        f"{'flat' if flat is None else flat:>7}{share(flat):>7}{result['steps']:>6}{result['largest_run']:>8}"
        f"{result['wall_s']:>7.1f}  {verdict}"
    )


def run_framework(framework: str, quick: bool) -> tuple[list[dict[str, Any]], str | None]:
    """The framework's cases in a fresh process; their rows printed as they come."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", JAX_PLATFORMS="cpu")
    if framework == "tensorflow":
        env["TF_CPU_ALLOCATOR_USE_BFC"] = "true"
    command = [sys.executable, __file__, "--case", framework] + (["--quick"] if quick else [])
    results = []
    with tempfile.TemporaryFile("w+") as errors:
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors, text=True, env=env)
        assert child.stdout is not None
        for line in child.stdout:
            if line.startswith("RESULT "):
                results.append(json.loads(line[len("RESULT ") :]))
                print(row(results[-1]), flush=True)
        code = child.wait()
        errors.seek(0)
        problem = None if code == 0 else (errors.read().strip().splitlines() or [f"exit status {code}"])[-1]
    return results, problem


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one limit per model")
    parser.add_argument("--frameworks", nargs="+", choices=sorted(CASES), default=["jax", "torch", "tensorflow"])
    parser.add_argument("--case", choices=sorted(CASES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        CASES[args.case](args.quick)
        return

    print(HEADER)
    results, failures = [], []
    started = time.perf_counter()
    for framework in args.frameworks:
        done, problem = run_framework(framework, args.quick)
        results += done
        if problem:
            failures.append(f"{framework}: {problem}")
            print(f"{framework:<11}stopped: {problem}")
    accurate = [r for r in results if passed(r)]
    slowest = max((r["wall_s"] for r in results), default=0.0)
    above = [r for r in results if r["naive"] is None or r["naive"] > r["truth"]]
    print(
        "(limit: bytes given as limit=, margin 5% of it; truth: the largest n whose counted peak is at most limit "
        "less margin; answer: largest_batch; naive: line through 1, 2, 4, 8, 16, no margin; share: of the truth; "
        "steps: steps run, or compiles for JAX; largest: the largest size largest_batch ran or compiled)"
    )
    print(
        f"accuracy: {len(accurate)}/{len(results)} cases at most the truth and at least {RATIO:.0%} of it: "
        f"{'PASS' if results and len(accurate) == len(results) and not failures else 'FAIL'}"
    )
    print(
        f"cost: the slowest call took {slowest:.1f} s (target {WALL_TARGET_S:.0f} s): "
        f"{'PASS' if slowest <= WALL_TARGET_S else 'FAIL'}"
    )
    print(f"naive line: above the truth (or flat) in {len(above)}/{len(results)} cases")
    print(f"whole benchmark: {time.perf_counter() - started:.0f} s")
    sys.exit(0 if results and len(accurate) == len(results) and not failures else 1)


if __name__ == "__main__":
    main()
