"""benchmarks/gpu_acceptance.py, the one command a session lent a GPU runs, tested as far as it runs without one:
its driver section read from the stand-in NVML through the unmodified nvidia-ml-py binding (and the scenario lines
it prints, read again, answer the same), its tables and JSON, its arguments, and each GPU section ending with one
sentence and status 2 (no traceback) where there is no real GPU. The GPU sections' measurements themselves need a
GPU: nothing here stands for them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from jupyter_gpumem import standin
from jupyter_gpumem.gpu import cgroup

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "gpu_acceptance.py"
GPU_SECTIONS = ["fractions", "stream", "cells", "largest", "cupy"]


def run(tmp_path: Path, scenario: str, *arguments: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "machine.scenario"
    standin.write_scenario(path, scenario)
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(out), *arguments],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, standin.SCENARIO_VARIABLE: str(path)},
    )
    return done, out


def own_cgroup() -> str | None:
    found = cgroup.chain()
    return found.paths[0] if isinstance(found, cgroup.Chain) else None


def machine() -> str:
    """A MIG-mode H100 with one slice, ATS addressing, and a driver limit on this process's own cgroup."""
    lines = [
        "driver version=615.10 cuda=13040",
        'gpu name="NVIDIA H100 80GB HBM3" uuid=GPU-aaaaaaaa-0000-0000-0000-000000000001 total=80GiB used=3GiB '
        "cc=9.0 mig=on addressing=ats",
        'mig parent=0 name="NVIDIA H100 80GB HBM3 MIG 1g.10gb" uuid=MIG-bbbbbbbb-0000-0000-0000-000000000002 '
        "total=9984MiB used=12MiB gi=9 ci=0",
        'gpu name="NVIDIA H100 80GB HBM3" uuid=GPU-aaaaaaaa-0000-0000-0000-000000000003 total=80GiB used=1GiB '
        "cc=9.0 mig=off fail=addressing:not_supported",
    ]
    path = own_cgroup()
    if path is not None:
        lines.append(f"limit gpu=1 cgroup={path} soft=2GiB hard=6GiB used=1GiB")
    return "\n".join(lines) + "\n"


def scenario_of(report: str) -> str:
    return re.search(r"```\n(.*?)```", report, re.S).group(1)  # type: ignore[union-attr]


def test_the_driver_section_reads_the_stand_in_and_prints_lines_that_answer_the_same(tmp_path):
    done, out = run(tmp_path, machine(), "--sections", "driver")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    report = (out / "gpu-results.md").read_text()
    assert report.strip() in done.stdout.strip()  # the file holds what was printed
    assert "| 0 | NVIDIA H100 80GB HBM3 | 81,920 | 9.0 | 1/1 | ats |" in report
    assert "| 0 gi 9 ci 0 | NVIDIA H100 80GB HBM3 MIG 1g.10gb | 9,984 |" in report
    assert "Driver 615.10, CUDA 13040" in report
    assert "| 1 | NVIDIA H100 80GB HBM3 | 81,920 | 9.0 | 0/0 | NVMLError_NotSupported |" in report
    if own_cgroup() is not None:
        assert f"{own_cgroup()}: soft 2,048, hard 6,144, used 1,024" in report
    first = json.loads((out / "gpu-results.json").read_text())
    section = first["sections"]["driver"]
    assert section["status"] == 0
    assert section["rows"][0][:6] == ["0", "NVIDIA H100 80GB HBM3", "81,920", "9.0", "1/1", "ats"]

    # The lines it printed, as the stand-in's scenario, answer what the first one did.
    again, out_again = run(tmp_path / "again", scenario_of(report), "--sections", "driver")
    assert again.returncode == 0, again.stderr
    second = json.loads((out_again / "gpu-results.json").read_text())
    assert second["sections"]["driver"]["rows"] == section["rows"]
    assert scenario_of((out_again / "gpu-results.md").read_text()) == scenario_of(report)


def test_an_older_driver_without_the_limit_calls_is_read_and_said(tmp_path):
    scenario = 'driver version=550.54.15 cuda=12040\ngpu name="NVIDIA H100" uuid=GPU-1 total=80GiB used=0 cc=9.0\n'
    done, out = run(tmp_path, scenario, "--sections", "driver")
    assert done.returncode == 0, done.stderr
    row = json.loads((out / "gpu-results.json").read_text())["sections"]["driver"]["rows"][0]
    assert row[5] == "NVMLError_FunctionNotFound"  # addressing mode: from 580
    if own_cgroup() is not None:
        assert row[6] == f"{own_cgroup()}: NVMLError_FunctionNotFound"  # the limits: from 615
    assert "driver version=550.54.15 cuda=12040\n" in done.stdout


def test_every_gpu_section_on_the_stand_in_ends_with_one_sentence_and_status_2(tmp_path):
    done, out = run(tmp_path, machine(), "--sections", "driver", *GPU_SECTIONS)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    sections = json.loads((out / "gpu-results.json").read_text())["sections"]
    assert sections["driver"]["status"] == 0  # the others' failure is theirs only
    for name in GPU_SECTIONS:
        assert sections[name]["status"] == 2
        assert sections[name]["sentence"].startswith(f"The {name} section needs a real GPU and ran nothing: ")
        assert sections[name]["sentence"].count(". ") == 0  # one sentence
        assert f"| {name} | 2 | The {name} section needs a real GPU" in done.stdout


def test_without_a_driver_every_section_says_so_and_nothing_breaks(tmp_path):
    done, out = run(tmp_path, "driver loaded=0\n", "--sections", "driver", "cupy")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    sections = json.loads((out / "gpu-results.json").read_text())["sections"]
    assert sections["driver"]["sentence"] == (
        "The driver section read nothing: no NVIDIA driver answers here (NVML did not start: "
        "NVMLError_DriverNotLoaded)."
    )
    assert (
        sections["cupy"]["sentence"]
        == "The cupy section needs a real GPU and ran nothing: no NVIDIA driver answers here."
    )


def test_arguments_out_of_range_are_refused_before_anything_runs(tmp_path):
    for arguments, said in (
        (["--fractions", "1.5"], "each of --fractions is above 0 and at most 1"),
        (["--limits-mib", "0"], "take positive numbers"),
        (["--sections", "tensorflow"], "invalid choice: 'tensorflow'"),
    ):
        done, out = run(tmp_path, machine(), *arguments)
        assert done.returncode == 2
        assert said in done.stderr
        assert not out.exists()
