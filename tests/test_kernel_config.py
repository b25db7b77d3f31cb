"""An administrator's ipython_kernel_config.py read by a real kernel (jupyter_client) through its IPYTHONDIR
profile, with the extension loaded at start (c.InteractiveShellApp.extensions), as on a JupyterHub image."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.kernel


def profile_with(tmp_path: Path, settings: str) -> dict[str, str]:
    """The environment of a kernel whose IPYTHONDIR's default profile loads the extension with ``settings``."""
    ipython_dir = tmp_path / "ipython"
    (ipython_dir / "profile_default").mkdir(parents=True)
    (ipython_dir / "profile_default" / "ipython_kernel_config.py").write_text(
        f"c.InteractiveShellApp.extensions = ['jupyter_gpumem']\n{settings}"
    )
    return {"IPYTHONDIR": str(ipython_dir)}


@pytest.fixture
def configured_kernel(kernel_with, tmp_path) -> Callable[[str], Any]:
    """kernel_with on s1_two_gpus and a profile with the given settings."""
    return lambda settings: kernel_with("s1_two_gpus", env=profile_with(tmp_path, settings))


def shown_at_start(kernel) -> str:
    """What a user sees of the extension's load at kernel start: nothing answers a request while the kernel
    starts, so no frontend shows output then; the lines come with the first cell that runs."""
    return kernel.run("pass").stdout


def test_a_float_fraction_and_a_string_ceiling_both_apply(configured_kernel):
    kernel = configured_kernel("c.GpumemConfig.fraction = 0.4\nc.GpumemConfig.max_fraction = '0.5'\n")
    shown = shown_at_start(kernel)
    assert "fraction=0.4 recorded (configured defaults)" in shown
    assert "was ignored" not in shown
    status = kernel.run("%gpumem status")
    assert "Policy: fraction=0.4, recorded and waiting for the framework's import." in status.stdout
    refused = kernel.run("%gpumem fraction=0.9")
    assert refused.status == "ok" and refused.error == ""  # refused with a sentence, not a traceback
    assert "fraction=0.9 is above this server's ceiling of 0.5 of each GPU" in refused.stderr
    assert "Nothing was changed." in refused.stderr
    assert "Policy: fraction=0.4, recorded" in kernel.run("%gpumem status").stdout


def test_a_value_of_the_wrong_type_is_reported_once_and_the_ceiling_still_holds(configured_kernel):
    kernel = configured_kernel(
        "c.GpumemConfig.threads = [1, 2]\nc.GpumemConfig.fraction = 0.4\nc.GpumemConfig.max_limit = '6GiB'\n"
    )
    shown = shown_at_start(kernel)
    sentence = "c.GpumemConfig.threads = [1, 2] in the IPython configuration was ignored: threads takes a whole number"
    assert shown.count(sentence) == 1, shown
    assert "fraction=0.4 recorded (configured defaults)" in shown  # the other settings still apply
    status = kernel.run("%gpumem status").stdout
    assert "Policy: fraction=0.4, recorded and waiting for the framework's import." in status
    refused = kernel.run("%gpumem limit=7GiB")
    assert "limit=7GiB is above this server's ceiling of 6144 MiB" in refused.stderr
    assert "Nothing was changed." in refused.stderr
    again = kernel.run("%load_ext jupyter_gpumem")
    assert again.status == "ok" and sentence not in again.stdout + status
