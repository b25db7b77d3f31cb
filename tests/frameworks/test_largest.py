"""`jupyter_gpumem.largest_batch` with real PyTorch, TensorFlow and JAX (CPU builds) in real kernels on the stand-in
NVML: the default limit follows this kernel's budget and the other processes' memory, a step whose memory is not a
line is said to be one, the answer is counted before it is given, and no size above it runs where the line holds."""

from __future__ import annotations

import json

import pytest

from jupyter_gpumem import standin
from jupyter_gpumem.units import MiB

pytestmark = pytest.mark.kernel

# One RTX A4000 (Ampere: 350 MiB CUDA context estimated); a neighbour holds 1000 MiB, then 13000 MiB.
GPU = (
    "driver version=550.54 cuda=12040\n"
    'gpu name="NVIDIA RTX A4000" uuid=GPU-0a0a0a0a-0000-4000-8000-000000000008 total=16376MiB cc=8.6 '
    "used={used}MiB util=0 mem_util=0\n"
    "proc gpu=0 pid=7000 used={used}MiB name=python\n"
)
TORCH_OVERHEAD_MIB = 350 + 100  # the CUDA context on Ampere and PyTorch's libraries
TF_OVERHEAD_MIB = 350 + 150

# The step's arguments and the sizes it ran at, recorded in the kernel; the result as JSON.
TORCH_SETUP = """
import json, torch, jupyter_gpumem
model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
seen = []
def step(x):
    seen.append(len(x))
    model(x).sum().backward()
def as_json(r):
    return json.dumps({"batch": r.batch_size, "limit": r.limit_bytes, "source": r.limit_source, "sizes": r.sizes,
                       "seen": seen, "linear": r.fit.linear if r.fit else None, "text": str(r),
                       "html": r._repr_html_(), "verified": r.verified_bytes, "margin": r.margin_bytes})
"""


def on_gpu(kernel_with, used_mib=1000, env=None):
    kernel = kernel_with("s2_seven_jobs", env=env)
    standin.write_scenario(kernel.scenario, GPU.format(used=used_mib))
    assert kernel.run("%load_ext jupyter_gpumem").status == "ok"
    return kernel


def result(kernel, call: str) -> dict:
    reply = kernel.run(f"seen.clear(); print(as_json({call}))")
    assert reply.status == "ok", reply.error
    return json.loads(reply.stdout.strip().splitlines()[-1])


def test_pytorch_the_default_limit_follows_the_budget_and_the_other_processes(kernel_with):
    kernel = on_gpu(kernel_with)
    assert kernel.run(TORCH_SETUP).status == "ok"
    batch = "lambda n: (torch.randn(n, 512),)"

    unlimited = result(kernel, f"jupyter_gpumem.largest_batch(step, {batch})")
    free_mib = 16376 - 1000
    assert unlimited["limit"] == (free_mib - TORCH_OVERHEAD_MIB) * MiB
    assert "the GPU's free memory, 15376 MiB less 450 MiB for the CUDA context and libraries" in unlimited["source"]
    assert unlimited["sizes"][:4] == [1, 2, 4, 8] and unlimited["batch"] > 100_000
    assert max(unlimited["seen"]) <= unlimited["batch"]  # nothing above the answer ran
    # Counted on the CPU, a check at the answer would take GiBs of this machine's memory: not run, and said.
    assert "The answer was not counted before it was given" in unlimited["text"]
    assert unlimited["batch"] not in unlimited["seen"]
    assert "PyTorch's memory tracker (MemTracker) on the CPU" in unlimited["text"]
    assert unlimited["margin"] == 512 * MiB  # 5% of 14926 MiB is more than the cap

    assert kernel.run("%gpumem limit=4GiB framework=pytorch").status == "ok"
    budgeted = result(kernel, f"jupyter_gpumem.largest_batch(step, {batch})")
    assert budgeted["limit"] == (4096 - TORCH_OVERHEAD_MIB) * MiB
    assert budgeted["source"] == "this kernel's budget of 4096 MiB less 450 MiB for the CUDA context and libraries"
    assert budgeted["batch"] < unlimited["batch"]

    # A neighbour takes 12000 MiB more: its free 3376 MiB less the overhead is below the budget's 3646 MiB.
    standin.write_scenario(kernel.scenario, GPU.format(used=13000))
    crowded = result(kernel, f"jupyter_gpumem.largest_batch(step, {batch})")
    assert crowded["limit"] == (16376 - 13000 - TORCH_OVERHEAD_MIB) * MiB
    assert crowded["batch"] < budgeted["batch"]


def test_pytorch_nothing_above_the_answer_runs_and_a_step_that_is_not_a_line_is_said_to_be_one(kernel_with):
    kernel = on_gpu(kernel_with)
    assert kernel.run(TORCH_SETUP).status == "ok"
    assert kernel.run("def big(x):\n    seen.append(len(x)); (x * 2).sum()").status == "ok"  # 1 MiB a sample
    # Under 12 MiB less its 5% margin (11.4 MiB): a warm-up at 1, then 1, 2 and 4 run; 8 would take more than
    # half of the 7.4 MiB left above 4, and the slopes agree (a line), so the line's answer is counted: one step.
    small = result(kernel, "jupyter_gpumem.largest_batch(big, lambda n: (torch.zeros(n, 262144),), limit=12 * 2**20)")
    assert small["seen"] == [1, 1, 2, 4, small["batch"]]
    assert 8 <= small["batch"] < 12 and max(small["seen"]) <= small["batch"]
    assert f"counted at {small['batch']}: fits" in small["text"]
    assert small["source"] == "given (limit=)"

    verified = result(
        kernel, "jupyter_gpumem.largest_batch(big, lambda n: (torch.zeros(n, 262144),), limit='12MiB', verify=True)"
    )
    assert verified["seen"][-1] == verified["batch"] and verified["verified"] <= 12 * MiB

    square = kernel.run(
        "def square(x):\n    seen.append(len(x)); torch.zeros(len(x), len(x), 4096).sum()\n"
        "print(as_json(jupyter_gpumem.largest_batch(square, lambda n: (torch.zeros(n, 1),), limit='1GiB')))"
    )
    found = json.loads(square.stdout.strip().splitlines()[-1])
    assert found["linear"] is False
    assert "The peaks are not on a line" in found["text"] and "not on a line" in found["html"]
    assert max(found["seen"]) <= found["batch"]
    # 16 KiB x n², under 1 GiB less 5%: the real largest is 249; the cautious line's answer is below it.
    assert 16 <= found["batch"] <= 249

    nothing = result(kernel, "jupyter_gpumem.largest_batch(step, lambda n: (torch.zeros(n, 4),), limit='0MiB')")
    assert nothing["batch"] == 0 and nothing["seen"] == [] and "Nothing was run" in nothing["text"]


def test_tensorflow_counts_on_the_cpu_with_its_bfc_allocator_under_the_budget(kernel_with):
    kernel = on_gpu(kernel_with, env={"TF_CPU_ALLOCATOR_USE_BFC": "true"})
    assert kernel.run("%gpumem fraction=0.25 framework=tensorflow").status == "ok"
    setup = kernel.run(
        "import json, tensorflow as tf, jupyter_gpumem\n"
        "model = tf.keras.Sequential([tf.keras.Input((256,)), tf.keras.layers.Dense(256), tf.keras.layers.Dense(10)])\n"
        "seen = []\n"
        "def step(x):\n    seen.append(int(x.shape[0])); model(x)\n"
        "r = jupyter_gpumem.largest_batch(step, lambda n: (tf.zeros((n, 256)),))\n"
        "print(json.dumps({'batch': r.batch_size, 'limit': r.limit_bytes, 'seen': seen, 'text': str(r)}))",
        timeout=120,
    )
    assert setup.status == "ok", setup.error
    found = json.loads(setup.stdout.strip().splitlines()[-1])
    budget_mib = 16376 // 4  # a quarter of the GPU, in whole MiB as the plan rounds it
    assert abs(found["limit"] - (budget_mib - TF_OVERHEAD_MIB) * MiB) < MiB
    assert "tf.config.experimental.get_memory_info('CPU:0')" in found["text"]
    assert found["batch"] > 1000 and max(found["seen"]) <= found["batch"]


def test_jax_a_jitted_step_is_measured_by_xla_without_running_it(kernel_with):
    kernel = on_gpu(kernel_with)
    reply = kernel.run(
        "import json, jax, jax.numpy as jnp, jupyter_gpumem\n"
        "traced = []\n"
        "@jax.jit\n"
        "def step(w, x):\n    traced.append(x.shape[0]); return jnp.tanh(x @ w).sum()\n"
        "w = jnp.ones((256, 256))\n"
        "r = jupyter_gpumem.largest_batch(step, lambda n: (w, jnp.ones((n, 256))), limit='64MiB')\n"
        "plain = jupyter_gpumem.largest_batch(lambda x: jnp.tanh(x).sum(), lambda n: (jnp.ones((n, 8)),))\n"
        "print(json.dumps({'batch': r.batch_size, 'sizes': r.sizes, 'traced': traced, 'text': str(r), "
        "'plain': str(plain)}))",
        timeout=120,
    )
    assert reply.status == "ok", reply.error
    found = json.loads(reply.stdout.strip().splitlines()[-1])
    assert "XLA's memory analysis of the compiled step on CPU (not run)" in found["text"]
    assert sorted(found["traced"]) == sorted(found["sizes"])  # traced once per size to compile it, never run
    # 1 KiB a sample (the batch and tanh's result) under 64 MiB less 5%, less the weights' 256 KiB.
    assert 55_000 < found["batch"] < 64 * 1024
    assert "JAX does not count memory on its CPU device (memory_stats() is None)" in found["plain"]


def test_batched_auto_predicts_its_batch_under_the_budget_and_runs_nothing_larger(kernel_with):
    kernel = on_gpu(kernel_with)
    assert kernel.run(TORCH_SETUP).status == "ok"
    # 1 GiB less the 450 MiB overhead: 574 MiB for the step, less its 5% margin; 8 MiB a row (a half-MiB row
    # repeated 8 times, then doubled): about 68 rows a batch.
    assert kernel.run("%gpumem limit=1GiB framework=pytorch").status == "ok"
    reply = kernel.run(
        "def total(x):\n    seen.append(len(x)); return (x.repeat(1, 8) * 2).sum(dim=1)\n"
        "x = torch.ones(300, 131072)\n"
        "sums = jupyter_gpumem.batched(total, x, batch_size='auto', reduce='concat', progress=False)\n"
        "print(json.dumps({'seen': seen, 'right': bool((sums == 16 * 131072).all()), 'rows': len(sums)}))",
        timeout=120,
    )
    assert reply.status == "ok", reply.error
    found = json.loads(reply.stdout.strip().splitlines()[-1])
    assert found["right"] and found["rows"] == 300  # the whole input, in batches, combined
    # A warm-up, then batched's 2, 4, 8, 16, then 32 (256 MiB predicted, under half of the room left above 16),
    # then the answer counted (it fits: one step).
    measured, checked, batches = found["seen"][:6], found["seen"][6], found["seen"][7:]
    assert measured == [2, 2, 4, 8, 16, 32]
    predicted = max(batches)
    assert checked == predicted
    assert 55 <= predicted <= 68 and sum(batches) == 300 and all(b <= predicted for b in batches)


def test_tensorflow_without_its_bfc_allocator_on_the_cpu_says_what_to_set(kernel_with):
    kernel = on_gpu(kernel_with)
    reply = kernel.run(
        "import tensorflow as tf, jupyter_gpumem\n"
        "seen = []\n"
        "def step(x):\n    seen.append(int(x.shape[0])); tf.reduce_sum(x * 2)\n"
        "r = jupyter_gpumem.largest_batch(step, lambda n: (tf.zeros((n, 256)),), limit='64MiB')\n"
        "print(r.batch_size, seen)\nprint(r)",
        timeout=120,
    )
    assert reply.status == "ok", reply.error
    assert "TF_CPU_ALLOCATOR_USE_BFC=true" in reply.stdout, reply.stdout
