"""`%gpumem` with PyTorch and JAX (their CPU builds) really imported in real kernels, and
framework=auto choosing among the frameworks installed here (the test extras install every one)."""

from __future__ import annotations

import json

import pytest
from test_stream import connect, next_sample

from jupyter_gpumem.frameworks import ADAPTERS
from jupyter_gpumem.render import framework_names

pytestmark = pytest.mark.kernel

TORCH_THREADS = "import torch; print(torch.get_num_threads(), torch.get_num_interop_threads())"
# What jaxlib itself makes of the environment: the options its CUDA plugin starts the GPU client with.
JAX_OPTIONS = (
    "import json, jaxlib.xla_client as xc; o = xc.generate_pjrt_gpu_plugin_options(); "
    "print(json.dumps({k: o.get(k) for k in ('allocator', 'memory_fraction', 'preallocate')}))"
)
# s1_two_gpus, GPU 1 (GTX 1080, Pascal): a 4096 MiB budget = allocator limit + 250 MiB CUDA context + libraries.
TORCH_LIMIT_MIB = 4096 - 250 - 100
JAX_LIMIT_MIB = 4096 - 250 - 150


def loaded(kernel_with, scenario="s1_two_gpus"):
    kernel = kernel_with(scenario)
    assert kernel.run("%load_ext jupyter_gpumem").status == "ok"
    return kernel


def test_pytorch_first_the_magic_then_the_import(kernel_with):
    kernel = loaded(kernel_with)
    recorded = kernel.run("%gpumem fraction=0.5 growth=on gpus=1 threads=1 framework=pytorch")
    assert "PyTorch is not imported yet; the settings apply the moment `import torch` completes." in recorded.stdout
    imported = kernel.run("import torch")
    assert imported.status == "ok", imported.error
    assert imported.stdout.startswith(
        "jupyter-gpumem: applied fraction=0.5 growth=on gpus=1 threads=1 framework=pytorch to PyTorch."
    )
    assert f"allocator limit {TORCH_LIMIT_MIB} MiB + about 350 MiB CUDA context and libraries" in imported.stdout
    assert "(estimated: PyTorch on Pascal (compute 6.1))" in imported.stdout
    assert kernel.run(TORCH_THREADS).stdout == "1 1\n"
    env = kernel.run(
        "import os; print(os.environ['PYTORCH_CUDA_ALLOC_CONF'], os.environ['CUDA_VISIBLE_DEVICES'], "
        "torch._C._accelerator_getAllocatorSettings())"
    )
    # The fraction in the variable is for the processes the kernel starts: 3746 MiB of 8192, rounded down.
    assert env.stdout == (
        "expandable_segments:True,per_process_memory_fraction:0.4572 GPU-b2b2b2b2-0000-4000-8000-000000000002 "
        "expandable_segments:True\n"
    )
    # The fraction waits in torch.cuda's own queue for CUDA to start; nothing started it.
    queued = kernel.run(
        "print([c.__module__ for c, _ in torch.cuda._queued_calls if 'gpumem' in c.__module__], "
        "torch.cuda.is_initialized())"
    )
    assert queued.stdout == "['jupyter_gpumem.frameworks.pytorch'] False\n"
    status = kernel.run("%gpumem status").stdout
    # The CPU build of PyTorch: applied (threads hold), the GPU budget on no GPU, and status says why.
    assert "Policy: fraction=0.5 growth=on gpus=1 threads=1 framework=pytorch, applied to PyTorch at" in status
    assert (
        "but the GPU budget is in force on no GPU: PyTorch 2.13.0+cpu is a CPU-only build (torch.version.cuda is "
        "None), so it uses no GPU and the budget is not in force; for a CUDA build: pip install torch"
    ) in status


def test_pytorch_imported_first_gets_the_policy_at_once_and_inter_op_threads_fixed_already_are_said(kernel_with):
    kernel = loaded(kernel_with, "s2_seven_jobs")
    assert kernel.run("import torch; torch.set_num_interop_threads(3)").status == "ok"
    reply = kernel.run("%gpumem threads=1")
    assert reply.stdout.startswith("jupyter-gpumem: applied threads=1 to PyTorch.")
    assert (
        "PyTorch keeps 3 inter-op threads: it fixes them once parallel work has started. "
        "To get inter=1, restart the kernel and run %gpumem first."
    ) in reply.stdout
    assert kernel.run(TORCH_THREADS).stdout == "1 3\n"


def test_jax_gets_a_fraction_that_keeps_the_process_inside_the_budget(kernel_with):
    kernel = loaded(kernel_with)
    kernel.run("%gpumem fraction=0.5 gpus=1 framework=jax")
    imported = kernel.run("import jax")
    assert imported.stdout.startswith("jupyter-gpumem: applied fraction=0.5 gpus=1 framework=jax to JAX.")
    assert f"allocator limit {JAX_LIMIT_MIB} MiB + about 400 MiB" in imported.stdout
    options = json.loads(kernel.run(JAX_OPTIONS).stdout)
    assert options == {"allocator": "bfc", "memory_fraction": 0.4511, "preallocate": None}
    assert 0.4511 * 8192 <= JAX_LIMIT_MIB < 0.4512 * 8192
    # Reading the stats does not start JAX's backend; its first operation does, and then it is too late.
    assert kernel.run("%gpumem status").status == "ok"
    assert kernel.run("from jax._src import xla_bridge; print(xla_bridge.backends_are_initialized())").stdout == (
        "False\n"
    )
    kernel.run("import jax.numpy as jnp; x = jnp.ones(3) * 2")
    late = kernel.run("%gpumem fraction=0.3 growth=on")
    assert late.stdout.startswith(
        "Too late: JAX's backend has started in this kernel (its first operation or jax.devices()), and it reads "
        "its GPU memory settings (XLA_PYTHON_CLIENT_*) and which GPUs it may use only when it starts, so "
    )
    assert "Nothing was changed." in late.stdout
    assert "In force: JAX 0." in late.stdout and "memory fraction 0.4511, preallocate on, allocator bfc" in late.stdout
    assert json.loads(kernel.run(JAX_OPTIONS).stdout)["memory_fraction"] == 0.4511


def test_auto_with_pytorch_and_jax_imported_applies_to_each_and_they_share_the_budget(kernel_with):
    kernel = loaded(kernel_with)
    hostile = "class Hostile:\n    def __getattribute__(self, name):\n        raise RuntimeError(name)\nh = Hostile()"
    assert kernel.run(f"import torch, jax\n{hostile}").status == "ok"  # the namespace is searched: never mind h
    reply = kernel.run("%gpumem fraction=0.5 gpus=1 threads=2")
    assert reply.stderr == ""
    assert reply.stdout.startswith("jupyter-gpumem: applied fraction=0.5 gpus=1 threads=2 to PyTorch and JAX.")
    # One CUDA context, both frameworks' libraries: 4096 - 250 - 100 - 150 = 3596 MiB, half each.
    assert "allocator limit 3596 MiB + about 500 MiB CUDA context and libraries" in reply.stdout
    assert (
        "PyTorch and JAX are all imported in this kernel, so the policy applies to each, and they share each "
        "GPU's allocator limit equally (1798 MiB each, per GPU)."
    ) in reply.stdout
    assert "JAX has no setting for its CPU thread pools" in reply.stdout
    assert kernel.run(TORCH_THREADS).stdout == "2 2\n"
    assert json.loads(kernel.run(JAX_OPTIONS).stdout)["memory_fraction"] == 0.2194  # 1798 / 8192, rounded down


def test_auto_before_any_import_goes_to_whichever_is_imported_and_not_to_one_it_imports(kernel_with):
    kernel = loaded(kernel_with)
    recorded = kernel.run("%gpumem fraction=0.5 gpus=1")
    installed = framework_names([a for a in (adapter() for adapter in ADAPTERS.values()) if a.importable()])
    assert f"None of {installed} is imported yet; the settings apply to whichever is imported" in recorded.stdout
    imported = kernel.run("import tensorflow as tf")
    assert imported.stdout.startswith("jupyter-gpumem: applied fraction=0.5 gpus=1 to TensorFlow.\n")
    assert "JAX" not in imported.stdout
    assert kernel.run("import sys; print('jax' in sys.modules)").stdout == "True\n"  # TensorFlow imported it
    assert "applied to TensorFlow at" in kernel.run("%gpumem status").stdout
    later = kernel.run("import torch")
    assert later.stdout.startswith(
        "jupyter-gpumem: applied fraction=0.5 gpus=1 to PyTorch too. TensorFlow already has this budget on the "
        "same GPUs, so together they may use up to 2 times it. To share one budget, restart the kernel and "
        "import them all before running %gpumem."
    )
    both = kernel.run("%gpumem status").stdout
    assert "applied to TensorFlow and PyTorch at" in both and "is a CPU-only build" in both


def test_a_named_framework_gets_the_policy_even_when_another_imports_it(kernel_with):
    kernel = loaded(kernel_with)
    kernel.run("%gpumem limit=2GiB gpus=1 framework=jax")
    imported = kernel.run("import tensorflow as tf")  # which imports JAX
    assert imported.stdout.startswith("jupyter-gpumem: applied limit=2GiB gpus=1 framework=jax to JAX.")
    assert "TensorFlow" not in imported.stdout.splitlines()[0]


def test_the_sidebar_reads_pytorch_without_starting_cuda(kernel_with):
    kernel = loaded(kernel_with, "own_process")
    kernel.run("import torch\n%gpumem limit=2GiB")
    comm_id, _ = connect(kernel)
    for _ in range(3):
        sample = next_sample(kernel, comm_id)
        assert sample["framework"] == "PyTorch" and sample["framework_started"] is False
    assert kernel.run("print(torch.cuda.is_initialized())").stdout == "False\n"


def test_a_framework_that_is_not_installed_is_named(kernel_with):
    kernel = loaded(kernel_with)
    reply = kernel.run("%gpumem framework=torch limit=1GiB")
    assert "PyTorch is not imported yet" in reply.stdout  # torch is an alias
    bad = kernel.run("%gpumem framework=mxnet")
    every = f"{', '.join(['auto', *ADAPTERS][:-1])} or {list(ADAPTERS)[-1]}"  # the registry's names
    assert bad.stderr == (
        f"framework=mxnet is not a framework jupyter-gpumem supports; use framework={every}. Nothing was changed.\n"
    )
