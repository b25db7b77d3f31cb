"""The protocol fixtures (tests/fixtures/protocol/) are what the kernel emits and accepts; the
TypeScript tests (tests/ts/) parse the very same files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from controller_fixtures import GPU_A, Framework, Machine, a100, make
from protocol_fixtures import MESSAGES

from jupyter_gpumem._version import __version__
from jupyter_gpumem.budget.policy import parse
from jupyter_gpumem.kernel import protocol
from jupyter_gpumem.units import MiB
from jupyter_gpumem.wire import comm

__all__ = ["make"]  # the fixture

PROTOCOL_FIXTURES = Path(__file__).parents[1] / "fixtures" / "protocol"
MALFORMED = sorted((PROTOCOL_FIXTURES / "malformed").glob("*.json"))


def fixture(name):
    return json.loads((PROTOCOL_FIXTURES / name).read_text())


@pytest.mark.parametrize("name", sorted(MESSAGES))
def test_the_encoder_emits_each_fixture_exactly(name):
    expected = fixture(name)
    if "package_version" in expected:  # the hello: written by the release that wrote it
        expected["package_version"] = protocol.__version__
    assert MESSAGES[name]() == expected, f"stale: PYTHONPATH=tests python tests/wire/write_samples.py writes {name}"


def test_every_fixture_the_encoder_emits_is_made_by_one_entry():
    written = {p.name for p in PROTOCOL_FIXTURES.glob("*.json")} - {"configure.json"}  # configure: the frontend's
    assert written == set(MESSAGES)


def test_the_hello_fixture_replays_history_without_process_tables():
    hello = fixture("hello.json")
    assert len(hello["history"]) == 2 and all("processes" not in g for s in hello["history"] for g in s["gpus"])


def test_the_s1_sample_says_budget_hidden_gpu_na_and_hostile_name_as_data():
    gpu0, gpu1 = fixture("sample.json")["sample"]["gpus"]
    assert gpu0["hidden"] and gpu0["budget_bytes"] is None
    assert gpu1["budget_bytes"] == 4096 * MiB and gpu1["own_bytes"] == 4200 * MiB
    assert [p["used_bytes"] for p in gpu1["processes"]][1] is None
    assert gpu1["processes"][2]["name"] == "<img src=x onerror=alert(1)>"


def test_the_s1_sample_splits_the_budget_and_says_why_it_is_over():
    gpu1 = fixture("sample.json")["sample"]["gpus"][1]
    # 4096 MiB budget = 3696 MiB pool + 400 MiB set aside; the kernel holds 4200 MiB: 504 MiB outside the pool.
    assert (gpu1["pool_bytes"], gpu1["pool_known"]) == (3696 * MiB, True)
    assert (gpu1["overhead_bytes"], gpu1["overhead_source"]) == (504 * MiB, "measured")
    assert gpu1["over_reason"] == (
        "CUDA context + cuDNN/cuBLAS: 504 MiB outside TensorFlow's limit, 104 MiB more than the 400 MiB set aside"
    )


def test_a_sample_names_several_imported_frameworks_as_a_code_and_one_by_its_name(make):
    machine = Machine(a100(0, GPU_A))
    tf, torch = Framework("TensorFlow"), Framework("PyTorch")
    tf.is_imported = True
    control = make(machine, tf, torch)
    control.request(parse(["fraction=0.4"]))
    one = protocol.sample_message(protocol.encode_sample(control.read(machine())))
    # One name is data, worded nowhere: no code beside it.
    assert (one["sample"]["framework"], one["sample"]["framework_said"]) == ("TensorFlow", None)
    torch.is_imported = True
    control._on_import(torch.module)
    both = protocol.sample_message(protocol.encode_sample(control.read(machine())))
    assert comm.MESSAGE.problem(both) is None
    # The English for readers of 0.2.0 and older, the code for a sidebar to word in its language.
    assert both["sample"]["framework"] == "TensorFlow and PyTorch"
    assert both["sample"]["framework_said"] == {
        "code": "frameworks_and",
        "values": {"names": ["TensorFlow"], "last": "PyTorch"},
    }


def test_the_configure_fixture_is_accepted():
    assert protocol.parse_request(fixture("configure.json")) == protocol.Configure(2.0, 1800.0)


@pytest.mark.parametrize("path", MALFORMED, ids=[p.stem for p in MALFORMED])
def test_every_malformed_fixture_is_refused_with_a_reason(path):
    with pytest.raises(protocol.ProtocolError, match=r"^message"):
        protocol.parse_request(json.loads(path.read_text()))


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"interval_s": 0.1}, "message.interval_s must be bigger than or equal to 0.2"),
        ({"history_s": "1800"}, "message.history_s must be number"),
        ({"type": "hello"}, "message.type must be same as const definition: configure"),
        ({"protocol": "1"}, "message.protocol must be same as const definition: 1"),
        (
            {"protocol": 2},
            f"message.protocol is 2: the sidebar speaks protocol 2; this kernel's jupyter-gpumem {__version__} reads "
            "protocol 1: upgrade jupyter-gpumem where this kernel runs (%pip install -U jupyter-gpumem)",
        ),
        (
            {"protocol": 0},
            f"message.protocol is 0: the sidebar speaks protocol 0; this kernel's jupyter-gpumem {__version__} reads "
            "protocol 1: upgrade jupyter-gpumem where JupyterLab runs",
        ),
    ],
)
def test_a_configure_the_schema_does_not_admit_is_refused_saying_where(change, reason):
    with pytest.raises(protocol.ProtocolError) as refused:
        protocol.parse_request({**fixture("configure.json"), **change})
    assert str(refused.value) == reason


@pytest.mark.parametrize(
    ("interval_s", "history_s", "reason"),
    [
        (0.1, 60, "interval_s=0.1 is outside 0.2-10 s"),
        (11, 60, "interval_s=11 is outside 0.2-10 s"),
        (1, 5, "history_s=5 is outside 10-86400 s"),
        ("1", 60, "interval_s must be a number of seconds, not '1'"),
        (True, 60, "interval_s must be a number of seconds, not True"),
        (float("nan"), 60, "interval_s must be a number of seconds, not nan"),
    ],
)
def test_settings_out_of_range_are_refused(interval_s, history_s, reason):
    with pytest.raises(protocol.ProtocolError, match=reason):
        protocol.check_settings(interval_s, history_s)
