"""An administrator's ipython_kernel_config.py read by a real kernel (jupyter_client) through its IPYTHONDIR
profile, with the extension loaded at start (c.InteractiveShellApp.extensions), as on a JupyterHub image."""

from __future__ import annotations

import json
import sys
import sysconfig
import venv
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


# ---------------------------------------------------------------- the ceiling is the lowest of every source


def kernelspec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, python: str, *arguments: str) -> None:
    """Make jupyter_client start "python3" as ``python -m ipykernel_launcher *arguments``: a kernelspec found
    first through JUPYTER_PATH, as an administrator's in /usr/local/share/jupyter/kernels is on a hub image."""
    spec = tmp_path / "share" / "kernels" / "python3"
    spec.mkdir(parents=True)
    argv = [python, "-m", "ipykernel_launcher", *arguments, "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "Python 3", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "share"))


def image_python(tmp_path: Path, admin_settings: str) -> str:
    """A Python whose sys.prefix is its own (a throwaway venv seeing this one's packages), with ``admin_settings``
    in <sys.prefix>/etc/ipython/ipython_kernel_config.py: the image's system-wide file, as /opt/conda/etc/ipython
    is on a JupyterHub image, which users cannot write to. (The test venv's own etc/ipython stays untouched.)"""
    prefix = tmp_path / "image"
    venv.create(prefix, with_pip=False, symlinks=True)
    (site,) = prefix.glob("lib/python*/site-packages")
    (site / "test_venv.pth").write_text(f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    (prefix / "etc" / "ipython").mkdir(parents=True)
    (prefix / "etc" / "ipython" / "ipython_kernel_config.py").write_text(admin_settings)
    return str(prefix / "bin" / "python")


@pytest.fixture
def hub_kernel(kernel_with, tmp_path, monkeypatch) -> Callable[..., Any]:
    """hub_kernel(user profile settings, spawner=variables, image=system-wide file settings, argv=kernelspec
    arguments): a kernel on s1_two_gpus as a JupyterHub user gets one, loading the extension at start."""

    def start(user: str, spawner: dict[str, str] | None = None, image: str = "", argv: tuple[str, ...] = ()) -> Any:
        if image or argv:
            kernelspec(tmp_path, monkeypatch, image_python(tmp_path, image) if image else sys.executable, *argv)
        return kernel_with("s1_two_gpus", env={**profile_with(tmp_path, user), **(spawner or {})})

    return start


@pytest.mark.parametrize(
    ("administrator", "origin"),
    [
        ({"spawner": {"JUPYTER_GPUMEM_MAX_FRACTION": "0.25"}}, "set by JUPYTER_GPUMEM_MAX_FRACTION in the environment"),
        ({"image": "c.GpumemConfig.max_fraction = 0.25\n"}, "/image/etc/ipython/ipython_kernel_config.py; ask"),
        ({"argv": ("--GpumemConfig.max_fraction=0.25",)}, "set on the kernel's command line"),
    ],
    ids=["spawner variable", "image's system-wide file", "kernelspec command line"],
)
def test_a_users_profile_cannot_lift_the_administrators_ceiling(hub_kernel, administrator, origin):
    kernel = hub_kernel("c.GpumemConfig.max_fraction = '1'\n", **administrator)
    assert "was ignored" not in shown_at_start(kernel)
    refused = kernel.run("%gpumem fraction=0.5")
    assert "fraction=0.5 is above this server's ceiling of 0.25 of each GPU" in refused.stderr
    assert origin in refused.stderr
    assert "Nothing was changed." in refused.stderr
    assert "fraction=0.2 recorded" in kernel.run("%gpumem fraction=0.2").stdout


def test_a_users_profile_may_lower_the_ceiling(hub_kernel):
    kernel = hub_kernel("c.GpumemConfig.max_fraction = '0.2'\n", spawner={"JUPYTER_GPUMEM_MAX_FRACTION": "0.25"})
    refused = kernel.run("%gpumem fraction=0.25")
    assert "fraction=0.25 is above this server's ceiling of 0.2 of each GPU" in refused.stderr
    assert "/ipython/profile_default/ipython_kernel_config.py; ask for less." in refused.stderr


def test_a_bad_ceiling_is_reported_once_in_the_notebook_and_the_log_and_the_others_hold(hub_kernel, capfd):
    kernel = hub_kernel("c.GpumemConfig.max_fraction = 0.3\n", spawner={"JUPYTER_GPUMEM_MAX_FRACTION": "half"})
    shown = shown_at_start(kernel)
    sentence = "JUPYTER_GPUMEM_MAX_FRACTION=half in the environment was ignored: fraction=half is not a number"
    assert shown.count(sentence) == 1, shown
    assert "this server's ceiling is 0.3 of each GPU" in shown
    logged = capfd.readouterr().err  # the kernel process's own stderr: what the server logs
    assert logged.count(sentence) == 1, logged
    refused = kernel.run("%gpumem fraction=0.5")
    assert "fraction=0.5 is above this server's ceiling of 0.3 of each GPU" in refused.stderr
    assert sentence not in kernel.run("%load_ext jupyter_gpumem").stdout


def test_a_bad_ceiling_is_shown_once_by_a_load_ext_in_a_cell(hub_kernel, capfd):
    kernel = hub_kernel(
        "c.InteractiveShellApp.extensions = []\nc.GpumemConfig.max_fraction = 0.3\n",
        spawner={"JUPYTER_GPUMEM_MAX_FRACTION": "half"},
    )
    loaded = kernel.run("%load_ext jupyter_gpumem")
    sentence = "JUPYTER_GPUMEM_MAX_FRACTION=half in the environment was ignored"
    assert (loaded.stdout + loaded.stderr).count(sentence) == 1, loaded
    assert capfd.readouterr().err.count(sentence) == 1


def test_the_configured_ceiling_holds_when_a_figure_was_asked_for_before_load_ext(kernel_with, tmp_path):
    env = profile_with(tmp_path, "c.InteractiveShellApp.extensions = []\nc.GpumemConfig.max_fraction = 0.5\n")
    kernel = kernel_with("s1_two_gpus", env=env)
    drawn = kernel.run("import jupyter_gpumem; jupyter_gpumem.figure()")
    assert drawn.status == "ok", drawn
    kernel.run("%load_ext jupyter_gpumem")
    refused = kernel.run("%gpumem fraction=0.9")
    assert "fraction=0.9 is above this server's ceiling of 0.5 of each GPU" in refused.stderr
