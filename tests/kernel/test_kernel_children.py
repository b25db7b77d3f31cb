"""A budget reaches the processes a kernel starts (a training script, a DataLoader worker's own CUDA) where the
installed PyTorch reads per_process_memory_fraction from PYTORCH_CUDA_ALLOC_CONF (2.13 here does)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.kernel

CHILD = """import subprocess, sys
print(subprocess.run([sys.executable, "-c", "import os; print(os.environ['PYTORCH_CUDA_ALLOC_CONF'])"],
                     capture_output=True, text=True, check=True).stdout)"""


def test_a_process_started_from_the_kernel_inherits_the_pytorch_budget(kernel_with):
    kernel = kernel_with("s1_two_gpus")
    kernel.run("%load_ext jupyter_gpumem")
    assert kernel.run("%gpumem fraction=0.5 framework=pytorch").status == "ok"

    setting = kernel.run(CHILD).stdout.strip()

    key, value = setting.split(":")
    assert key == "per_process_memory_fraction" and 0.4 < float(value) < 0.5  # the budget less CUDA's own memory
