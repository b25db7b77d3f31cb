"""Real kernels in a PID namespace of their own (`unshare --pid --fork --mount-proc`), as every hub on
Kubernetes or Docker runs them, over the stand-in NVML: one scenario per driver behaviour. Status, explain
and the sidebar's samples say exact, matched, estimated or unknown, as the case is; never 0 for unknown.
(CI runs as root, so unshare works there.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from conftest import SCENARIOS, Kernel
from jupyter_client.manager import KernelManager

from jupyter_gpumem import standin
from jupyter_gpumem.units import MiB
from jupyter_gpumem.wire.comm import TARGET

pytestmark = pytest.mark.kernel

UNSHARE = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]
SPEC = "gpumem-in-a-container"
CONNECT = "import jupyter_gpumem; jupyter_gpumem._connect_sidebar(interval_s=0.2, history_s=60)"
UNTRANSLATED = "runs in a container whose PIDs the driver does not translate"

# A framework whose start and pool the test sets, put in the kernel's controller in place of the real ones:
# there is no GPU here, so "CUDA starts" and "the pool grows" are its figures plus a rewritten scenario.
RECORDER = """
from jupyter_gpumem.kernel.runtime import runtime
from jupyter_gpumem.frameworks.base import Adapter
from jupyter_gpumem.budget.framework_interface import Allocator

class Recorder(Adapter):
    name = "Recorder"
    module = "recorder"
    distributions = ()
    library_bytes = 100 << 20
    takes = "takes what the test says"
    array_modules = ()
    placing = "recorder.device(1)"
    free_earlier = None
    started = False
    pools = ()

    def imported(self): return True
    def importable(self): return True
    def version(self): return "1.0"
    def initialised(self): return self.started
    def apply(self, plan): return []
    def in_force(self): return ["Recorder: as the test says"]
    def memory_in_use(self, cell=False): return self.pools if self.started else ()
    def concatenate(self, values): return values

recorder = Recorder()
runtime().control.adapters = {"recorder": recorder}
"""


def _unshare_works() -> bool:
    try:
        return subprocess.run([*UNSHARE, "true"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class ContainedKernel(Kernel):
    """A kernel started by the kernelspec that runs it in a PID namespace of its own."""

    def __init__(self, env: dict[str, str], scenario: Path):
        self.scenario = scenario
        self.manager = KernelManager(kernel_name=SPEC)
        self.manager.start_kernel(env=env)
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)
        self.passed: list[dict[str, Any]] = []

    @property
    def outer_pid(self) -> int:
        """The kernel's PID outside its namespace, as a driver that does not translate lists it: the child
        unshare forked."""
        pid = self.manager.provisioner.pid  # type: ignore[union-attr]
        (child,) = psutil.Process(pid).children()
        return int(child.pid)

    def write(self, text: str) -> None:
        standin.write_scenario(self.scenario, text)


@pytest.fixture
def contained(tmp_path: Path, standin_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Any]]:
    """contained(scenario text) -> a real kernel in its own PID namespace on the stand-in NVML."""
    if not _unshare_works():
        pytest.skip("unshare --pid --fork --mount-proc needs root (CI runs as root)")
    spec = tmp_path / "jupyter" / "kernels" / SPEC
    spec.mkdir(parents=True)
    argv = [*UNSHARE, sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": SPEC, "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    started: list[ContainedKernel] = []

    def start(text: str) -> ContainedKernel:
        path = tmp_path / "container.scenario"
        standin.write_scenario(path, text)
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("JUPYTER_GPUMEM_", "CUDA_", "TF_", "XLA_", "PYTORCH_"))
        }
        base["LD_LIBRARY_PATH"] = ""
        base["XDG_CACHE_HOME"] = str(tmp_path / "cache")
        kernel = ContainedKernel(standin.environment(standin_dir, path, base=base), path)
        started.append(kernel)
        return kernel

    yield start
    for kernel in started:
        kernel.stop()


def scenario(name: str, **values: object) -> str:
    text = (SCENARIOS / f"{name}.scenario").read_text()
    for token, value in values.items():
        text = text.replace(token, str(value))
    return text


def connect(kernel: Kernel) -> str:
    reply = kernel.run(CONNECT)
    assert reply.status == "ok", reply.error
    return str(kernel.comm_message("comm_open", target_name=TARGET)["comm_id"])


def sample_where(kernel: Kernel, comm_id: str, condition: Callable[[dict[str, Any]], bool], timeout: float = 15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sample = kernel.comm_message("comm_msg", comm_id=comm_id, timeout=10)["data"]["sample"]
        if condition(sample):
            return sample
    raise AssertionError("no sample met the condition")


def gpu0(sample: dict[str, Any]) -> dict[str, Any]:
    return dict(sample["gpus"][0])


def test_host_pids_say_so_with_certainty_and_this_kernels_memory_is_unknown_not_0(contained):
    kernel = contained(scenario("container_host_pids", OUTER=4190003))  # not the kernel's: rewritten below
    kernel.write(scenario("container_host_pids", OUTER=kernel.outer_pid))
    assert kernel.run("import os; print(os.getpid())").stdout == "1\n"  # it is PID 1 in its own namespace
    kernel.run("%load_ext jupyter_gpumem")
    kernel.run("%gpumem limit=8GiB")
    status = kernel.run("%gpumem status").stdout
    assert f"This kernel (pid 1) {UNTRANSLATED}" in status
    assert "Either" not in status and "<- this kernel" not in status
    assert "GPU 0: this kernel's memory is unknown, not 0: its framework has not started, so there is" in status
    assert "Now on GPU 0: this kernel's memory is unknown" in status
    told = kernel.run("%gpumem explain").stdout
    assert "This kernel runs in a container whose PIDs the driver does not translate" in told
    assert "this kernel's memory is unknown, not 0" in told

    comm_id = connect(kernel)
    sample = sample_where(kernel, comm_id, lambda s: s["policy"] == "limit=8GiB")
    assert sample["pid_namespace"] == "untranslated"
    gpu = gpu0(sample)
    assert (gpu["own_bytes"], gpu["own_source"], gpu["own_pid"]) == (None, "unknown", None)
    assert gpu["own_reason"].startswith("this kernel runs in a container whose PIDs the driver does not translate")
    assert (gpu["limit_kind"], gpu["limit_hard"], gpu["budget_bytes"]) == ("cooperative", False, 8192 * MiB)
    assert all(p["local"] is False and not p["self"] for p in gpu["processes"])


def test_a_driver_that_translates_pids_finds_this_kernel_exactly(contained):
    kernel = contained(scenario("container_translated"))
    kernel.run("%load_ext jupyter_gpumem")
    status = kernel.run("%gpumem status").stdout
    (row,) = [line for line in status.splitlines() if "<- this kernel" in line]
    assert row.split()[0] == "1" and "3000 MiB" in row
    assert "the driver lists processes by the container's own PIDs, so its figures are exact." in status
    sample = sample_where(kernel, connect(kernel), lambda s: bool(s["gpus"]))
    assert sample["pid_namespace"] == "translated"
    gpu = gpu0(sample)
    assert (gpu["own_bytes"], gpu["own_source"], gpu["own_pid"]) == (3000 * MiB, "exact", 1)


def test_memory_of_other_containers_the_driver_hides_shows_as_not_listed(contained):
    kernel = contained(scenario("container_others_hidden"))
    kernel.run("%load_ext jupyter_gpumem")
    status = kernel.run("%gpumem status").stdout
    assert (
        "not listed: 14336 MiB in use that no listed process accounts for: the driver hides other containers' "
        "processes" in status
    )
    gpu = gpu0(sample_where(kernel, connect(kernel), lambda s: bool(s["gpus"])))
    assert (gpu["own_bytes"], gpu["own_source"], gpu["unlisted_bytes"]) == (3000 * MiB, "exact", 14336 * MiB)


def test_a_neighbour_that_runs_another_program_at_a_listed_pid_is_no_sign_the_pids_are_ours(contained):
    kernel = contained(scenario("container_neighbour", NEIGHBOUR=4190004))
    neighbour = kernel.run("import subprocess; sleeper = subprocess.Popen(['sleep', '600']); print(sleeper.pid)")
    kernel.write(scenario("container_neighbour", NEIGHBOUR=int(neighbour.stdout)))
    kernel.run("%load_ext jupyter_gpumem")
    status = kernel.run("%gpumem status").stdout
    assert (
        f"This kernel (pid 1) {UNTRANSLATED}" in status and "(they are missing here, or run other programs)" in status
    )
    assert "holds no GPU memory" not in status
    sample = sample_where(kernel, connect(kernel), lambda s: bool(s["gpus"]))
    gpu = gpu0(sample)
    assert (sample["pid_namespace"], gpu["own_bytes"], gpu["own_source"]) == ("untranslated", None, "unknown")
    rows = {p["pid"]: p for p in gpu["processes"]}
    assert rows[int(neighbour.stdout)]["local"] is False  # a process here, but not the program the driver names


def start_recorder(kernel: ContainedKernel) -> str:
    """The kernel with the Recorder as its framework and a budget; the comm of its samples."""
    kernel.run("%load_ext jupyter_gpumem")
    assert kernel.run(RECORDER).status == "ok"
    assert "applied limit=8GiB to Recorder" in kernel.run("%gpumem limit=8GiB").stdout
    comm_id = connect(kernel)
    sample = sample_where(kernel, comm_id, lambda s: s["framework"] == "Recorder")
    assert gpu0(sample)["own_source"] == "unknown" and not sample["framework_started"]
    return comm_id


def stage(outer_pid: int | None, **mib: int) -> str:
    """container_cuda_starts before CUDA starts (no OUTER given), or with the kernel's host PID holding
    ``mib["OUTER"]`` MiB, and any other PIDs given with theirs."""
    lines = (SCENARIOS / "container_cuda_starts.scenario").read_text().splitlines()
    own = mib.pop("OUTER", None)
    if own is None:
        lines = [line for line in lines if line.startswith("#") or "OWN" not in line]
    lines += [f"proc gpu=0 pid={pid} used={used}MiB name=python" for pid, used in mib.items()]
    used = 3000 + (own or 0) + sum(mib.values())
    return "\n".join(lines).replace("USED", str(used)).replace("OWN", str(own)).replace("OUTER", str(outer_pid)) + "\n"


def cuda_starts(kernel: ContainedKernel, pool_mib: int, **mib: int) -> None:
    """The Recorder starts with ``pool_mib``; the kernel's host PID (OUTER) and any others given appear."""
    kernel.run(f"recorder.pools = (Allocator(0, 0, {pool_mib} << 20),); recorder.started = True")
    kernel.write(stage(kernel.outer_pid, **mib))


def pool_grows(kernel: ContainedKernel, pool_mib: int, **mib: int) -> None:
    """NVML's figures first, then the allocator's (the other order is a sample taken mid-move)."""
    kernel.write(stage(kernel.outer_pid, **mib))
    kernel.run(f"recorder.pools = (Allocator(0, 0, {pool_mib} << 20),)")


def test_the_host_pid_that_appears_with_cuda_and_follows_the_pool_is_matched(contained):
    kernel = contained(stage(None))  # before CUDA starts: two other host processes
    comm_id = start_recorder(kernel)

    cuda_starts(kernel, 2048, OUTER=2548)
    sample = sample_where(kernel, comm_id, lambda s: gpu0(s)["own_source"] == "estimated")
    gpu = gpu0(sample)
    # Its pool plus the overhead estimated for the GPU generation: 350 MiB context + 100 MiB libraries.
    assert (gpu["own_bytes"], gpu["own_candidates"]) == (2498 * MiB, 1)
    assert "1 listed process could be this kernel's" in gpu["own_reason"]

    pool_grows(kernel, 3072, OUTER=3572)
    sample = sample_where(kernel, comm_id, lambda s: gpu0(s)["own_source"] == "matched")
    gpu = gpu0(sample)
    assert (gpu["own_bytes"], gpu["own_pid"]) == (3572 * MiB, kernel.outer_pid)
    assert gpu["own_reason"] == (
        f"PID {kernel.outer_pid} appeared when Recorder started and its memory moves with Recorder's pool"
    )
    # NVML's figure for it minus the pool is this kernel's measured overhead, remembered for the next kernel.
    sample = sample_where(kernel, comm_id, lambda s: gpu0(s)["overhead_source"] == "measured")
    assert gpu0(sample)["overhead_bytes"] == 500 * MiB

    status = kernel.run("%gpumem status").stdout
    (row,) = [line for line in status.splitlines() if "<- this kernel (matched)" in line]
    assert row.split()[0] == str(kernel.outer_pid)
    assert f"GPU 0: this kernel holds 3572 MiB (matched: PID {kernel.outer_pid} appeared" in status
    assert "Now on GPU 0: 3572 MiB as nvidia-smi counts it (matched: " in status
    assert "  This kernel's figure is matched: PID" in kernel.run("%gpumem explain").stdout


def test_two_processes_that_both_follow_the_pool_are_never_matched(contained):
    kernel = contained(stage(None))
    comm_id = start_recorder(kernel)

    cuda_starts(kernel, 2048, OUTER=2548, **{"4190005": 2548})  # a neighbour started at the same moment
    sample_where(kernel, comm_id, lambda s: gpu0(s)["own_candidates"] == 2)
    pool_grows(kernel, 3072, OUTER=3572, **{"4190005": 3572})  # and grows exactly as this kernel does
    sample = sample_where(kernel, comm_id, lambda s: gpu0(s)["own_bytes"] == (3072 + 450) * MiB)
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        gpu = gpu0(sample)
        assert (gpu["own_source"], gpu["own_pid"], gpu["own_candidates"]) == ("estimated", None, 2)
        sample = sample_where(kernel, comm_id, lambda s: True)
    assert "2 listed processes could be this kernel's, so none is taken for it" in gpu["own_reason"]
    status = kernel.run("%gpumem status").stdout
    assert "<- this kernel" not in status and "this kernel holds about 3522 MiB (estimated: " in status


def test_a_mig_partition_is_a_hard_limit(kernel_with):
    kernel = kernel_with("mig", env={"CUDA_VISIBLE_DEVICES": "MIG-22222222-0000-4000-8000-000000000002"})
    kernel.run("%load_ext jupyter_gpumem")
    status = kernel.run("%gpumem status").stdout
    assert "Limits on this kernel's memory:\n  GPU 0: hard: a MIG partition of 19968 MiB" in status
    gpu = gpu0(sample_where(kernel, connect(kernel), lambda s: bool(s["gpus"])))
    assert (gpu["limit_kind"], gpu["limit_hard"], gpu["limit_bytes"]) == ("mig", True, 19968 * MiB)
