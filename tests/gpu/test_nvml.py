"""The NVML module against every stand-in scenario, through the real nvidia-ml-py binding."""

from __future__ import annotations

import ctypes.util
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from jupyter_gpumem import standin
from jupyter_gpumem.gpu import nvml
from jupyter_gpumem.gpu.host import HostProcesses
from jupyter_gpumem.gpu.model import Snapshot
from jupyter_gpumem.units import MiB

S1_GPU_A = "GPU-a1a1a1a1-0000-4000-8000-000000000001"
S1_GPU_B = "GPU-b2b2b2b2-0000-4000-8000-000000000002"
SCENARIOS = Path(__file__).parents[1] / "fixtures/scenarios"


def read(own_pid: int = os.getpid()) -> Snapshot:
    return nvml.read(own_pid, HostProcesses().lookup)


def test_s1_both_gpus_read_as_nvidia_smi_counts_them(scenario):
    scenario("s1_two_gpus")
    snap = read()
    assert snap.problem is None
    assert snap.driver_version == "537.58"
    gpu_a, gpu_b = snap.devices
    assert (gpu_a.index, gpu_a.uuid, gpu_a.name) == (0, S1_GPU_A, "NVIDIA GeForce GTX 1080 Ti")
    assert (gpu_a.total_bytes, gpu_a.used_bytes, gpu_a.free_bytes) == (11422 * MiB, 6063 * MiB, 5359 * MiB)
    assert gpu_a.utilization_percent == 97
    assert [(p.pid, p.used_bytes, p.kind, p.gpu_uuid) for p in gpu_a.processes] == [
        (788, 5927 * MiB, "compute", S1_GPU_A)
    ]
    assert (gpu_b.uuid, gpu_b.total_bytes, gpu_b.used_bytes) == (S1_GPU_B, 8192 * MiB, 4575 * MiB)


def test_s1_memory_the_driver_cannot_tell_is_none_never_zero(scenario):
    scenario("s1_two_gpus")
    gpu_b = read().devices[1]
    assert {(p.pid, p.kind): p.used_bytes for p in gpu_b.processes} == {
        (788, "compute"): None,
        (1204, "graphics"): None,
    }


def test_process_names_come_from_the_driver_when_the_host_cannot_see_the_pid(scenario):
    scenario("s1_two_gpus")
    names = {p.pid: p.name for d in read().devices for p in d.processes}
    assert names == {788: "python.exe", 1204: "dwm.exe"}


def test_s2_seven_jobs_each_listed_with_its_memory(scenario):
    scenario("s2_seven_jobs")
    (gpu,) = read().devices
    assert gpu.total_bytes == 8114 * MiB and gpu.used_bytes == 7519 * MiB and gpu.utilization_percent == 99
    assert sorted(p.pid for p in gpu.processes) == list(range(21001, 21008))
    assert {p.used_bytes for p in gpu.processes} == {1085 * MiB}


def test_s5_small_card_and_this_kernels_own_process_is_marked(scenario):
    scenario("s5_small_card")
    snap = read()
    (gpu,) = snap.devices
    assert (gpu.total_bytes, gpu.used_bytes, gpu.free_bytes) == (979 * MiB, 802 * MiB, 177 * MiB)
    (own,) = snap.own_processes
    assert own.pid == os.getpid() and own.is_self and own.used_bytes == 802 * MiB


def test_a_process_of_another_pid_is_not_marked_as_this_kernel(scenario):
    scenario("s1_two_gpus")
    snap = read()
    assert snap.own_processes == ()
    assert not any(p.is_self for d in snap.devices for p in d.processes)


def test_this_kernels_process_seen_only_as_graphics_is_marked_as_this_kernel(scenario):
    scenario("own_graphics_process")
    snap = read()
    (gpu,) = snap.devices
    (own,) = snap.own_processes
    assert (own.pid, own.kind, own.used_bytes, own.is_self) == (os.getpid(), "graphics", 600 * MiB, True)
    assert gpu.holds_self and gpu.listed_own_bytes == 600 * MiB
    assert [p.is_self for p in gpu.processes if p.pid == 6300] == [False]


def test_no_driver_gives_a_sentence_and_no_devices(scenario):
    scenario("no_driver")
    snap = read()
    assert snap.devices == ()
    assert snap.problem == nvml.DRIVER_NOT_LOADED


def test_the_driver_coming_back_is_picked_up(scenario):
    path = scenario("no_driver")
    assert read().problem == nvml.DRIVER_NOT_LOADED
    standin.write_scenario(path, (Path(__file__).parents[1] / "fixtures/scenarios/s2_seven_jobs.scenario").read_text())
    snap = read()
    assert snap.problem is None and len(snap.devices) == 1


def test_missing_library_gives_the_no_driver_sentence(tmp_path):
    if ctypes.util.find_library("nvidia-ml"):
        pytest.skip("this machine has a real libnvidia-ml installed, so the library is not missing")
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    env["LD_LIBRARY_PATH"] = str(tmp_path)  # an empty directory: nothing to load
    code = "import jupyter_gpumem as g; s = g.take_snapshot(); print(s.problem); print(len(s.devices))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [nvml.NO_DRIVER, "0"]
    assert out.stderr == ""


def test_a_lost_gpu_is_marked_and_the_others_still_read(scenario):
    scenario("gpu_lost")
    healthy, lost = read().devices
    assert lost.lost and lost.processes == () and lost.total_bytes is None
    assert not healthy.lost and healthy.used_bytes == 1200 * MiB
    assert [p.pid for p in healthy.processes] == [4100]


def test_a_gpu_lost_mid_run_is_marked_at_the_next_reading(scenario):
    lost_text = (Path(__file__).parents[1] / "fixtures/scenarios/gpu_lost.scenario").read_text()
    path = scenario(lost_text.replace("lost=1", "lost=0"))
    assert [d.lost for d in read().devices] == [False, False]
    standin.write_scenario(path, lost_text)
    assert [d.lost for d in read().devices] == [False, True]


def test_a_gpu_lost_after_its_handle_was_obtained_is_marked_and_the_other_still_read(scenario):
    scenario("gpu_lost_after_handle")
    healthy, lost = read().devices
    assert lost.lost and lost.processes == () and lost.total_bytes is None and lost.used_bytes is None
    assert (lost.uuid, lost.name) == (None, None)  # nothing could be read from it
    assert not healthy.lost and healthy.used_bytes == 2200 * MiB and healthy.name == "NVIDIA L40S"
    assert [p.pid for p in healthy.processes] == [4200]


# Name and compute capability are read once per GPU, so a loss is met by one of the queries made
# every time: whichever it is, the GPU must read as lost, not as a healthy GPU with unknown figures.
@pytest.mark.parametrize("query", ["uuid", "memory", "utilization", "mig", "compute", "graphics"])
def test_a_gpu_lost_between_two_readings_is_marked_lost_whichever_query_meets_it(scenario, query):
    text = (SCENARIOS / "gpu_lost_after_handle.scenario").read_text()
    path = scenario(re.sub(r" fail=\S+", "", text))
    assert [d.lost for d in read().devices] == [False, False]  # both GPUs' static facts now cached
    standin.write_scenario(path, re.sub(r"fail=\S+", f"fail={query}:gpu_lost", text))
    healthy, lost = read().devices
    assert lost.lost and lost.processes == () and lost.total_bytes is None
    assert not healthy.lost and [p.pid for p in healthy.processes] == [4200]
    standin.write_scenario(path, re.sub(r" fail=\S+", "", text))  # reset: the GPU is back
    back = read().devices[1]
    assert not back.lost and (back.name, back.used_bytes) == ("NVIDIA L40S", 30000 * MiB)


def test_mig_memory_comes_from_the_mig_devices_and_utilisation_is_not_supported(scenario):
    scenario("mig")
    (gpu,) = read().devices
    assert gpu.mig_enabled is True
    assert gpu.utilization_percent is None
    assert [(m.uuid, m.total_bytes, m.used_bytes) for m in gpu.mig_devices] == [
        ("MIG-11111111-0000-4000-8000-000000000001", 40192 * MiB, 15360 * MiB),
        ("MIG-22222222-0000-4000-8000-000000000002", 19968 * MiB, 5120 * MiB),
    ]
    assert {p.pid: p.used_bytes for p in gpu.processes} == {5100: 15000 * MiB, 5101: None}


def test_a_mig_partition_whose_figures_are_refused_reads_as_unknown_and_the_other_as_usual(scenario):
    text = (SCENARIOS / "mig.scenario").read_text()
    scenario(
        text.replace(
            "total=19968MiB used=5120MiB", "total=19968MiB used=5120MiB fail=memory:not_supported,uuid:not_supported"
        )
    )
    (gpu,) = read().devices
    assert [(m.uuid, m.total_bytes, m.used_bytes) for m in gpu.mig_devices] == [
        ("MIG-11111111-0000-4000-8000-000000000001", 40192 * MiB, 15360 * MiB),
        (None, None, None),
    ]


def test_refused_queries_read_as_unknown_one_by_one(scenario):
    scenario("not_supported")
    refused_processes, refused_memory = read().devices
    assert refused_processes.utilization_percent is None
    assert refused_processes.mig_enabled is None
    assert refused_processes.processes_known is False
    assert refused_processes.used_bytes == 600 * MiB  # what the driver did answer is kept
    assert refused_memory.total_bytes is None and refused_memory.used_bytes is None
    assert refused_memory.name is None
    assert refused_memory.uuid == "GPU-1b1b1b1b-0000-4000-8000-000000000010"


def test_eight_gpus_with_sixty_four_processes_each(scenario):
    scenario(standin.crowded(8, 64))
    snap = read()
    assert len(snap.devices) == 8
    assert sum(len(d.processes) for d in snap.devices) == 512
    for device in snap.devices:
        assert {p.gpu_uuid for p in device.processes} == {device.uuid}
        assert {p.used_bytes for p in device.processes} == {1000 * MiB}


def test_processes_appearing_and_disappearing_are_followed(scenario):
    gpu = 'gpu name="NVIDIA L4" uuid=GPU-77 total=23034MiB used=3000MiB\n'
    path = scenario(gpu + "proc gpu=0 pid=901 used=1000MiB\n")
    assert [p.pid for p in read().devices[0].processes] == [901]
    standin.write_scenario(path, gpu + "proc gpu=0 pid=901 used=1000MiB\nproc gpu=0 pid=902 used=2000MiB\n")
    assert sorted(p.pid for p in read().devices[0].processes) == [901, 902]
    standin.write_scenario(path, gpu + "proc gpu=0 pid=902 used=2000MiB\n")
    assert [p.pid for p in read().devices[0].processes] == [902]
    standin.write_scenario(path, gpu)
    assert read().devices[0].processes == ()


def test_a_process_in_both_compute_and_graphics_is_one_row(scenario):
    scenario(
        'gpu name="NVIDIA RTX 4090" uuid=GPU-88 total=24564MiB used=5000MiB\n'
        "proc gpu=0 pid=42 used=3000MiB\nproc gpu=0 pid=42 used=500MiB kind=graphics\n"
    )
    (proc,) = read().devices[0].processes
    assert (proc.kind, proc.used_bytes) == ("compute+graphics", 3500 * MiB)


def test_the_stand_in_is_labelled_simulated(scenario):
    path = scenario("s2_seven_jobs")
    assert read().simulated_scenario == str(path)


def test_a_driver_without_v3_process_queries_falls_back_to_v2(scenario, standin_without_v3_dir):
    path = scenario("s1_two_gpus")
    env = standin.environment(standin_without_v3_dir, path, base={**os.environ, "LD_LIBRARY_PATH": ""})
    code = (
        "import json; from jupyter_gpumem import take_snapshot; s = take_snapshot(); "
        "print(json.dumps([[p.pid, p.used_bytes] for d in s.devices for p in d.processes]))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [[788, 5927 * MiB], [788, None], [1204, None]]


def facts(snap: Snapshot) -> list[tuple[str | None, str | None, tuple[int, int] | None]]:
    return [(d.uuid, d.name, d.compute_capability) for d in snap.devices]


# The driver version, GPU names and compute capabilities are read once, not every snapshot: the
# stand-in can change the machine under a running kernel in ways a driver cannot, and none of those
# may leave a snapshot with another GPU's facts.
def test_a_new_gpu_count_is_read_with_its_own_names_uuids_and_driver(scenario):
    text = (SCENARIOS / "s1_two_gpus.scenario").read_text()
    path = scenario(text)
    assert facts(read()) == [
        (S1_GPU_A, "NVIDIA GeForce GTX 1080 Ti", (6, 1)),
        (S1_GPU_B, "NVIDIA GeForce GTX 1080", (6, 1)),
    ]
    one_fewer = "".join(line for line in text.splitlines(True) if S1_GPU_B not in line and "gpu=1" not in line)
    standin.write_scenario(path, one_fewer.replace("537.58", "545.84"))
    snap = read()
    assert facts(snap) == [(S1_GPU_A, "NVIDIA GeForce GTX 1080 Ti", (6, 1))] and snap.driver_version == "545.84"
    standin.write_scenario(path, (SCENARIOS / "s2_seven_jobs.scenario").read_text())
    snap = read()
    assert facts(snap) == [("GPU-c3c3c3c3-0000-4000-8000-000000000003", "GeForce GTX 1080", None)]
    assert snap.driver_version == "418.56"
    standin.write_scenario(path, standin.crowded(gpus=3, processes_per_gpu=1))
    snap = read()
    assert [d.uuid for d in snap.devices] == [f"GPU-{g:08x}-0000-4000-8000-{g:012x}" for g in range(3)]
    assert {d.name for d in snap.devices} == {"NVIDIA H100 80GB HBM3"} and snap.driver_version == "550.54.15"
    assert [{p.gpu_uuid for p in d.processes} for d in snap.devices] == [{d.uuid} for d in snap.devices]


def test_other_gpus_at_the_same_count_are_read_with_their_own_facts(scenario):
    path = scenario("s1_two_gpus")
    read()
    standin.write_scenario(path, (SCENARIOS / "sidebar.scenario").read_text())
    snap = read()
    assert facts(snap) == [
        ("GPU-5e5e5e5e-0000-4000-8000-000000000001", "NVIDIA A100-SXM4-40GB", (8, 0)),
        ("GPU-5e5e5e5e-0000-4000-8000-000000000002", "NVIDIA T4", (7, 5)),
    ]
    assert snap.driver_version == "550.54.15"
    assert {p.pid: p.gpu_uuid for p in snap.devices[1].processes} == {41339: "GPU-5e5e5e5e-0000-4000-8000-000000000002"}


def test_one_gpu_swapped_for_another_is_read_with_its_own_facts(scenario):
    text = (SCENARIOS / "s1_two_gpus.scenario").read_text()
    path = scenario(text)
    read()
    swapped = text.replace(
        'name="NVIDIA GeForce GTX 1080" uuid=GPU-b2b2b2b2-0000-4000-8000-000000000002 total=8192MiB cc=6.1',
        'name="NVIDIA GeForce RTX 3060" uuid=GPU-b3b3b3b3-0000-4000-8000-000000000014 total=12288MiB cc=8.6',
    )
    standin.write_scenario(path, swapped)
    assert facts(read()) == [
        (S1_GPU_A, "NVIDIA GeForce GTX 1080 Ti", (6, 1)),
        ("GPU-b3b3b3b3-0000-4000-8000-000000000014", "NVIDIA GeForce RTX 3060", (8, 6)),
    ]


def test_a_driver_upgraded_while_the_kernel_runs_is_read_afresh(scenario):
    # R470 drivers put "NVIDIA" in front of GeForce names: same GPU, same UUID, another name.
    text = (SCENARIOS / "s2_seven_jobs.scenario").read_text().replace("mig=", "cc=6.1 mig=")
    path = scenario(text)
    assert (read().driver_version, read().devices[0].name) == ("418.56", "GeForce GTX 1080")
    standin.write_scenario(path, (SCENARIOS / "no_driver.scenario").read_text())
    assert read().problem == nvml.DRIVER_NOT_LOADED
    upgraded = text.replace("418.56", "470.57.02").replace('name="GeForce GTX', 'name="NVIDIA GeForce GTX')
    standin.write_scenario(path, upgraded)
    snap = read()
    assert (snap.driver_version, snap.devices[0].name) == ("470.57.02", "NVIDIA GeForce GTX 1080")


def test_the_stand_in_pointed_at_another_scenario_file_is_another_machine(scenario, tmp_path, monkeypatch):
    # What keeps one test's GPUs out of the next test's snapshots: each has a scenario file of its own.
    text = (SCENARIOS / "sidebar.scenario").read_text()
    scenario(text)
    assert [d.name for d in read().devices] == ["NVIDIA A100-SXM4-40GB", "NVIDIA T4"]
    other = tmp_path / "other.scenario"
    standin.write_scenario(other, text.replace("550.54.15", "460.106.00").replace('"NVIDIA T4"', '"Tesla T4"'))
    monkeypatch.setenv(standin.SCENARIO_VARIABLE, str(other))
    snap = read()
    assert [d.name for d in snap.devices] == ["NVIDIA A100-SXM4-40GB", "Tesla T4"]
    assert (snap.driver_version, snap.simulated_scenario) == ("460.106.00", str(other))


def test_a_fact_the_driver_refused_is_asked_for_again(scenario):
    gpu = 'gpu name="NVIDIA T4" uuid=GPU-1b1b1b1b-0000-4000-8000-000000000015 total=15360MiB cc=7.5 used=600MiB'
    path = scenario(gpu + " fail=name:unknown,cc:no_permission\n")
    assert facts(read()) == [("GPU-1b1b1b1b-0000-4000-8000-000000000015", None, None)]
    standin.write_scenario(path, gpu + "\n")
    assert facts(read()) == [("GPU-1b1b1b1b-0000-4000-8000-000000000015", "NVIDIA T4", (7, 5))]


# ---------------------------------------------------------------------- a binding newer than the driver


def test_a_query_the_driver_lacks_is_logged_once_with_the_hint_and_reads_as_unknown(scenario, caplog, monkeypatch):
    # NVML's own NVML_ERROR_FUNCTION_NOT_FOUND: pynvml raises the same error for a missing symbol.
    monkeypatch.setattr(nvml, "_missing_functions", set())  # once per process: this test's process
    text = (SCENARIOS / "s1_two_gpus.scenario").read_text()
    scenario(re.sub(r"^(gpu .*)$", r"\1 fail=mig:function_not_found", text, flags=re.MULTILINE))
    caplog.set_level(logging.WARNING, logger="jupyter_gpumem")
    snaps = [read(), read()]
    assert [d.mig_enabled for s in snaps for d in s.devices] == [None] * 4
    assert [p.pid for p in snaps[1].devices[0].processes] == [788]  # the rest is read as usual
    (warning,) = [r for r in caplog.records if "nvmlDeviceGetMigMode" in r.getMessage()]
    assert warning.levelno == logging.WARNING and warning.name == "jupyter_gpumem"
    assert warning.getMessage() == (
        "jupyter-gpumem: the NVIDIA driver has no nvmlDeviceGetMigMode, so what it reads shows as N/A. The "
        "nvidia-ml-py binding may be newer than the driver: update the driver, or install an nvidia-ml-py as old as it."
    )


def test_a_driver_without_the_mig_queries_reads_mig_as_unknown_and_says_so_once(scenario, tmp_path):
    path = scenario("s1_two_gpus")
    library = standin.build(tmp_path / "without-mig", without_mig=True)
    env = standin.environment(library, path, base={**os.environ, "LD_LIBRARY_PATH": ""})
    code = (
        "import json; from jupyter_gpumem import take_snapshot; s = [take_snapshot(), take_snapshot()]; "
        "print(json.dumps([[d.mig_enabled, d.used_bytes] for x in s for d in x.devices]))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [[None, 6063 * MiB], [None, 4575 * MiB]] * 2
    (warning,) = [line for line in out.stderr.splitlines() if "nvmlDeviceGetMigMode" in line]
    assert "binding may be newer than the driver" in warning


def test_strings_from_old_bindings_arrive_as_bytes_and_are_decoded():
    assert nvml._text(b"NVIDIA GeForce GTX 1080") == "NVIDIA GeForce GTX 1080"
    assert nvml._text("GPU-a1") == "GPU-a1"
    assert nvml._text(b"bad \xff byte") == "bad \ufffd byte"
