"""Test bed: the stand-in libnvidia-ml.so.1, built from jupyter_gpumem/standin/nvml.c.

The dynamic loader reads LD_LIBRARY_PATH once, when a process starts. So the first pytest process
compiles the stand-in into a temporary directory and runs itself again with LD_LIBRARY_PATH naming
it; from then on the unmodified nvidia-ml-py binding loads it exactly as it loads a real driver.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.manager import KernelManager

from jupyter_gpumem import standin
from jupyter_gpumem.i18n import build as catalogues

# Fixtures of their own module, for every test: real cgroup v2 directories (``mount``, ``cgroups``).
pytest_plugins = ["cgroup_fixtures"]

FIXTURES = Path(__file__).parent / "fixtures"
SCENARIOS = FIXTURES / "scenarios"
_BUILD_VARIABLE = "JUPYTER_GPUMEM_TEST_STANDIN_DIR"


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get(_BUILD_VARIABLE):
        return
    # The catalogues' .mo and .json (gitignored), which kernels and JupyterLab read, rebuilt when a .po is newer.
    checkout = Path(__file__).parents[1]
    if catalogues.stale(checkout / "jupyter_gpumem" / "locale"):
        catalogues.build(checkout / "jupyter_gpumem" / "locale", catalogues.checkout_version(checkout))
    directory = Path(tempfile.mkdtemp(prefix="gpumem-standin-"))
    standin.build(directory / "current")
    standin.build(directory / "without-v3", without_v3=True)
    os.environ[_BUILD_VARIABLE] = str(directory)
    os.environ["LD_LIBRARY_PATH"] = os.pathsep.join(
        filter(None, [str(directory / "current"), os.environ.get("LD_LIBRARY_PATH")])
    )
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is not None:
        capture.stop_global_capturing()
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])


def pytest_unconfigure(config: pytest.Config) -> None:
    directory = os.environ.get(_BUILD_VARIABLE)
    if directory and os.environ.get("PYTEST_XDIST_WORKER") is None:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def standin_dir() -> Path:
    """The directory holding the stand-in libnvidia-ml.so.1 this process loads."""
    return Path(os.environ[_BUILD_VARIABLE]) / "current"


@pytest.fixture(scope="session")
def standin_without_v3_dir() -> Path:
    """A stand-in that imitates a driver older than the binding (no _v3 process queries)."""
    return Path(os.environ[_BUILD_VARIABLE]) / "without-v3"


@pytest.fixture
def scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], Path]]:
    """Point the stand-in at a scenario: a fixture name ("s1_two_gpus") or scenario text.

    The scenario is copied to a file of this test's own, which the test may rewrite later with
    ``standin.write_scenario`` to change what the driver reports mid-run.
    """

    def use(name_or_text: str) -> Path:
        is_text = "\n" in name_or_text
        text = name_or_text if is_text else (SCENARIOS / f"{name_or_text}.scenario").read_text()
        path = tmp_path / "active.scenario"
        standin.write_scenario(path, text)
        monkeypatch.setenv(standin.SCENARIO_VARIABLE, str(path))
        return path

    yield use


@dataclass
class Reply:
    stdout: str  # what the cell printed, and the text/plain of display_data (a rich output's fallback)
    stderr: str
    status: str
    error: str
    # each display_data's and update_display_data's content: data, metadata, transient (its display_id)
    displayed: list[dict[str, Any]] = field(default_factory=list)


def held_cell(go: Path) -> str:
    """A cell that keeps the kernel's main thread busy until the file ``go`` exists (at most 120 s): a test lets it
    go once it has seen what should come while a cell runs, never after a fixed time."""
    return (
        "import time\nfrom pathlib import Path\nuntil = time.monotonic() + 120\n"
        f"while not Path({str(go)!r}).exists() and time.monotonic() < until:\n    time.sleep(0.05)\n"
        f"print(Path({str(go)!r}).exists())"
    )


class Kernel:
    def __init__(self, env: dict[str, str], scenario: Path):
        self.scenario = scenario  # rewrite it (standin.write_scenario) to change what the driver reports
        self.manager = KernelManager(kernel_name="python3")
        self.manager.start_kernel(env=env)
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)
        self.passed: list[dict[str, Any]] = []  # iopub messages run() read but did not use, oldest first

    def run(self, code: str, timeout: float = 60) -> Reply:
        return self.reply(self.client.execute(code), timeout)

    def reply(self, msg_id: str, timeout: float = 60) -> Reply:
        """What the cell ``msg_id`` (from client.execute) printed, displayed and answered, once it is done."""
        stdout, stderr, error = [], [], ""
        displayed: list[dict[str, Any]] = []
        while True:
            msg = self.client.get_iopub_msg(timeout=timeout)
            kind, content = msg["msg_type"], msg["content"]
            if msg["parent_header"].get("msg_id") != msg_id or kind.startswith("comm_"):
                self.passed.append(msg)
                continue
            if kind == "stream":
                (stdout if content["name"] == "stdout" else stderr).append(content["text"])
            elif kind == "display_data":
                displayed.append(content)
                stdout.append(content["data"].get("text/plain", "") + "\n")
            elif kind == "update_display_data":
                displayed.append(content)
            elif kind == "error":
                error = "\n".join(content["traceback"])
            elif kind == "status" and content["execution_state"] == "idle":
                break
        reply = self.client.get_shell_msg(timeout=timeout)
        while reply["parent_header"].get("msg_id") != msg_id:  # e.g. a second kernel_info reply from
            reply = self.client.get_shell_msg(timeout=timeout)  # wait_for_ready on a slow start
        return Reply("".join(stdout), "".join(stderr), reply["content"]["status"], error, displayed)

    def comm_message(self, kind: str, timeout: float = 30, **match: Any) -> dict[str, Any]:
        """The content of the first iopub ``kind`` message (comm_open, comm_msg, stream...) whose content
        has the ``match`` items: first among those run() passed over, then new ones (the others skipped)."""

        def matches(msg: dict[str, Any]) -> bool:
            return msg["msg_type"] == kind and all(msg["content"].get(k) == v for k, v in match.items())

        for msg in self.passed:
            if matches(msg):
                self.passed.remove(msg)
                return dict(msg["content"])
        deadline = time.monotonic() + timeout
        while True:
            msg = self.client.get_iopub_msg(timeout=max(0.01, deadline - time.monotonic()))
            if matches(msg):
                return dict(msg["content"])

    def send_comm(self, comm_id: str, data: Any) -> None:
        """What a frontend does to talk to a kernel comm."""
        self.client.shell_channel.send(self.client.session.msg("comm_msg", {"comm_id": comm_id, "data": data}))

    def stop(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


@pytest.fixture
def kernel_with(tmp_path: Path, standin_dir: Path) -> Iterator[Callable[..., Kernel]]:
    """Start real IPython kernels (jupyter_client) on the stand-in NVML with a fixture scenario."""
    started: list[Kernel] = []

    def start(scenario: str, library_dir: Path | None = None, env: dict[str, str] | None = None) -> Kernel:
        path = tmp_path / f"{scenario}.scenario"
        standin.write_scenario(path, (SCENARIOS / f"{scenario}.scenario").read_text())
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("JUPYTER_GPUMEM_", "CUDA_", "TF_", "XLA_", "PYTORCH_"))
        }
        base["LD_LIBRARY_PATH"] = ""
        base["TF_CPP_MIN_LOG_LEVEL"] = "3"  # keep TensorFlow's C++ start-up chatter out of the outputs
        base["XDG_CACHE_HOME"] = str(tmp_path / "cache")  # the overhead cache: shared by this test's kernels only
        kernel = Kernel({**standin.environment(library_dir or standin_dir, path, base=base), **(env or {})}, path)
        started.append(kernel)
        return kernel

    yield start
    for kernel in started:
        kernel.stop()
