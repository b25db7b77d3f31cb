"""`%gpumem explain` in a real kernel on the stand-in NVML: story S1 in the user's own numbers."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.kernel


def by_the_magic(stderr: str) -> str:
    """A cell's stderr less the budget warnings (kernel/alerts.py): the sampler's thread prints them, into whichever
    cell runs when its reading comes (in a fresh clone's run under load, into the policy's cell: this kernel is over
    its budget once the policy is set)."""
    return "".join(line for line in stderr.splitlines(True) if not line.startswith("jupyter-gpumem: this kernel uses"))


def explain_after(kernel_with, *settings):
    kernel = kernel_with("s1_this_kernel")
    kernel.run("%load_ext jupyter_gpumem")
    for line in settings:
        assert by_the_magic(kernel.run(line).stderr) == ""
    reply = kernel.run("%gpumem explain")
    assert reply.status == "ok" and by_the_magic(reply.stderr) == ""
    return reply.stdout


def test_s1_explain_names_216_mib_over_and_why(kernel_with):
    # S1's user works in TensorFlow; PyTorch and JAX are installed here too.
    out = explain_after(kernel_with, "%gpumem fraction=0.5 strict=off framework=tensorflow")
    assert (
        "Policy fraction=0.5 framework=tensorflow strict=off: recorded; it applies when TensorFlow is imported." in out
    )
    assert (
        "GPU 0 NVIDIA GeForce GTX 1080 Ti: this kernel uses 5927 MiB; its budget is 5711 MiB "
        "(50% of 11422 MiB): 216 MiB over." in out
    )
    assert "strict=off caps only TensorFlow's allocator pool at 5711 MiB" in out
    assert "cuDNN/cuBLAS handles and workspaces (216 MiB here) live outside that limit" in out
    assert "GPU 1 NVIDIA GeForce GTX 1080: this kernel's memory is N/A" in out
    assert "it is unknown, not zero" in out
    assert 'tf.device("/gpu:1") places operations but does not stop memory being taken on the other GPUs' in out
    assert "%gpumem fraction=0.5 framework=tensorflow strict=off gpus=<index>" in out


def test_with_strict_budget_explain_says_how_much_the_overhead_exceeded_the_estimate(kernel_with):
    out = explain_after(kernel_with, "%gpumem fraction=0.5 framework=tensorflow")
    # A GTX 1080 Ti is a Pascal GPU (compute 6.1): 400 MiB are set aside, so the allocator was given
    # 5711 - 400 = 5311 MiB; 5927 - 5311 = 616 MiB lie outside it, 216 MiB more than set aside.
    assert "TensorFlow's allocator is capped at 5311 MiB; the other 616 MiB are the CUDA context" in out
    assert "216 MiB more than the 400 MiB set aside for them (estimated: TensorFlow on Pascal (compute 6.1))" in out


def test_a_gpu_hidden_by_the_policy_but_used_is_explained(kernel_with):
    out = explain_after(kernel_with, "%gpumem fraction=0.5 gpus=1")
    assert "GPU 0 NVIDIA GeForce GTX 1080 Ti: this kernel holds 5927 MiB on a GPU its policy hides" in out
    assert "every GPU this kernel can see" not in out


def test_without_a_policy_explain_says_the_framework_takes_everything(kernel_with):
    out = explain_after(kernel_with)
    assert out.startswith(
        "No budget is set, so each framework takes its default when it starts: TensorFlow takes nearly all "
        "the memory of every GPU it can see when it starts (and keeps it); PyTorch takes what its tensors need"
    )
    assert "JAX takes 75% of the memory of every GPU" in out
    assert "%gpumem fraction=0.4" in out
    assert "GPU 0 NVIDIA GeForce GTX 1080 Ti: this kernel uses 5927 MiB of 11422 MiB." in out


def test_within_budget_explain_says_it_holds(kernel_with):
    out = explain_after(kernel_with, "%gpumem limit=8GiB gpus=0")
    assert "this kernel uses 5927 MiB of its 8192 MiB budget (72%)" in out


def test_explain_without_a_driver_is_one_sentence(kernel_with):
    kernel = kernel_with("no_driver")
    kernel.run("%load_ext jupyter_gpumem")
    reply = kernel.run("%gpumem explain")
    assert reply.stderr == "" and len(reply.stdout.strip().splitlines()) == 1 and "driver" in reply.stdout
