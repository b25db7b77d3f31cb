"""The Controller without a kernel: its State is the one truth every surface reads, decided on the main
thread; the sampler's read() only uses it (controller_fixtures.py: the frameworks and the machine)."""

from __future__ import annotations

import importlib
import json
import sys
import threading
from dataclasses import replace
from typing import Any

import pytest
from controller_fixtures import GPU_A, GPU_B, Framework, Machine, a100, make

from jupyter_gpumem.budget.environ import EnvironmentChanges
from jupyter_gpumem.budget.frameworks import Allocator
from jupyter_gpumem.budget.overhead import Overhead
from jupyter_gpumem.budget.plan import make_plan
from jupyter_gpumem.budget.policy import PolicyError, parse
from jupyter_gpumem.kernel import protocol
from jupyter_gpumem.kernel.importhook import ImportWatch
from jupyter_gpumem.render import messages
from jupyter_gpumem.render.explain import explain
from jupyter_gpumem.units import GiB, MiB

__all__ = ["make"]  # the fixture

ESTIMATE = Overhead(400 * MiB, "estimated", "a test figure")


def test_a_lost_gpu_keeps_the_budget_on_the_healthy_ones(make):
    machine = Machine(a100(0, GPU_A, own_mib=11980), a100(1, GPU_B))
    tf = Framework("TensorFlow")
    tf.is_imported = True
    control = make(machine, tf)
    control.request(parse(["limit=10GiB"]))
    machine.devices = (machine.devices[0], a100(1, GPU_B, lost=True))  # GPU 1 falls off the bus
    reading = control.read(machine())
    gpu0, gpu1 = protocol.encode_sample(reading)["gpus"]
    assert (gpu0["budget_bytes"], gpu0["own_bytes"], gpu0["in_force"]) == (10 * GiB, 11980 * MiB, True)
    assert (gpu1["lost"], gpu1["own_bytes"], gpu1["in_force"]) == (True, None, False)
    assert "Now on GPU 0: 11980 MiB as nvidia-smi counts it, 117% of the 10240 MiB budget" in "\n".join(
        control.status_lines(reading)
    )


def test_a_policy_made_while_a_gpu_is_lost_plans_the_others_and_says_so(make):
    machine = Machine(a100(0, GPU_A), a100(1, GPU_B, lost=True))
    control = make(machine, Framework("TensorFlow"))
    lines = control.request(parse(["fraction=0.5"]))
    plan = control.state.plan
    assert [g.uuid for g in plan.gpus] == [GPU_A] and [d.uuid for d in plan.lost] == [GPU_B]
    assert "  GPU 1 NVIDIA A100-SXM4-40GB: lost (fell off the bus), so no budget there" in lines
    with pytest.raises(PolicyError, match="GPU 1 is lost"):
        control.request(parse(["gpus=1"]))  # asking for it by name is still refused


def test_every_surface_agrees_when_the_framework_sees_no_gpu(make):
    machine = Machine(a100(0, GPU_A, own_mib=900))
    tf = Framework("TensorFlow", sees_gpu=False)
    control = make(machine, tf)
    control.request(parse(["fraction=0.4"]))
    tf.is_imported = True
    control._on_import(tf.module)  # what the import watch calls when `import` completes
    reason = "TensorFlow 1.0 is a CPU-only build, so the budget is not in force."
    assert control.state.applied and control.state.no_gpu == reason and control.state.in_force == frozenset()
    reading = control.read(machine())
    status = "\n".join(control.status_lines(reading))
    assert "in force on no GPU: " + reason in status and "in force in" not in status
    told = "\n".join(explain(reading))
    assert "NOT in force on any GPU: " + reason in told and "of 40960 MiB holds" not in told
    sample = protocol.encode_sample(reading)
    assert (sample["policy_state"], sample["policy_note"]) == ("not_in_force", reason)
    assert [g["in_force"] for g in sample["gpus"]] == [False]


def test_the_budget_is_in_force_only_where_the_framework_holds_it(make):
    machine = Machine(a100(0, GPU_A, own_mib=900), a100(1, GPU_B))
    tf = Framework("TensorFlow")
    tf.is_imported = True
    control = make(machine, tf)
    lines = control.request(parse(["fraction=0.4", "gpus=1"]))
    assert lines[0] == "jupyter-gpumem: applied fraction=0.4 gpus=1 to TensorFlow."
    sample = protocol.encode_sample(control.read(machine()))
    assert [(g["hidden"], g["in_force"]) for g in sample["gpus"]] == [(True, False), (False, True)]
    assert (sample["policy_state"], sample["policy_note"]) == ("in_force", "in force in TensorFlow")


def test_a_recorded_policy_is_not_in_force_and_says_when_it_will_be(make):
    machine = Machine(a100(0, GPU_A, own_mib=30000))
    control = make(machine, Framework("TensorFlow"))
    control.request(parse(["fraction=0.5"]))
    sample = protocol.encode_sample(control.read(machine()))
    assert sample["policy_state"] == "recorded"
    assert sample["policy_note"] == 'applies when "import jupyter_gpumem_test_tensorflow" completes'
    gpu = sample["gpus"][0]
    assert not gpu["in_force"]
    assert gpu["over_reason"] == "the policy is not in force: it applies when TensorFlow is imported"


def test_the_sampler_thread_only_reads_the_published_state(make):
    machine = Machine(a100(0, GPU_A, own_mib=900))
    tf, torch = Framework("TensorFlow"), Framework("PyTorch")
    tf.is_imported = torch.is_imported = True
    asked: list[str] = []
    control = make(machine, tf, torch)
    control._referenced = lambda module: asked.append(module) or True  # the notebook scan (user_ns)
    control.request(parse(["fraction=0.4"]))
    state, before = control.state, len(asked)
    assert before > 0  # framework=auto with two imported: the main thread looked once
    readings = []
    thread = threading.Thread(target=lambda: readings.extend(control.read(machine()) for _ in range(20)))
    thread.start()
    thread.join()
    assert len(asked) == before and control.state is state  # no scan, no new state from the sampler
    assert all(r.state is state for r in readings) and list(control.adapters) == ["tensorflow", "pytorch"]


def test_a_reading_keeps_the_state_it_started_with(make):
    machine = Machine(a100(0, GPU_A))
    control = make(machine, Framework("TensorFlow"))
    before = control.state
    control.request(parse(["fraction=0.4"]))
    assert before.policy.is_empty and before.plan is None  # published states are never changed
    assert control.state is not before and control.state.policy.fraction == 0.4


def test_two_frameworks_started_add_their_pools_on_each_gpu(make):
    machine = Machine(a100(0, GPU_A, own_mib=9000))
    tf, torch = Framework("TensorFlow"), Framework("PyTorch")
    tf.is_imported = torch.is_imported = tf.started = torch.started = True
    tf.pools, torch.pools = (Allocator(1 * GiB, 2 * GiB, 4 * GiB),), (Allocator(1 * GiB, 1 * GiB, None),)
    control = make(machine, tf, torch)
    reading = control.read(machine())
    assert reading.allocators == {GPU_A: Allocator(2 * GiB, 3 * GiB, None)}  # one pool unknown: the sum is too


def test_a_size_is_echoed_as_the_user_typed_it(make):
    control = make(Machine(a100(0, GPU_A)), Framework("TensorFlow"))
    with pytest.raises(PolicyError, match=r"^limit=999TiB is more than GPU 0's 40960 MiB"):
        control.request(parse(["limit=999TiB"]))
    control.request(parse(["limit=6GiB"]))
    assert control.state.policy.describe() == "limit=6GiB"


def test_reset_with_a_ceiling_says_the_ceiling_is_the_budget(make):
    machine = Machine(a100(0, GPU_A))
    control = make(machine, Framework("TensorFlow"), max_fraction="0.25")
    control.load_defaults()
    control.request(parse(["fraction=0.2"]))
    lines = control.reset()
    assert lines == [
        "jupyter-gpumem: forgot fraction=0.2; this server's ceiling (0.25 of each GPU) is the budget, applied when "
        "the framework is imported."
    ]
    assert control.state.plan is not None and control.state.plan.gpus[0].budget_bytes == 10 * GiB


def test_reset_puts_the_environment_back(make):
    environment = {"CUDA_VISIBLE_DEVICES": "0"}
    control = make(Machine(a100(0, GPU_A), a100(1, GPU_B)), Framework("TensorFlow"))
    control._environment = EnvironmentChanges(environment)
    control.request(parse(["gpus=1"]))
    assert environment["CUDA_VISIBLE_DEVICES"] == GPU_B and environment["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    control.reset()
    assert environment == {"CUDA_VISIBLE_DEVICES": "0"}


def test_too_late_changes_nothing(make):
    tf = Framework("TensorFlow")
    tf.is_imported = tf.started = True
    control = make(Machine(a100(0, GPU_A)), tf)
    before = control.state
    lines = control.request(parse(["fraction=0.4"]))
    assert lines[0].startswith("Too late: TensorFlow has already started") and control.state is before
    assert tf.applied == []


def test_under_auto_a_second_framework_imported_later_gets_the_plan_too(make, capsys):
    machine = Machine(a100(0, GPU_A))
    tf, torch = Framework("TensorFlow"), Framework("PyTorch")
    tf.is_imported = True
    control = make(machine, tf, torch)
    control.request(parse(["fraction=0.4"]))
    capsys.readouterr()
    torch.is_imported = True
    control._on_import(torch.module)
    assert control.state.adapters == (tf, torch) and len(torch.applied) == 1
    assert control.state.frameworks == control.state.framework == "TensorFlow and PyTorch"
    assert capsys.readouterr().out.startswith("jupyter-gpumem: applied fraction=0.4 to PyTorch too. TensorFlow")


def test_two_frameworks_imported_share_a_recorded_ceiling_and_are_named_together(make):
    tf, torch = Framework("TensorFlow"), Framework("PyTorch")
    tf.is_imported = torch.is_imported = True
    control = make(Machine(a100(0, GPU_A)), tf, torch, max_fraction=0.5)
    control.load_defaults()  # a ceiling alone: applied at once, both imported
    control.request(parse(["fraction=0.3"]))
    assert control.state.together and control.state.framework == "TensorFlow and PyTorch"


def test_an_import_without_a_policy_only_renames_the_frameworks(make):
    tf, torch = Framework("TensorFlow"), Framework("PyTorch")
    control = make(Machine(a100(0, GPU_A)), tf, torch)
    assert control.state.framework is None and control.state.frameworks == "TensorFlow or PyTorch"
    torch.is_imported = True
    control._on_import(torch.module)
    assert control.state.framework == "PyTorch" and torch.applied == []
    assert control.state.takes == "PyTorch takes everything"


def test_the_import_watch_fires_once_after_the_module_ran(tmp_path, monkeypatch):
    (tmp_path / "gpumem_watched_module.py").write_text("VALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: list[Any] = []
    watch = ImportWatch(lambda module: seen.append((module, sys.modules[module].VALUE)))
    watch.watch(["gpumem_watched_module"])
    try:
        assert importlib.util.find_spec("gpumem_watched_module") is not None and seen == []  # finding runs nothing
        importlib.import_module("gpumem_watched_module")
        assert seen == [("gpumem_watched_module", 42)] and watch not in sys.meta_path
    finally:
        watch.stop()
        sys.modules.pop("gpumem_watched_module", None)


def test_the_status_of_no_policy_says_what_the_framework_takes(make):
    control = make(Machine(a100(0, GPU_A)), Framework("TensorFlow"))
    reading = control.read(control.snapshot())
    assert messages.status(reading.state, reading) == ["Policy: none set, so TensorFlow takes everything."]
    assert protocol.encode_sample(reading)["takes"] == "TensorFlow takes everything"


def test_configured_defaults_are_recorded_at_load_and_say_where_they_came_from(make):
    control = make(Machine(a100(0, GPU_A)), Framework("TensorFlow"), fraction=0.4)
    lines = control.load_defaults()
    assert lines[0].startswith("jupyter-gpumem: fraction=0.4 recorded (configured defaults).")
    assert control.state.plan is not None and control.state.policy.fraction == 0.4


def test_nothing_configured_records_nothing_at_load(make):
    control = make(Machine(a100(0, GPU_A)), Framework("TensorFlow"))
    assert control.load_defaults() == [] and control.state.plan is None and not control.has_policy


def test_a_request_says_it_came_from_the_magic(make):
    control = make(Machine(a100(0, GPU_A)), Framework("TensorFlow"))
    assert control.request(parse(["fraction=0.4"]))[0].startswith("jupyter-gpumem: fraction=0.4 recorded (%gpumem).")


def test_the_same_policy_again_once_applied_changes_nothing_and_says_so(make):
    tf = Framework("TensorFlow")
    tf.is_imported = True
    control = make(Machine(a100(0, GPU_A)), tf)
    control.request(parse(["fraction=0.4"]))
    applied = control.state
    assert control.request(parse(["fraction=0.4"])) == [
        "jupyter-gpumem: fraction=0.4 is already in force; nothing to do."
    ]
    assert control.state is applied and len(tf.applied) == 1
    control.request(parse(["fraction=0.3"]))  # a different one is applied again (not started yet)
    assert len(tf.applied) == 2 and control.state.policy.fraction == 0.3


def test_a_framework_not_installed_says_the_gpu_choice_still_holds(make):
    tf = Framework("TensorFlow")
    tf.installed = False
    control = make(Machine(a100(0, GPU_A), a100(1, GPU_B)), tf)
    lines = control.request(parse(["gpus=1", "framework=tensorflow"]))
    assert "TensorFlow is not installed in this kernel's environment; the GPU selection" in lines[0]


def test_with_several_installed_and_none_imported_the_plan_sets_aside_the_first_ones_libraries(make):
    control = make(Machine(a100(0, GPU_A)), Framework("TensorFlow"), Framework("PyTorch"))
    lines = control.request(parse(["fraction=0.4"]))
    assert "None of TensorFlow and PyTorch is imported yet" in lines[0]
    overhead = control.state.plan.gpus[0].overhead
    assert overhead.basis.startswith("TensorFlow on Ampere") and overhead.bytes == (350 + 100) * MiB


def test_a_framework_imported_but_not_started_is_not_asked_for_its_allocator(make):
    machine = Machine(a100(0, GPU_A, own_mib=900))
    tf = Framework("TensorFlow")
    tf.is_imported = True
    tf.pools = (Allocator(GiB, GiB, 2 * GiB),)  # what it would say; asking could start it
    control = make(machine, tf)
    reading = control.read(machine())
    assert reading.allocators == {} and not reading.started


def test_under_a_named_framework_another_ones_import_gets_nothing(make):
    tf, torch = Framework("TensorFlow"), Framework("PyTorch")
    tf.is_imported = True
    control = make(Machine(a100(0, GPU_A)), tf, torch)
    control.request(parse(["fraction=0.4", "framework=tensorflow"]))
    torch.is_imported = True
    control._on_import(torch.module)
    assert control.state.adapters == (tf,) and torch.applied == []


def test_a_framework_imported_inside_anothers_import_is_left_to_that_import(make, monkeypatch):
    tf, torch = Framework("TensorFlow"), Framework("PyTorch")
    control = make(Machine(a100(0, GPU_A)), tf, torch)
    control.request(parse(["fraction=0.4"]))
    monkeypatch.setattr("jupyter_gpumem.kernel.control.importing", lambda module: module == tf.module)
    torch.is_imported = True
    control._on_import(torch.module)  # while TensorFlow's own import is still running
    assert torch.applied == [] and not control.state.applied


def test_one_framework_that_uses_no_gpu_among_two_leaves_the_budget_in_force(make):
    machine = Machine(a100(0, GPU_A))
    tf, torch = Framework("TensorFlow", sees_gpu=False), Framework("PyTorch")
    tf.is_imported = torch.is_imported = True
    control = make(machine, tf, torch)
    control.request(parse(["fraction=0.4"]))
    assert control.state.no_gpu is None and control.state.in_force == frozenset({GPU_A})


def test_a_plan_sets_aside_what_an_earlier_kernel_measured_on_this_gpu_model(make):
    machine = Machine(a100(0, GPU_A))
    control = make(machine, Framework("TensorFlow"))
    key = "NVIDIA A100-SXM4-40GB | driver 550.54.15 | TensorFlow 1.0"
    control.calibration.path.write_text(json.dumps({"format": 1, "overhead_bytes": {key: 777 * MiB}}))
    control.request(parse(["fraction=0.5"]))
    (gpu,) = control.state.plan.gpus
    assert (gpu.overhead.source, gpu.overhead.bytes) == ("remembered", 777 * MiB)
    assert gpu.allocator_limit_bytes == 20 * GiB - 777 * MiB


def test_with_gpus_chosen_the_frameworks_first_gpu_is_the_chosen_one(make):
    machine = Machine(a100(0, GPU_A), a100(1, GPU_B, own_mib=3000))
    tf = Framework("TensorFlow")
    tf.is_imported = tf.started = True
    tf.pools = (Allocator(GiB, GiB, 2 * GiB),)  # its GPU:0 is NVML's GPU 1: CUDA_VISIBLE_DEVICES hid GPU 0
    control = make(machine, tf)
    control.state = replace(
        control.state, policy=parse(["gpus=1"]), plan=make_plan(parse(["gpus=1"]), machine(), lambda d: ESTIMATE)
    )
    assert list(control.read(machine()).allocators) == [GPU_B]


def test_a_framework_that_reports_fewer_gpus_than_nvml_still_reads(make):
    machine = Machine(a100(0, GPU_A, own_mib=3000), a100(1, GPU_B))
    tf = Framework("TensorFlow")
    tf.is_imported = tf.started = True
    tf.pools = (Allocator(GiB, GiB, 2 * GiB),)  # one GPU where NVML lists two
    reading = make(machine, tf).read(machine())
    assert list(reading.allocators) == [GPU_A]


def test_the_import_prints_what_was_applied_line_by_line(make, capsys):
    tf = Framework("TensorFlow")
    control = make(Machine(a100(0, GPU_A)), tf)
    control.request(parse(["fraction=0.4"]))
    tf.is_imported = True
    control._on_import(tf.module)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "jupyter-gpumem: applied fraction=0.4 to TensorFlow."
    assert printed[1].startswith("  GPU 0 NVIDIA A100-SXM4-40GB: budget 16384 MiB")


def test_two_frameworks_without_a_gpu_each_say_why(make):
    tf, torch = Framework("TensorFlow", sees_gpu=False), Framework("PyTorch", sees_gpu=False)
    tf.is_imported = torch.is_imported = True
    control = make(Machine(a100(0, GPU_A)), tf, torch)
    control.request(parse(["fraction=0.4"]))
    assert control.state.no_gpu == (
        "TensorFlow 1.0 is a CPU-only build, so the budget is not in force. "
        "PyTorch 1.0 is a CPU-only build, so the budget is not in force."
    )


def test_a_recorded_policy_says_when_it_applies(make):
    control = make(Machine(a100(0, GPU_A)), Framework("TensorFlow"))
    assert control.request(parse(["fraction=0.4"]))[0] == (
        "jupyter-gpumem: fraction=0.4 recorded (%gpumem). TensorFlow is not imported yet; the settings apply the "
        "moment `import jupyter_gpumem_test_tensorflow` completes."
    )
