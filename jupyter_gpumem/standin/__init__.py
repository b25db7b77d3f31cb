"""The stand-in libnvidia-ml.so.1: a simulated NVIDIA driver for machines without a GPU.

Used by the test suite, the benchmarks and the demo launcher. The unmodified nvidia-ml-py binding
loads it through LD_LIBRARY_PATH; a scenario file (docs/standin-nvml.md) says what it reports.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

SOURCE = Path(__file__).with_name("nvml.c")
LIBRARY_NAME = "libnvidia-ml.so.1"
SCENARIO_VARIABLE = "JUPYTER_GPUMEM_STANDIN_SCENARIO"


def build(directory: Path, *, without_v3: bool = False, without_mig: bool = False) -> Path:
    """Compile the stand-in into ``directory/libnvidia-ml.so.1`` with the system C compiler and
    return ``directory``. ``without_v3`` imitates a driver that lacks the _v3 process queries,
    ``without_mig`` one that lacks the MIG queries (both: a driver older than the binding)."""
    directory.mkdir(parents=True, exist_ok=True)
    compiler = os.environ.get("CC", "cc")
    flags = ["-DSTANDIN_NO_V3"] if without_v3 else []
    flags += ["-DSTANDIN_NO_MIG"] if without_mig else []
    subprocess.run(
        [
            compiler,
            "-O2",
            "-shared",
            "-fPIC",
            "-fvisibility=hidden",
            "-Wall",
            "-Wextra",
            "-Werror",
            f"-Wl,-soname,{LIBRARY_NAME}",
            *flags,
            "-o",
            str(directory / LIBRARY_NAME),
            str(SOURCE),
            "-lpthread",
        ],
        check=True,
    )
    return directory


def environment(library_dir: Path, scenario: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """An environment in which a new process loads the stand-in and reads ``scenario``."""
    env = dict(os.environ if base is None else base)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(library_dir), env.get("LD_LIBRARY_PATH")]))
    env[SCENARIO_VARIABLE] = str(scenario)
    return env


def write_scenario(path: Path, text: str) -> None:
    """Replace a scenario atomically, so a process reading it never sees half a file."""
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as tmp:
        tmp.write(text)
    os.replace(tmp.name, path)


def crowded(gpus: int = 8, processes_per_gpu: int = 64) -> str:
    """A large machine: ``gpus`` GPUs with ``processes_per_gpu`` processes each."""
    lines = ["# A crowded node: many GPUs, many processes each.", "driver version=550.54.15 cuda=12040"]
    for g in range(gpus):
        lines.append(
            f'gpu name="NVIDIA H100 80GB HBM3" uuid=GPU-{g:08x}-0000-4000-8000-{g:012x} '
            f"total=81559MiB cc=9.0 used={processes_per_gpu * 1000 + 500}MiB util={(g * 13) % 100} mem_util=30"
        )
        for p in range(processes_per_gpu):
            lines.append(f"proc gpu={g} pid={100000 + g * 1000 + p} used=1000MiB name=python{p}")
    return "\n".join(lines) + "\n"
