"""The variables a policy sets before a framework's import, and %gpumem reset putting them back."""

from __future__ import annotations

import os

import pytest

from jupyter_gpumem.budget.environ import EnvironmentChanges


def test_reset_gives_each_variable_its_value_from_before_the_first_change():
    environ = {"CUDA_VISIBLE_DEVICES": "0", "HOME": "/home/alice"}
    changes = EnvironmentChanges(environ)
    changes.set({"CUDA_VISIBLE_DEVICES": "1", "TF_FORCE_GPU_ALLOW_GROWTH": "true"})
    changes.set({"CUDA_VISIBLE_DEVICES": "2"})
    assert changes.original("CUDA_VISIBLE_DEVICES") == "0" and changes.original("HOME") == "/home/alice"
    changes.restore()
    assert environ == {"CUDA_VISIBLE_DEVICES": "0", "HOME": "/home/alice"}


def test_one_variable_put_back_keeps_the_others_changed():
    environ = {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=8G", "CUDA_VISIBLE_DEVICES": "0"}
    changes = EnvironmentChanges(environ)
    changes.set({"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=4G", "CUDA_VISIBLE_DEVICES": "1", "EXTRA": "x"})
    changes.put_back("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT")
    changes.put_back("EXTRA")
    changes.put_back("NEVER_SET")  # nothing to give back
    assert environ == {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=8G", "CUDA_VISIBLE_DEVICES": "1"}


def test_reset_after_the_notebook_removed_a_variable_itself_still_works():
    environ: dict[str, str] = {}
    changes = EnvironmentChanges(environ)
    changes.set({"CUDA_VISIBLE_DEVICES": "1", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=4G"})
    del environ["CUDA_VISIBLE_DEVICES"], environ["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"]  # `del os.environ[...]`
    changes.put_back("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT")
    changes.restore()
    assert environ == {}


def test_by_default_the_kernels_own_environment_is_changed_and_put_back(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("JUPYTER_GPUMEM_TEST_VARIABLE", raising=False)
    changes = EnvironmentChanges()
    changes.set({"JUPYTER_GPUMEM_TEST_VARIABLE": "1"})
    assert os.environ["JUPYTER_GPUMEM_TEST_VARIABLE"] == "1"  # what the framework's import will read
    changes.restore()
    assert "JUPYTER_GPUMEM_TEST_VARIABLE" not in os.environ
