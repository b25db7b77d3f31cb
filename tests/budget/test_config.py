"""Administrators' defaults and ceiling (c.GpumemConfig / JUPYTER_GPUMEM_*), read without a kernel."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Application, Config, Configurable
from traitlets.config.loader import KVArgParseConfigLoader, PyFileConfigLoader

from jupyter_gpumem.budget.config import SETTINGS, GpumemConfig, environment_variable, load_config
from jupyter_gpumem.budget.config import log as package_log
from jupyter_gpumem.budget.overhead import Overhead
from jupyter_gpumem.budget.plan import Ceiling, make_plan
from jupyter_gpumem.budget.policy import Policy, PolicyError
from jupyter_gpumem.gpu.model import Device, Snapshot
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
    assert policy_of(fraction=None) == Policy()  # None: not set, even where the variable is
    assert load_config(None)[0].defaults() == (Policy(fraction=0.3), [])  # no shell: the environment alone


def test_a_ceiling_of_none_in_the_configuration_lifts_none_from_the_environment(monkeypatch):
    monkeypatch.setenv("JUPYTER_GPUMEM_MAX_LIMIT", "6GiB")
    assert ceiling_of(max_limit=None) == Ceiling(max_limit_bytes=6 * GiB)
    assert ceiling_of(max_limit="") == Ceiling(max_limit_bytes=6 * GiB)
    assert ceiling_of(max_limit="80GiB") == Ceiling(max_limit_bytes=6 * GiB)  # the lowest, not the last read
    assert ceiling_of(max_limit="4GiB") == Ceiling(max_limit_bytes=4 * GiB)
    assert load_config(None)[0].ceiling() == (Ceiling(max_limit_bytes=6 * GiB), [])


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
    config, loaded = configured(**{name: value}, **others)  # plain traitlets would raise here, keeping nothing
    policy, ignored = config.defaults()
    ceiling, ceiling_ignored = config.ceiling()
    problems = [*loaded, *ignored, *ceiling_ignored]  # the Controller shows them all at load
    assert len(problems) == 1  # reported once: a default by load_config, a ceiling by ceiling()
    assert problems == (ceiling_ignored if name.startswith("max_") else loaded)
    assert problems[0].startswith(
        f"c.GpumemConfig.{name} = {value!r} in the IPython configuration was ignored: {name} takes {forms}"
    )
    rest = "this server's ceiling is 6144 MiB." if name == "max_fraction" else "this server's ceiling is 0.5 of"
    rest = rest if name.startswith("max_") else f"{name} is not set; the other settings apply."
    assert f"Until it is corrected, {rest}" in problems[0]
    assert policy.fraction == (None if name == "fraction" else 0.4)
    assert policy.intra_threads == (None if name == "threads" else 2)
    assert ceiling.max_fraction == (None if name == "max_fraction" else 0.5)
    assert ceiling.max_limit_bytes == (None if name == "max_limit" else 6 * GiB)


def test_a_refused_value_leaves_the_environment_variable_in_force(monkeypatch):
    monkeypatch.setenv("JUPYTER_GPUMEM_THREADS", "2")
    monkeypatch.setenv("JUPYTER_GPUMEM_MAX_FRACTION", "0.5")
    config, problems = configured(threads=[4], max_fraction=[0.9], fraction=0.4)
    assert problems == [
        "c.GpumemConfig.threads = [4] in the IPython configuration was ignored: threads takes a whole number such "
        'as 2, or a string such as "2". Until it is corrected, JUPYTER_GPUMEM_THREADS=2 from the environment '
        "applies; the other settings apply."
    ]
    assert config.defaults() == (Policy(fraction=0.4, intra_threads=2, inter_threads=2), [])
    assert config.ceiling() == (
        Ceiling(max_fraction=0.5),
        [
            "c.GpumemConfig.max_fraction = [0.9] in the IPython configuration was ignored: max_fraction takes a "
            'number such as 0.5, or a string such as "0.5" or "50%". Until it is corrected, this server\'s ceiling '
            "is 0.5 of each GPU."
        ],
    )


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
        ("threads", 0, "The configured default threads was ignored: threads=0 is not a whole number from 1 to 1024"),
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
        "c.GpumemConfig.max_fraction = '1.5' in the IPython configuration was ignored: fraction=1.5 is outside "
        "(0, 1]; use fraction=0.4 (a number above 0 and at most 1). Until it is corrected, this server's ceiling "
        "is 6144 MiB."
    ]
    config, _ = configured(max_fraction=0.5, max_limit="lots")
    ceiling, ignored = config.ceiling()
    assert ceiling == Ceiling(max_fraction=0.5)
    assert len(ignored) == 1
    assert ignored[0].startswith(
        "c.GpumemConfig.max_limit = 'lots' in the IPython configuration was ignored: limit=lots"
    )
    config, _ = configured(max_fraction="2", max_limit="-1GiB")
    ceiling, ignored = config.ceiling()
    assert ceiling == Ceiling() and len(ignored) == 2
    assert ignored[1].endswith("Until it is corrected, there is no ceiling.")


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


# ---------------------------------------------------------------- the ceiling is the lowest of every source


class Shell(Configurable):
    """Stands for the kernel's shell: its parent is the application that loaded the configuration."""


def kernel_shell(
    tmp_path: Path, *, user: str = "", system: str = "", system_json: str = "", argv: tuple[str, ...] = ()
) -> Shell:
    """A shell configured as IPython configures a kernel's: an application parses its command line, then loads
    each ipython_kernel_config.py / .json on its search path (the user's profile first, a system-wide directory
    standing for /etc/ipython or <sys.prefix>/etc/ipython), later ones winning as traitlets merges them."""
    profile, system_dir = tmp_path / "ipython" / "profile_default", tmp_path / "etc" / "ipython"
    for directory, name, text in (
        (profile, "ipython_kernel_config.py", user),
        (system_dir, "ipython_kernel_config.py", system),
        (system_dir, "ipython_kernel_config.json", system_json),
    ):
        directory.mkdir(parents=True, exist_ok=True)
        if text:
            (directory / name).write_text(text)
    application = Application()
    application.parse_command_line(list(argv))
    application.load_config_file("ipython_kernel_config.py", path=[str(profile), str(system_dir)])
    return Shell(parent=application)


def loaded_ceiling(shell: Configurable) -> tuple[Ceiling, list[str]]:
    config, problems = load_config(shell)
    assert problems == []
    return config.ceiling()


def test_a_users_profile_cannot_lift_a_system_wide_ceiling(tmp_path):
    shell = kernel_shell(
        tmp_path, system="c.GpumemConfig.max_fraction = 0.25\n", user="c.GpumemConfig.max_fraction = '1'\n"
    )
    config, _ = load_config(shell)
    assert config.max_fraction == "1"  # what traitlets' precedence alone would make the ceiling
    ceiling, problems = config.ceiling()
    assert (ceiling, problems) == (Ceiling(max_fraction=0.25), [])
    assert ceiling.max_fraction_origin == f"set in {tmp_path / 'etc' / 'ipython' / 'ipython_kernel_config.py'}"


@pytest.mark.parametrize("lifted", ["'1'", "None", "''", "'100%'", "1"])
def test_a_users_profile_cannot_lift_the_spawners_ceiling(tmp_path, monkeypatch, lifted):
    monkeypatch.setenv("JUPYTER_GPUMEM_MAX_FRACTION", "0.25")
    monkeypatch.setenv("JUPYTER_GPUMEM_MAX_LIMIT", "20GiB")
    shell = kernel_shell(tmp_path, user=f"c.GpumemConfig.max_fraction = {lifted}\nc.GpumemConfig.max_limit = '80GiB'\n")
    ceiling, problems = loaded_ceiling(shell)
    assert (ceiling, problems) == (Ceiling(max_fraction=0.25, max_limit_bytes=20 * GiB), [])
    assert ceiling.max_fraction_origin == "set by JUPYTER_GPUMEM_MAX_FRACTION in the environment"


def test_a_users_profile_may_lower_the_ceiling_and_only_that_part(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_GPUMEM_MAX_FRACTION", "0.25")
    user = "c.GpumemConfig.max_fraction = '20%'\n"
    shell = kernel_shell(tmp_path, user=user, system="c.GpumemConfig.max_limit = '6GiB'\n")
    ceiling, problems = loaded_ceiling(shell)
    assert (ceiling, problems) == (Ceiling(max_fraction=0.2, max_limit_bytes=6 * GiB), [])
    assert (
        ceiling.max_fraction_origin == f"set in {tmp_path / 'ipython' / 'profile_default' / 'ipython_kernel_config.py'}"
    )
    assert ceiling.max_limit_origin == f"set in {tmp_path / 'etc' / 'ipython' / 'ipython_kernel_config.py'}"


def test_the_kernels_command_line_is_one_source_among_the_others(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_GPUMEM_MAX_FRACTION", "0.25")
    raised = kernel_shell(
        tmp_path / "a", user="c.GpumemConfig.max_fraction = 0.5\n", argv=("--GpumemConfig.max_fraction=1",)
    )
    assert loaded_ceiling(raised) == (Ceiling(max_fraction=0.25), [])
    lowered = kernel_shell(tmp_path / "b", argv=("--GpumemConfig.max_fraction=0.1", "--GpumemConfig.max_limit=4GiB"))
    ceiling, _ = loaded_ceiling(lowered)
    assert ceiling == Ceiling(max_fraction=0.1, max_limit_bytes=4 * GiB)
    assert ceiling.max_limit_origin == "set on the kernel's command line"


def test_a_system_wide_json_file_counts_too(tmp_path):
    shell = kernel_shell(
        tmp_path, system_json='{"GpumemConfig": {"max_limit": "6GiB"}}', user="c.GpumemConfig.max_limit = '20GiB'\n"
    )
    assert loaded_ceiling(shell) == (Ceiling(max_limit_bytes=6 * GiB), [])


def test_a_ceiling_set_for_the_shell_only_still_counts(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_GPUMEM_MAX_FRACTION", "0.25")
    lifted = kernel_shell(tmp_path / "a", user="c.Shell.GpumemConfig.max_fraction = 1\n")
    assert loaded_ceiling(lifted) == (Ceiling(max_fraction=0.25), [])
    lowered = kernel_shell(tmp_path / "b", user="c.Shell.GpumemConfig.max_fraction = 0.1\n")
    assert loaded_ceiling(lowered) == (Ceiling(max_fraction=0.1), [])


def test_a_value_given_after_loading_counts_too(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_GPUMEM_MAX_FRACTION", "0.25")
    shell = kernel_shell(tmp_path)
    shell.config.GpumemConfig.max_fraction = 0.2  # as %config GpumemConfig.max_fraction = 0.2 before %load_ext
    assert loaded_ceiling(shell) == (Ceiling(max_fraction=0.2), [])
    assert GpumemConfig(max_fraction=0.9).ceiling() == (Ceiling(max_fraction=0.25), [])


def test_a_bad_ceiling_from_the_spawner_is_reported_once_and_the_profiles_holds(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("JUPYTER_GPUMEM_MAX_FRACTION", "half")
    config, problems = load_config(kernel_shell(tmp_path, user="c.GpumemConfig.max_fraction = 0.3\n"))
    sentence = (
        "JUPYTER_GPUMEM_MAX_FRACTION=half in the environment was ignored: fraction=half is not a number; use "
        "fraction=0.4 (a number above 0 and at most 1). Until it is corrected, this server's ceiling is 0.3 of "
        "each GPU."
    )
    with caplog.at_level("WARNING", logger="jupyter_gpumem"):
        assert config.ceiling() == (Ceiling(max_fraction=0.3), [sentence])
        assert config.ceiling() == (Ceiling(max_fraction=0.3), [sentence])
    assert problems == []
    assert [r.getMessage() for r in caplog.records] == [f"jupyter-gpumem: {sentence}"]  # logged once


def test_a_bad_ceiling_in_a_system_wide_file_is_named_and_the_others_hold(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_GPUMEM_MAX_FRACTION", "0.3")
    admin = tmp_path / "etc" / "ipython" / "ipython_kernel_config.py"
    shell = kernel_shell(tmp_path, system="c.GpumemConfig.max_fraction = [0.25]\nc.GpumemConfig.max_limit = '6 gigs'\n")
    ceiling, problems = loaded_ceiling(shell)  # not also reported by load_config
    assert ceiling == Ceiling(max_fraction=0.3)
    assert problems == [
        f"c.GpumemConfig.max_fraction = [0.25] in {admin} was ignored: max_fraction takes a number such as 0.5, or "
        'a string such as "0.5" or "50%". Until it is corrected, this server\'s ceiling is 0.3 of each GPU.',
        f"c.GpumemConfig.max_limit = '6 gigs' in {admin} was ignored: limit=6 gigs is not a size; use limit=6GiB "
        "(a size with a unit: GiB, MiB, GB or MB). Until it is corrected, this server's ceiling is 0.3 of each GPU.",
    ]


def test_a_bad_ceiling_in_the_users_profile_is_reported_once_naming_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_GPUMEM_MAX_FRACTION", "0.3")
    shell = kernel_shell(tmp_path, user="c.GpumemConfig.max_fraction = [1]\n", argv=("--GpumemConfig.max_limit=lots",))
    ceiling, problems = loaded_ceiling(shell)
    assert ceiling == Ceiling(max_fraction=0.3)
    assert len(problems) == 2
    assert problems[0].startswith(
        f"c.GpumemConfig.max_fraction = [1] in {tmp_path / 'ipython' / 'profile_default' / 'ipython_kernel_config.py'} "
        "was ignored"
    )
    assert problems[1].startswith("--GpumemConfig.max_limit=lots on the kernel's command line was ignored: limit=lots")


def test_a_file_that_cannot_be_read_again_is_said_and_the_others_hold(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_GPUMEM_MAX_FRACTION", "0.3")
    shell = kernel_shell(tmp_path, system="c.GpumemConfig.max_fraction = 0.25\n")
    admin = tmp_path / "etc" / "ipython" / "ipython_kernel_config.py"
    admin.write_text("c.GpumemConfig.max_fraction = (\n")  # edited since the kernel started
    ceiling, problems = loaded_ceiling(shell)
    assert ceiling == Ceiling(max_fraction=0.25)  # the value it loaded at start is still in the configuration
    assert len(problems) == 1 and problems[0].startswith(
        f"{admin} could not be read again to find the ceilings it sets ("
    )


def test_the_refusal_names_where_the_ceiling_was_set(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_GPUMEM_MAX_FRACTION", "0.5")
    user = tmp_path / "ipython" / "profile_default" / "ipython_kernel_config.py"
    ceiling, _ = loaded_ceiling(kernel_shell(tmp_path, user="c.GpumemConfig.max_limit = '2GiB'\n"))
    with pytest.raises(PolicyError) as refused:
        make_plan(Policy(fraction=0.4), snapshot_of(8 * GiB), lambda device: OVERHEAD, ceiling)
    assert str(refused.value) == (
        f"fraction=0.4 is above this server's ceiling of 0.5 of each GPU and 2048 MiB (2048 MiB on GPU 0), set in "
        f"{user}; ask for less."
    )
    with pytest.raises(PolicyError, match=r"\(4096 MiB on GPU 0\), set by JUPYTER_GPUMEM_MAX_FRACTION in the env"):
        make_plan(
            Policy(fraction=0.6),
            snapshot_of(8 * GiB),
            lambda device: OVERHEAD,
            Ceiling(0.5, max_fraction_origin="set by JUPYTER_GPUMEM_MAX_FRACTION in the environment"),
        )


# ---------------------------------------------------------------- strict=off under a ceiling

OVERHEAD = Overhead(450 * MiB, "estimated", "a test figure")


def snapshot_of(total_bytes: int) -> Snapshot:
    return Snapshot(taken_at=0.0, own_pid=1, devices=(Device(0, GPU_UUID, "GPU B", total_bytes=total_bytes),))


def plan_on(total_bytes: int, policy: Policy, ceiling: Ceiling) -> Any:
    (gpu,) = make_plan(policy, snapshot_of(total_bytes), lambda device: OVERHEAD, ceiling).gpus
    return gpu


def test_strict_off_at_the_ceiling_keeps_the_context_under_it_as_nvidia_smi_counts_it():
    gpu = plan_on(8 * GiB, Policy(fraction=0.25, strict=False), Ceiling(max_fraction=0.25))
    assert gpu.budget_bytes == 2 * GiB  # as asked
    assert gpu.allocator_limit_bytes + gpu.overhead_bytes == 2 * GiB  # what nvidia-smi will show: the ceiling
    assert gpu.ceiling_bytes == 2 * GiB  # and the plan says the limit was lowered for it


@pytest.mark.parametrize(
    ("policy", "ceiling"),
    [
        (Policy(fraction=0.24, strict=False), Ceiling(max_fraction=0.25)),  # 82 MiB under: not enough for the context
        (Policy(limit_bytes=6 * GiB, limit_as_typed="6GiB", strict=False), Ceiling(max_limit_bytes=6 * GiB)),
        (Policy(strict=False), Ceiling(0.5, 3 * GiB)),  # no budget asked: the ceiling is the budget
    ],
)
def test_strict_off_never_plans_past_the_ceiling(policy, ceiling):
    gpu = plan_on(8 * GiB, policy, ceiling)
    cap = ceiling.budget_bytes(8 * GiB)
    assert gpu.allocator_limit_bytes + gpu.overhead_bytes == cap
    assert gpu.ceiling_bytes == cap


def test_strict_off_with_room_under_the_ceiling_is_the_allocator_pool_alone():
    gpu = plan_on(8 * GiB, Policy(fraction=0.15, strict=False), Ceiling(max_fraction=0.25))
    assert gpu.allocator_limit_bytes == gpu.budget_bytes == int(0.15 * 8 * GiB)  # + 450 MiB still under 2 GiB
    assert gpu.ceiling_bytes is None
    unbounded = plan_on(8 * GiB, Policy(fraction=0.25, strict=False), Ceiling())
    assert unbounded.allocator_limit_bytes == 2 * GiB and unbounded.ceiling_bytes is None


def test_strict_off_under_a_ceiling_too_small_for_the_context_is_refused():
    with pytest.raises(PolicyError) as refused:
        plan_on(
            8 * GiB,
            Policy(limit_bytes=400 * MiB, limit_as_typed="400MiB", strict=False),
            Ceiling(max_limit_bytes=480 * MiB),
        )
    assert str(refused.value) == (
        "limit=400MiB strict=off on GPU 0: this server's ceiling of 480 MiB (480 MiB there, as nvidia-smi counts it, "
        "set by the administrator) leaves nothing for tensors after about 450 MiB of CUDA context and libraries, "
        "and strict=off cannot go over it."
    )


def test_strict_on_under_a_ceiling_is_unchanged():
    gpu = plan_on(8 * GiB, Policy(fraction=0.25), Ceiling(max_fraction=0.25))
    assert gpu.allocator_limit_bytes == 2 * GiB - OVERHEAD.bytes and gpu.ceiling_bytes is None


def test_a_bad_default_takes_none_of_the_settings_after_it_down():
    config, problems = configured(fraction=1.5, growth=True, threads=2)
    policy, ignored = config.defaults()
    assert problems == []  # the type is right: defaults() reports it, once
    assert policy == Policy(growth=True, intra_threads=2, inter_threads=2)
    assert len(ignored) == 1 and ignored[0].startswith("The configured default fraction was ignored")


def test_a_setting_like_none_of_ours_is_reported_with_the_list_and_no_guess():
    _, problems = configured(colour="blue")
    assert problems == [
        "c.GpumemConfig.colour in the IPython configuration was ignored: it is not a jupyter-gpumem setting; "
        "The settings are fraction, limit, growth, gpus, threads, max_fraction, max_limit, privacy."
    ]


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (["x" * 26, "y" * 26], repr(["x" * 26, "y" * 26])),  # 60 characters: shown whole
        (["x" * 26, "y" * 27], repr(["x" * 26, "y" * 27])[:57] + "..."),  # 61: cut, and says so
    ],
)
def test_a_long_value_of_the_wrong_type_is_shown_cut_to_sixty_characters(value, shown):
    _, problems = configured(threads=value)
    assert problems[0].startswith(f"c.GpumemConfig.threads = {shown} in the IPython configuration was ignored")


def test_a_limit_of_one_byte_is_a_number_of_bytes_and_zero_is_refused():
    assert policy_of(limit=1).limit_bytes == 1
    assert configured(limit=0)[0].defaults()[1] == [
        "The configured default limit was ignored: limit=0 must be above zero; use limit=6GiB (a size with a unit: "
        "GiB, MiB, GB or MB)."
    ]


# ---------------------------------------------------------------- where a ceiling and a warning come from


def test_a_ceiling_repeated_in_a_file_is_named_where_it_was_first_set(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_GPUMEM_MAX_FRACTION", "0.25")
    ceiling, _ = loaded_ceiling(kernel_shell(tmp_path, system="c.GpumemConfig.max_fraction = 0.25\n"))
    # The spawner's, read first: the file neither lowers it nor takes its name.
    assert ceiling.max_fraction_origin == "set by JUPYTER_GPUMEM_MAX_FRACTION in the environment"


def test_a_blank_ceiling_in_one_file_leaves_the_next_files_ceiling_in_force(tmp_path):
    shell = kernel_shell(
        tmp_path, system="c.GpumemConfig.max_limit = None\n", user="c.GpumemConfig.max_fraction = 0.2\n"
    )
    assert loaded_ceiling(shell) == (Ceiling(max_fraction=0.2), [])


def test_a_ceiling_set_with_config_after_loading_is_named_as_the_ipython_configuration(tmp_path):
    shell = kernel_shell(tmp_path)
    shell.config.GpumemConfig.max_fraction = 0.2  # %config GpumemConfig.max_fraction = 0.2 before %load_ext
    ceiling, _ = loaded_ceiling(shell)
    assert ceiling.max_fraction_origin == "set in the IPython configuration"
    with pytest.raises(PolicyError, match=r"\), set in the IPython configuration; ask for less\.$"):
        make_plan(Policy(fraction=0.4), snapshot_of(8 * GiB), lambda device: OVERHEAD, ceiling)


def test_a_ceiling_in_bytes_on_the_kernels_command_line_is_read_as_a_number_of_bytes(tmp_path):
    shell = kernel_shell(tmp_path, argv=(f"--GpumemConfig.max_limit={6 * GiB}",))
    assert loaded_ceiling(shell) == (Ceiling(max_limit_bytes=6 * GiB), [])  # as text it would be a size without unit


def test_an_append_to_a_setting_in_a_profile_leaves_the_spawners_value(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_GPUMEM_GPUS", "1")
    monkeypatch.setenv("JUPYTER_GPUMEM_MAX_LIMIT", "6GiB")
    user = "c.GpumemConfig.gpus.append(0)\nc.GpumemConfig.max_limit.append(1)\n"
    config, problems = load_config(kernel_shell(tmp_path, user=user))
    # traitlets appends only to a list; these defaults are the variables' text, which it leaves as it is.
    assert problems == [] and config.defaults() == (Policy(gpus=("1",)), [])
    assert config.ceiling() == (Ceiling(max_limit_bytes=6 * GiB), [])


def test_a_file_that_loads_a_profiles_file_counts_with_ipythons_loader(tmp_path, monkeypatch):
    from IPython.core.application import ProfileAwareConfigLoader

    class IPythonLike(Application):  # IPKernelApp reads its files with IPython's loader
        python_config_loader_class = ProfileAwareConfigLoader

    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipythondir"))
    profile = tmp_path / "ipythondir" / "profile_gpu"
    profile.mkdir(parents=True)
    (profile / "ipython_kernel_config.py").write_text("c.GpumemConfig.max_fraction = 0.25\n")
    (tmp_path / "ipython_kernel_config.py").write_text("load_subconfig('ipython_kernel_config.py', profile='gpu')\n")
    application = IPythonLike()
    application.load_config_file("ipython_kernel_config.py", path=[str(tmp_path)])
    shell = Shell(parent=application)
    shell.config.GpumemConfig.max_fraction = 0.5  # what precedence alone would leave, lifted with %config
    assert loaded_ceiling(shell) == (Ceiling(max_fraction=0.25), [])


def test_a_file_that_cannot_be_read_again_says_why(tmp_path):
    shell = kernel_shell(tmp_path, system="c.GpumemConfig.max_fraction = 0.25\n")
    (tmp_path / "etc" / "ipython" / "ipython_kernel_config.py").write_text("c.GpumemConfig.max_fraction = (\n")
    _, problems = loaded_ceiling(shell)
    assert "could not be read again to find the ceilings it sets (SyntaxError: " in problems[0]


def test_a_file_that_cannot_be_read_again_makes_the_privacy_the_most_private(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_GPUMEM_PRIVACY", "list")
    shell = kernel_shell(tmp_path, system="c.GpumemConfig.privacy = 'list'\n")
    (tmp_path / "etc" / "ipython" / "ipython_kernel_config.py").write_text("c.GpumemConfig.privacy = (\n")
    config, _ = load_config(shell)
    assert config.privacy_level() == ("aggregate", [])  # it may have said aggregate; ceiling() says why


def warnings_in(log: logging.Logger) -> list[str]:
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    log.addHandler(handler)
    return records  # type: ignore[return-value]


def test_in_a_kernel_a_bad_ceiling_and_privacy_are_logged_once_on_the_kernels_own_log(tmp_path, monkeypatch):
    # As in a kernel, the package's logger reaches no handler. Set here, not in a fixture: pytest attaches its
    # capture to every logger that does not propagate when the test's call begins.
    monkeypatch.setattr(package_log, "propagate", False)
    assert not package_log.hasHandlers()
    monkeypatch.setenv("JUPYTER_GPUMEM_MAX_FRACTION", "half")
    monkeypatch.setenv("JUPYTER_GPUMEM_PRIVACY", "everything")
    shell = kernel_shell(tmp_path)
    records = warnings_in(shell.parent.log)  # the kernel's stderr: the server's log, not the notebook
    config, _ = load_config(shell)
    for _ in range(2):
        (_, ceiling_problems), (_, privacy_problems) = config.ceiling(), config.privacy_level()
    assert [r.getMessage() for r in records] == [  # type: ignore[attr-defined]
        f"jupyter-gpumem: {ceiling_problems[0]}",
        f"jupyter-gpumem: {privacy_problems[0]}",
    ]
    assert privacy_problems[0].startswith("JUPYTER_GPUMEM_PRIVACY=everything in the environment was read as aggregate")
