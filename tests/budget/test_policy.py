"""`%gpumem key=value` parsing: every bad input is one sentence naming the argument."""

from __future__ import annotations

import pytest

from jupyter_gpumem.budget.policy import Policy, PolicyError, parse
from jupyter_gpumem.units import GiB, MiB


def test_s1_and_s2_arguments_parse():
    assert parse(["fraction=0.5", "gpus=1"]) == Policy(fraction=0.5, gpus=("1",))
    assert parse(["threads=1", "growth=on"]) == Policy(intra_threads=1, inter_threads=1, growth=True)


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("limit=6GiB", Policy(limit_bytes=6 * GiB)),
        ("limit=512MiB", Policy(limit_bytes=512 * MiB)),
        ("limit=4GB", Policy(limit_bytes=4 * 10**9)),
        ("limit=1.5GiB", Policy(limit_bytes=int(1.5 * GiB))),
        ("fraction=1", Policy(fraction=1.0)),
        ("fraction=40%", Policy(fraction=0.4)),
        ("growth=off", Policy(growth=False)),
        ("gpus=0,2", Policy(gpus=("0", "2"))),
        ("gpus=GPU-b2b2b2b2-0000-4000-8000-000000000002", Policy(gpus=("GPU-b2b2b2b2-0000-4000-8000-000000000002",))),
        ("gpus=none", Policy(gpus=())),
        ("gpus=MIG-c7c7c7c7-0000-4000-8000-000000000007", Policy(gpus=("MIG-c7c7c7c7-0000-4000-8000-000000000007",))),
        ("intra=4", Policy(intra_threads=4)),
        ("inter=2", Policy(inter_threads=2)),
        ("threads=3", Policy(intra_threads=3, inter_threads=3)),
        ("framework=tensorflow", Policy(framework="tensorflow")),
        ("strict=off", Policy(strict=False)),
    ],
)
def test_each_accepted_form(word, expected):
    assert parse([word]) == expected


@pytest.mark.parametrize(
    ("words", "names"),
    [
        (["fraction=0"], "fraction=0 is outside (0, 1]"),
        (["fraction=1.5"], "fraction=1.5 is outside (0, 1]"),
        (["fraction=-0.2"], "fraction=-0.2 is outside (0, 1]"),
        (["fraction=half"], "fraction=half is not a number"),
        (["fraction=nan"], "fraction=nan is outside (0, 1]"),
        (["limit=0GiB"], "limit=0GiB must be above zero"),
        (["limit=-2GiB"], "limit=-2GiB must be above zero"),
        (["limit=6"], "limit=6 is not a size"),
        (["limit=lots"], "limit=lots is not a size"),
        (["growth=maybe"], "growth=maybe is not on or off"),
        (["threads=0"], "threads=0 is not a whole number from 1 to 1024"),
        (["threads=1.5"], "threads=1.5 is not a whole number"),
        (["gpus=first"], "gpus=first names no GPU in 'first'"),
        (["gpus=1,1"], "gpus=1,1 names a GPU twice"),
        (["framework=mx/net"], "framework=mx/net is not a framework's name"),
        (["colour=blue"], "colour= is not a %gpumem setting"),
        (["fraction"], "'fraction' is not key=value"),
        (["fraction="], "'fraction=' is not key=value"),
        (["fraction=0.4", "fraction=0.5"], "fraction= is given twice"),
        (["fraction=0.4", "limit=6GiB"], "fraction=0.4 and limit=6GiB contradict each other"),
        (["threads=2", "intra=4"], "threads=2 and intra=4 contradict each other"),
        (["threads=2", "inter=1"], "threads=2 and inter=1 contradict each other"),
        (["gpus=none", "fraction=0.5"], "gpus=none and fraction=0.5 contradict each other"),
        (["gpus=none", "limit=2GiB"], "gpus=none and limit=2GiB contradict each other"),
    ],
)
def test_bad_input_is_one_sentence_naming_the_argument(words, names):
    with pytest.raises(PolicyError) as refused:
        parse(words)
    message = str(refused.value)
    assert names in message
    assert message.endswith(".") and "\n" not in message


def test_later_settings_combine_and_a_fraction_replaces_a_limit():
    first = parse(["limit=6GiB", "threads=2"])
    assert first.then(parse(["growth=on"])) == Policy(
        limit_bytes=6 * GiB, intra_threads=2, inter_threads=2, growth=True
    )
    assert first.then(parse(["fraction=0.3"])) == Policy(fraction=0.3, intra_threads=2, inter_threads=2)


def test_describe_gives_back_the_arguments():
    for line in ("fraction=0.5 gpus=1", "limit=6144MiB growth=on threads=1", "gpus=none intra=4 strict=off"):
        assert parse(line.split()).describe() == line


@pytest.mark.parametrize(("value", "expected"), [("auto", "auto"), ("TensorFlow", "tensorflow"), ("mxnet", "mxnet")])
def test_a_frameworks_name_is_taken_in_lower_case_and_left_to_the_registry(value, expected):
    # Which names exist is the adapters' registry's to say (tests/frameworks/test_lists.py): not this layer's.
    assert parse([f"framework={value}"]).framework == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [(v, True) for v in ("on", "true", "yes", "1", "ON")] + [(v, False) for v in ("off", "false", "no", "0", "Off")],
)
def test_switches_take_the_usual_spellings_of_on_and_off(value, expected):
    assert parse([f"growth={value}"]).growth is expected
    assert parse([f"strict={value}"]).strict is expected


@pytest.mark.parametrize(
    ("word", "sentence"),
    [
        ("fraction=half", "fraction=half is not a number; use fraction=0.4 (a number above 0 and at most 1)."),
        ("fraction=0.5X", "fraction=0.5X is not a number; use fraction=0.4 (a number above 0 and at most 1)."),
        ("limit=lots", "limit=lots is not a size; use limit=6GiB (a size with a unit: GiB, MiB, GB or MB)."),
        ("growth=maybe", "growth=maybe is not on or off; use growth=on or growth=off."),
        ("strict=maybe", "strict=maybe is not on or off; use strict=on or strict=off."),
        ("gpus=first", "gpus=first names no GPU in 'first'; use gpus=1, gpus=0,2, gpus=GPU-<uuid> or gpus=none."),
        (
            "threads=two",
            "threads=two is not a whole number from 1 to 1024; use threads=2 (a whole number from 1 to 1024).",
        ),
        ("intra=0", "intra=0 is not a whole number from 1 to 1024; use intra=2 (a whole number from 1 to 1024)."),
        ("inter=-1", "inter=-1 is not a whole number from 1 to 1024; use inter=1 (a whole number from 1 to 1024)."),
        (
            "framework=mx/net",
            "framework=mx/net is not a framework's name; use framework=auto or a framework's name (%gpumem --help "
            "lists them).",
        ),
    ],
)
def test_a_refusal_shows_the_accepted_form_in_full(word, sentence):
    with pytest.raises(PolicyError) as refused:
        parse([word])
    assert str(refused.value) == sentence


def test_a_later_call_keeps_the_framework_and_strict_off_unless_it_sets_them():
    first = parse(["framework=jax", "strict=off", "fraction=0.5"])
    assert first.then(parse(["growth=on"])) == Policy(fraction=0.5, growth=True, framework="jax", strict=False)
    assert first.then(parse(["framework=torch"])).framework == "torch"
    assert Policy().then(parse(["strict=off"])).strict is False


def test_describe_names_every_setting_and_says_when_nothing_is_set():
    for line in ("growth=off", "intra=4 inter=2 framework=jax", "limit=2GiB gpus=0,2"):
        assert parse(line.split()).describe() == line
    assert Policy().describe() == "(nothing set)"
    assert Policy(limit_bytes=6 * GiB).describe() == "limit=6144MiB"  # from the configuration: no typed form


def test_an_unknown_setting_is_refused_with_the_list_of_settings():
    with pytest.raises(PolicyError) as refused:
        parse(["colour=blue"])
    sentence = str(refused.value)
    assert sentence.startswith(
        "colour= is not a %gpumem setting; the settings are fraction, limit, growth, gpus, threads, intra, inter, "
        "framework, strict"
    )
    assert sentence.endswith(" (see %gpumem --help).")
