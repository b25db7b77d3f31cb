"""Who may write what the server and the kernels believe (issue 43, finding 3; docs/hub.md, "Trust model").

A kernel's report and the server's notice live in ``<runtime dir>/jupyter-gpumem/``. Where the runtime directory is
shared (a sticky, world-writable /tmp folder), another Unix user can make that folder first. And within one user any
process can write a report claiming any PID. So: the folder is used only where it is private to the user (0700,
theirs, not a link, in a folder no other user can replace it in), the server reads only reports its own user wrote
there, a report's PID counts for nothing (a kernel's processes are its pid and that pid's descendants in the process
table), and the idle culler acts only on memory NVML shows for those processes, never on a report's own figure.

Real parts: a second Unix user made by useradd (hub_fixtures.unix_users) who makes folders, writes files and runs a
process; real process trees; the kernel's real Publisher; the server's real Watcher on the stand-in NVML; and a real
`jupyter server` with real kernels and the idle culler on (server_fixtures.running_server).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hub_fixtures import run_user, unix_users
from protocol_fixtures import IDLE_NOTICE, s1_sample
from server_fixtures import Server, running_server

from jupyter_gpumem.budget.plan import Ceiling
from jupyter_gpumem.kernel.publish import Publisher
from jupyter_gpumem.server.watcher import Watcher, _report
from jupyter_gpumem.units import GiB, MiB
from jupyter_gpumem.wire.report import HEARTBEAT_S, notice_path, report_path

MALLORY = run_user("gpumem-trust-m")  # the other Unix user: a name no other test makes
GPU0 = "GPU-7a7a7a7a-0000-4000-8000-000000000000"
REPORT = Path(__file__).parents[1] / "fixtures" / "report" / "report.json"
NOTICE = {"protocol": 1, "type": "notice", **IDLE_NOTICE}


@pytest.fixture(scope="module")
def mallory() -> Iterator[pwd.struct_passwd]:
    with unix_users([MALLORY]):
        yield pwd.getpwnam(MALLORY)


def as_user(user: pwd.struct_passwd, *argv: str, stdin: str | None = None) -> None:
    """Run ``argv`` as ``user`` (its uid, gid and no other group), to its end."""
    subprocess.run(
        argv, input=stdin, user=user.pw_uid, group=user.pw_gid, extra_groups=[], check=True, text=True, timeout=30
    )


@pytest.fixture
def shared_runtime() -> Iterator[Path]:
    """A runtime directory anyone may write in, sticky as /tmp is (JUPYTER_RUNTIME_DIR=/tmp/jupyter-runtime):
    every user can reach it, and each may remove only their own entries."""
    path = Path(tempfile.mkdtemp(prefix="gpumem-shared-runtime-", dir="/tmp"))
    path.chmod(0o1777)
    try:
        yield path
    finally:
        shutil.rmtree(path)


@pytest.fixture
def started() -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start processes (as another user with ``user=``) that are stopped, by their id, after the test."""
    processes: list[subprocess.Popen[str]] = []

    def start(*argv: str, user: pwd.struct_passwd | None = None) -> subprocess.Popen[str]:
        who: dict[str, Any] = {} if user is None else {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, **who)
        processes.append(process)
        return process

    try:
        yield start
    finally:
        for process in processes:
            process.kill()
            process.wait()


def forged_report(pid: int, idle_since: float | None, own_bytes: int | None = None) -> str:
    """A valid, fresh report claiming ``pid`` as the kernel's and, with ``own_bytes``, that much memory of its own
    on GPU0, attributed (``matched``) as a kernel in a container would say it."""
    report = json.loads(REPORT.read_text())
    now = time.time()
    gpu = {**report["sample"]["gpus"][0], "uuid": GPU0, "index": 0}
    if own_bytes is not None:
        gpu.update(own_bytes=own_bytes, own_source="matched", own_pid=None)
    sample = {**report["sample"], "t": now, "gpus": [gpu]}
    return json.dumps({**report, "pid": pid, "t": now, "idle_since": idle_since, "sample": sample})


# (a) The kernel: its report's folder, made in a shared runtime directory by another user.


@pytest.mark.parametrize("made", ["open-0777", "private-0700", "link"])
def test_a_kernel_keeps_its_report_in_memory_where_another_user_made_its_folder(
    made: str, mallory: pwd.struct_passwd, shared_runtime: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = shared_runtime / "jupyter-gpumem"
    connection = shared_runtime / "kernel-abc.json"
    target = folder
    if made == "link":  # a link to a folder of theirs: lstat, not stat, sees it
        target = shared_runtime / "theirs"
        as_user(mallory, "mkdir", "-m", "0777", str(target))
        as_user(mallory, "ln", "-s", str(target), str(folder))
    else:
        as_user(mallory, "mkdir", "-m", made[-4:], str(folder))
    # Their forged notice, which the kernel would relay to its sidebar ("This kernel is being shut down…").
    as_user(mallory, "tee", str(target / notice_path(connection).name), stdin=json.dumps(NOTICE))
    publisher = Publisher(report_path(connection))
    t = time.time()
    with caplog.at_level(logging.WARNING, "jupyter_gpumem"):
        publisher.publish(s1_sample(t), Ceiling(), 0)
        publisher.publish(s1_sample(t + HEARTBEAT_S + 1), Ceiling(), 0)  # the heartbeat: checked again, said once
        assert publisher.notice() is None  # their notice does not reach the sidebar
    assert sorted(os.listdir(target)) == [notice_path(connection).name]  # nothing of the kernel's is there
    why = (
        f"{folder} is a symbolic link"
        if made == "link"
        else f"{folder} belongs to uid {mallory.pw_uid}, not to this process's user (uid {os.geteuid()})"
    )
    assert [r.getMessage() for r in caplog.records] == [
        f"jupyter-gpumem: this kernel keeps its report in memory only, because {why}; its sidebar is unaffected, "
        "but its Jupyter server sees it as not reporting and shows no notice from it."
    ]


def test_a_kernel_uses_its_own_private_folder_only_where_no_other_user_can_replace_it(
    shared_runtime: Path, caplog: pytest.LogCaptureFixture
) -> None:
    connection = shared_runtime / "kernel-abc.json"
    publisher = Publisher(report_path(connection))
    t0 = time.time()
    publisher.publish(s1_sample(t0), Ceiling(), 0)  # in the sticky runtime directory: its own folder
    folder = report_path(connection).parent
    assert (os.stat(folder).st_mode & 0o777, os.listdir(folder)) == (0o700, [connection.name])
    shared_runtime.chmod(0o777)  # no sticky bit: any user could rename the kernel's folder and put theirs there
    folder.chmod(0o755)  # and open to others
    with caplog.at_level(logging.WARNING, "jupyter_gpumem"):
        publisher.publish(s1_sample(t0 + HEARTBEAT_S + 1), Ceiling(), 0)
        folder.chmod(0o700)
        publisher.publish(s1_sample(t0 + 2 * HEARTBEAT_S + 2), Ceiling(), 0)
    assert [r.getMessage().split(" because ")[1].split(";")[0] for r in caplog.records] == [
        f"{folder} is open to other users (mode 0755, not 0700)",
        f"{shared_runtime} is writable by other users without the sticky bit (mode 0777), so they could replace "
        "jupyter-gpumem in it",
    ]
    assert json.loads(report_path(connection).read_text())["t"] < t0 + 1  # the first report: not rewritten since


# (b) The server: it reads a report only from its own user's private folder, and only its own user's file.


@pytest.mark.parametrize("case", ["folder-theirs", "folder-open", "file-theirs", "file-a-link"])
def test_the_server_reads_a_report_only_from_its_users_private_folder(
    case: str, mallory: pwd.struct_passwd, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    folder = runtime / "jupyter-gpumem"
    folder.mkdir(mode=0o700)
    connection = runtime / "kernel-k1.json"
    path = report_path(connection)
    path.write_text(forged_report(4242, None))
    log = logging.getLogger("test_trust")
    assert _report("k1", str(connection), log) is not None  # as it is: read
    uid, gid = mallory.pw_uid, mallory.pw_gid
    if case == "folder-theirs":
        os.chown(folder, uid, gid)
        why = f"{folder} belongs to uid {uid}, not to this process's user (uid {os.geteuid()})"
    elif case == "folder-open":
        folder.chmod(0o775)
        why = f"{folder} is open to other users (mode 0775, not 0700)"
    elif case == "file-theirs":
        os.chown(path, uid, gid)
        why = f"{path} belongs to uid {uid}, not to this server's user (uid {os.geteuid()})"
    else:
        elsewhere = tmp_path / "elsewhere.json"
        path.rename(elsewhere)
        path.symlink_to(elsewhere)
        why = f"{path} is not a plain file"
    with caplog.at_level(logging.WARNING, "test_trust"):
        assert _report("k1", str(connection), log) is None
        assert _report("k1", str(connection), log) is None  # said once
    assert [r.getMessage() for r in caplog.records] == [
        f"jupyter-gpumem: kernel k1 ({path}) is not read, because {why}: the kernel is not reporting."
    ]
    shutil.rmtree(folder)  # a kernel without jupyter-gpumem: not reporting, and nothing to say
    with caplog.at_level(logging.WARNING, "test_trust"):
        assert _report("k2", str(runtime / "kernel-k2.json"), log) is None
    assert len(caplog.records) == 1


# (c) Which processes are a kernel's: its pid and that pid's descendants, never the pid its report claims.

# The "kernel": a process whose worker (a grandchild, as a DataLoader's worker under a wrapper) holds GPU memory.
KERNEL = "import subprocess, sys; subprocess.run(['sh', '-c', 'sleep 120 & echo $!; wait'])"


def scenario_text(listed: dict[int, int]) -> str:
    procs = "".join(f"proc gpu=0 pid={pid} used={used // MiB}MiB name=python\n" for pid, used in listed.items())
    return (
        "driver version=550.54.15 cuda=12040\n"
        f'gpu name="NVIDIA A100-SXM4-40GB" uuid={GPU0} total=40960MiB used=9000MiB util=0 cc=8.0\n{procs}'
    )


def test_the_server_counts_a_kernels_own_processes_not_the_pid_its_report_claims(
    mallory: pwd.struct_passwd,
    started: Callable[..., subprocess.Popen[str]],
    scenario: Callable[[str], Path],
    tmp_path: Path,
) -> None:
    kernel = started(sys.executable, "-c", KERNEL)
    assert kernel.stdout is not None
    worker = int(kernel.stdout.readline())
    try:
        check_attribution(mallory, started, scenario, tmp_path, kernel.pid, worker)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(worker, signal.SIGKILL)


def check_attribution(
    mallory: pwd.struct_passwd,
    started: Callable[..., subprocess.Popen[str]],
    scenario: Callable[[str], Path],
    tmp_path: Path,
    kernel_pid: int,
    worker: int,
) -> None:
    other_kernel = started("sleep", "120")
    theirs = started("sleep", "120", user=mallory)  # another user's process
    ours = started("sleep", "120")  # this user's, outside both kernels' trees
    scenario(
        scenario_text(
            {kernel_pid: 256 * MiB, worker: 512 * MiB, other_kernel.pid: 128 * MiB, theirs.pid: GiB, ours.pid: 2 * GiB}
        )
    )
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    report_path(runtime / "k.json").parent.mkdir(mode=0o700)
    kernels = {}
    for kernel_id, pid, claims in (("k1", kernel_pid, theirs.pid), ("k2", other_kernel.pid, ours.pid)):
        connection = runtime / f"kernel-{kernel_id}.json"
        report_path(connection).write_text(forged_report(claims, None))
        kernels[kernel_id] = SimpleNamespace(
            provisioner=SimpleNamespace(pid=pid), connection_file=str(connection), execution_state="idle"
        )
    manager = SimpleNamespace(list_kernel_ids=lambda: list(kernels), get_kernel=kernels.__getitem__)
    figures = Watcher(manager, interval_s=5.0, stale_after_s=30.0, log=logging.getLogger("test_trust")).read()
    assert figures.problem is None, figures.problem
    assert {k.id: (k.status, [(g.uuid, g.used_bytes) for g in k.gpus]) for k in figures.kernels} == {
        "k1": ("reporting", [(GPU0, 768 * MiB)]),  # the kernel and its worker; not the 1 GiB its report claims
        "k2": ("reporting", [(GPU0, 128 * MiB)]),  # not this user's own 2 GiB process its report claims
    }
    (gpu,) = figures.gpus
    assert (gpu.other_processes, gpu.other_bytes) == (2, 3 * GiB)


# (d) The idle culler, in a real server: forged idle reports claiming memory move it to nothing.

WARN_S, SHUTDOWN_S = 1.5, 4.0


def notice_of(server: Server, kernel_id: str) -> dict[str, Any] | None:
    try:
        return dict(json.loads(notice_path(server.runtime / f"kernel-{kernel_id}.json").read_bytes()))
    except FileNotFoundError:
        return None


def listed(server: Server) -> set[str]:
    status, body = server.get("/api/kernels")
    assert status == 200, (status, body)
    return {k["id"] for k in json.loads(body)}


@pytest.mark.server
@pytest.mark.kernel
def test_the_culler_acts_on_no_memory_a_forged_idle_report_claims(
    mallory: pwd.struct_passwd, started: Callable[..., subprocess.Popen[str]], tmp_path: Path, standin_dir: Path
) -> None:
    theirs = started("sleep", "120", user=mallory)  # another user's job, holding 1 GiB
    with running_server(
        tmp_path,
        standin_dir,
        scenario_text({}),
        'c.InteractiveShellApp.extensions = ["jupyter_gpumem"]\n',
        arguments=(
            "--GpumemServer.interval_s=0.2",
            f"--GpumemServer.idle_warn_minutes={WARN_S / 60!r}",
            f"--GpumemServer.idle_shutdown_minutes={SHUTDOWN_S / 60!r}",
        ),
    ) as server:
        # A and B: kernels without jupyter-gpumem (nothing of theirs rewrites the forged reports), which just ran a
        # cell and hold nothing. C: a kernel with it, whose worker (its child) holds memory: the culler's control.
        a, b, c = server.start_kernel("plain"), server.start_kernel("plain"), server.start_kernel()
        pids = {k: int(server.execute(k, "import os; print(os.getpid())")[0].split()[-1]) for k in (a, b, c)}
        out, error = server.execute(c, "import subprocess; w = subprocess.Popen(['sleep', '120']); print(w.pid)")
        assert error is None
        worker = int(out.split()[-1])
        warned: dict[str, Any] | None = None  # the server's view when C was warned
        try:
            report_path(server.runtime / "kernel-c.json").parent.mkdir(mode=0o700, exist_ok=True)
            two_hours_ago = time.time() - 7200
            forged = {
                a: forged_report(theirs.pid, two_hours_ago),  # "this 1 GiB process is mine, idle for 2 h"
                b: forged_report(pids[b], two_hours_ago, own_bytes=GiB),  # "I hold 1 GiB NVML cannot see"
            }
            server.set_scenario(scenario_text({pids[a]: 0, theirs.pid: GiB, worker: 512 * MiB}))
            deadline = time.monotonic() + 60
            while c in listed(server):  # C: warned, told, shut down for its worker's memory
                assert time.monotonic() < deadline, "waited 60 s for kernel C to be shut down"
                for kernel_id, text in forged.items():  # kept fresh, replaced whole as a kernel does
                    path = report_path(server.runtime / f"kernel-{kernel_id}.json")
                    path.with_suffix(".tmp").write_text(text)
                    path.with_suffix(".tmp").replace(path)
                assert notice_of(server, a) is None and notice_of(server, b) is None
                if warned is None and notice_of(server, c) is not None:
                    warned = server.api()
                time.sleep(0.2)
            server.kernels.remove(c)
            assert {a, b} <= listed(server)  # A and B were not shut down
            assert notice_of(server, a) is None and notice_of(server, b) is None
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker, signal.SIGKILL)
    assert warned is not None, "C was shut down without a warning"
    kernels = {k["id"]: k for k in warned["kernels"]}
    # C's worker is C's: its memory is C's. The forged reports were read (the server took their idle time), not
    # their memory: A holds its own 0, B nothing NVML shows; their 1 GiB is another process's.
    assert [(g["uuid"], g["used_bytes"]) for g in kernels[c]["gpus"]] == [(GPU0, 512 * MiB)]
    assert [kernels[k]["status"] for k in (a, b)] == ["reporting", "reporting"]
    assert kernels[a]["last_activity"] == pytest.approx(two_hours_ago)
    assert [(g["uuid"], g["used_bytes"]) for g in kernels[a]["gpus"]] == [(GPU0, 0)]
    assert [(g["uuid"], g["used_bytes"]) for g in kernels[b]["gpus"]] == [(GPU0, None)]  # its 1 GiB: its word alone
    assert (warned["gpus"][0]["other_processes"], warned["gpus"][0]["other_bytes"]) == (1, GiB)
    log = "".join(p.read_text() for p in sorted(tmp_path.glob("server-*.log")))
    assert f"jupyter-gpumem: shutting down kernel {c}: it has held 512 MiB of GPU memory while idle for" in log
    assert [line for line in log.splitlines() if "jupyter-gpumem: " in line and (a in line or b in line)] == []
