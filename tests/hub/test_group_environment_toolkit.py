"""group_environment's container toolkit variables (NVIDIA_GPU_MEMORY_LIMIT / _REQUEST, whole MiB) from the user's
groups' ceilings, and which spawners get them. Pure functions and stand-in spawners: no hub, no driver."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest

from jupyter_gpumem import values
from jupyter_gpumem.hub import group_environment, toolkit_environment, user_ceiling
from jupyter_gpumem.hub.groups import is_container_spawner
from jupyter_gpumem.units import GiB, MiB


def test_max_limit_is_the_toolkit_limit_in_mib_and_the_request_without_a_budget() -> None:
    policies = {"students": {"max_limit": "6GiB"}}
    assert toolkit_environment(["students"], policies) == {
        "NVIDIA_GPU_MEMORY_LIMIT": "6144",
        "NVIDIA_GPU_MEMORY_REQUEST": "6144",
    }


def test_whole_mib_are_rounded_down() -> None:
    policies = {"students": {"max_limit": "1.5MiB", "limit": "1000KiB"}}
    assert toolkit_environment(["students"], policies) == {
        "NVIDIA_GPU_MEMORY_LIMIT": "1",
        "NVIDIA_GPU_MEMORY_REQUEST": "1",  # 0 would read as no request: at least one MiB
    }


def test_the_request_is_the_groups_default_budget() -> None:
    policies = {"students": {"limit": "2GiB", "max_limit": "6GiB"}}
    assert toolkit_environment(["students"], policies) == {
        "NVIDIA_GPU_MEMORY_LIMIT": "6144",
        "NVIDIA_GPU_MEMORY_REQUEST": "2048",
    }


def test_a_budget_above_the_ceiling_is_clamped_and_names_its_group() -> None:
    policies = {"students": {"limit": "8GiB"}, "capped": {"max_limit": "6GiB"}}
    ceiling = user_ceiling(["students", "capped"], policies)
    assert ceiling is not None
    assert (ceiling.limit_bytes, ceiling.request_bytes, ceiling.clamped_group) == (6 * GiB, 6 * GiB, "students")
    assert toolkit_environment(["students", "capped"], policies) == {
        "NVIDIA_GPU_MEMORY_LIMIT": "6144",
        "NVIDIA_GPU_MEMORY_REQUEST": "6144",
    }


def test_a_fraction_counts_only_with_the_gpus_size() -> None:
    policies = {"students": {"max_fraction": "0.25"}}
    assert toolkit_environment(["students"], policies) == {}
    assert user_ceiling(["students"], policies) is None
    assert toolkit_environment(["students"], policies, gpu_memory=40 * GiB) == {
        "NVIDIA_GPU_MEMORY_LIMIT": "10240",
        "NVIDIA_GPU_MEMORY_REQUEST": "10240",
    }
    # Both: the lower of max_limit and the fraction of the GPU.
    both = {"students": {"max_fraction": "25%", "max_limit": "8GiB"}}
    assert toolkit_environment(["students"], both, gpu_memory=40 * GiB)["NVIDIA_GPU_MEMORY_LIMIT"] == "8192"
    assert toolkit_environment(["students"], both, gpu_memory=16 * GiB)["NVIDIA_GPU_MEMORY_LIMIT"] == "4096"
    assert toolkit_environment(["students"], both)["NVIDIA_GPU_MEMORY_LIMIT"] == "8192"


def test_a_fraction_of_an_odd_size_is_rounded_down() -> None:
    ceiling = user_ceiling(["a"], {"a": {"max_fraction": "0.3"}}, gpu_memory=10 * MiB + 7)
    assert ceiling is not None and ceiling.limit_bytes == (3 * (10 * MiB + 7)) // 10
    assert toolkit_environment(["a"], {"a": {"max_fraction": "0.3"}}, 10 * MiB + 7)["NVIDIA_GPU_MEMORY_LIMIT"] == "3"


def test_the_lowest_of_several_groups_and_the_first_groups_budget() -> None:
    policies = {
        "staff": {"limit": "4GiB", "max_limit": "30GiB"},
        "course": {"limit": "1GiB", "max_limit": "12GiB"},
        "lab": {"max_limit": "20GiB"},
    }
    assert toolkit_environment(["lab", "course", "staff"], policies) == {
        "NVIDIA_GPU_MEMORY_LIMIT": "12288",
        "NVIDIA_GPU_MEMORY_REQUEST": "4096",  # staff's: first in the order of the policies
    }


def test_no_ceiling_no_variables() -> None:
    policies = {"students": {"limit": "2GiB"}, "other": {"max_limit": "1GiB"}}
    assert toolkit_environment(["students"], policies) == {}
    assert toolkit_environment([], policies) == {}


# Spawners, by their classes' modules, as JupyterHub's are.


def _spawner_class(module: str, name: str, base: type = object) -> type:
    return type(name, (base,), {"__module__": module})


LocalProcessSpawner = _spawner_class("jupyterhub.spawner", "LocalProcessSpawner")
DockerSpawner = _spawner_class("dockerspawner.dockerspawner", "DockerSpawner")
SystemUserSpawner = _spawner_class("dockerspawner.systemuserspawner", "SystemUserSpawner", DockerSpawner)
KubeSpawner = _spawner_class("kubespawner.spawner", "KubeSpawner")
MyKubeSpawner = _spawner_class("jupyterhub_config", "MyKubeSpawner", KubeSpawner)


def spawner(cls: type, *groups: str) -> Any:
    made = cls()
    made.user = SimpleNamespace(name="alice", groups=[SimpleNamespace(name=g) for g in groups])
    made.environment = {}
    made.log = logging.getLogger("test-hub")
    return made


def test_container_spawners_are_told_by_their_classes_modules() -> None:
    for cls in (DockerSpawner, SystemUserSpawner, KubeSpawner, MyKubeSpawner):
        assert is_container_spawner(cls()), cls
    assert not is_container_spawner(LocalProcessSpawner())


POLICIES = {"students": {"limit": "2GiB", "max_limit": "6GiB"}}


def test_a_container_spawner_gets_the_toolkit_variables_with_the_kernels_settings() -> None:
    made = spawner(KubeSpawner, "students")
    group_environment(POLICIES)(made)
    assert made.environment == {
        "JUPYTER_GPUMEM_LIMIT": "2GiB",
        "JUPYTER_GPUMEM_MAX_LIMIT": "6GiB",
        "NVIDIA_GPU_MEMORY_LIMIT": "6144",
        "NVIDIA_GPU_MEMORY_REQUEST": "2048",
    }


def test_a_local_spawner_gets_none_unless_forced_and_forced_off_a_container_spawner_gets_none() -> None:
    local = spawner(LocalProcessSpawner, "students")
    group_environment(POLICIES)(local)
    assert not any(name.startswith("NVIDIA_") for name in local.environment)
    forced = spawner(LocalProcessSpawner, "students")
    group_environment(POLICIES, toolkit_variables=True)(forced)
    assert forced.environment["NVIDIA_GPU_MEMORY_LIMIT"] == "6144"
    docker = spawner(DockerSpawner, "students")
    group_environment(POLICIES, toolkit_variables=False)(docker)
    assert not any(name.startswith("NVIDIA_") for name in docker.environment)


def test_the_hook_uses_gpu_memory_for_a_fraction_and_warns_once_without_it(caplog: pytest.LogCaptureFixture) -> None:
    policies = {"students": {"max_fraction": "0.25"}}
    sized = spawner(DockerSpawner, "students")
    group_environment(policies, gpu_memory="40GiB")(sized)
    assert sized.environment["NVIDIA_GPU_MEMORY_LIMIT"] == "10240"
    hook = group_environment(policies)
    with caplog.at_level(logging.WARNING, "test-hub"):
        for _ in range(3):
            unsized = spawner(DockerSpawner, "students")
            hook(unsized)
            assert "NVIDIA_GPU_MEMORY_LIMIT" not in unsized.environment
    assert [r.getMessage() for r in caplog.records] == [
        "jupyter-gpumem: max_fraction is not passed to the container toolkit: give the GPU's size, "
        'group_environment(..., gpu_memory="40GiB").'
    ]


def test_the_hook_warns_once_naming_the_group_whose_budget_is_clamped(caplog: pytest.LogCaptureFixture) -> None:
    policies = {"students": {"limit": "8GiB", "max_limit": "6GiB"}}
    hook = group_environment(policies)
    with caplog.at_level(logging.WARNING, "test-hub"):
        for _ in range(2):
            made = spawner(DockerSpawner, "students")
            hook(made)
            assert made.environment["NVIDIA_GPU_MEMORY_REQUEST"] == "6144"
    assert [r.getMessage() for r in caplog.records] == [
        "jupyter-gpumem: group 'students''s limit= is above its members' ceiling; NVIDIA_GPU_MEMORY_REQUEST is "
        "the ceiling, 6144 MiB."
    ]


def test_a_bad_ceiling_or_gpu_size_is_refused_when_the_hub_reads_its_configuration() -> None:
    with pytest.raises(values.Refused, match="group 'students': max_limit='lots'"):
        group_environment({"students": {"max_limit": "lots"}})
    with pytest.raises(values.Refused, match="gpu_memory='40'"):
        group_environment({}, gpu_memory="40")
