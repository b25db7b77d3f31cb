"""Plan -> JAX's environment. JAX reads its GPU memory settings from XLA_PYTHON_CLIENT_* when its
backend starts; the translation is checked here on real stand-in NVML readings, and what jaxlib makes
of the variables (its own GPU client options) in test_kernel_frameworks.py."""

from __future__ import annotations

import math
import os

import pytest

from jupyter_gpumem.budget.overhead import Overhead
from jupyter_gpumem.budget.plan import make_plan
from jupyter_gpumem.budget.policy import parse
from jupyter_gpumem.frameworks.jax import Jax, pool_fraction
from jupyter_gpumem.gpu import nvml
from jupyter_gpumem.gpu.host import HostProcesses
from jupyter_gpumem.units import MiB

OVERHEAD = Overhead(450 * MiB, "estimated", "a test figure")


@pytest.fixture(autouse=True)
def no_user_fraction(monkeypatch):
    monkeypatch.delenv("XLA_CLIENT_MEM_FRACTION", raising=False)


def plan_for(line: str):
    return make_plan(parse(line.split()), nvml.read(os.getpid(), HostProcesses().lookup), lambda device: OVERHEAD)


def test_the_fraction_keeps_the_whole_process_inside_the_budget(scenario):
    scenario("s1_two_gpus")
    env = Jax().environment(plan_for("fraction=0.5 gpus=1"))
    fraction = float(env["XLA_PYTHON_CLIENT_MEM_FRACTION"])
    assert fraction == math.floor((4096 - 450) / 8192 * 10_000) / 10_000 == 0.445
    assert fraction * 8192 * MiB + 450 * MiB <= 4096 * MiB  # pool + CUDA context and libraries
    assert env["XLA_PYTHON_CLIENT_ALLOCATOR"] == "bfc"  # the only allocator that keeps to the fraction
    assert env["CUDA_VISIBLE_DEVICES"] == "GPU-b2b2b2b2-0000-4000-8000-000000000002"
    assert "XLA_PYTHON_CLIENT_PREALLOCATE" not in env  # JAX's default: take the pool at start


def test_one_fraction_for_all_gpus_is_the_smallest_and_is_explained(scenario):
    scenario("s1_two_gpus")
    plan = plan_for("limit=4GiB")  # 4 GiB of the 11422 MiB GPU and of the 8192 MiB GPU
    assert pool_fraction(plan) == math.floor((4096 - 450) / 11422 * 10_000) / 10_000
    notes = Jax().apply(plan)
    assert notes == [
        "JAX takes one memory fraction for every GPU: 0.3192, the smallest, so that each GPU stays inside its "
        "budget (the larger GPUs keep some of theirs unused)."
    ]


def test_growth_is_preallocation_off_and_threads_are_not_jaxs(scenario):
    scenario("s2_seven_jobs")
    plan = plan_for("growth=on threads=1")
    env = Jax().environment(plan)
    assert env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert "XLA_PYTHON_CLIENT_MEM_FRACTION" not in env and "XLA_PYTHON_CLIENT_ALLOCATOR" not in env
    assert Jax().apply(plan) == [
        "JAX has no setting for its CPU thread pools, so threads=/intra=/inter= do not apply to JAX."
    ]
    assert Jax().environment(plan_for("growth=off"))["XLA_PYTHON_CLIENT_PREALLOCATE"] == "true"


def test_the_users_newer_variable_is_the_one_set(scenario, monkeypatch):
    scenario("s1_two_gpus")
    monkeypatch.setenv("XLA_CLIENT_MEM_FRACTION", "0.9")  # jaxlib refuses it together with the older name
    env = Jax().environment(plan_for("fraction=0.5 gpus=1"))
    assert env["XLA_CLIENT_MEM_FRACTION"] == "0.4450" and "XLA_PYTHON_CLIENT_MEM_FRACTION" not in env
