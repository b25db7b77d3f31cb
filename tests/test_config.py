"""Administrators' defaults and ceiling (c.GpumemConfig / JUPYTER_GPUMEM_*), read without a kernel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config, Configurable
from traitlets.config.loader import KVArgParseConfigLoader, PyFileConfigLoader

from jupyter_gpumem.config import SETTINGS, GpumemConfig, environment_variable, load_config
from jupyter_gpumem.model import Device, Snapshot
from jupyter_gpumem.overhead import Overhead
from jupyter_gpumem.plan import Ceiling, make_plan
from jupyter_gpumem.policy import Policy, PolicyError
from jupyter_gpumem.units import GiB, MiB

GPU_UUID = "GPU-b2b2b2b2-0000-4000-8000-000000000002"


@pytest.fixture(autouse=True)
def no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SETTINGS:
        monkeypatch.delenv(environment_variable(name), raising=False)


def configured(**settings: Any) -> tuple[GpumemConfig, list[str]]:
    """load_config as the extension calls it, with a shell whose configuration has ``settings``."""
    shell = Configurable(config=Config({"GpumemConfig": settings}))
    return load_config(shell)


def policy_of(**settings: Any) -> Policy:
    config, problems = configured(**settings)
    policy, ignored = config.defaults()
    assert problems == ignored == []
    return policy


def ceiling_of(**settings: Any) -> Ceiling:
    config, problems = configured(**settings)
    ceiling, ignored = config.ceiling()
    assert problems == ignored == []
    return ceiling


# ---------------------------------------------------------------- each setting's forms


@pytest.mark.parametrize("value", [0.4, "0.4", "40%", " 0.4 "])
def test_fraction_as_a_number_or_a_string(value):
    assert policy_of(fraction=value) == Policy(fraction=0.4)


def test_a_whole_number_fraction_is_the_whole_gpu():
    assert policy_of(fraction=1) == Policy(fraction=1.0)


@pytest.mark.parametrize("value", ["6GiB", "6 GiB", 6 * GiB, float(6 * GiB)])
def test_limit_as_a_size_or_a_number_of_bytes(value):
    assert policy_of(limit=value).limit_bytes == 6 * GiB


@pytest.mark.parametrize(("value", "growth"), [(True, True), ("on", True), (False, False), ("off", False)])
def test_growth_as_a_bool_or_on_off(value, growth):
    assert policy_of(growth=value) == Policy(growth=growth)


@pytest.mark.parametrize(
    ("value", "gpus"),
    [
        (1, ("1",)),
        ("1", ("1",)),
        ([0, 2], ("0", "2")),
        ("0,2", ("0", "2")),
        ([GPU_UUID], (GPU_UUID,)),
        (GPU_UUID, (GPU_UUID,)),
        ("none", ()),
        ([], ()),
    ],
)
def test_gpus_as_an_index_a_list_or_a_string(value, gpus):
    assert policy_of(gpus=value) == Policy(gpus=gpus)


@pytest.mark.parametrize("value", [2, "2", 2.0])
def test_threads_as_a_number_or_a_string(value):
    assert policy_of(threads=value) == Policy(intra_threads=2, inter_threads=2)


@pytest.mark.parametrize("value", [0.5, "0.5", "50%"])
def test_max_fraction_as_a_number_or_a_string(value):
    assert ceiling_of(max_fraction=value) == Ceiling(max_fraction=0.5)


@pytest.mark.parametrize("value", ["20GiB", 20 * GiB])
def test_max_limit_as_a_size_or_a_number_of_bytes(value):
    assert ceiling_of(max_limit=value) == Ceiling(max_limit_bytes=20 * GiB)


def test_the_documented_profile_file_with_both_forms(tmp_path: Path):
    (tmp_path / "ipython_kernel_config.py").write_text(
        "c.GpumemConfig.fraction = 0.4\nc.GpumemConfig.limit = '6GiB'\nc.GpumemConfig.max_fraction = '0.5'\n"
        "c.GpumemConfig.max_limit = 20 * 1024**3\nc.GpumemConfig.gpus = [0, 1]\nc.GpumemConfig.growth = True\n"
    )
    shell = Configurable(config=PyFileConfigLoader("ipython_kernel_config.py", path=str(tmp_path)).load_config())
    config, problems = load_config(shell)
    assert problems == []
    policy, ignored = config.defaults()
    assert ignored == [] and policy.describe() == "limit=6GiB growth=on gpus=0,1"  # the later of the two budgets
    assert config.ceiling() == (Ceiling(0.5, 20 * GiB), [])


def test_the_kernel_command_line_forms_are_read_as_the_traitlets_would():
    argv = ["--GpumemConfig.fraction=40%", "--GpumemConfig.threads=3", "--GpumemConfig.max_limit=8GiB"]
    cli = KVArgParseConfigLoader(argv, classes=[GpumemConfig]).load_config()
    config, problems = load_config(Configurable(config=cli))
    assert problems == []
    assert config.defaults() == (Policy(fraction=0.4, intra_threads=3, inter_threads=3), [])
    assert config.ceiling() == (Ceiling(max_limit_bytes=8 * GiB), [])


def test_the_environment_gives_the_defaults_and_the_configuration_wins(monkeypatch):
    monkeypatch.setenv("JUPYTER_GPUMEM_FRACTION", "0.3")
    monkeypatch.setenv("JUPYTER_GPUMEM_MAX_LIMIT", "6GiB")
    assert policy_of() == Policy(fraction=0.3)
    assert ceiling_of() == Ceiling(max_limit_bytes=6 * GiB)
    assert policy_of(fraction=0.2) == Policy(fraction=0.2)
    assert ceiling_of(max_limit=None) == Ceiling()  # None: not set, even where the variable is
    assert load_config(None)[0].defaults() == (Policy(fraction=0.3), [])  # no shell: the environment alone


def test_help_names_the_accepted_forms_and_what_a_ceiling_does_not_do():
    text = GpumemConfig.class_get_help()
    assert "--GpumemConfig.fraction=<NumberOrString>" in text
    assert "--GpumemConfig.gpus=<IntListOrString>" in text
    assert "Default: os.environ.get('JUPYTER_GPUMEM_MAX_LIMIT', '')" in text
    assert "cooperative" in text and "MIG" in text
    assert "A default, not a cap" in text


# ---------------------------------------------------------------- values that are refused


@pytest.mark.parametrize(
    ("name", "value", "forms"),
    [
        ("fraction", True, 'a number such as 0.4, or a string such as "0.4" or "40%"'),
        ("fraction", [0.4], "a number such as 0.4"),
        ("limit", 6.5, 'a size string such as "6GiB", or a whole number of bytes such as 6e9'),
        ("growth", 1.5, 'True or False, or a string "on" or "off"'),
        ("gpus", 0.5, "a GPU index such as 1, a list such as [0, 2]"),
        ("gpus", [0, 1.5], "a GPU index such as 1"),
        ("threads", [1, 2], 'a whole number such as 2, or a string such as "2"'),
        ("threads", 2.5, "a whole number such as 2"),
        ("max_fraction", {"value": 0.5}, 'a number such as 0.5, or a string such as "0.5" or "50%"'),
        ("max_limit", 1e9 + 0.5, 'a size string such as "20GiB", or a whole number of bytes such as 2e10'),
    ],
)
def test_a_value_of_the_wrong_type_is_reported_once_and_the_others_apply(name, value, forms):
    others = {"fraction": 0.4, "threads": 2, "max_fraction": 0.5, "max_limit": "6GiB"}
    others.pop(name, None)
    config, problems = configured(**{name: value}, **others)  # plain traitlets would raise here, keeping nothing
    assert len(problems) == 1
    assert problems[0].startswith(
        f"c.GpumemConfig.{name} = {value!r} in the IPython configuration was ignored: {name} takes {forms}"
    )
    assert problems[0].endswith(f"Until it is corrected, {name} is not set; the other settings apply.")
    policy, ignored = config.defaults()
    ceiling, ceiling_ignored = config.ceiling()
    assert ignored == ceiling_ignored == []  # reported once, by load_config only
    assert policy.fraction == (None if name == "fraction" else 0.4)
    assert policy.intra_threads == (None if name == "threads" else 2)
    assert ceiling.max_fraction == (None if name == "max_fraction" else 0.5)
    assert ceiling.max_limit_bytes == (None if name == "max_limit" else 6 * GiB)


def test_a_refused_value_leaves_the_environment_variable_in_force(monkeypatch):
    monkeypatch.setenv("JUPYTER_GPUMEM_MAX_FRACTION", "0.5")
    config, problems = configured(max_fraction=[0.9], fraction=0.4)
    assert problems == [
        "c.GpumemConfig.max_fraction = [0.9] in the IPython configuration was ignored: max_fraction takes a "
        'number such as 0.5, or a string such as "0.5" or "50%". Until it is corrected, '
        "JUPYTER_GPUMEM_MAX_FRACTION=0.5 from the environment applies; the other settings apply."
    ]
    assert config.ceiling() == (Ceiling(max_fraction=0.5), [])
    assert config.defaults() == (Policy(fraction=0.4), [])


def test_a_misspelt_setting_is_reported_not_silently_dropped():
    config, problems = configured(max_fractoin=0.5, max_limit="6GiB")
    assert len(problems) == 1
    assert "c.GpumemConfig.max_fractoin in the IPython configuration was ignored" in problems[0]
    assert "did you mean max_fraction?" in problems[0]
    assert config.ceiling() == (Ceiling(max_limit_bytes=6 * GiB), [])


@pytest.mark.parametrize(
    ("name", "value", "sentence"),
    [
        ("fraction", 1.5, "The configured default fraction was ignored: fraction=1.5 is outside (0, 1]"),
        ("fraction", "lots", "The configured default fraction was ignored: fraction=lots is not a number"),
        ("limit", 0, "The configured default limit was ignored: limit=0 must be above zero"),
        ("limit", "6", "The configured default limit was ignored: limit=6 is not a size"),
        ("growth", "maybe", "The configured default growth was ignored: growth=maybe is not on or off"),
        ("gpus", -1, "The configured default gpus was ignored: gpus=-1 names no GPU"),
        ("threads", 0, "The configured default threads was ignored: threads=0 is not a whole number of at least 1"),
    ],
)
def test_a_default_of_the_right_type_that_does_not_parse_is_ignored_alone(name, value, sentence):
    config, problems = configured(**{name: value}, max_fraction=0.5)
    assert problems == []
    policy, ignored = config.defaults()
    assert len(ignored) == 1 and ignored[0].startswith(sentence)
    assert policy == Policy()
    assert config.ceiling() == (Ceiling(max_fraction=0.5), [])


# ---------------------------------------------------------------- settings combine


def test_two_configured_defaults_are_both_kept():
    assert policy_of(fraction=0.4, threads=2) == Policy(fraction=0.4, intra_threads=2, inter_threads=2)
    assert policy_of(gpus=1, growth="on", limit="6GiB").describe() == "limit=6GiB growth=on gpus=1"


def test_two_defaults_from_the_environment_are_both_kept(monkeypatch):
    monkeypatch.setenv("JUPYTER_GPUMEM_FRACTION", "0.4")
    monkeypatch.setenv("JUPYTER_GPUMEM_THREADS", "2")
    assert policy_of() == Policy(fraction=0.4, intra_threads=2, inter_threads=2)


def test_max_limit_still_applies_when_max_fraction_is_also_set(monkeypatch):
    monkeypatch.setenv("JUPYTER_GPUMEM_MAX_FRACTION", "0.5")
    monkeypatch.setenv("JUPYTER_GPUMEM_MAX_LIMIT", "6GiB")
    assert ceiling_of() == Ceiling(max_fraction=0.5, max_limit_bytes=6 * GiB)
    assert ceiling_of(max_fraction=0.4, max_limit=4 * GiB) == Ceiling(0.4, 4 * GiB)


def test_a_bad_part_of_the_ceiling_does_not_take_the_other_down(monkeypatch):
    config, _ = configured(max_fraction="1.5", max_limit="6GiB")
    ceiling, ignored = config.ceiling()
    assert ceiling == Ceiling(max_limit_bytes=6 * GiB)
    assert ignored == [
        "The configured ceiling max_fraction was ignored: fraction=1.5 is outside (0, 1]; "
        "use fraction=0.4 (a number above 0 and at most 1)."
    ]
    config, _ = configured(max_fraction=0.5, max_limit="lots")
    ceiling, ignored = config.ceiling()
    assert ceiling == Ceiling(max_fraction=0.5)
    assert len(ignored) == 1 and ignored[0].startswith("The configured ceiling max_limit was ignored: limit=lots")
    config, _ = configured(max_fraction="2", max_limit="-1GiB")
    ceiling, ignored = config.ceiling()
    assert ceiling == Ceiling() and len(ignored) == 2


# ---------------------------------------------------------------- the ceiling on each GPU


def test_a_ceiling_with_a_fraction_and_a_limit_takes_the_smaller_on_each_gpu():
    ceiling = Ceiling(max_fraction=0.5, max_limit_bytes=6 * GiB)
    assert ceiling.budget_bytes(8 * GiB) == 4 * GiB  # the fraction is smaller here
    assert ceiling.budget_bytes(24 * GiB) == 6 * GiB  # the limit is smaller here
    assert ceiling.budget_bytes(12 * GiB) == 6 * GiB


def test_the_configured_ceiling_is_each_gpus_budget_and_refuses_more_on_either_cap():
    config, _ = configured(max_fraction=0.5, max_limit=5000 * MiB)
    ceiling, _ = config.ceiling()
    devices = (
        Device(0, "GPU-a1a1a1a1-0000-4000-8000-000000000001", "GPU A", total_bytes=11422 * MiB),
        Device(1, GPU_UUID, "GPU B", total_bytes=8192 * MiB),
    )
    snapshot = Snapshot(taken_at=0.0, own_pid=1, devices=devices)

    def plan(policy: Policy) -> list[tuple[int, int | None]]:
        made = make_plan(policy, snapshot, lambda device: Overhead(400 * MiB, "estimated", "a test figure"), ceiling)
        return [(gpu.index, gpu.budget_bytes) for gpu in made.gpus]

    assert plan(Policy()) == [(0, 5000 * MiB), (1, 4096 * MiB)]
    with pytest.raises(PolicyError, match="above this server's ceiling"):
        plan(Policy(fraction=0.45))  # 5140 MiB on GPU 0: under its half, over the 5000 MiB
    with pytest.raises(PolicyError, match="above this server's ceiling"):
        plan(Policy(limit_bytes=4500 * MiB, gpus=("1",)))  # under 5000 MiB, over half of GPU 1
    assert plan(Policy(limit_bytes=4000 * MiB)) == [(0, 4000 * MiB), (1, 4000 * MiB)]
