"""How far does TensorFlow's count of one training step move, on the CPU build? (issue 45, Must 1.)

    python benchmarks/tf_counts.py [--sequence mixed|repeated|pairs] [--executor default|single] [--processes 3]
    python benchmarks/tf_counts.py --truth [--processes 3]

largest_batch counts a TensorFlow step by ``get_memory_info('CPU:0')['peak']`` with TF_CPU_ALLOCATOR_USE_BFC=true
(frameworks/tensorflow.py ``step_peak``). This runs one sequence of steps (the same sizes, in the same order, one
inter-op thread) in several fresh processes, first as a kernel runs (address space layout randomised), then under
``setarch -R`` (not randomised), and prints each process's counts of the repeated size and their spread: within
one process (what ran before) and between processes (where the allocator's regions landed). The BFC allocator
orders free chunks of one size by address and hands a tensor a free chunk up to twice its size without splitting
it, so where the regions lie decides which chunk a tensor gets and how much of it is counted.

``--truth``: does the benchmark's truth move too? For a few of benchmarks/largest_batch.py's TensorFlow cases, the
truth (``true_largest``, each size counted three times, from a given start) in several fresh processes, each search
started from each of three sizes (10% below, at and 10% above the truth of the first process), since where the
search starts decides which sizes ran before which. If the truth of one case moves by more than 10% between runs,
no answer can be both at most the truth and at least 90% of it in every run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

MiB = 2**20
# Each sequence: the sizes of the MLP's steps, in order. "mixed": 2090 between other sizes; "repeated": 2090 ten
# times in a row, so that what ran before is the same step every time; "pairs": "X, 2090, 2090" for seven sizes X
# (does a step at 2090 bring the allocator to one state, whatever ran before it?).
SEQUENCE = {
    "mixed": (1, 1, 2, 4, 8, 2090, 2090, 1100, 2090, 2310, 2090, 1, 2090, 4000, 2090),
    "repeated": (1, 1, 2, 4, 8, *(2090,) * 10),
    "pairs": (1, 1, 2, 4, *(n for x in (8, 1, 1100, 4000, 2310, 500, 3000) for n in (x, 2090, 2090))),
}
# --executor: TensorFlow's own (an operation runs on the calling thread or on the inter-op pool's, whichever takes
# it first) or the single-threaded one (every operation on the calling thread, in order).
EXECUTORS = {"default": "", "single": "SINGLE_THREADED_EXECUTOR"}


def counts(model: str, sequence: str, executor: str) -> list[tuple[int, float]]:
    """In this process: the sequence's counts, in MiB."""
    import tensorflow as tf

    sys.path.insert(0, str(Path(__file__).parent))
    import largest_batch

    from jupyter_gpumem.kernel.runtime import runtime

    keras_model, optimiser, batch_of = largest_batch.tensorflow_models()[model]()  # one inter-op thread
    adapter = runtime().control.adapters["tensorflow"]
    x_spec = tf.TensorSpec((None, *keras_model.input_shape[1:]), keras_model.inputs[0].dtype)
    y_spec = tf.TensorSpec((None, *keras_model.output_shape[1:]), tf.float32)

    @tf.function(input_signature=[x_spec, y_spec], reduce_retracing=True)  # type: ignore[untyped-decorator]
    def train(x: Any, y: Any) -> Any:
        with tf.GradientTape() as tape:
            value = tf.reduce_mean(tf.square(keras_model(x, training=True) - y))
        grads = tape.gradient(value, keras_model.trainable_variables)
        optimiser.apply_gradients(zip(grads, keras_model.trainable_variables, strict=True))
        return value

    def counted(n: int) -> float:
        x, y = batch_of(n)
        with tf.experimental.function_executor_type(EXECUTORS[executor]):
            peak = adapter.step_peak(lambda: train(x, y).numpy())
        if not peak.bytes:
            raise SystemExit(f"TensorFlow counted nothing at {n}: {peak.how}")
        return round(peak.bytes / MiB, 2)

    return [(n, counted(n)) for n in SEQUENCE[sequence]]


# --truth: (model, limit in MiB) of benchmarks/largest_batch.py's TensorFlow cases.
TRUTH_CASES = (("MLP", 40), ("MLP", 96), ("CNN", 96), ("mixed bf16", 24), ("ResNet", 128), ("Adam wide", 128))


def truths(model: str, limit_mib: int, starts: list[int]) -> list[int]:
    """In this process: the truth of one case, searched from each start in turn (one model, as the benchmark)."""
    sys.path.insert(0, str(Path(__file__).parent))
    import largest_batch

    from jupyter_gpumem.budget.batchfit import default_margin

    step, batch_of, _, _ = largest_batch.made_tensorflow(model)()
    room = limit_mib * MiB - default_margin(limit_mib * MiB)
    step(*batch_of(1))  # the warm-up largest_batch runs
    found = []
    for start in starts:
        peak = largest_batch.Counted(lambda n: largest_batch.tensorflow_peak(step, batch_of, n), histories=3)
        found.append(largest_batch.true_largest(peak, room, start))
    return found


def truth_spread(processes: int, env: dict[str, str]) -> None:
    print("The truth of one case in fresh processes, searched from three starts each (10% below, at, 10% above):")
    for model, limit_mib in TRUTH_CASES:
        found: list[int] = []
        for _ in range(processes):
            starts = [round(found[0] * f) for f in (0.9, 1.0, 1.1)] if found else [16]
            command = [sys.executable, __file__, "--child-truth", model, str(limit_mib), *map(str, starts)]
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
            found += json.loads(done.stdout.splitlines()[-1])
        low, high = min(found), max(found)
        print(f"  {model} at {limit_mib} MiB: {found}  lowest {low / high:.0%} of the highest")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=["MLP"], default="MLP", help="the sequences' sizes are the MLP's")
    parser.add_argument("--sequence", choices=sorted(SEQUENCE), default="mixed")
    parser.add_argument("--executor", choices=sorted(EXECUTORS), default="default")
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--truth", action="store_true", help="the truth's own spread (module docstring)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child-truth", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_truth:
        model, limit_mib, *starts = args.child_truth
        print(json.dumps(truths(model, int(limit_mib), [int(n) for n in starts])))
        return
    if args.child:
        print(json.dumps(counts(args.model, args.sequence, args.executor)))
        return
    env = dict(os.environ, TF_CPU_ALLOCATOR_USE_BFC="true", TF_CPP_MIN_LOG_LEVEL="3")
    if args.truth:
        truth_spread(args.processes, env)
        return
    command = [sys.executable, __file__, "--child", "--model", args.model, "--sequence", args.sequence]
    command += ["--executor", args.executor]
    sizes = SEQUENCE[args.sequence]
    repeated = max(set(sizes), key=sizes.count)
    layouts: list[tuple[str, list[str]]] = [("randomised", [])] + (
        [("setarch -R", ["setarch", "-R"])] if shutil.which("setarch") else []
    )
    print(f"{args.model}: the counts of a step at {repeated} (MiB), in the sequence's order: {sizes}")
    for name, prefix in layouts:
        everything = []
        for process in range(args.processes):
            done = subprocess.run(prefix + command, env=env, capture_output=True, text=True, check=True)
            mine = [peak for n, peak in json.loads(done.stdout.splitlines()[-1]) if n == repeated]
            everything += mine
            spread = max(mine) - min(mine)
            print(f"  {name:<11} process {process + 1}: {mine}  within: {spread:.2f} MiB ({spread / min(mine):.0%})")
        spread = max(everything) - min(everything)
        print(f"  {name:<11} all processes: {min(everything)} to {max(everything)} ({spread / min(everything):.0%})")


if __name__ == "__main__":
    main()
