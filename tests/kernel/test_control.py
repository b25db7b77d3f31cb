"""The Controller without a kernel: its State is the one truth every surface reads, decided on the main
thread; the sampler's read() only uses it (controller_fixtures.py: the frameworks and the machine)."""

from __future__ import annotations

import importlib
import json
import sys
import threading
import time
from dataclasses import replace
from typing import Any

import pytest
from controller_fixtures import GPU_A, GPU_B, OWN, Framework, Machine, a100, make
from traitlets.config import Config, Configurable

from jupyter_gpumem import i18n
from jupyter_gpumem.budget.environ import EnvironmentChanges
from jupyter_gpumem.budget.framework_interface import Allocator
from jupyter_gpumem.budget.overhead import Overhead
from jupyter_gpumem.budget.plan import make_plan
from jupyter_gpumem.budget.policy import PolicyError, parse
from jupyter_gpumem.budget.privacy import this_user
from jupyter_gpumem.frameworks import ADAPTERS
from jupyter_gpumem.gpu.model import GpuProcess, Snapshot
from jupyter_gpumem.kernel import protocol, runtime
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
    with pytest.raises(PolicyError, match=r"^limit=9TiB is more than GPU 0's 40960 MiB"):
        control.request(parse(["limit=9TiB"]))
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
    environment = {"CUDA_VISIBLE_DEVICES": "0,1"}
    control = make(Machine(a100(0, GPU_A), a100(1, GPU_B)), Framework("TensorFlow"))
    control._environment = EnvironmentChanges(environment)
    control.request(parse(["gpus=1"]))
    assert environment["CUDA_VISIBLE_DEVICES"] == GPU_B and environment["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    control.reset()
    assert environment == {"CUDA_VISIBLE_DEVICES": "0,1"}


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
    monkeypatch.undo()
    tf.is_imported = True
    control._on_import(tf.module)  # TensorFlow's import completes: the notebook's, so it gets the policy
    assert len(tf.applied) == 1 and control.state.applied


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


def test_the_status_says_since_when_the_policy_is_in_force(make):
    machine = Machine(a100(0, GPU_A))
    tf = Framework("TensorFlow")
    tf.is_imported = True
    control = make(machine, tf)
    control.request(parse(["fraction=0.4"]))
    applied_at = control.state.applied_at - 3600.0  # as if applied an hour ago
    control.state = replace(control.state, applied_at=applied_at)
    since = time.strftime("%H:%M:%S", time.localtime(applied_at))
    assert f"Policy: fraction=0.4, in force in TensorFlow since {since}." in control.status_lines(
        control.read(machine())
    )


def test_the_kernels_one_controller_is_made_once_from_the_shells_configuration(monkeypatch):
    monkeypatch.setattr(runtime, "_runtime", None)  # as in a kernel that has not loaded the extension
    shell = Configurable(config=Config({"GpumemConfig": {"colour": "blue"}}))
    made = runtime.runtime(shell).control
    try:
        assert runtime.runtime().control is made  # %gpumem, the sampler and the sidebar share it
        assert made.problems[0].startswith("c.GpumemConfig.colour in the IPython configuration was ignored")
        assert list(made.adapters) == list(ADAPTERS)  # every supported framework
        assert made._referenced("tensorflow")  # no notebook here: every imported framework counts
    finally:
        made.close()


def test_two_frameworks_imported_before_the_extension_loads_are_named_together(make):
    tf, torch = Framework("TensorFlow"), Framework("PyTorch")
    tf.is_imported = torch.is_imported = True
    control = make(Machine(a100(0, GPU_A)), tf, torch)
    assert control.state.together and control.state.frameworks == "TensorFlow and PyTorch"


def test_a_recorded_policy_applies_when_the_real_import_completes(make, tmp_path, monkeypatch, capsys):
    tf = Framework("TensorFlow")
    (tmp_path / f"{tf.module}.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    control = make(Machine(a100(0, GPU_A)), tf)
    control.request(parse(["fraction=0.4"]))
    tf.is_imported = True  # what the fixture's imported() says once the module is in sys.modules
    try:
        importlib.import_module(tf.module)
    finally:
        sys.modules.pop(tf.module, None)
    assert control.state.applied and len(tf.applied) == 1
    assert capsys.readouterr().out.startswith("jupyter-gpumem: applied fraction=0.4 to TensorFlow.")


def test_configured_defaults_above_the_ceiling_are_not_applied_and_the_ceiling_is_the_budget(make):
    control = make(Machine(a100(0, GPU_A)), Framework("TensorFlow"), fraction=0.4, max_fraction=0.25)
    lines = control.load_defaults()
    assert lines[0].startswith(
        "The configured defaults were not applied: fraction=0.4 is above this server's ceiling of 0.25 of each GPU"
    )
    # The ceiling still binds: a kernel whose defaults were refused does not go without a budget.
    assert lines[1].startswith(
        "jupyter-gpumem: this server's ceiling (0.25 of each GPU) is the budget (configured defaults)"
    )
    assert control.state.policy.is_empty and control.state.plan.gpus[0].budget_bytes == 10 * GiB


def test_reset_once_applied_says_the_framework_keeps_the_policy(make):
    tf = Framework("TensorFlow")
    tf.is_imported = True
    control = make(Machine(a100(0, GPU_A)), tf)
    control.request(parse(["fraction=0.4"]))
    assert control.reset() == [
        "The policy fraction=0.4 is already applied to TensorFlow, which keeps it until the kernel restarts. "
        "Nothing was changed."
    ]


def test_with_gpus_chosen_the_frameworks_gpus_are_the_chosen_ones_in_order(make):
    machine = Machine(a100(0, GPU_A), a100(1, GPU_B))
    tf = Framework("TensorFlow")
    tf.is_imported = True
    control = make(machine, tf)
    control.request(parse(["gpus=1"]))
    assert control.framework_uuids(control.read(machine())) == [GPU_B]  # its GPU:0 is NVML's GPU 1


def test_a_corrupt_overhead_cache_is_said_once(make):
    control = make(Machine(a100(0, GPU_A)), Framework("TensorFlow"))
    control.calibration.path.write_text("{not json")
    first = control.request(parse(["fraction=0.4"]))
    assert first[0].startswith(f"jupyter-gpumem ignored its overhead cache {control.calibration.path} (")
    assert not any("overhead cache" in line for line in control.request(parse(["fraction=0.3"])))


def test_under_a_named_framework_another_ones_import_leaves_the_budget_waiting_for_it(make, capsys):
    tf, torch = Framework("TensorFlow"), Framework("PyTorch")
    control = make(Machine(a100(0, GPU_A)), tf, torch)
    control.request(parse(["fraction=0.5", "framework=tensorflow"]))
    capsys.readouterr()
    torch.is_imported = True
    control._on_import(torch.module)
    assert capsys.readouterr() == ("", "")  # nothing to say, and nothing went wrong
    assert control.state.adapters == (tf,) and not control.state.applied and torch.applied == []
    assert control.state.plan.gpus[0].budget_bytes == 20 * GiB  # still planned, for TensorFlow's import


def test_two_frameworks_imported_set_aside_both_libraries_and_share_the_budget(make):
    tf, torch = Framework("TensorFlow"), Framework("PyTorch")
    tf.is_imported = torch.is_imported = True
    control = make(Machine(a100(0, GPU_A)), tf, torch)
    control.request(parse(["fraction=0.5"]))
    (gpu,) = control.state.plan.gpus
    assert gpu.overhead.bytes == (350 + 100 + 100) * MiB  # the CUDA context once, each framework's libraries
    share = control.state.plan.shared(2)
    assert tf.applied == [share] and torch.applied == [share]
    assert share.gpus[0].allocator_limit_bytes == gpu.allocator_limit_bytes // 2


def test_an_import_the_policy_cannot_be_applied_to_goes_on_and_says_why(make, capsys):
    class Failing(Framework):
        def apply(self, plan):
            raise RuntimeError("no device context")

    tf = Failing("TensorFlow")
    control = make(Machine(a100(0, GPU_A)), tf)
    control.request(parse(["fraction=0.4"]))
    tf.is_imported = True
    control._on_import(tf.module)  # raises nothing into the user's import
    told = capsys.readouterr()
    assert told.out == ""
    assert told.err == (
        "jupyter-gpumem could not apply fraction=0.4 to TensorFlow (RuntimeError: no device context). TensorFlow "
        "runs with its defaults.\n"
    )


def test_a_second_framework_imported_later_keeps_the_plan_and_when_it_was_applied(make, capsys):
    tf, torch = Framework("TensorFlow", sees_gpu=False), Framework("PyTorch", sees_gpu=False)
    tf.is_imported = True
    control = make(Machine(a100(0, GPU_A)), tf, torch)
    control.request(parse(["fraction=0.4"]))
    applied = control.state
    capsys.readouterr()
    torch.is_imported = True
    control._on_import(torch.module)
    assert torch.applied == [applied.plan] and control.state.plan == applied.plan
    assert control.state.applied_at == applied.applied_at
    assert control.state.no_gpu == (
        "TensorFlow 1.0 is a CPU-only build, so the budget is not in force. "
        "PyTorch 1.0 is a CPU-only build, so the budget is not in force."
    )
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) > 1 and printed[1:] == messages.applied_too(torch, applied, control.state, [])[1:]


def test_a_framework_whose_import_is_still_running_is_not_asked_for_its_memory(make, monkeypatch):
    machine = Machine(a100(0, GPU_A, own_mib=3000))
    tf = Framework("TensorFlow")
    tf.is_imported = tf.started = True
    tf.pools = (Allocator(GiB, GiB, 2 * GiB),)
    control = make(machine, tf)
    monkeypatch.setattr("jupyter_gpumem.kernel.control.importing", lambda module: module == tf.module)
    reading = control.read(machine())
    assert reading.allocators == {} and not reading.started


def test_the_overhead_measured_once_the_framework_started_is_shown_and_remembered_for_the_next_kernel(make):
    machine = Machine(a100(0, GPU_A, own_mib=3000))
    tf = Framework("TensorFlow")
    tf.is_imported = True
    control = make(machine, tf)
    control.request(parse(["fraction=0.5"]))
    tf.started, tf.pools = True, (Allocator(GiB, GiB, 2 * GiB),)  # its first tensor: the pool is reserved
    overhead = control.read(machine()).breakdowns[GPU_A].overhead
    assert (overhead.source, overhead.bytes) == ("measured", 3000 * MiB - 2 * GiB)
    remembered = json.loads(control.calibration.path.read_text())["overhead_bytes"]
    assert remembered == {"NVIDIA A100-SXM4-40GB | driver 550.54.15 | TensorFlow 1.0": 3000 * MiB - 2 * GiB}


def test_before_the_framework_starts_a_reading_sets_aside_what_an_earlier_kernel_measured(make):
    machine = Machine(a100(0, GPU_A, own_mib=300))
    control = make(machine, Framework("TensorFlow"))
    key = "NVIDIA A100-SXM4-40GB | driver 550.54.15 | TensorFlow 1.0"
    control.calibration.path.write_text(json.dumps({"format": 1, "overhead_bytes": {key: 777 * MiB}}))
    control.request(parse(["fraction=0.5"]))
    overhead = control.read(machine()).breakdowns[GPU_A].overhead
    assert (overhead.source, overhead.bytes) == ("remembered", 777 * MiB)


def others_on(privacy: str, make) -> tuple[list[int], Any]:
    """What a kernel shows of the processes beside its own: another of its user's, and bob's."""
    own = GpuProcess(OWN, GPU_A, 900 * MiB, "compute", "python", this_user(), 50.0, True)
    mine = GpuProcess(5001, GPU_A, 500 * MiB, "compute", "python", this_user(), 0.0, False)
    bobs = GpuProcess(5002, GPU_A, 700 * MiB, "compute", "python", "bob", 0.0, False)
    device = replace(a100(0, GPU_A), used_bytes=2100 * MiB, processes=(own, mine, bobs))
    machine = Machine(device)
    listed, others = make(machine, Framework("TensorFlow"), privacy=privacy).read(machine()).shown(device)
    return [p.pid for p in listed], others


def test_the_configured_privacy_decides_what_every_reading_shows_of_other_users(make):
    assert others_on("list", make) == ([OWN, 5001, 5002], None)
    listed, others = others_on("aggregate", make)
    assert listed == [OWN, 5001]  # this user's own processes stay listed one by one
    assert (others.processes, others.used_bytes, others.users) == (1, 700 * MiB, None)


def test_a_ceiling_too_small_for_the_context_is_said_at_load_and_leaves_no_budget(make):
    control = make(Machine(a100(0, GPU_A)), Framework("TensorFlow"), fraction=0.4, max_limit="300MiB")
    lines = control.load_defaults()
    assert lines[0].startswith("The configured defaults were not applied: fraction=0.4 is above this server's ceiling")
    assert lines[1].startswith("This server's ceiling was not applied: ")
    assert control.state.plan is None


def test_a_ceiling_alone_too_small_for_the_context_is_said_once_at_load(make):
    control = make(Machine(a100(0, GPU_A)), Framework("TensorFlow"), max_limit="300MiB")
    lines = control.load_defaults()
    assert len(lines) == 1 and lines[0].startswith("The configured defaults were not applied: (nothing set) gives")


class ContainerMachine(Machine):
    """Read from a container whose PIDs the driver does not translate: this kernel is listed as none of them."""

    def __call__(self, cpu_window_s: float = 0.0) -> Snapshot:
        return replace(super().__call__(), host_pid_namespace=False)


def estimated_on_a_container(make, cache: dict[str, int]) -> Any:
    host_pid = 812345
    other = GpuProcess(host_pid, GPU_A, 3000 * MiB, "compute", "python", None, None, False, False)
    machine = ContainerMachine(replace(a100(0, GPU_A), used_bytes=3000 * MiB, processes=(other,)))
    tf = Framework("TensorFlow")
    tf.is_imported = tf.started = True
    tf.pools = (Allocator(GiB, GiB, 2 * GiB),)
    control = make(machine, tf)  # no policy: no plan to take the overhead from
    control.calibration.path.write_text(json.dumps({"format": 1, "overhead_bytes": cache}))
    return control.read(machine()).owns[GPU_A]


def test_in_a_container_the_estimate_adds_what_an_earlier_kernel_measured_else_the_context_and_libraries(make):
    key = "NVIDIA A100-SXM4-40GB | driver 550.54.15 | TensorFlow 1.0"
    remembered = estimated_on_a_container(make, {key: 777 * MiB})
    assert (remembered.source, remembered.bytes) == ("estimated", 2 * GiB + 777 * MiB)
    estimated = estimated_on_a_container(make, {})
    assert estimated.bytes == 2 * GiB + (350 + 100) * MiB  # the CUDA context and TensorFlow's libraries
    assert "(estimated: TensorFlow on Ampere" in estimated.reason


@pytest.mark.parametrize("asked", ["framework=auto", "strict=on"])
def test_a_request_that_sets_nothing_says_so_and_names_no_ceiling(make, asked):
    control = make(Machine(a100(0, GPU_A)), Framework("TensorFlow"))
    lines = control.request(parse([asked]))
    assert lines[0].startswith("jupyter-gpumem: (nothing set) recorded (%gpumem). TensorFlow is not imported yet")
    assert lines[1] == "  GPU 0 NVIDIA A100-SXM4-40GB: no budget set: the framework takes nearly all of it"


def test_in_a_container_a_gpu_without_a_uuid_still_gets_an_estimate_from_the_framework(make):
    other = GpuProcess(812345, None, 3000 * MiB, "compute", "python", None, None, False, False)
    device = replace(a100(0, GPU_A), uuid=None, used_bytes=3000 * MiB, processes=(other,))
    machine = ContainerMachine(device)
    tf = Framework("TensorFlow")
    tf.is_imported = tf.started = True
    tf.pools = (Allocator(GiB, GiB, 2 * GiB),)
    own = make(machine, tf).read(machine()).own(device)
    assert (own.source, own.bytes) == ("estimated", 2 * GiB + 350 * MiB)  # the pool and the CUDA context
    assert "TensorFlow's pool 2048 MiB + 350 MiB outside it (estimated: TensorFlow on Ampere" in own.reason


@pytest.fixture
def language():
    """Leaves the process in its environment's language, whatever a test chose."""
    yield
    i18n.use_language(None)


def test_the_overhead_cache_is_found_and_written_under_one_key_whatever_language_the_kernel_speaks(make, language):
    machine = Machine(a100(0, GPU_A, own_mib=3000))
    tf, torch = Framework("TensorFlow"), Framework("PyTorch")
    tf.is_imported = torch.is_imported = True
    control = make(machine, tf, torch)
    key = "NVIDIA A100-SXM4-40GB | driver 550.54.15 | TensorFlow and PyTorch 1.0+1.0"
    control.calibration.path.write_text(json.dumps({"format": 1, "overhead_bytes": {key: 777 * MiB}}))
    i18n.use_language("ja-JP")
    lines = control.request(parse(["fraction=0.5"]))
    assert lines[0].startswith("jupyter-gpumem: fraction=0.5 を TensorFlow と PyTorch に適用しました")
    (gpu,) = control.state.plan.gpus
    assert (gpu.overhead.source, gpu.overhead.bytes) == ("remembered", 777 * MiB)
    for tag in ("en", *(language.replace("_", "-") for language in i18n.available()), "ja-JP"):
        i18n.use_language(tag)
        overhead = control.read(machine()).breakdowns[GPU_A].overhead
        assert (tag, overhead.source, overhead.bytes) == (tag, "remembered", 777 * MiB)
    # Started in Chinese, the kernel measures more than was remembered: the one English key grows, no other appears.
    i18n.use_language("zh-CN")
    tf.started = torch.started = True
    tf.pools = (Allocator(GiB, GiB, 2 * GiB),)
    control.read(machine())
    remembered = json.loads(control.calibration.path.read_text())["overhead_bytes"]
    assert remembered == {key: 3000 * MiB - 2 * GiB}
