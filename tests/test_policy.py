"""`%gpumem key=value` parsing: every bad input is one sentence naming the argument."""

from __future__ import annotations

import pytest

from jupyter_gpumem.policy import Policy, PolicyError, parse
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
        ("intra=4", Policy(intra_threads=4)),
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
        (["threads=0"], "threads=0 is not a whole number of at least 1"),
        (["threads=1.5"], "threads=1.5 is not a whole number"),
        (["gpus=first"], "gpus=first names no GPU in 'first'"),
        (["gpus=1,1"], "gpus=1,1 names a GPU twice"),
        (["framework=mxnet"], "framework=mxnet is not a framework jupyter-gpumem supports"),
        (["colour=blue"], "colour= is not a %gpumem setting"),
        (["fraction"], "'fraction' is not key=value"),
        (["fraction="], "'fraction=' is not key=value"),
        (["fraction=0.4", "fraction=0.5"], "fraction= is given twice"),
        (["fraction=0.4", "limit=6GiB"], "fraction=0.4 and limit=6GiB contradict each other"),
        (["threads=2", "intra=4"], "threads=2 and intra=4 contradict each other"),
        (["gpus=none", "fraction=0.5"], "gpus=none and fraction=0.5 contradict each other"),
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
