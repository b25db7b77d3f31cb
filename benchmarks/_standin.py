"""Run a benchmark on the stand-in NVML: build it, write the scenario, re-run with LD_LIBRARY_PATH."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from jupyter_gpumem import standin


def ensure(scenario_text: str) -> None:
    """Re-execute this script on the stand-in unless it already runs on it (the dynamic loader reads
    LD_LIBRARY_PATH only when a process starts)."""
    if os.environ.get(standin.SCENARIO_VARIABLE):
        return
    directory = Path(tempfile.mkdtemp(prefix="gpumem-bench-"))
    standin.build(directory)
    scenario = directory / "bench.scenario"
    standin.write_scenario(scenario, scenario_text)
    env = standin.environment(directory, scenario)
    os.execve(sys.executable, [sys.executable, *sys.argv], env)
