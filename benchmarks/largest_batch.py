"""How close is `jupyter_gpumem.largest_batch` to the largest batch that truly fits, is it ever above it, and
what does it cost? (issue 36, Must 3 and 4; issue 45, Must 1 and 2). On the CPU, with an explicit `limit=` in
bytes, outside a kernel; not part of CI.

    python benchmarks/largest_batch.py [--quick] [--frameworks jax torch tensorflow]

Ten training steps per framework (loss, gradients, an update), each at three limits, every framework in its own
fresh process (TensorFlow and PyTorch in one process fight over threads, and TF_CPU_ALLOCATOR_USE_BFC=true must
be set before TensorFlow's import): an MLP (784-1024-1024-10), a CNN (two convolutions), a transformer block, an
LSTM (32 steps), an embedding-heavy model (a 50,000 x 64 table, its gradient dense), a wide layer under Adam whose
weights, gradients and two moments dominate the peak, the MLP in mixed precision (bfloat16 compute, which the CPU
builds run), a deep narrow MLP (24 layers of 64), a residual CNN (three blocks; PyTorch and TensorFlow with batch
normalisation) and one attention layer over a sequence of 512.

- JAX: a jitted step, counted by XLA's compiled ``memory_analysis()`` (never run): ``peak_memory_in_bytes``, or
  argument + output + temp - alias bytes where that is larger, as frameworks/jax.py ``compiled_peak`` counts it
  (computed here again from the analysis, not through the adapter). The Adam step takes its moments as arguments.
- PyTorch: the step run under PyTorch's memory tracker (MemTracker), the module and its optimiser among the
  step's arguments (so the tracker counts their parameters, gradients and optimiser state too); TensorFlow
  (Keras models, one ``tf.function`` with a batch dimension of None, so one trace) through
  ``get_memory_info('CPU:0')['peak']`` after ``reset_memory_stats`` with TF_CPU_ALLOCATOR_USE_BFC=true, with one
  inter-op thread (with two, the order of a step's independent operations changes from one run to the next, and
  with it its counted peak, by up to 32 MiB for the CNN) and each model in a process of its own (TensorFlow keeps
  an earlier model's variables after the model is gone). Both counted by the adapter's own ``step_peak``, exactly
  as largest_batch counts, with the same objects (the step and its arguments).

"True largest": with an explicit limit L, largest_batch answers a size whose peak it counted (or, for JAX, compiled)
at most L - margin (margin: 5% of L, budget/batchfit.py ``default_margin``, widened where its counts jitter; no
limit is taken off for what is held, since ``limit=`` is used as given). The truth is the largest n whose *counted*
peak, by the same counter, is at most the same L - 5% of it, found by galloping from the answer (up by 1, 2, 4, ...
while sizes fit, down as far while they do not) and bisecting, one compile (JAX) or one step (PyTorch) per candidate
size, counted here again (not reusing largest_batch's counts); it assumes the counted peak does not fall as n grows.
TensorFlow's count of one size moves with what ran before it (its BFC allocator hands a tensor a free chunk up to
twice its size without splitting it: the MLP near 2200 counted 60 to 69 MiB), so its truth counts each size three
times, after a step at 1 and one at half the size, as largest_batch counts its TensorFlow answer, and a size fits
where every count does. That truth moves too: searched again, the MLP's at 40 MiB was anywhere from 522 to 1239
(``python benchmarks/tf_counts.py --truth``, docs/advisor.md). Per case: PASS when the answer is at most the truth
and at least 90% of it. Beside it the number of steps (compiles for JAX) the call made, the warm-up included, its
wall time, and a naive baseline: Ultralytics AutoBatch's method without its 60% safety fraction, a least-squares
line through the peaks at 1, 2, 4, 8 and 16 and the largest n under L with no margin (counted by the same counter);
"flat" where that line has no slope (Ultralytics then falls back to batch 16).

Then per framework: the cases, the answers above the truth (target 0), those below 90% of it (target at most
10% of the cases), the worst case and the calls' cost. The full run took 898 to 1162 s on a shared 2-core machine (the
truth's search runs real steps); --quick runs the middle limit per model (about 5 minutes). Exit status 1 when
a target is missed.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from typing import Any

MiB = 1 << 20
GiB = 1 << 30
RATIO = 0.90  # the answer must be at most the truth and at least this share of it
BELOW_MOST = 0.10  # per framework, at most this share of the cases may be below RATIO (none above the truth)
NAIVE_SIZES = (1, 2, 4, 8, 16)
FRAMEWORKS = {"jax": "JAX", "torch": "PyTorch", "tensorflow": "TensorFlow"}

# Limits per framework and model (MiB), chosen so that the truth lies between about ten and a few thousand:
# real steps stay small on 2 cores (the truth's bisection runs about ten of them near the answer).
LIMITS_MIB: dict[str, dict[str, tuple[int, int, int]]] = {
    "jax": {
        "MLP": (32, 64, 128),
        "CNN": (64, 256, 1024),
        "transformer": (64, 256, 1024),
        "LSTM": (32, 128, 512),
        "embedding": (32, 64, 128),
        "Adam wide": (128, 192, 384),
        "mixed bf16": (16, 32, 64),
        "deep narrow": (16, 64, 256),
        "ResNet": (64, 256, 1024),
        "attention 512": (128, 512, 2048),
    },
    "torch": {
        "MLP": (24, 32, 48),
        "CNN": (32, 64, 128),
        "transformer": (32, 64, 128),
        "LSTM": (16, 32, 64),
        "embedding": (40, 48, 64),
        "Adam wide": (88, 96, 112),
        "mixed bf16": (10, 12, 16),
        "deep narrow": (4, 8, 16),
        "ResNet": (32, 64, 128),
        "attention 512": (32, 64, 128),
    },
    "tensorflow": {
        "MLP": (40, 64, 96),
        "CNN": (48, 96, 192),
        "transformer": (48, 96, 192),
        "LSTM": (32, 64, 128),
        "embedding": (72, 88, 112),
        "Adam wide": (96, 128, 192),
        "mixed bf16": (24, 32, 48),
        "deep narrow": (8, 16, 32),
        "ResNet": (64, 128, 256),
        "attention 512": (128, 256, 512),
    },
}


class Counted:
    """A peak counter memoised by batch size. ``histories`` > 1: each size is counted that many times, each count
    but the first after a step at another size (1, then half the size), and its peak is the largest count: for
    TensorFlow, whose count of one size depends on what ran before it (module docstring), as largest_batch counts
    its answer there."""

    def __init__(self, peak_of: Callable[[int], int], histories: int = 1):
        self.peak_of = peak_of
        self.histories = histories
        self.peaks: dict[int, int] = {}
        self.counts: dict[int, list[int]] = {}

    def __call__(self, n: int) -> int:
        if n not in self.peaks:
            counts = [self.peak_of(n)]
            for before in (1, max(1, n // 2))[: self.histories - 1]:
                self.peak_of(before)
                counts.append(self.peak_of(n))
            self.peaks[n] = max(counts)
            self.counts[n] = counts
        return self.peaks[n]


def true_largest(peak: Counted, room: int, start: int) -> int:
    """The largest n >= 0 with ``peak(n) <= room``, searched from ``start`` (largest_batch's answer): up by 1, 2,
    4, ... while sizes fit (down by as much while they do not), then bisecting between the last size that fits
    and the first that does not. Near an answer close to the truth that is a few counts."""
    start = max(1, start)
    stride = 1
    if peak(start) <= room:
        fits, over = start, start + 1
        while peak(over) <= room:
            fits, over, stride = over, over + 2 * stride, 2 * stride
    else:
        fits, over = start - 1, start
        while fits > 0 and peak(fits) > room:
            over, stride = fits, 2 * stride
            fits = max(0, fits - stride)
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
    (PyTorch, TensorFlow: the step records them, the warm-up included); for a jitted JAX step the compiles are the
    sizes counted."""
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
        "estimate": fit.estimate,
        "checked": [n for n, _ in fit.checked],
        "widened": fit.widened_bytes,
        "margin": fit.margin_bytes,
        "truth": truth,
        "naive": naive(peak, limit),
        "steps": len(sizes),
        "largest_run": max(sizes, default=0),
        "wall_s": wall,
        "linear": fit.fit.linear if fit.fit is not None else None,
        "problem": fit.problem,
        "counted": fit.counted,
        # The answer's counts, largest_batch's and the truth's, and the room: where an answer lands above the truth.
        "answer_counts": [p for n, p in fit.checked if n == fit.batch_size],
        "truth_counts": peak.counts.get(fit.batch_size, []),
        "room": room,
        # Every (size, peak) largest_batch counted, in order: what a miss or an answer of 0 is read from afterwards.
        "points": [list(point) for point in fit.points],
    }


def run_cases(
    framework: str, key: str, models: Mapping[str, Callable[[], Any]], quick: bool, only: str | None, **kinds: Any
) -> None:
    """Each model at its limits. ``models``: name -> a function that makes (step, batch_of, peak counter, the sizes
    its step ran at), called just before the model's cases (TensorFlow counts every tensor its allocator holds, so
    one model's weights would count in the next one's peaks). ``only``: that model alone."""
    for model, make in models.items():
        if only is not None and model != only:
            continue
        step, batch_of, peak, runs = make()
        for limit in _limits(key, model, quick):
            _emit(case(framework, model, limit, step, batch_of, peak, runs=runs, **kinds))
        del step, batch_of, peak, runs
        gc.collect()


# ---------------------------------------------------------------------- JAX: compiled, never run


def jax_models() -> dict[str, tuple[Any, Callable[[int], tuple[Any, ...]]]]:
    """The ten jitted training steps, each with its batch_of (zeros: only their shapes matter to a compile)."""
    import jax
    import jax.numpy as jnp

    keys = iter(jax.random.split(jax.random.PRNGKey(0), 64))

    def normal(*shape: int, scale: float) -> Any:
        return jax.random.normal(next(keys), shape) * scale

    def dense(a: int, b: int) -> tuple[Any, Any]:
        return normal(a, b, scale=1 / math.sqrt(a)), jnp.zeros(b)

    def cross_entropy(logits: Any, y: Any) -> Any:
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))

    def mlp_loss(params: Any, x: Any, y: Any) -> Any:
        for w, b in params[:-1]:
            x = jax.nn.relu(x @ w + b)
        w, b = params[-1]
        return cross_entropy(x @ w + b, y)

    def mixed_loss(params: Any, x: Any, y: Any) -> Any:  # bfloat16 compute, float32 weights and loss
        half = jax.tree_util.tree_map(lambda p: p.astype(jnp.bfloat16), params)
        return mlp_loss(half, x.astype(jnp.bfloat16), y).astype(jnp.float32)

    def conv(x: Any, w: Any) -> Any:
        return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def pooled(h: Any) -> Any:  # 2x2 average pool of a 32x32 map, flattened
        n, channels = h.shape[0], h.shape[-1]
        return h.reshape(n, 16, 2, 16, 2, channels).mean(axis=(2, 4)).reshape(n, -1)

    def cnn_loss(params: Any, x: Any, y: Any) -> Any:
        h = jax.nn.relu(conv(jax.nn.relu(conv(x, params["c1"])), params["c2"]))
        w, b = params["out"]
        return cross_entropy(pooled(h) @ w + b, y)

    def resnet_loss(params: Any, x: Any, y: Any) -> Any:
        h = jax.nn.relu(conv(x, params["stem"]))
        for first, second in params["blocks"]:
            h = jax.nn.relu(h + conv(jax.nn.relu(conv(h, first)), second))
        w, b = params["out"]
        return cross_entropy(pooled(h) @ w + b, y)

    def norm(x: Any) -> Any:
        return (x - x.mean(-1, keepdims=True)) / jnp.sqrt(x.var(-1, keepdims=True) + 1e-5)

    def attention(params: Any, x: Any, heads: int) -> Any:
        n, seq, width = x.shape
        w, b = params["qkv"]
        q, k, v = jnp.split(norm(x) @ w + b, 3, axis=-1)
        q, k, v = (t.reshape(n, seq, heads, width // heads).transpose(0, 2, 1, 3) for t in (q, k, v))
        weights = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / math.sqrt(width // heads), axis=-1)
        w, b = params["proj"]
        return x + (weights @ v).transpose(0, 2, 1, 3).reshape(n, seq, width) @ w + b

    def block_loss(params: Any, x: Any, y: Any) -> Any:
        x = attention(params, x, 4)
        (w1, b1), (w2, b2) = params["up"], params["down"]
        x = x + jax.nn.gelu(norm(x) @ w1 + b1) @ w2 + b2
        return jnp.mean((x - y) ** 2)

    def long_loss(params: Any, x: Any, y: Any) -> Any:
        return jnp.mean((attention(params, x, 2) - y) ** 2)

    def lstm_loss(params: Any, x: Any, y: Any) -> Any:
        wx, wh, bias = params["cell"]

        def cell(carry: Any, xt: Any) -> Any:
            h, c = carry
            i, f, g, o = jnp.split(xt @ wx + h @ wh + bias, 4, axis=-1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            return (jax.nn.sigmoid(o) * jnp.tanh(c), c), None

        start = jnp.zeros((x.shape[0], wh.shape[0]))
        (h, _), _ = jax.lax.scan(cell, (start, start), x.transpose(1, 0, 2))
        w, b = params["out"]
        return cross_entropy(h @ w + b, y)

    def embedding_loss(params: Any, ids: Any, y: Any) -> Any:
        w, b = params["out"]
        return cross_entropy(jnp.take(params["table"], ids, axis=0).mean(axis=1) @ w + b, y)

    def wide_loss(params: Any, x: Any, y: Any) -> Any:
        (w1, b1), (w2, b2) = params
        return jnp.mean((jax.nn.relu(x @ w1 + b1) @ w2 + b2 - y) ** 2)

    def sgd(loss: Callable[..., Any]) -> Any:
        @jax.jit
        def step(params: Any, x: Any, y: Any) -> Any:
            value, grads = jax.value_and_grad(loss)(params, x, y)
            return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads), value

        return step

    @jax.jit
    def adam(params: Any, moments: Any, squares: Any, x: Any, y: Any) -> Any:
        value, grads = jax.value_and_grad(wide_loss)(params, x, y)
        tree = jax.tree_util.tree_map
        moments = tree(lambda m, g: 0.9 * m + 0.1 * g, moments, grads)
        squares = tree(lambda v, g: 0.999 * v + 0.001 * g * g, squares, grads)
        params = tree(lambda p, m, v: p - 1e-3 * m / (jnp.sqrt(v) + 1e-8), params, moments, squares)
        return params, moments, squares, value

    mlp = [dense(784, 1024), dense(1024, 1024), dense(1024, 10)]
    half_mlp = [dense(784, 512), dense(512, 512), dense(512, 10)]
    cnn = {"c1": normal(3, 3, 3, 32, scale=0.1), "c2": normal(3, 3, 32, 64, scale=0.05), "out": dense(16**2 * 64, 10)}
    block = {"qkv": dense(256, 768), "proj": dense(256, 256), "up": dense(256, 1024), "down": dense(1024, 256)}
    lstm = {"cell": (normal(64, 512, scale=0.1), normal(128, 512, scale=0.05), jnp.zeros(512)), "out": dense(128, 10)}
    embedding = {"table": normal(50_000, 64, scale=0.01), "out": dense(64, 10)}
    wide = [dense(1024, 2048), dense(2048, 1024)]
    zeros = jax.tree_util.tree_map(jnp.zeros_like, wide)
    narrow = [dense(64, 64) for _ in range(24)] + [dense(64, 10)]
    blocks = [(normal(3, 3, 16, 16, scale=0.05), normal(3, 3, 16, 16, scale=0.05)) for _ in range(3)]
    resnet = {"stem": normal(3, 3, 3, 16, scale=0.1), "blocks": blocks, "out": dense(16**2 * 16, 10)}
    long = {"qkv": dense(64, 192), "proj": dense(64, 64)}

    def x(*shape: int, dtype: Any = jnp.float32) -> Any:
        return jnp.zeros(shape, dtype)

    return {
        "MLP": (sgd(mlp_loss), lambda n: (mlp, x(n, 784), x(n, 10))),
        "CNN": (sgd(cnn_loss), lambda n: (cnn, x(n, 32, 32, 3), x(n, 10))),
        "transformer": (sgd(block_loss), lambda n: (block, x(n, 128, 256), x(n, 128, 256))),
        "LSTM": (sgd(lstm_loss), lambda n: (lstm, x(n, 32, 64), x(n, 10))),
        "embedding": (sgd(embedding_loss), lambda n: (embedding, x(n, 32, dtype=jnp.int32), x(n, 10))),
        "Adam wide": (adam, lambda n: (wide, zeros, zeros, x(n, 1024), x(n, 1024))),
        "mixed bf16": (sgd(mixed_loss), lambda n: (half_mlp, x(n, 784), x(n, 10))),
        "deep narrow": (sgd(mlp_loss), lambda n: (narrow, x(n, 64), x(n, 10))),
        "ResNet": (sgd(resnet_loss), lambda n: (resnet, x(n, 32, 32, 3), x(n, 10))),
        "attention 512": (sgd(long_loss), lambda n: (long, x(n, 512, 64), x(n, 512, 64))),
    }


def jax_counted(step: Any, batch_of: Callable[[int], tuple[Any, ...]]) -> Counted:
    """XLA's compiled peak at n, as frameworks/jax.py ``compiled_peak`` counts it."""

    def compiled(n: int) -> int:
        # batch_of(n) makes the arrays, as largest_batch does: zeros of that shape, small beside the compile.
        analysis = step.lower(*batch_of(n)).compile().memory_analysis()
        buffers = (
            analysis.argument_size_in_bytes
            + analysis.output_size_in_bytes
            + analysis.temp_size_in_bytes
            - analysis.alias_size_in_bytes
        )
        return max(int(getattr(analysis, "peak_memory_in_bytes", 0) or 0), int(buffers))

    return Counted(compiled)


def jax_cases(quick: bool, only: str | None = None) -> None:
    import jax

    models = {
        name: (lambda step=step, batch_of=batch_of: (step, batch_of, jax_counted(step, batch_of), None))
        for name, (step, batch_of) in jax_models().items()
    }
    # Cold for every call, as in a fresh notebook: JAX keeps compiled executables in memory.
    run_cases("JAX", "jax", models, quick, only, before=jax.clear_caches)


# ---------------------------------------------------------------------- PyTorch: run under MemTracker


def torch_models() -> dict[str, tuple[Any, Any, Callable[[int], tuple[Any, Any]], Callable[..., Any]]]:
    """name -> (module, optimiser, n -> (x, y), forward(module, x, y) -> loss)."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    torch.set_num_threads(2)

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer = nn.TransformerEncoderLayer(128, 4, 512, dropout=0.0, batch_first=True, norm_first=True)

        def forward(self, x: torch.Tensor) -> Any:
            return self.layer(x)

    class Recurrent(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = nn.LSTM(64, 128, batch_first=True)
            self.out = nn.Linear(128, 10)

        def forward(self, x: torch.Tensor) -> Any:
            return self.out(self.lstm(x)[0][:, -1])

    class Bag(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.table = nn.Embedding(50_000, 64)
            self.out = nn.Linear(64, 10)

        def forward(self, ids: torch.Tensor) -> Any:
            return self.out(self.table(ids).mean(dim=1))

    class Residual(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Sequential(
                nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1)
            )

        def forward(self, x: torch.Tensor) -> Any:
            return torch.relu(x + self.body(x))

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attention = nn.MultiheadAttention(64, 2, batch_first=True)
            self.out = nn.Linear(64, 64)

        def forward(self, x: torch.Tensor) -> Any:
            return self.out(x + self.attention(x, x, x, need_weights=False)[0])

    def mlp(width: int) -> nn.Module:
        return nn.Sequential(nn.Linear(784, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))

    def labels(n: int) -> torch.Tensor:
        return torch.randint(0, 10, (n,))

    def classify(module: Any, x: Any, y: Any) -> Any:
        return nn.functional.cross_entropy(module(x), y)

    def regress(module: Any, x: Any, y: Any) -> Any:
        return nn.functional.mse_loss(module(x), y)

    def mixed(module: Any, x: Any, y: Any) -> Any:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = module(x)
        return nn.functional.cross_entropy(logits.float(), y)

    narrow: list[nn.Module] = []
    for _ in range(24):
        narrow += [nn.Linear(64, 64), nn.ReLU()]
    models = {
        "MLP": (mlp(1024), lambda n: (torch.randn(n, 784), labels(n)), classify),
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
            lambda n: (torch.randn(n, 3, 32, 32), labels(n)),
            classify,
        ),
        "transformer": (Block(), lambda n: (torch.randn(n, 64, 128), torch.randn(n, 64, 128)), regress),
        "LSTM": (Recurrent(), lambda n: (torch.randn(n, 32, 64), labels(n)), classify),
        "embedding": (Bag(), lambda n: (torch.randint(0, 50_000, (n, 32)), labels(n)), classify),
        "Adam wide": (
            nn.Sequential(nn.Linear(1024, 2048), nn.ReLU(), nn.Linear(2048, 1024)),
            lambda n: (torch.randn(n, 1024), torch.randn(n, 1024)),
            regress,
        ),
        "mixed bf16": (mlp(512), lambda n: (torch.randn(n, 784), labels(n)), mixed),
        "deep narrow": (nn.Sequential(*narrow, nn.Linear(64, 10)), lambda n: (torch.randn(n, 64), labels(n)), classify),
        "ResNet": (
            nn.Sequential(
                nn.Conv2d(3, 16, 3, padding=1),
                nn.BatchNorm2d(16),
                nn.ReLU(),
                Residual(),
                Residual(),
                Residual(),
                nn.AvgPool2d(2),
                nn.Flatten(),
                nn.Linear(16 * 16 * 16, 10),
            ),
            lambda n: (torch.randn(n, 3, 32, 32), labels(n)),
            classify,
        ),
        "attention 512": (Attention(), lambda n: (torch.randn(n, 512, 64), torch.randn(n, 512, 64)), regress),
    }
    return {
        name: (
            module,
            torch.optim.Adam(module.parameters(), lr=1e-3)
            if name == "Adam wide"
            else torch.optim.SGD(module.parameters(), lr=0.01, momentum=0.9),
            data,
            forward,
        )
        for name, (module, data, forward) in models.items()
    }


def torch_cases(quick: bool, only: str | None = None) -> None:
    from jupyter_gpumem.kernel.runtime import runtime

    adapter = runtime().control.adapters["pytorch"]
    models = {}
    for name, (module, optimiser, data, forward) in torch_models().items():
        runs: list[int] = []

        def step(module: Any, optimiser: Any, x: Any, y: Any, forward: Any = forward, runs: list[int] = runs) -> None:
            runs.append(len(x))
            optimiser.zero_grad(set_to_none=True)
            forward(module, x, y).backward()
            optimiser.step()

        def batch_of(n: int, module: Any = module, optimiser: Any = optimiser, data: Any = data) -> tuple[Any, ...]:
            # The module and its optimiser among the arguments: the tracker counts their weights and state.
            return (module, optimiser, *data(n))

        def measured(n: int, step: Any = step, batch_of: Any = batch_of) -> int:
            args = batch_of(n)
            return int(adapter.step_peak(lambda: step(*args), (step, *args)).bytes or 0)

        made = (step, batch_of, Counted(measured), runs)
        models[name] = lambda made=made: made
    run_cases("PyTorch", "torch", models, quick, only)


# ---------------------------------------------------------------------- TensorFlow: run, counted by BFC on CPU:0


def tensorflow_models() -> dict[str, Callable[[], tuple[Any, Any, Callable[[int], tuple[Any, Any]]]]]:
    """name -> a function that makes (Keras model, optimiser, n -> (x, y)): one model at a time holds memory."""
    import numpy as np
    import tensorflow as tf
    from keras import layers  # type: ignore[import-untyped]

    # One inter-op thread, before the runtime starts: with two, the order of a step's independent operations, and
    # with it which of their tensors live at once, changes from one run to the next (module docstring).
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.random.set_seed(0)
    rng = np.random.default_rng(0)

    def normal(*shape: int) -> Any:
        return tf.constant(rng.standard_normal(shape, dtype=np.float32))

    def labels(n: int) -> Any:
        return normal(n, 10)

    def dense_stack(width: int, depth: int, dtype: str | None = None) -> list[Any]:
        return [layers.Dense(width, activation="relu", dtype=dtype) for _ in range(depth)]

    def sequential(shape: tuple[int, ...], *stack: Any, dtype: str = "float32") -> Any:
        return tf.keras.Sequential([layers.Input(shape, dtype=dtype), *stack])

    def sgd() -> Any:
        return tf.keras.optimizers.SGD(0.01, momentum=0.9)

    def transformer() -> Any:
        inputs = layers.Input((64, 128))
        normed = layers.LayerNormalization()(inputs)
        mixed = inputs + layers.MultiHeadAttention(4, 32)(normed, normed)
        grown = layers.Dense(512, activation="gelu")(layers.LayerNormalization()(mixed))
        return tf.keras.Model(inputs, mixed + layers.Dense(128)(grown))

    def resnet() -> Any:
        images = layers.Input((32, 32, 3))
        h = layers.ReLU()(layers.BatchNormalization()(layers.Conv2D(16, 3, padding="same")(images)))
        for _ in range(3):
            body = layers.ReLU()(layers.BatchNormalization()(layers.Conv2D(16, 3, padding="same")(h)))
            h = layers.ReLU()(layers.Add()([h, layers.Conv2D(16, 3, padding="same")(body)]))
        return tf.keras.Model(images, layers.Dense(10)(layers.Flatten()(layers.AveragePooling2D(2)(h))))

    def attention() -> Any:
        sequence = layers.Input((512, 64))
        attended = sequence + layers.MultiHeadAttention(2, 32)(sequence, sequence)
        return tf.keras.Model(sequence, layers.Dense(64)(attended))

    def cnn() -> Any:
        return sequential(
            (32, 32, 3),
            layers.Conv2D(8, 3, padding="same", activation="relu"),
            layers.Conv2D(16, 3, padding="same", activation="relu"),
            layers.AveragePooling2D(2),
            layers.Flatten(),
            layers.Dense(10),
        )

    def embedding() -> Any:
        table = layers.Embedding(50_000, 64)
        return sequential((32,), table, layers.GlobalAveragePooling1D(), layers.Dense(10), dtype="int32")

    def ids(n: int) -> Any:
        return tf.constant(rng.integers(0, 50_000, (n, 32), dtype=np.int32))

    return {
        "MLP": lambda: (
            sequential((784,), *dense_stack(1024, 2), layers.Dense(10)),
            sgd(),
            lambda n: (normal(n, 784), labels(n)),
        ),
        "CNN": lambda: (cnn(), sgd(), lambda n: (normal(n, 32, 32, 3), labels(n))),
        "transformer": lambda: (transformer(), sgd(), lambda n: (normal(n, 64, 128), normal(n, 64, 128))),
        "LSTM": lambda: (
            sequential((32, 64), layers.LSTM(128), layers.Dense(10)),
            sgd(),
            lambda n: (normal(n, 32, 64), labels(n)),
        ),
        "embedding": lambda: (embedding(), sgd(), lambda n: (ids(n), labels(n))),
        "Adam wide": lambda: (
            sequential((1024,), layers.Dense(2048, activation="relu"), layers.Dense(1024)),
            tf.keras.optimizers.Adam(1e-3),
            lambda n: (normal(n, 1024), normal(n, 1024)),
        ),
        "mixed bf16": lambda: (
            sequential((784,), *dense_stack(512, 2, "mixed_bfloat16"), layers.Dense(10, dtype="float32")),
            sgd(),
            lambda n: (normal(n, 784), labels(n)),
        ),
        "deep narrow": lambda: (
            sequential((64,), *dense_stack(64, 24), layers.Dense(10)),
            sgd(),
            lambda n: (normal(n, 64), labels(n)),
        ),
        "ResNet": lambda: (resnet(), sgd(), lambda n: (normal(n, 32, 32, 3), labels(n))),
        "attention 512": lambda: (attention(), sgd(), lambda n: (normal(n, 512, 64), normal(n, 512, 64))),
    }


def made_tensorflow(model: str) -> Callable[[], tuple[Any, ...]]:
    """A function that makes the model's (step, batch_of, peak counter, the sizes its step ran at), the model made
    when it is called (after the last one's session is cleared)."""
    import tensorflow as tf

    build = tensorflow_models()[model]

    def make() -> tuple[Any, ...]:
        tf.keras.backend.clear_session()  # the last model's weights and optimiser state go
        keras_model, optimiser, batch_of = build()
        x_spec = tf.TensorSpec((None, *keras_model.input_shape[1:]), keras_model.inputs[0].dtype)
        y_spec = tf.TensorSpec((None, *keras_model.output_shape[1:]), tf.float32)

        @tf.function(input_signature=[x_spec, y_spec], reduce_retracing=True)  # type: ignore[untyped-decorator]
        def train(x: Any, y: Any) -> Any:
            with tf.GradientTape() as tape:
                value = tf.reduce_mean(tf.square(tf.cast(keras_model(x, training=True), tf.float32) - y))
            grads = tape.gradient(value, keras_model.trainable_variables)
            optimiser.apply_gradients(zip(grads, keras_model.trainable_variables, strict=True))
            return value

        runs: list[int] = []

        def step(x: Any, y: Any) -> None:
            runs.append(int(x.shape[0]))
            train(x, y).numpy()

        return step, batch_of, Counted(lambda n: tensorflow_peak(step, batch_of, n), histories=3), runs

    return make


def tensorflow_peak(step: Callable[..., Any], batch_of: Callable[[int], tuple[Any, ...]], n: int) -> int:
    """One step at n counted as largest_batch counts it (the adapter's step_peak, the arguments made before)."""
    from jupyter_gpumem.kernel.runtime import runtime

    args = batch_of(n)
    adapter = runtime().control.adapters["tensorflow"]
    return int(adapter.step_peak(lambda: step(*args), (step, *args)).bytes or 0)


def tensorflow_cases(quick: bool, only: str | None = None) -> None:
    models = {name: made_tensorflow(name) for name in tensorflow_models()}
    run_cases("TensorFlow", "tensorflow", models, quick, only)


# ---------------------------------------------------------------------- the tables


CASES = {"jax": jax_cases, "torch": torch_cases, "tensorflow": tensorflow_cases}
HEADER = (
    f"{'framework':<11}{'model':<14}{'limit':>6}{'truth':>7}{'answer':>7}{'share':>7}{'line':>7}{'naive':>7}"
    f"{'share':>7}{'checks':>7}{'steps':>6}{'largest':>8}{'wall s':>7}  result"
)


def _limits(framework: str, model: str, quick: bool) -> tuple[int, ...]:
    limits = tuple(mib * MiB for mib in LIMITS_MIB[framework][model])
    return limits[1:2] if quick else limits


def _emit(result: dict[str, Any]) -> None:
    print("RESULT " + json.dumps(result), flush=True)


def above(result: dict[str, Any]) -> bool:
    return bool(result["answer"] > result["truth"])


def over_limit(result: dict[str, Any]) -> bool:
    """The truth counted the answer past the limit itself, not only past the limit less the margin: with this limit
    on a GPU, an out-of-memory error (the margin is largest_batch's allowance for what it cannot count)."""
    return bool(result["truth_counts"]) and max(result["truth_counts"]) > result["limit"]


def below(result: dict[str, Any]) -> bool:
    return not above(result) and result["answer"] < RATIO * result["truth"]


def passed(result: dict[str, Any]) -> bool:
    return result["truth"] > 0 and not above(result) and not below(result)


def share(n: int | None, truth: int) -> str:
    return "-" if n is None or not truth else f"{n / truth:.0%}"


def row(result: dict[str, Any]) -> str:
    truth, answer, flat = result["truth"], result["answer"], result["naive"]
    verdict = "PASS" if passed(result) else "FAIL"
    if above(result):
        largest = max(result["truth_counts"], default=0) / MiB
        side = "past" if over_limit(result) else "within"
        verdict += f" (above the truth: counted up to {largest:.2f} MiB at {answer}, {side} the limit)"
    elif below(result):
        verdict += f" (below {RATIO:.0%})"
    if result["widened"]:
        verdict += f"; margin widened by {result['widened'] / MiB:.1f} MiB"
    if result["problem"]:
        verdict += f": {result['problem']}"
    checks = result["checked"]
    over = sum(n > answer for n in checks)
    return (
        f"{result['framework']:<11}{result['model']:<14}{result['limit'] // MiB:>5}M{truth:>7}{answer:>7}"
        f"{share(answer, truth):>7}{share(result['estimate'], truth):>7}{'flat' if flat is None else flat:>7}"
        f"{share(flat, truth):>7}{f'{len(checks)}/{over}':>7}{result['steps']:>6}{result['largest_run']:>8}"
        f"{result['wall_s']:>7.1f}  {verdict}"
    )


SUMMARY = (
    f"{'framework':<11}{'cases':>6}{'above truth':>12}{'past limit':>11}{'below 90%':>11}  {'worst case':<34}"
    f"{'steps med/max':>14}"
    f"{'wall s med/max':>15}{'calls s':>8}"
)


def summary(framework: str, results: list[dict[str, Any]]) -> tuple[str, bool]:
    """One framework's line, and whether it met its targets (none above the truth, at most 10% below 90%)."""
    cases = [r for r in results if r["framework"] == framework]
    if not cases:
        return f"{framework:<11}{0:>6}", False
    high = [r for r in cases if above(r)]
    low = [r for r in cases if below(r)]

    def ratio(r: dict[str, Any]) -> float:
        return r["answer"] / r["truth"] if r["truth"] else (math.inf if r["answer"] else 0.0)

    worst = max(high, key=lambda r: (over_limit(r), ratio(r))) if high else min(cases, key=ratio)  # past it first
    worst_text = f"{worst['model']} {worst['limit'] // MiB}M: {share(worst['answer'], worst['truth'])}"
    steps = [r["steps"] for r in cases]
    walls = [r["wall_s"] for r in cases]
    met = not high and len(low) <= BELOW_MOST * len(cases)
    line = (
        f"{framework:<11}{len(cases):>6}{len(high):>12}{sum(map(over_limit, cases)):>11}"
        f"{f'{len(low)} ({len(low) / len(cases):.0%})':>11}  "
        f"{worst_text:<34}{f'{statistics.median(steps):g}/{max(steps)}':>14}"
        f"{f'{statistics.median(walls):.1f}/{max(walls):.1f}':>15}{sum(walls):>8.0f}"
    )
    return line, met


def run_framework(framework: str, quick: bool) -> tuple[list[dict[str, Any]], str | None]:
    """The framework's cases in a fresh process (TensorFlow: one per model, since its runtime keeps an earlier
    model's variables after the model is gone, which would count in the next one's peaks); rows printed as they
    come."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", JAX_PLATFORMS="cpu")
    if framework == "tensorflow":
        env["TF_CPU_ALLOCATOR_USE_BFC"] = "true"
    models: list[str | None] = list(LIMITS_MIB[framework]) if framework == "tensorflow" else [None]
    results = []
    for model in models:
        command = [sys.executable, __file__, "--case", framework] + (["--quick"] if quick else [])
        command += ["--model", model] if model is not None else []
        with tempfile.TemporaryFile("w+") as errors:
            child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors, text=True, env=env)
            assert child.stdout is not None
            for line in child.stdout:
                if line.startswith("RESULT "):
                    results.append(json.loads(line[len("RESULT ") :]))
                    print(row(results[-1]), flush=True)
            code = child.wait()
            errors.seek(0)
            if code != 0:
                return results, (errors.read().strip().splitlines() or [f"exit status {code}"])[-1]
    return results, None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one limit per model (the middle one)")
    parser.add_argument("--frameworks", nargs="+", choices=sorted(CASES), default=["jax", "torch", "tensorflow"])
    parser.add_argument("--case", choices=sorted(CASES), help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        CASES[args.case](args.quick, args.model)
        return

    print(HEADER)
    results, failures = [], []
    started = time.perf_counter()
    for framework in args.frameworks:
        done, problem = run_framework(framework, args.quick)
        results += done
        if problem:
            failures.append(f"{framework}: {problem}")
            print(f"{FRAMEWORKS[framework]:<11}stopped: {problem}")
    print(
        "(limit: bytes given as limit=, margin 5% of it; truth: the largest n whose counted peak is at most limit "
        "less margin; answer: largest_batch; share: of the truth; line: the line's answer before largest_batch "
        "counted it; naive: line through 1, 2, 4, 8, 16, no margin; checks: sizes counted after the measuring to "
        "check the answer / of them not fitting; steps: steps run (the warm-up included), or compiles for JAX; "
        "largest: the largest size largest_batch ran or compiled)"
    )
    print()
    print(SUMMARY)
    met_all = not failures
    for framework in args.frameworks:
        line, met = summary(FRAMEWORKS[framework], results)
        met_all = met_all and met
        print(line)
    naive_high = [r for r in results if r["naive"] is None or r["naive"] > r["truth"]]
    print(
        f"(targets per framework: 0 above the truth, at most {BELOW_MOST:.0%} of the cases below {RATIO:.0%} of "
        f"it: {'PASS' if met_all else 'FAIL'}; past limit: answers the truth counted past the limit itself, an "
        "out-of-memory error on a GPU with that limit; worst case: above the truth where any is, else the lowest "
        "share; steps: per call, compiles for JAX; calls s: all its calls' wall time)"
    )
    print(f"naive line: above the truth (or flat) in {len(naive_high)}/{len(results)} cases")
    print(f"whole benchmark: {time.perf_counter() - started:.0f} s")
    sys.exit(0 if met_all else 1)


if __name__ == "__main__":
    main()
