"""A stalled NVIDIA driver never holds a cell: real kernels (jupyter_client) on the stand-in NVML, whose scenario
says ``driver stall=1`` (every NVML call, nvmlInit too, waits until the file no longer says so: a driver after an
Xid error, or a GPU falling off the bus). Every command, a framework's import and the out-of-memory advice return
within GpumemConfig.nvml_deadline_s and a margin, saying since when the driver has not answered; the driver coming
back is picked up by itself."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from jupyter_gpumem import standin
from jupyter_gpumem.units import MiB
from jupyter_gpumem.wire.comm import PROTOCOL, TARGET

pytestmark = pytest.mark.kernel

DEADLINE_S = 1.0  # GpumemConfig.nvml_deadline_s's default
MARGIN_S = 4.0  # a kernel's round trip on a loaded two-core CI machine, with room to spare
SENTENCE = "The NVIDIA driver has not answered since"
NO_FIGURES = "there are no figures yet"
# Recognised by its class name and message alone (kernel/oom.py): the advice without importing a framework.
OUT_OF_MEMORY = """
class XlaRuntimeError(RuntimeError):
    pass
raise XlaRuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1003520000 bytes.")
"""
GPU_ENVIRONMENT = (
    "import os; print({k: v for k, v in os.environ.items() if k in "
    "('CUDA_VISIBLE_DEVICES', 'XLA_PYTHON_CLIENT_MEM_FRACTION', 'PYTORCH_CUDA_ALLOC_CONF')})"
)


def timed(kernel: Any, code: str) -> tuple[float, Any]:
    """Seconds the cell took, from sending it to the kernel going idle, and its reply."""
    start = time.monotonic()
    reply = kernel.run(code)
    return time.monotonic() - start, reply


def stall(kernel: Any) -> str:
    """The driver stops answering (the next NVML call waits); the scenario as it was, to give back."""
    text = kernel.scenario.read_text()
    standin.write_scenario(kernel.scenario, text + "driver stall=1\n")
    return text


def answer(kernel: Any, text: str) -> None:
    """The driver answers again: the calls in flight return within the stand-in's 20 ms."""
    standin.write_scenario(kernel.scenario, text)


def healthy_kernel_with_a_policy(kernel_with: Any, env: dict[str, str] | None = None) -> Any:
    kernel = kernel_with("own_process", env=env)
    assert kernel.run("%load_ext jupyter_gpumem").status == "ok"
    recorded = kernel.run("%gpumem fraction=0.4")
    assert "fraction=0.4 recorded" in recorded.stdout and "budget 6550 MiB" in recorded.stdout
    assert SENTENCE not in recorded.stdout
    return kernel


def test_every_command_returns_within_the_deadline_and_says_the_driver_has_not_answered(kernel_with):
    kernel = healthy_kernel_with_a_policy(kernel_with)
    stall(kernel)
    took, said = {}, {}
    for code in ("%gpumem status", "%gpumem fraction=0.5", "%gpumem explain", "%gpumem cells", "%gpumem free"):
        took[code], reply = timed(kernel, code)
        assert reply.status == "ok" and reply.stderr == "", (code, reply)
        said[code] = SENTENCE in reply.stdout
    took["%gpumem show"], shown = timed(kernel, "%gpumem show")
    assert shown.status == "ok" and shown.displayed, shown  # the inline view: it is there, with the last figures
    took["out-of-memory advice"], advised = timed(kernel, OUT_OF_MEMORY)
    assert advised.status == "error" and "XlaRuntimeError" in advised.error  # the traceback is the user's own
    assert advised.stdout.startswith("jupyter-gpumem: JAX ran out of GPU memory (XlaRuntimeError).")
    assert "this kernel holds 3100 MiB as nvidia-smi counts it" in advised.stdout  # the last figures the driver gave
    said["out-of-memory advice"] = SENTENCE in advised.stdout
    print({code: round(seconds, 2) for code, seconds in took.items()})

    assert {code: seconds < DEADLINE_S + MARGIN_S for code, seconds in took.items()} == dict.fromkeys(took, True)
    recorded = kernel.run("%gpumem status").stdout  # the request made from the last figures was recorded
    assert "Policy: fraction=0.5, recorded" in recorded and "of the 8188 MiB budget" in recorded
    assert said == dict.fromkeys(said, True)


def test_the_sidebars_samples_say_since_when_and_the_driver_coming_back_is_picked_up(kernel_with):
    kernel = healthy_kernel_with_a_policy(kernel_with)
    assert kernel.run("import jupyter_gpumem; jupyter_gpumem._connect_sidebar(interval_s=0.2)").status == "ok"
    comm_id = kernel.comm_message("comm_open", target_name=TARGET)["comm_id"]

    def sample_where(condition: Any, timeout: float = 20) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            data = kernel.comm_message("comm_msg", comm_id=comm_id, timeout=timeout)["data"]
            assert data["protocol"] == PROTOCOL and data["type"] == "sample"
            if condition(data["sample"]):
                return dict(data["sample"])
        raise AssertionError("no sample met the condition")

    answered = sample_where(lambda s: True)
    assert "stalled_since" not in answered  # absent while the driver answers (an optional field on the wire)
    text = stall(kernel)
    stalled = sample_where(lambda s: s.get("stalled_since") is not None)
    assert answered["t"] <= stalled["stalled_since"] < stalled["t"]
    (before,), (after,) = answered["gpus"], stalled["gpus"]  # the last figures the driver gave, as they were
    assert (after["used_bytes"], after["own_bytes"], after["budget_bytes"]) == (
        (3500 * MiB, 3100 * MiB, before["budget_bytes"])
    )
    later = sample_where(lambda s: s.get("stalled_since") is not None and s["t"] > stalled["t"])
    assert later["stalled_since"] == stalled["stalled_since"]  # since when, not when asked

    answer(kernel, text)
    start = time.monotonic()
    fresh = sample_where(lambda s: s.get("stalled_since") is None, timeout=10)
    status = kernel.run("%gpumem status").stdout
    print(f"fresh figures {time.monotonic() - start:.2f} s after the driver answered again")
    assert fresh["t"] > stalled["t"] and fresh["gpus"][0]["used_bytes"] == 3500 * MiB
    assert SENTENCE not in status and "3100 MiB as nvidia-smi counts it, 47% of the 6550 MiB budget" in status


def test_loading_on_a_driver_stalled_from_the_start_does_not_wait_and_a_policy_hides_no_gpu(kernel_with):
    # A deadline of 5 s: loading, which never waits for nvmlInit, stays well under it with its imports on a loaded
    # machine (the default 1 s deadline was once passed by the imports alone: 1.18 s), and waiting would take it all.
    deadline_s = 5.0
    kernel = kernel_with("own_process_stalled", env={"JUPYTER_GPUMEM_NVML_DEADLINE_S": f"{deadline_s:g}"})
    loaded, reply = timed(kernel, "%load_ext jupyter_gpumem")
    print(f"%load_ext on a driver stalled from the start: {loaded:.2f} s")
    assert reply.status == "ok" and reply.stdout == "" and reply.stderr == ""
    assert loaded < deadline_s  # it never waits for nvmlInit: waiting would take the whole deadline

    took, asked = timed(kernel, "%gpumem fraction=0.4")
    print(f"%gpumem fraction=0.4 on a driver that never answered: {took:.2f} s")
    assert asked.status == "ok" and took < deadline_s + MARGIN_S
    assert f"{SENTENCE} " in asked.stdout and f"{NO_FIGURES}. Run %gpumem again once it answers." in asked.stdout
    assert "budget" not in asked.stdout  # no figures, so no budget on any GPU
    assert kernel.run(GPU_ENVIRONMENT).stdout == "{}\n"  # no allocator fraction from a total it does not know
    chosen = kernel.run("%gpumem gpus=0")
    assert chosen.status == "ok" and NO_FIGURES in chosen.stdout
    # Whether there is a GPU 0 cannot be told: the frameworks are not told to use no GPU at all.
    assert kernel.run(GPU_ENVIRONMENT).stdout == "{}\n"
    status = kernel.run("%gpumem status").stdout
    assert f"{SENTENCE} " in status and NO_FIGURES in status

    # The driver answers: the recorded policy is planned on its GPUs by the next status, without asking again.
    standin.write_scenario(kernel.scenario, kernel.scenario.read_text().replace("driver stall=1", ""))
    deadline = time.monotonic() + 10
    while SENTENCE in (status := kernel.run("%gpumem status").stdout) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert SENTENCE not in status and NO_FIGURES not in status
    assert "recorded and waiting for the framework's import" in status and "budget of" in status, status
    assert kernel.run(GPU_ENVIRONMENT).stdout != "{}\n"  # gpus=0 now names GPU 0 by its UUID


def test_a_configured_default_loads_within_the_deadline_on_a_stalled_driver(kernel_with):
    kernel = kernel_with("own_process_stalled", env={"JUPYTER_GPUMEM_FRACTION": "0.4"})
    loaded, reply = timed(kernel, "%load_ext jupyter_gpumem")
    print(f"%load_ext with a configured default on a driver stalled from the start: {loaded:.2f} s")
    assert reply.status == "ok" and loaded < DEADLINE_S + MARGIN_S
    assert "fraction=0.4 recorded (configured defaults)" in reply.stdout
    assert f"{SENTENCE} " in reply.stdout and NO_FIGURES in reply.stdout
    assert kernel.run("print(6 * 7)").stdout == "42\n"


def profile_with(tmp_path: Path, settings: str) -> dict[str, str]:
    """The environment of a kernel whose IPython profile loads the extension with ``settings``."""
    profile = tmp_path / "ipython" / "profile_default"
    profile.mkdir(parents=True)
    (profile / "ipython_kernel_config.py").write_text(
        f"c.InteractiveShellApp.extensions = ['jupyter_gpumem']\n{settings}"
    )
    return {"IPYTHONDIR": str(tmp_path / "ipython")}


@pytest.mark.parametrize("where", ["environment", "profile"])
def test_a_shorter_deadline_is_honoured(kernel_with, tmp_path, where):
    if where == "environment":
        kernel = kernel_with("own_process", env={"JUPYTER_GPUMEM_NVML_DEADLINE_S": "0.3"})
        assert kernel.run("%load_ext jupyter_gpumem").status == "ok"
    else:
        kernel = kernel_with("own_process", env=profile_with(tmp_path, "c.GpumemConfig.nvml_deadline_s = 0.3\n"))
        loaded = kernel.run("pass")  # what the extension's load at kernel start said
        assert loaded.stdout == "" and loaded.stderr == "", loaded
    assert "NVIDIA RTX A4000" in kernel.run("%gpumem status").stdout  # the driver answered
    stall(kernel)
    took, reply = timed(kernel, "%gpumem status")
    print(f"%gpumem status with a 0.3 s deadline from the {where}: {took:.2f} s")
    assert SENTENCE in reply.stdout
    assert took < DEADLINE_S  # the default deadline alone would take this long


FRAMEWORKS = [("tensorflow", "TensorFlow"), ("torch", "PyTorch"), ("jax", "JAX")]


@pytest.mark.parametrize(("module", "name"), FRAMEWORKS, ids=[m for m, _ in FRAMEWORKS])
def test_a_framework_imported_under_a_stalled_driver_gets_the_policy_within_the_deadline(kernel_with, module, name):
    bare_kernel = kernel_with("own_process")  # without jupyter_gpumem: the framework's own import time
    bare, reply = timed(bare_kernel, f"import {module}")
    assert reply.status == "ok", reply.error
    kernel = healthy_kernel_with_a_policy(kernel_with)
    stall(kernel)
    took, imported = timed(kernel, f"import {module}")
    print(f"import {module}: {took:.2f} s under a stalled driver, {bare:.2f} s bare")
    assert imported.status == "ok", imported.error
    assert took < bare + DEADLINE_S + MARGIN_S
    assert f"jupyter-gpumem: {SENTENCE} " in imported.stdout and "The plan below uses them." in imported.stdout
    assert f"applied fraction=0.4 to {name}" in imported.stdout
