"""The `%gpumem` magic without a kernel, on a Controller of controller_fixtures.py: what a user reads
for each kind of input, and that bad input changes nothing."""

from __future__ import annotations

import pytest
from controller_fixtures import GPU_A, Framework, Machine, a100, gpumem, magics_on, make

from jupyter_gpumem.gpu.model import Snapshot

__all__ = ["gpumem", "make"]  # the fixtures


@pytest.mark.parametrize(
    ("line", "sentence"),
    [
        ("fraction=2", "fraction=2 is outside (0, 1]; use fraction=0.4 (a number above 0 and at most 1)."),
        ("limit=lots", "limit=lots is not a size; use limit=6GiB"),
        ("fraction=0.4 limit=6GiB", "fraction=0.4 and limit=6GiB contradict each other"),
        ("gpus=7", "gpus=7: there is no GPU 7 here (GPUs on this machine: 0; see %gpumem status)."),
        ("colour=red", "colour= is not a %gpumem setting"),
        ("fraction=0.4 fraction=0.5", "fraction= is given twice"),
        ('fraction="0.4', "%gpumem could not read its arguments (No closing quotation)."),
        ("frobnicate", "%gpumem does not know 'frobnicate'. It accepts: status, cells, explain, free, reset"),
        ("status now", "%gpumem does not know 'status now'."),
    ],
)
def test_bad_input_is_one_sentence_on_stderr_and_changes_nothing(gpumem, line, sentence):
    gpumem("fraction=0.3")
    before = gpumem.control.state
    out, err = gpumem(line)
    assert out == "" and sentence in err and err.count("\n") == 1
    assert gpumem.control.state is before


def test_help_lists_every_subcommand_and_setting_without_internal_tags(gpumem):
    out, err = gpumem("--help")
    assert err == "" and out == gpumem("help")[0] == gpumem("-h")[0]
    for word in ("status", "explain", "reset", "fraction=", "limit=", "growth=", "gpus=", "threads=", "strict=off"):
        assert word in out
    assert "S1" not in out and "S2" not in out and "S5" not in out  # the project's story tags mean nothing to users


def test_no_argument_is_status_and_says_the_policy(gpumem):
    gpumem("fraction=0.4")
    out, err = gpumem("")
    assert err == "" and out == gpumem("status")[0]
    assert "GPU 0  NVIDIA A100-SXM4-40GB" in out
    assert "Policy: fraction=0.4, recorded and waiting for the framework's import." in out


def test_status_without_a_driver_is_the_one_sentence(make, capsys):
    control = make(Machine(), Framework("TensorFlow"))
    control.snapshot = lambda cpu_window_s=0.0: Snapshot(0.0, 1, problem="No NVIDIA driver found (test).")
    magics_on(control).gpumem("status")
    assert capsys.readouterr().out == "No NVIDIA driver found (test).\n"


def test_reset_forgets_and_then_has_nothing_to_forget(gpumem):
    gpumem("fraction=0.4")
    assert gpumem("reset")[0] == "jupyter-gpumem: forgot fraction=0.4; TensorFlow takes everything.\n"
    assert gpumem("reset")[0] == "jupyter-gpumem: no policy is recorded; nothing to forget.\n"


def test_explain_without_a_budget_says_what_the_framework_takes(gpumem):
    out, _ = gpumem("explain")
    assert out.startswith("No budget is set, so TensorFlow takes everything.")
    assert "GPU 0 NVIDIA A100-SXM4-40GB: this kernel uses 900 MiB of 40960 MiB." in out


def test_a_framework_that_started_first_is_too_late_and_nothing_changes(make, capsys):
    tf = Framework("TensorFlow")
    tf.is_imported = tf.started = True
    control = make(Machine(a100(0, GPU_A)), tf)
    magics_on(control).gpumem("fraction=0.4")
    out = capsys.readouterr().out
    assert out.startswith("Too late: TensorFlow has already started in this kernel")
    assert "  In force: TensorFlow: as started" in out and control.state.policy.is_empty
