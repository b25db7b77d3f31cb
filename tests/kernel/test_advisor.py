"""The advice after an out-of-memory error, on real messages (tests/fixtures/oom/) and without a kernel: sizes a
framework printed rounded are "about"; devices NVML cannot see get what the message says, never NVML's figures of
some other GPU; errors that only mention memory get nothing."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from controller_fixtures import Framework, Machine, make

from jupyter_gpumem import i18n
from jupyter_gpumem.budget.policy import Policy
from jupyter_gpumem.budget.reading import Reading
from jupyter_gpumem.budget.state import State
from jupyter_gpumem.gpu.model import Device, GpuProcess, Snapshot
from jupyter_gpumem.kernel.advisor import Advisor, diagnose
from jupyter_gpumem.kernel.oom import OutOfMemory, parse_jax, parse_pytorch, parse_tensorflow, recognise
from jupyter_gpumem.kernel.recorder import Recorder
from jupyter_gpumem.units import MiB

FIXTURES = Path(__file__).parents[1] / "fixtures" / "oom"
__all__ = ["make"]  # the fixture

PARSERS = {"TensorFlow": parse_tensorflow, "PyTorch": parse_pytorch, "JAX": parse_jax}


def pasted(name: str) -> OutOfMemory:
    """The report of a message in the corpus, read as its framework's parser reads it."""
    case = json.loads((FIXTURES / f"{name}.json").read_text())
    return PARSERS[case["framework"]](case["message"], case["raised"].rpartition(".")[2])


def t4() -> Reading:
    """An NVIDIA T4 that this kernel holds 3000 MiB of: what NVML would show beside any other device."""
    process = GpuProcess(1, "GPU-0", 3000 * MiB, "compute", "python", "alice", 0.0, True)
    device = Device(
        0, "GPU-0", "NVIDIA T4", total_bytes=15360 * MiB, used_bytes=3000 * MiB, free_bytes=12360 * MiB,
        processes=(process,),
    )  # fmt: skip
    return Reading(Snapshot(0.0, 1, (device,)), State(Policy(), None, (), True, None), False, {}, {})


def no_driver() -> Reading:
    return Reading(Snapshot(0.0, 1, ()), State(Policy(), None, (), True, None), False, {}, {})


def advice(report: OutOfMemory, reading: Reading) -> list[str]:
    return list(diagnose(report, reading, ["GPU-0"], None).lines)


def test_a_size_pytorch_printed_rounded_is_about_that_size():
    lines = advice(pasted("pytorch-cuda-cached-structureflow-35"), t4())  # "Tried to allocate 8.13 GiB"
    assert lines[1] == "  The allocation that did not fit: about 8325 MiB."
    assert lines[2].startswith("  GPU 0 NVIDIA T4: this kernel holds 3000 MiB")  # a CUDA GPU: NVML's figures


def test_an_exact_size_is_given_as_it_is():
    assert advice(pasted("pytorch-directml-directml-579"), t4())[1] == "  The allocation that did not fit: 224 MiB."
    assert advice(pasted("pytorch-mps-pinokio-941"), t4())[1] == "  The allocation that did not fit: 256 bytes."
    assert advice(pasted("jax-xla-graphcast-18"), t4())[1] == "  The allocation that did not fit: 3058 MiB."


def test_on_an_apple_gpu_the_advice_gives_what_pytorch_said_and_no_nvml_figures():
    lines = advice(pasted("pytorch-mps-comfyui-7440"), t4())  # the T4 is not the GPU that ran out
    assert lines == [
        "jupyter-gpumem: PyTorch ran out of memory on an Apple GPU via MPS (RuntimeError).",
        "  The allocation that did not fit: about 293 MiB.",  # 292.50 MiB, a half up (docs/numbers.md)
        "  GPU memory figures: none here: NVML sees only NVIDIA GPUs, not an Apple GPU via MPS.",
        "  PyTorch said about 287 MiB was free under its limit (max allowed less what was allocated).",
        "  Fix: run the work in smaller batches, e.g. jupyter_gpumem.batched(model.evaluate, x, y, batch_size=64), "
        "and halve it until it fits.",
    ]


@pytest.mark.parametrize(
    ("name", "device"),
    [
        ("pytorch-xpu-torch-xpu-ops-3011", "an Intel GPU via XPU"),
        ("pytorch-rocm-legacy-rocm-build-4358", "an AMD GPU via ROCm"),
        ("pytorch-directml-fooocus-763", "a GPU via DirectML"),
        ("tensorflow-directml-34", "a GPU via DirectML"),
        ("tensorflow-xpu-eager-itex-34", "an Intel GPU via XPU"),
        ("jax-tpu-easydel-78", "a TPU"),
    ],
)
def test_devices_nvml_cannot_see_get_no_nvml_figures(name, device):
    text = "\n".join(advice(pasted(name), t4()))
    assert f"ran out of memory on {device} (" in text
    assert f"GPU memory figures: none here: NVML sees only NVIDIA GPUs, not {device}." in text
    assert "NVIDIA T4" not in text and "nvidia-smi" not in text and "growth is off" not in text


def test_the_free_memory_the_message_states_is_given_where_nvml_has_none():
    lines = advice(pasted("pytorch-xpu-torch-xpu-ops-3011"), t4())
    assert "  PyTorch said about 5786 MiB was free." in lines
    lines = advice(pasted("pytorch-cuda-cached-structureflow-35"), no_driver())
    assert lines[2:4] == [
        "  GPU memory figures: not available (no driver, or the GPU could not be told).",
        "  PyTorch said about 8397 MiB was free.",
    ]
    assert "PyTorch said nothing was free" in "\n".join(advice(pasted("pytorch-cuda-21-mgfn-35"), no_driver()))
    assert advice(pasted("jax-tpu-buffer-gemma-85"), t4())[1:4] == [
        "  The allocation that did not fit: about 16026 MiB.",
        "  GPU memory figures: none here: NVML sees only NVIDIA GPUs, not a TPU.",
        "  JAX said about 11346 MiB was free.",
    ]


def test_without_nvml_the_free_memory_the_message_states_gives_the_batch_that_fits():
    report = OutOfMemory(
        "TensorFlow", "E", (1000, 1024), "float", 1000 * 4096, "XPU:0", free=400 * 4096, accelerator="XPU"
    )
    result = diagnose(report, t4(), ["GPU-0"], None)
    assert result.batch_size == 400 and result.first_dim == 1000
    assert any("a batch of at most ~400 of 1000 fits" in line for line in result.lines)


def test_host_memory_is_not_called_gpu_memory():
    lines = advice(pasted("tensorflow-cpu-models-6450"), t4())
    assert lines[0] == "jupyter-gpumem: TensorFlow ran out of host memory on the CPU (ResourceExhaustedError)."
    assert lines[2] == "  GPU memory figures: none: this was the host's memory, which jupyter-gpumem does not measure."
    assert not any("NVIDIA T4" in line for line in lines)


def test_fragmentation_on_an_intel_gpu_is_freed_with_its_own_call():
    report = pasted("pytorch-xpu-torch-xpu-ops-3011")
    report = replace(report, bytes=2 * MiB, unused_pool=64 * MiB)
    text = "\n".join(advice(report, t4()))
    assert "torch.xpu.empty_cache() gives them back." in text and "expandable segments" not in text


@pytest.mark.parametrize(
    ("tag", "framework", "free"),
    [
        (None, "TensorFlow", ": del them and call tf.keras.backend.clear_session(), or restart the kernel."),
        (
            "ja-JP",
            "TensorFlow",
            "それらを del で削除して tf.keras.backend.clear_session() を呼び出すか、カーネルを再起動してください。",
        ),
        ("zh-CN", "TensorFlow", "请 用 del 删除它们并调用 tf.keras.backend.clear_session()，或重启内核。"),
        ("ja-JP", "JAX", "それらを del で削除するか、カーネルを再起動してください。"),
    ],
)
def test_how_to_free_a_frameworks_pool_is_said_in_the_kernels_language(tag, framework, free):
    report = OutOfMemory(framework, "E", (1000, 1024), "float", 1000 * 4096, "GPU:0")
    i18n.use_language(tag or "en")
    try:
        text = "\n".join(advice(report, t4()))
    finally:
        i18n.use_language(None)
    assert text.endswith(free), text


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("negative-*.json")))
def test_errors_that_only_mention_memory_get_no_advice(name, capsys, make):
    case = json.loads((FIXTURES / f"{name}.json").read_text())
    error = MemoryError(case["message"]) if case["raised"] == "MemoryError" else RuntimeError(case["message"])
    control = make(Machine(), Framework("TensorFlow"))
    advisor = Advisor(control, Recorder(control))
    advisor.after_cell(SimpleNamespace(error_in_exec=error))
    assert capsys.readouterr() == ("", "")
    assert (advisor.errors, advisor.last, recognise(error)) == (0, None, None)
