"""The status table as text, on real snapshots from the stand-in NVML."""

from __future__ import annotations

import os

from jupyter_gpumem.gpu import nvml
from jupyter_gpumem.gpu.host import HostProcesses
from jupyter_gpumem.render.text import printable, render


def status(own_pid: int = os.getpid()) -> str:
    return render(nvml.read(own_pid, HostProcesses().lookup))


def test_s1_table_shows_nvidia_smi_figures_and_na_honestly(scenario):
    scenario("s1_two_gpus")
    text = status()
    assert "GPU 0  NVIDIA GeForce GTX 1080 Ti  ·  GPU-a1a1a1a1-0000-4000-8000-000000000001" in text
    assert "memory 6063 MiB used of 11422 MiB (11.2 GiB) (53%) · 5359 MiB free · utilisation 97%" in text
    assert "memory 4575 MiB used of 8192 MiB (8.0 GiB) (56%)" in text
    rows = [line.split() for line in text.splitlines() if line.strip().startswith(("788", "1204"))]
    assert rows == [
        ["788", "N/A", "5927", "MiB", "N/A", "compute", "python.exe"],
        ["788", "N/A", "N/A", "N/A", "compute", "python.exe"],
        ["1204", "N/A", "N/A", "N/A", "graphics", "dwm.exe"],
    ]
    assert "it is unknown, not zero" in text
    assert "SIMULATED GPU" in text


def test_this_kernel_is_marked_in_its_row(scenario):
    scenario("own_process")
    own_row = [line for line in status().splitlines() if "<- this kernel" in line]
    assert len(own_row) == 1 and own_row[0].split()[0] == str(os.getpid())
    assert "own process not visible" not in status()


def test_own_process_not_visible_is_said_not_guessed(scenario):
    scenario("s2_seven_jobs")
    assert f"This kernel (pid {os.getpid()}) holds no GPU memory that NVML can see" in status()
    assert "<- this kernel" not in status()


def test_a_lost_gpu_says_so_and_what_to_do(scenario):
    scenario("gpu_lost")
    text = status()
    assert "LOST" in text and "nvidia-smi -r" in text
    assert "memory 1200 MiB used of 23028 MiB" in text


def test_mig_devices_are_listed_and_utilisation_explained(scenario):
    scenario("mig")
    text = status()
    assert "utilisation N/A (not reported in MIG mode)" in text
    assert "MIG 0  MIG-11111111-0000-4000-8000-000000000001  15360 MiB used of 40192 MiB" in text


def test_no_driver_is_one_sentence(scenario):
    scenario("no_driver")
    assert status() == nvml.DRIVER_NOT_LOADED


def test_hostile_process_names_are_text_and_cannot_forge_lines(scenario):
    scenario(
        'gpu name="Evil\x1b[31m GPU" uuid=GPU-99 total=1000MiB used=10MiB\n'
        'proc gpu=0 pid=66 used=5MiB name="<img src=x onerror=alert(1)>"\n'
        'proc gpu=0 pid=67 used=5MiB name="fake\x0bGPU 7  NVIDIA H100"\n'
    )
    text = status()
    assert "<img src=x onerror=alert(1)>" in text
    assert "\x1b" not in text and "\\x1b[31m" in text
    assert "fake\\x0bGPU 7" in text and "\x0b" not in text


def test_printable_keeps_ordinary_unicode():
    assert printable("Tesla V100 – 显卡") == "Tesla V100 – 显卡"
    assert printable("a\nb\tc") == "a\\nb\\tc"
    assert (
        printable("\u202egnp.exe \u2066a\u2069 b\u2028c \udcff") == "\\u202egnp.exe \\u2066a\\u2069 b\\u2028c \\udcff"
    )
