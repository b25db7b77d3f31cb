"""Shapes of shared GPUs in the stand-in NVML, through the unmodified nvidia-ml-py binding (issue 44).

MIG device handles and the processes of each GPU instance; the driver-enforced memory limits of drivers from 615
(nvmlDevice{Get,Set}MemoryLimits_v1) on real cgroup v2 directories; the addressing mode of drivers from 580 and a
unified-memory GPU (GB10). Nothing here patches pynvml: every struct and error code travels the real path.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pynvml
import pytest
from cgroup_fixtures import own_cgroup

from jupyter_gpumem import standin

MiB = 1024**2
GiB = 1024**3
MAX = pynvml.NVML_DEVICE_MEMORY_LIMIT_MAX
SCENARIOS = Path(__file__).parents[1] / "fixtures/scenarios"
SLICE_UUIDS = [
    "MIG-1d7f3b29-6a4e-5c81-9f02-b8e45a7c3d16",
    "MIG-2e8a4c3b-7b5f-5d92-a013-c9f56b8d4e27",
    "MIG-3f9b5d4c-8c6a-5ea3-b124-daa67c9e5f38",
    "MIG-4a0c6e5d-9d7b-5fb4-8235-ebb78daf6a49",
    "MIG-5b1d7f6e-ae8c-50c5-9346-fcc89eb07b5a",
    "MIG-6c2e807f-bf9d-51d6-a457-0dd9afc18c6b",
    "MIG-7d3f9180-c0ae-52e7-b568-1eeab0d29d7c",
]
_numbers = itertools.count()


def text_of(name: str) -> str:
    return (SCENARIOS / f"{name}.scenario").read_text()


def text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def error_name(call: Callable[[], object]) -> str:
    """The class name of the NVMLError a call raises ("" when it raises none)."""
    try:
        call()
    except pynvml.NVMLError as error:
        return type(error).__name__
    return ""


@pytest.fixture
def nvml_init() -> Iterator[Callable[[], None]]:
    """nvmlInit (the stand-in reads the scenario again and looks for pid=kernel); nvmlShutdown as often after."""
    opened = []

    def init() -> None:
        pynvml.nvmlInit()
        opened.append(True)

    yield init
    for _ in opened:
        pynvml.nvmlShutdown()


@pytest.fixture
def nvml(scenario, nvml_init) -> Callable[[str], Path]:
    """Point the stand-in at a scenario (fixture name or text) and initialise NVML on it."""

    def use(name_or_text: str) -> Path:
        path = scenario(name_or_text)
        nvml_init()
        return path

    return use


@pytest.fixture
def helpers() -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Processes that wait on stdin; ``kernel=True`` runs one as an IPython kernel does (``ipykernel_launcher`` in
    its arguments), which the stand-in's pid=kernel names when its environment names the scenario."""
    started: list[subprocess.Popen[bytes]] = []

    def start(kernel: bool = False) -> subprocess.Popen[bytes]:
        argv = [sys.executable, "-c", "import sys; sys.stdin.read()", *(["ipykernel_launcher"] if kernel else [])]
        started.append(subprocess.Popen(argv, stdin=subprocess.PIPE))
        # Popen returns once the child began its exec, which may not yet show its arguments in /proc (vfork).
        deadline = time.monotonic() + 10
        while Path(f"/proc/{started[-1].pid}/cmdline").read_bytes().count(b"\0") < len(argv):
            assert time.monotonic() < deadline, "the helper process did not start"
            time.sleep(0.005)
        return started[-1]

    yield start
    for process in started:
        process.kill()
        process.wait()


def get_limits(handle: object, name_space: str | bytes | None) -> tuple[int, int, int]:
    limits = pynvml.c_nvmlGetMemoryLimits_v1_t()
    limits.nameSpace = name_space.encode() if isinstance(name_space, str) else name_space
    pynvml.nvmlDeviceGetMemoryLimits_v1(handle, limits)
    return limits.softLimit, limits.hardLimit, limits.currentUsed


def set_limits(handle: object, name_space: str | None, soft: int, hard: int) -> None:
    limits = pynvml.c_nvmlSetMemoryLimits_v1_t()
    limits.nameSpace = name_space.encode() if name_space is not None else None
    limits.softLimit, limits.hardLimit = soft, hard
    pynvml.nvmlDeviceSetMemoryLimits_v1(handle, limits)


def slices(gpu: object) -> list[object]:
    found = []
    for index in range(pynvml.nvmlDeviceGetMaxMigDeviceCount(gpu)):
        with contextlib.suppress(pynvml.NVMLError_NotFound):
            found.append(pynvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu, index))
    return found


# ---------------------------------------------------------------------------------------------- MIG handles


def test_each_1g5gb_slice_answers_its_own_name_uuid_memory_and_instance_ids(nvml):
    nvml("mig_1g5gb")
    gpu = pynvml.nvmlDeviceGetHandleByIndex(0)
    assert pynvml.nvmlDeviceGetMigMode(gpu) == [1, 1]
    found = slices(gpu)
    facts = [
        (
            text(pynvml.nvmlDeviceGetName(mig)),
            text(pynvml.nvmlDeviceGetUUID(mig)),
            pynvml.nvmlDeviceGetMemoryInfo(mig).total,
            pynvml.nvmlDeviceGetGpuInstanceId(mig),
            pynvml.nvmlDeviceGetComputeInstanceId(mig),
        )
        for mig in found
    ]
    assert facts == [
        ("NVIDIA A100-SXM4-40GB MIG 1g.5gb", uuid, 4864 * MiB, gi, 0)
        for uuid, gi in zip(SLICE_UUIDS, range(7, 14), strict=True)
    ]
    assert [pynvml.nvmlDeviceGetMemoryInfo(mig).used for mig in found] == [1536 * MiB, 0, 3072 * MiB, 0, 0, 0, 0]
    for mig in found:
        assert getattr(pynvml.nvmlDeviceIsMigDeviceHandle(mig), "value", None) == 1
        parent = pynvml.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig)
        assert text(pynvml.nvmlDeviceGetUUID(parent)) == "GPU-5c0e7a3d-9b41-4f86-a2d7-3e8c1b6f0a94"
        assert pynvml.nvmlDeviceGetMemoryInfo(parent).total == 40960 * MiB
        assert error_name(lambda mig=mig: pynvml.nvmlDeviceGetUtilizationRates(mig)) == "NVMLError_NotSupported"


def test_a_gpus_own_handle_is_no_mig_device_and_has_no_instance_ids(nvml):
    nvml("mig_1g5gb")
    gpu = pynvml.nvmlDeviceGetHandleByIndex(0)
    assert text(pynvml.nvmlDeviceGetName(gpu)) == "NVIDIA A100-SXM4-40GB"
    assert getattr(pynvml.nvmlDeviceIsMigDeviceHandle(gpu), "value", None) == 0
    assert error_name(lambda: pynvml.nvmlDeviceGetGpuInstanceId(gpu)) == "NVMLError_NotSupported"
    assert error_name(lambda: pynvml.nvmlDeviceGetComputeInstanceId(gpu)) == "NVMLError_NotSupported"
    assert error_name(lambda: pynvml.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(gpu)) == "NVMLError_InvalidArgument"
    assert error_name(lambda: pynvml.nvmlDeviceGetUtilizationRates(gpu)) == "NVMLError_NotSupported"


QUERIES = {
    ("compute", "v3"): pynvml.nvmlDeviceGetComputeRunningProcesses_v3,
    ("compute", "v2"): pynvml.nvmlDeviceGetComputeRunningProcesses_v2,
    ("graphics", "v3"): pynvml.nvmlDeviceGetGraphicsRunningProcesses_v3,
    ("graphics", "v2"): pynvml.nvmlDeviceGetGraphicsRunningProcesses_v2,
}


@pytest.mark.parametrize(("kind", "version"), list(QUERIES))
def test_a_mig_handle_lists_the_processes_of_its_gpu_instance_the_gpu_all(kind, version, scenario, nvml_init, helpers):
    scenario(text_of("mig_1g5gb").replace("kind=compute", f"kind={kind}"))
    kernel = helpers(kernel=True)
    nvml_init()  # finds the kernel
    query, other = QUERIES[(kind, version)], QUERIES[("graphics" if kind == "compute" else "compute", version)]
    gpu = pynvml.nvmlDeviceGetHandleByIndex(0)

    def rows(handle: object) -> list[tuple[int, int | None, int, int]]:
        return [(p.pid, p.usedGpuMemory, p.gpuInstanceId, p.computeInstanceId) for p in query(handle)]

    mine, theirs = (kernel.pid, 1536 * MiB, 7, 0), (48213, 3072 * MiB, 9, 0)
    assert [rows(mig) for mig in slices(gpu)] == [[mine], [], [theirs], [], [], [], []]
    assert rows(gpu) == [mine, theirs]
    assert [other(handle) for handle in [gpu, *slices(gpu)]] == [[]] * 8


def test_mig_lines_without_gi_are_gpu_instances_one_two_in_order(nvml):
    nvml("mig")  # proc lines gi=1 and gi=2, mig lines without gi= or name=
    gpu = pynvml.nvmlDeviceGetHandleByIndex(0)
    first, second = slices(gpu)
    assert [pynvml.nvmlDeviceGetGpuInstanceId(m) for m in (first, second)] == [1, 2]
    assert [text(pynvml.nvmlDeviceGetName(m)) for m in (first, second)] == ["", ""]  # nor name=
    assert [pynvml.nvmlDeviceGetComputeInstanceId(m) for m in (first, second)] == [0, 0]
    assert [(p.pid, p.usedGpuMemory) for p in pynvml.nvmlDeviceGetComputeRunningProcesses(first)] == [
        (5100, 15000 * MiB)
    ]
    assert [(p.pid, p.usedGpuMemory) for p in pynvml.nvmlDeviceGetComputeRunningProcesses(second)] == [(5101, None)]


def test_a_mig_slice_can_be_made_to_fail_its_instance_queries(nvml):
    text_ = text_of("mig_1g5gb").replace(" gi=8 ci=0", " gi=8 ci=0 fail=mig:no_permission")
    nvml(text_)
    gpu = pynvml.nvmlDeviceGetHandleByIndex(0)
    first, second, *_ = slices(gpu)
    assert pynvml.nvmlDeviceGetGpuInstanceId(first) == 7
    assert error_name(lambda: pynvml.nvmlDeviceGetGpuInstanceId(second)) == "NVMLError_NoPermission"
    assert error_name(lambda: pynvml.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(second)) == "NVMLError_NoPermission"


def test_a_driver_without_the_mig_queries_lacks_the_new_ones_too(scenario, tmp_path):
    path = scenario("mig_1g5gb")
    library = standin.build(tmp_path / "without-mig", without_mig=True)
    env = standin.environment(library, path, base={**os.environ, "LD_LIBRARY_PATH": ""})
    code = (
        "import json, pynvml as n\n"
        "n.nvmlInit(); g = n.nvmlDeviceGetHandleByIndex(0); out = []\n"
        "for f in (n.nvmlDeviceGetGpuInstanceId, n.nvmlDeviceGetComputeInstanceId, n.nvmlDeviceIsMigDeviceHandle,\n"
        "          n.nvmlDeviceGetDeviceHandleFromMigDeviceHandle, n.nvmlDeviceGetMaxMigDeviceCount):\n"
        "    try: f(g); out.append('')\n"
        "    except n.NVMLError as e: out.append(type(e).__name__)\n"
        "print(json.dumps([out, len(n.nvmlDeviceGetComputeRunningProcesses(g))]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == [["NVMLError_FunctionNotFound"] * 5, 1]


# ---------------------------------------------------------------------------------------------- memory limits


def test_a_cgroup_without_a_limit_line_has_no_limit(nvml, mount):
    nvml("driver_limit")
    gpu = pynvml.nvmlDeviceGetHandleByIndex(0)
    own = str(mount) + own_cgroup()
    # No kernel reads the scenario, so its pid=kernel process is not listed: nothing in the cgroup uses memory.
    assert get_limits(gpu, own) == (0, MAX, 0)
    assert get_limits(gpu, str(mount)) == (0, MAX, 0)


def test_a_limit_line_is_read_for_its_gpu_and_cgroup_only(nvml, cgroups):
    parent, child = cgroups.make("parent"), cgroups.make("parent/child")
    rel = cgroups.relative(parent)
    gpu_line = next(line for line in text_of("driver_limit").splitlines() if line.startswith("gpu "))
    nvml(
        text_of("driver_limit")
        + gpu_line.replace("GPU-8b2d", "GPU-9c3e")
        + "\n"
        + f"limit gpu=0 cgroup={rel} soft=2GiB hard=4GiB used=1GiB\n"
        + f'limit gpu=1 cgroup="{rel}/" soft=512MiB hard=max\n'
    )
    gpu0, gpu1 = pynvml.nvmlDeviceGetHandleByIndex(0), pynvml.nvmlDeviceGetHandleByIndex(1)
    assert get_limits(gpu0, str(parent)) == (2 * GiB, 4 * GiB, 1 * GiB)
    assert get_limits(gpu0, str(parent) + "/") == (2 * GiB, 4 * GiB, 1 * GiB)
    assert get_limits(gpu1, str(parent)) == (512 * MiB, MAX, 0)
    assert get_limits(gpu0, str(child)) == (0, MAX, 0)  # a limit line is for its cgroup, not those below


def test_limits_need_a_driver_from_615(nvml, mount):
    nvml("driver_limit_old")
    gpu = pynvml.nvmlDeviceGetHandleByIndex(0)
    assert error_name(lambda: get_limits(gpu, str(mount))) == "NVMLError_FunctionNotFound"
    assert error_name(lambda: set_limits(gpu, str(mount), GiB, 2 * GiB)) == "NVMLError_FunctionNotFound"
    nvml(text_of("driver_limit_old").replace("version=580.95.05", "version=615.0"))
    assert get_limits(pynvml.nvmlDeviceGetHandleByIndex(0), str(mount)) == (0, MAX, 0)


def test_limits_on_a_mig_handle_are_not_supported(nvml, mount):
    nvml("mig_1g5gb")
    gpu = pynvml.nvmlDeviceGetHandleByIndex(0)
    (first, *_) = slices(gpu)
    assert error_name(lambda: get_limits(first, str(mount))) == "NVMLError_NotSupported"
    assert error_name(lambda: set_limits(first, str(mount), GiB, 2 * GiB)) == "NVMLError_NotSupported"
    assert get_limits(gpu, str(mount))[:2] == (0, MAX)


def test_a_name_space_must_be_an_existing_cgroup_directory(nvml, mount):
    nvml("driver_limit")
    gpu = pynvml.nvmlDeviceGetHandleByIndex(0)
    missing = mount / f"gpumem-{os.getpid()}-missing"
    assert error_name(lambda: get_limits(gpu, str(missing))) == "NVMLError_NotFound"
    assert error_name(lambda: set_limits(gpu, str(missing), GiB, 2 * GiB)) == "NVMLError_NotFound"
    for wrong in [None, "gpumem/relative", "/tmp", str(mount) + "-not-below", str(mount / "a" / ".." / "b")]:
        assert error_name(lambda wrong=wrong: get_limits(gpu, wrong)) == "NVMLError_InvalidArgument", wrong


def test_a_lost_gpu_answers_gpu_lost_to_the_limit_calls(nvml, mount):
    path = nvml("driver_limit")
    gpu = pynvml.nvmlDeviceGetHandleByIndex(0)
    standin.write_scenario(path, text_of("driver_limit").replace(" cc=8.0", " cc=8.0 lost=1"))
    assert error_name(lambda: get_limits(gpu, str(mount))) == "NVMLError_GpuIsLost"
    assert error_name(lambda: set_limits(gpu, str(mount), GiB, 2 * GiB)) == "NVMLError_GpuIsLost"


@pytest.mark.parametrize(
    ("code", "raised"), [("no_permission", "NVMLError_NoPermission"), ("999", "NVMLError_Unknown")]
)
def test_a_scenario_can_make_the_limit_calls_fail(nvml, mount, code, raised):
    path = nvml(text_of("driver_limit").replace(" cc=8.0", f" cc=8.0 fail=limits:{code}"))
    gpu = pynvml.nvmlDeviceGetHandleByIndex(0)
    before = path.read_text()
    assert error_name(lambda: get_limits(gpu, str(mount))) == raised
    assert error_name(lambda: set_limits(gpu, str(mount), GiB, 2 * GiB)) == raised
    assert path.read_text() == before


READ_LIMITS = """
import json, sys, pynvml as n
n.nvmlInit()
limits = n.c_nvmlGetMemoryLimits_v1_t()
limits.nameSpace = sys.argv[1].encode()
n.nvmlDeviceGetMemoryLimits_v1(n.nvmlDeviceGetHandleByIndex(0), limits)
print(json.dumps([limits.softLimit, limits.hardLimit]))
"""


def test_a_limit_set_as_root_is_seen_by_another_process_and_cleared_again(nvml, cgroups, standin_dir):
    if os.geteuid() != 0:
        pytest.skip("setting a limit needs root")
    parent = cgroups.make("parent")
    path = nvml("driver_limit")
    path.chmod(0o640)
    original = path.read_text()
    gpu = pynvml.nvmlDeviceGetHandleByIndex(0)
    env = standin.environment(standin_dir, path)

    def elsewhere() -> list[int]:
        argv = [sys.executable, "-c", READ_LIMITS, str(parent)]
        return json.loads(subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout)

    set_limits(gpu, str(parent), 1 * GiB, 2 * GiB)
    line = f"limit gpu=0 cgroup={cgroups.relative(parent)} soft={GiB} hard={2 * GiB}\n"
    assert path.read_text() == original + line
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert elsewhere() == [GiB, 2 * GiB]
    assert get_limits(gpu, str(parent))[:2] == (GiB, 2 * GiB)

    set_limits(gpu, str(parent), 0, 3 * GiB)  # replaces the line
    assert path.read_text() == original + line.replace(f"soft={GiB} hard={2 * GiB}", f"soft=0 hard={3 * GiB}")
    assert elsewhere() == [0, 3 * GiB]

    assert error_name(lambda: set_limits(gpu, str(parent), 3 * GiB, GiB)) == "NVMLError_InvalidArgument"
    assert elsewhere() == [0, 3 * GiB]

    set_limits(gpu, str(parent), 0, MAX)  # cleared: the line goes
    assert path.read_text() == original
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert elsewhere() == [0, MAX]


def test_setting_a_limit_keeps_every_other_line_byte_for_byte(nvml, cgroups):
    if os.geteuid() != 0:
        pytest.skip("setting a limit needs root")
    parent, other = cgroups.make("parent"), cgroups.make("other")
    rel, other_rel = cgroups.relative(parent), cgroups.relative(other)
    kept = (
        "# limit gpu=0 cgroup="
        + rel
        + " soft=1 hard=2  (a comment, not a line)\n"
        + text_of("driver_limit").replace("\n", "\r\n", 1)
        + f"limit   gpu=0 cgroup={other_rel}  soft=1GiB hard=2GiB\n"
        + f"limit gpu=1 cgroup={rel} soft=1GiB hard=2GiB\n"
    )
    path = nvml(kept + f"limit gpu=0 cgroup={rel} soft=1GiB hard=2GiB\n" + "proc gpu=0 pid=4242 used=1MiB")
    gpu = pynvml.nvmlDeviceGetHandleByIndex(0)
    set_limits(gpu, str(parent), 0, 5 * GiB)
    new = f"limit gpu=0 cgroup={rel} soft=0 hard={5 * GiB}\n"
    assert path.read_bytes() == (kept + new + "proc gpu=0 pid=4242 used=1MiB").encode()
    set_limits(gpu, str(parent), 0, MAX)
    assert path.read_bytes() == (kept + "proc gpu=0 pid=4242 used=1MiB").encode()
    set_limits(gpu, str(parent), 7, 9)  # a new line after a last line without its newline
    assert (
        path.read_bytes()
        == (kept + "proc gpu=0 pid=4242 used=1MiB\n" + new.replace(f"0 hard={5 * GiB}", "7 hard=9")).encode()
    )
    assert get_limits(gpu, str(other))[:2] == (GiB, 2 * GiB)


UNPRIVILEGED = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

SET_LIMITS = """
import json, os, sys, pynvml as n
n.nvmlInit()
gpu = n.nvmlDeviceGetHandleByIndex(0)
limits = n.c_nvmlSetMemoryLimits_v1_t()
limits.nameSpace, limits.softLimit, limits.hardLimit = sys.argv[1].encode(), 1 << 30, 2 << 30
try:
    n.nvmlDeviceSetMemoryLimits_v1(gpu, limits)
    answer = "set"
except n.NVMLError as error:
    answer = type(error).__name__
read = n.c_nvmlGetMemoryLimits_v1_t()
read.nameSpace = sys.argv[1].encode()
n.nvmlDeviceGetMemoryLimits_v1(gpu, read)
print(json.dumps([os.geteuid(), answer, read.softLimit, read.hardLimit]))
"""


def test_setting_a_limit_needs_root(standin_dir, mount):
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run a process as nobody")
    # Somewhere nobody can read: the library, the scenario (and write nothing).
    directory = Path(tempfile.mkdtemp(prefix="gpumem-nobody-"))
    try:
        directory.chmod(0o755)
        shutil.copy2(standin_dir / standin.LIBRARY_NAME, directory / standin.LIBRARY_NAME)
        path = directory / "active.scenario"
        path.write_text(text_of("driver_limit"))
        path.chmod(0o644)
        env = standin.environment(directory, path, base={**os.environ, "LD_LIBRARY_PATH": ""})
        probe = subprocess.run([*UNPRIVILEGED, sys.executable, "-c", "import pynvml"], env=env, capture_output=True)
        if probe.returncode != 0:
            pytest.skip(f"nobody cannot run this Python: {probe.stderr.decode()[-200:]}")
        argv = [sys.executable, "-c", SET_LIMITS, str(mount)]
        as_nobody = subprocess.run([*UNPRIVILEGED, *argv], env=env, capture_output=True, text=True, check=True)
        assert json.loads(as_nobody.stdout) == [65534, "NVMLError_NoPermission", 0, MAX]
        assert path.read_text() == text_of("driver_limit")
        as_root = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
        assert json.loads(as_root.stdout) == [0, "set", GiB, 2 * GiB]
        assert path.read_text() == text_of("driver_limit") + f"limit gpu=0 cgroup=/ soft={GiB} hard={2 * GiB}\n"
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_current_used_counts_the_gpus_processes_in_the_cgroup_and_below(scenario, nvml_init, cgroups, helpers):
    parent, child = cgroups.make("parent"), cgroups.make("parent/child")
    path = scenario("driver_limit")  # its pid=kernel line: 1536 MiB
    kernel, in_child, in_parent, outside, unknown = helpers(kernel=True), helpers(), helpers(), helpers(), helpers()
    for process, where in [(kernel, child), (in_child, child), (in_parent, parent), (unknown, child)]:
        cgroups.move(process.pid, where)
    assert own_cgroup(kernel.pid) == cgroups.relative(child)
    assert own_cgroup(in_parent.pid) == cgroups.relative(parent)
    gpu_line = next(line for line in text_of("driver_limit").splitlines() if line.startswith("gpu "))
    standin.write_scenario(
        path,
        text_of("driver_limit")
        + gpu_line.replace("GPU-8b2d", "GPU-9c3e")
        + "\n"
        + f"proc gpu=0 pid={in_child.pid} used=1000MiB\n"
        + f"proc gpu=0 pid={in_parent.pid} used=500MiB\n"
        + f"proc gpu=0 pid={in_parent.pid} used=500MiB kind=graphics\n"  # one process, counted once
        + f"proc gpu=0 pid={outside.pid} used=250MiB\n"
        + f"proc gpu=0 pid={unknown.pid} used=na\n"
        + f"proc gpu=1 pid={in_child.pid} used=4000MiB\n",  # another GPU's
    )
    nvml_init()  # finds the kernel
    gpu0, gpu1 = pynvml.nvmlDeviceGetHandleByIndex(0), pynvml.nvmlDeviceGetHandleByIndex(1)
    assert get_limits(gpu0, str(child)) == (0, MAX, (1536 + 1000) * MiB)
    assert get_limits(gpu0, str(parent)) == (0, MAX, (1536 + 1000 + 500) * MiB)
    assert get_limits(gpu1, str(parent)) == (0, MAX, 4000 * MiB)
    assert get_limits(gpu0, str(cgroups.mount)) == (0, MAX, (1536 + 1000 + 500 + 250) * MiB)
    # A limit line's used= is what the driver says, whatever the processes use.
    standin.write_scenario(
        path, path.read_text() + f"limit gpu=0 cgroup={cgroups.relative(parent)} hard=8GiB used=7MiB\n"
    )
    assert get_limits(gpu0, str(parent)) == (0, 8 * GiB, 7 * MiB)
    assert get_limits(gpu0, str(child))[2] == (1536 + 1000) * MiB


# ---------------------------------------------------------------------------------------------- addressing mode

ADDRESSING = """driver version=580.95.05 cuda=13000
gpu name="NVIDIA H100 80GB HBM3" uuid=GPU-00000000-0000-4000-8000-000000000001 total=81559MiB cc=9.0
gpu name="NVIDIA H100 80GB HBM3" uuid=GPU-00000000-0000-4000-8000-000000000002 total=81559MiB cc=9.0 addressing=none
gpu name="NVIDIA H100 80GB HBM3" uuid=GPU-00000000-0000-4000-8000-000000000003 total=81559MiB cc=9.0 addressing=hmm
gpu name="NVIDIA GH200 480GB" uuid=GPU-00000000-0000-4000-8000-000000000004 total=97871MiB cc=9.0 addressing=ats
gpu name="Tesla V100-SXM2-16GB" uuid=GPU-00000000-0000-4000-8000-000000000005 total=16384MiB cc=7.0 addressing=hmm
gpu name="NVIDIA H100 80GB HBM3" uuid=GPU-00000000-0000-4000-8000-000000000006 cc=9.0 fail=addressing:no_permission
"""


def addressing(index: int) -> int | str:
    try:
        return pynvml.nvmlDeviceGetAddressingMode(pynvml.nvmlDeviceGetHandleByIndex(index))
    except pynvml.NVMLError as error:
        return type(error).__name__


def test_addressing_mode_values(nvml):
    nvml(ADDRESSING)
    assert [addressing(i) for i in range(6)] == [
        pynvml.NVML_DEVICE_ADDRESSING_MODE_NONE,
        pynvml.NVML_DEVICE_ADDRESSING_MODE_NONE,
        pynvml.NVML_DEVICE_ADDRESSING_MODE_HMM,
        pynvml.NVML_DEVICE_ADDRESSING_MODE_ATS,
        "NVMLError_NotSupported",  # before Turing
        "NVMLError_NoPermission",
    ]
    assert (pynvml.NVML_DEVICE_ADDRESSING_MODE_HMM, pynvml.NVML_DEVICE_ADDRESSING_MODE_ATS) == (1, 2)
    # The struct's version is checked, as nvml.h says: the binding sets nvmlDeviceAddressingMode_v1, so go round it.
    call = pynvml._nvmlGetFunctionPointer("nvmlDeviceGetAddressingMode")
    mode = pynvml.c_nvmlDeviceAddressingMode_t()
    assert mode.version == pynvml.nvmlDeviceAddressingMode_v1 == 0x1000008
    mode.version = 0x2000008
    assert call(pynvml.nvmlDeviceGetHandleByIndex(3), ctypes.byref(mode)) == pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH


def test_addressing_mode_needs_a_driver_from_580(nvml):
    nvml(ADDRESSING.replace("version=580.95.05", "version=575.57.08"))
    assert [addressing(i) for i in range(6)] == ["NVMLError_FunctionNotFound"] * 6


def test_a_unified_memory_gb10_has_ats_and_no_framebuffer_figures(scenario, nvml_init, helpers):
    scenario("unified_gb10")
    kernel = helpers(kernel=True)
    nvml_init()
    gpu = pynvml.nvmlDeviceGetHandleByIndex(0)
    assert text(pynvml.nvmlDeviceGetName(gpu)) == "NVIDIA GB10"
    assert pynvml.nvmlDeviceGetCudaComputeCapability(gpu) == (12, 1)
    assert pynvml.nvmlDeviceGetAddressingMode(gpu) == pynvml.NVML_DEVICE_ADDRESSING_MODE_ATS
    assert error_name(lambda: pynvml.nvmlDeviceGetMemoryInfo(gpu)) == "NVMLError_NotSupported"
    assert [(p.pid, p.usedGpuMemory) for p in pynvml.nvmlDeviceGetComputeRunningProcesses(gpu)] == [(kernel.pid, None)]
    assert error_name(lambda: get_limits(gpu, "/sys/fs/cgroup")) == "NVMLError_FunctionNotFound"  # driver 580
