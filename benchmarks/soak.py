"""Soak with faults: the kernel, the Jupyter server and the sidebar through an hour of samples while the driver
stalls and recovers, slows down, loses its GPU and gets it back, and the kernel and the server restart.

    python benchmarks/soak.py [--minutes 12] [--interval 0.2] [--deadline 1] [--slow-ms 30]

What runs: a real JupyterLab (its server with the jupyter-gpumem server extension) on the stand-in NVML
(tests/fixtures/scenarios/soak.scenario: one GPU, this kernel and two other jobs), a notebook opened in Debian's
chromium (Playwright, by its executable path) whose session starts the kernel, the GPU Memory sidebar open and
streaming at --interval (set through the sidebar's settings, as a user would), and a driver that runs the notebook's
cells over the server's kernel websocket, as JupyterLab sends them: first `%load_ext jupyter_gpumem` and
`%gpumem fraction=0.4` (again after every restart), then a small cell every --cell-every seconds, and
`%gpumem status` once in every phase. The stream at 0.2 s gives an hour of samples (3,600, one per simulated
second) in 12 minutes of phases; the run takes about a fifth longer (restarts, probes, the garbage collections).

The faults, in a fixed order each cycle (phase lengths count sampling intervals, so --interval scales them):
steady (50), the driver stalled (`driver stall=1`: every NVML call waits until the scenario no longer says so; 50),
recovered (25), a slow driver (`driver delay_ms=--slow-ms` on every query: a reading of this scenario makes 9,
about 0.3 s at the default, longer than the 0.2 s interval; 50), answering again (25), the GPU lost (`lost=1`; 25),
back (25); every --kernel-restart-every cycles the kernel restarted through the server's REST API (the sidebar
reconnects by itself; 25), every --server-restart-every cycles the server stopped and started again on the same
port and the page reloaded (a new session, a new kernel; 25); a restart that has not come by the last cycle comes at
its end, so every fault comes at least once. --minutes sets the number of cycles: the phases hold that many minutes
of samples at --interval (14 cycles for the default 12 minutes); --cycles sets it directly, --scale every length.

Measured at the start and the end of every phase:
- Cells: each cell's round trip as the websocket client sees it (execute_request to its reply and idle), small cells
  and `%gpumem status` apart. "No cell blocked": every cell within the NVML deadline (--deadline, the kernel's
  JUPYTER_GPUMEM_NVML_DEADLINE_S) plus --margin. The setup cell after a (re)start is timed apart (its first
  `import jupyter_gpumem`), and a kernel that is restarting runs no cells: that time is the restart's downtime.
- Threads and RSS of the kernel and of the server process (psutil: /proc/<pid>/task, VmRSS), and the page's used
  JS heap after a garbage collection (Chrome DevTools Protocol), each within a process's life (a kernel until it
  restarts, the server and the page until the server restarts). Threads: the fewest at any look in the life's
  second half (each phase's start and end) may not exceed the most in its first phase: a leaked thread is there at
  every later look, a pool's worker that comes and goes is not. RSS and heap: the largest value at a phase's end
  after the warm-up, less the warm-up's, at most --rss-growth-mib / --heap-growth-mb. The sidebar keeps
  --history-minutes of samples (1 by default: its history and the kernel's fill in a minute), so the warm-up lasts
  until the kernel's history is full: the first phase ending a minute or more into the kernel's life, where the
  life has two such phases (the kernel's RSS, the page's heap), else the life's first phase (the server's RSS;
  a short run, where the bound then covers the history filling).
- Readings: the kernel counts the readings its NVML thread completed (gpu/reader.Reader.readings). At every
  phase end a silent probe waits (3 s at most) for a quiet moment (no reading in flight or asked for, the
  sampler holding the last one) and counts the samples the sampler delivered with the driver's figures (no
  `stalled_since`) since the previous quiet moment. "No reading lost": readings completed == readings
  delivered, per window and in all. A reading a `%gpumem` command asked for counts too: the sampler takes any
  reading made since its last, so it has that one as well unless a newer one came first, which is a loss.
- Arrival: every sample the kernel's sampler took (its history, read by the same probes) reached the sidebar's
  channel in the page (a counter wrapped around Channel.receive from the page: a hello's replayed history counts;
  after a page load the channel is asked to reconnect, until a hello comes after the counter, so the replay covers
  what came before it: a channel asked while its own first request is on its way does nothing, and a single ask
  then lost the page's first sample). Samples are told apart by their time and stalled_since. A message the page
  dropped (its protocol check refused it and said so in the console) fails it too, and a missing sample that was
  a kernel's first says so.
- Truth: during each stall, the sidebar shows its stalled sentence, `%gpumem status` says so, the server's
  /api/gpumem/v1 carries stalled_since and /metrics says jupyter_gpumem_driver_answering 0; after recovery, none of
  it. And every kernel a restart replaced is gone.

Not measured: a real driver (the stand-in's stall is a query that waits; a real one may hold driver locks other
processes need too), the server's own NVML readings (its reader is the same class; only /metrics's gauges are
checked), frameworks (none is imported), and more than one kernel or browser tab. The samples' content is the
sidebar tests' and the protocol tests' business; here only that they came.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import os
import select
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import websocket  # websocket-client, which jupyter_server depends on

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "ui"))

import _standin
from labserver import KERNEL_IDLE, TOKEN, free_port, launch_chromium, write_notebook  # type: ignore[import-not-found]
from playwright.sync_api import Page, sync_playwright

from jupyter_gpumem import standin

ROOT = Path(__file__).parents[1]
SCENARIO = (ROOT / "tests" / "fixtures" / "scenarios" / "soak.scenario").read_text()
NOTEBOOK = "soak.ipynb"
SETUP = "%load_ext jupyter_gpumem\n%gpumem fraction=0.4"
SMALL = "_soak_n = globals().get('_soak_n', 0) + 1\n_soak_n"
STATUS = "%gpumem status"
STALLED_WORDS = "has not answered since"

# Threads a process may have at every look in the second half of its life beyond the most in its first phase.
THREAD_GROWTH = 0


@dataclass(frozen=True)
class Spec:
    name: str
    intervals: int  # how long the phase holds, in sampling intervals (one simulated second each)
    fault: str | None = None  # "stall", "slow", "lost", "kernel restart", "server restart"


CYCLE = (
    Spec("steady", 50),
    Spec("driver stalled", 50, "stall"),
    Spec("recovered", 25),
    Spec("slow driver", 50, "slow"),
    Spec("answering", 25),
    Spec("GPU lost", 25, "lost"),
    Spec("GPU back", 25),
)
KERNEL_RESTART = Spec("kernel restarted", 25, "kernel restart")
SERVER_RESTART = Spec("server restarted", 25, "server restart")


def schedule(cycles: int, kernel_every: int, server_every: int) -> list[tuple[int, Spec]]:
    """The phases in order, each with its cycle (1-based): the same for the same arguments. A restart comes every
    ``kernel_every`` (``server_every``) cycles, and at the end of the last cycle if it has not come yet (0: never)."""
    phases = []
    for cycle in range(1, cycles + 1):
        phases += [(cycle, spec) for spec in CYCLE]
        for every, spec in ((kernel_every, KERNEL_RESTART), (server_every, SERVER_RESTART)):
            if every and (cycle % every == 0 or (cycle == cycles < every)):
                phases.append((cycle, spec))
    return phases


def cycles_for(minutes: float, interval_s: float, scale: float, kernel_every: int, server_every: int) -> int:
    """The cycles whose phases hold ``minutes`` worth of samples at ``interval_s`` (3,600 for 12 minutes at 0.2 s)."""
    per_cycle: float = sum(s.intervals for s in CYCLE)
    per_cycle += KERNEL_RESTART.intervals / kernel_every if kernel_every else 0
    per_cycle += SERVER_RESTART.intervals / server_every if server_every else 0
    return max(1, math.ceil(minutes * 60 / interval_s / (per_cycle * scale)))


def scenario(fault: str | None, slow_ms: float) -> str:
    if fault == "stall":
        return SCENARIO + "driver stall=1\n"
    if fault == "slow":
        return SCENARIO + f"driver delay_ms={slow_ms:g}\n"
    if fault == "lost":
        return "".join(f"{line} lost=1\n" if line.startswith("gpu ") else f"{line}\n" for line in SCENARIO.splitlines())
    return SCENARIO


# ---------------------------------------------------------------------------------------------- what is recorded


@dataclass
class Usage:
    threads: int
    rss_mib: float


@dataclass
class Phase:
    cycle: int
    name: str
    fault: str | None
    seconds: float = 0.0
    held_s: float = 0.0  # of which the phase held its fault (or none) with cells running
    kernel_pid: int = 0
    server_pid: int = 0
    page_load: int = 0
    kernel_age_s: float = 0.0  # at the end: since the kernel's setup cell (its history fills in --history-minutes)
    kernel: tuple[Usage | None, Usage | None] = (None, None)  # at the start, at the end
    server: tuple[Usage | None, Usage | None] = (None, None)
    heap_mb: float | None = None  # at the end, after a garbage collection
    cells_s: list[float] = field(default_factory=list)
    status_s: list[float] = field(default_factory=list)
    downtime_s: float | None = None  # a restart: until the sidebar had a new sample
    samples: int = 0  # the kernel's samples in this phase (its history between the probes)
    stalled_samples: int = 0
    given: int | None = None  # readings the driver completed in the window that ended here (None: not quiet)
    delivered: int | None = None  # ... and the sampler delivered
    truth: dict[str, bool] = field(default_factory=dict)  # what each surface said, where the phase checks it
    began_t: float = 0.0  # the wall clock as it began (before its fault or restart): where a missing sample fell


@dataclass
class Result:
    phases: list[Phase]
    samples: int  # the kernel's samples, all phases
    arrived: int  # of those, how many the sidebar's channel received
    missing: list[tuple[float, float | None]]  # (t, stalled_since) of the samples that did not arrive
    gaps: list[str]  # probe windows the kernel's history no longer covered (the accounting is incomplete)
    setups: list[float]  # the setup cell's round trip in each kernel
    on_its_way: list[bool]  # per page load: the page's own request was on its way when the soak asked for a replay
    dropped: list[str]  # the page's warnings of a message from the kernel it dropped (wire/protocol.ts receive)
    firsts: set[float]  # each kernel's first sample's time
    said: list[str]  # what jupyter-gpumem wrote in the servers' and kernels' logs (warnings and errors)
    leftovers: list[int]  # kernels a restart replaced that were still running
    criteria: dict[str, tuple[bool, str]]
    wall_s: float

    @property
    def ok(self) -> bool:
        return all(ok for ok, _ in self.criteria.values())


# ---------------------------------------------------------------------------------------------- the server


class LabServer:
    """`jupyter lab` on the stand-in, started and stopped again on the same port with the same directories (as
    running_lab in tests/ui/labserver.py, which picks a new port each time)."""

    def __init__(self, base: Path, interval_s: float, history_minutes: float, deadline_s: float):
        self.base = base
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.scenario = base / "active.scenario"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        root = base / "notebooks"
        root.mkdir(parents=True)
        write_notebook(root / NOTEBOOK, [SETUP])
        standin.write_scenario(self.scenario, SCENARIO)
        settings = base / "settings"
        news = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
        news.parent.mkdir(parents=True)
        news.write_text('{"fetchNews": "false"}')
        ours = settings / "jupyter-gpumem" / "plugin.jupyterlab-settings"
        ours.parent.mkdir(parents=True)
        ours.write_text(json.dumps({"intervalSeconds": interval_s, "historyMinutes": history_minutes}))
        build = ROOT / "jupyter_gpumem" / "labextension"  # this checkout's build ahead of the environment's
        if build.is_dir():
            (base / "share" / "labextensions").mkdir(parents=True)
            (base / "share" / "labextensions" / "jupyter-gpumem").symlink_to(build)
        (base / "config" / "labconfig").mkdir(parents=True)
        (base / "ipython").mkdir()
        prefixes = ("JUPYTER_GPUMEM_", "CUDA_", "TF_", "XLA_", "PYTORCH_", "IPYTHON")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
        self.env.update(
            {
                standin.SCENARIO_VARIABLE: str(self.scenario),
                "JUPYTER_GPUMEM_NVML_DEADLINE_S": f"{deadline_s:g}",
                "JUPYTERLAB_SETTINGS_DIR": str(settings),
                "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
                "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
                "JUPYTER_PATH": str(base / "share"),
                "JUPYTER_CONFIG_DIR": str(base / "config"),
                "IPYTHONDIR": str(base / "ipython"),
                "XDG_CACHE_HOME": str(base / "cache"),
            }
        )

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self) -> None:
        self.starts += 1
        log = (self.base / f"server-{self.starts}.log").open("w")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyterlab",
                "--no-browser",
                f"--port={self.port}",
                "--ServerApp.port_retries=0",
                "--ip=127.0.0.1",
                f"--IdentityProvider.token={TOKEN}",
                f"--ServerApp.root_dir={self.base / 'notebooks'}",
                "--ServerApp.allow_root=True",
                "--LabApp.expose_app_in_browser=True",
            ],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + 90
        while True:
            try:
                if self.get("/api/status")[0] == 200:
                    return
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"JupyterLab did not start:\n{(self.base / f'server-{self.starts}.log').read_text()}"
                )
            time.sleep(0.2)

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()  # the server shuts its kernels down
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def get(self, path: str, method: str = "GET") -> tuple[int, bytes]:
        request = urllib.request.Request(
            self.url + path,
            method=method,
            headers={"Authorization": f"token {TOKEN}"},
            data=b"{}" if method == "POST" else None,
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def set_fault(self, fault: str | None, slow_ms: float) -> None:
        standin.write_scenario(self.scenario, scenario(fault, slow_ms))


# ---------------------------------------------------------------------------------------------- cells


# Defined silently in every kernel: the soak's look at the reader and the sampler (nothing of it is product code).
PROBE = """
def _gpumem_soak_probe(wait_s=3.0):
    import os, time
    from jupyter_gpumem.gpu.snapshot import reader
    from jupyter_gpumem.kernel.runtime import runtime
    s = runtime().stream
    end = time.monotonic() + wait_s
    while True:
        with reader._changed:  # no reading completes meanwhile
            last = reader.last()
            history = s.sampler.history()
            quiet = (
                reader._since is None and reader._asked == reader._done and s._got == reader._done
                and last is not None and bool(history) and history[-1]["t"] == round(last.taken_at, 3)
                and history[-1].get("stalled_since") is None
            )
            readings = reader.readings
        if quiet or time.monotonic() > end:
            break
        time.sleep(0.005)
    return {
        "pid": os.getpid(), "quiet": quiet, "readings": readings,
        "cut": round(last.taken_at, 3) if last is not None else None,
        "full": len(history) >= max(1, -(-s.sampler.history_s // s.sampler.interval_s)),
        "interval_s": s.sampler.interval_s,
        "samples": [[x["t"], x.get("stalled_since")] for x in history],
    }
"""


@dataclass
class Reply:
    seconds: float
    stdout: str
    error: str | None
    expressions: dict[str, Any]


class Cells:
    """One kernel's cells over the server's websocket (/api/kernels/<id>/channels), as JupyterLab sends them."""

    def __init__(self, lab: LabServer, kernel_id: str):
        url = lab.url.replace("http", "ws", 1) + f"/api/kernels/{kernel_id}/channels?token={TOKEN}"
        self.kernel_id = kernel_id
        self.session = uuid.uuid4().hex
        self.ws = websocket.create_connection(url, timeout=60)

    def close(self) -> None:
        with suppress(OSError):
            self.ws.close()

    def _drain(self) -> None:
        """The samples and everything else that came since the last cell: read now, so a round trip is only its own."""
        self.ws.settimeout(10)
        assert self.ws.sock is not None, "the kernel's websocket is closed"
        while select.select([self.ws.sock], [], [], 0)[0]:
            self.ws.recv()

    def execute(
        self, code: str, silent: bool = False, expressions: dict[str, str] | None = None, timeout_s: float = 120
    ) -> Reply:
        self._drain()
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "msg_type": "execute_request", "username": "soak", "session": self.session}
        content = {
            "code": code,
            "silent": silent,
            "store_history": not silent,
            "user_expressions": expressions or {},
            "allow_stdin": False,
            "stop_on_error": False,
        }
        message = {"header": {**header, "version": "5.3"}, "parent_header": {}, "metadata": {}, "content": content}
        start = time.monotonic()
        self.ws.settimeout(timeout_s)
        self.ws.send(json.dumps({**message, "channel": "shell", "buffers": []}))
        stdout: list[str] = []
        error, reply, idle = None, None, False
        while reply is None or not idle:
            left = start + timeout_s - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no reply to a cell in {timeout_s:g} s")
            self.ws.settimeout(left)
            msg = json.loads(self.ws.recv())
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = msg["msg_type"]
            if kind == "stream":
                stdout.append(msg["content"]["text"])
            elif kind in ("display_data", "execute_result"):
                stdout.append(msg["content"]["data"].get("text/plain", "") + "\n")
            elif kind == "error":
                error = f"{msg['content']['ename']}: {msg['content']['evalue']}"
            elif kind == "execute_reply":
                reply = msg["content"]
            idle = idle or (kind == "status" and msg["content"]["execution_state"] == "idle")
        seconds = time.monotonic() - start
        values = {}
        for name, value in (reply.get("user_expressions") or {}).items():
            values[name] = ast.literal_eval(value["data"]["text/plain"]) if value.get("status") == "ok" else value
        return Reply(seconds, "".join(stdout), error, values)

    def probe(self) -> dict[str, Any]:
        reply = self.execute("", silent=True, expressions={"probe": "_gpumem_soak_probe()"})
        found = reply.expressions.get("probe")
        if not isinstance(found, dict) or "pid" not in found:
            raise RuntimeError(f"the soak's probe failed in the kernel: {found}")
        return found


# ---------------------------------------------------------------------------------------------- the page

PANEL = "[...window.jupyterapp.shell.widgets('right')].find(w => w.id === 'jupyter-gpumem-panel')"

# Counts what reaches the sidebar's channels: Channel.receive wrapped on its prototype, once per page. A sample counts
# when the channel took it (its history's latest changed); a hello counts its replayed history, and itself.
COUNT = f"""() => {{
  const channel = {PANEL}?.kernels.current;
  if (!channel) return null;
  if (!window.gpumemSoak) {{
    const soak = {{ samples: [], hellos: new WeakMap() }};  // hellos: per channel
    const proto = Object.getPrototypeOf(channel);
    const receive = proto.receive;
    proto.receive = function (data) {{
      const before = this.history.latest;
      const result = receive.call(this, data);
      if (data?.type === 'sample' && this.history.latest !== before) {{
        soak.samples.push([data.sample.t, data.sample.stalled_since ?? null]);
      }} else if (data?.type === 'hello' && (this.history.latest !== before || data.history.length === 0)) {{
        for (const s of data.history) soak.samples.push([s.t, s.stalled_since ?? null]);
        soak.hellos.set(this, (soak.hellos.get(this) ?? 0) + 1);
      }}
      return result;
    }};
    window.gpumemSoak = soak;
  }}
  return channel.history.latest !== null;  // it took samples before the counter: ask for a replay
}}"""
TAKE = """() => {
  const soak = window.gpumemSoak;
  const got = soak ? soak.samples : [];
  if (soak) soak.samples = [];
  return got;
}"""
# The replay of what the channel took before the counter: a hello that comes after it. Channel.start() does nothing
# while a request is on its way, and the page's own first one may still be (its hello and first sample came, its
# reply not yet): a single ask then lost what the channel took before the counter (issue 45). So it asks until a
# hello comes. Whether the page's request was on its way at the first ask (the channel's private _pending, read here
# only).
RECONNECT = f"""async () => {{
  const channel = {PANEL}.kernels.current;
  const hellos = window.gpumemSoak.hellos;
  const before = hellos.get(channel) ?? 0;
  const onItsWay = channel._pending === true;
  for (let asked = 0; (hellos.get(channel) ?? 0) === before; asked++) {{
    if (channel.isDisposed) throw new Error('the channel the count began with went before its replay came');
    if (asked === 300) {{
      throw new Error('no hello after 300 asks to stream again (one the page refused is in its console)');
    }}
    await channel.start();
    if ((hellos.get(channel) ?? 0) === before) await new Promise(resolve => setTimeout(resolve, 100));
  }}
  return onItsWay;
}}"""
STREAMING_SINCE = f"""t => {{
  const channel = {PANEL}?.kernels.current;
  return !!channel && channel.state === 'streaming' && (channel.history.latest?.t ?? 0) > t;
}}"""
KERNEL_ID = "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.id"
STALLED_SHOWN = "#jupyter-gpumem-panel .jp-GpuMem-stalled"


class Browser:
    def __init__(self, page: Page, lab: LabServer):
        self.page = page
        self.lab = lab
        self.loads = 0
        self.on_its_way: list[bool] = []  # per page load: the page's own request was on its way at the replay's ask
        self.cdp = page.context.new_cdp_session(page)
        page.on("dialog", lambda dialog: dialog.accept())  # "leave the page?" on reload
        self.dropped: list[str] = []
        page.on("console", self._console)

    def _console(self, message: Any) -> None:
        if "jupyter-gpumem: dropped" in message.text:
            self.dropped.append(message.text)

    def open(self, reset: bool) -> str:
        """Load JupyterLab with the notebook (its session starts a kernel), the sidebar open and streaming, the
        counter in; the kernel's id."""
        self.loads += 1
        self.page.goto(f"{self.lab.url}/lab/tree/{NOTEBOOK}?token={TOKEN}" + ("&reset" if reset else ""))
        self.page.wait_for_function(KERNEL_IDLE, timeout=120_000)
        panel = self.page.locator("#jupyter-gpumem-panel")
        if not panel.is_visible():
            self.page.locator('.jp-SideBar [data-id="jupyter-gpumem-panel"]').click()
            panel.wait_for(state="visible")
        self.page.wait_for_function(STREAMING_SINCE, arg=0, timeout=120_000)
        if self.page.evaluate(COUNT):
            self.on_its_way.append(bool(self.page.evaluate(RECONNECT)))
        return str(self.page.evaluate(KERNEL_ID))

    def streaming_since(self, t: float, timeout_s: float = 120) -> None:
        self.page.wait_for_function(STREAMING_SINCE, arg=t, timeout=timeout_s * 1000)

    def take(self) -> list[tuple[float, float | None]]:
        return [(float(t), s) for t, s in self.page.evaluate(TAKE)]

    def stalled_shown(self) -> bool:
        return self.page.locator(STALLED_SHOWN).is_visible()

    def heap_mb(self) -> float:
        self.cdp.send("HeapProfiler.collectGarbage")
        return float(self.cdp.send("Runtime.getHeapUsage")["usedSize"]) / 1e6


# ---------------------------------------------------------------------------------------------- the run


def usage(pid: int) -> Usage | None:
    try:
        process = psutil.Process(pid)
        return Usage(process.num_threads(), process.memory_info().rss / 2**20)
    except psutil.Error:
        return None


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] if ordered else math.nan


class Soak:
    def __init__(self, lab: LabServer, browser: Browser, settings: Settings, log: Callable[[str], None]):
        self.lab = lab
        self.browser = browser
        self.settings = settings
        self.log = log
        self.phases: list[Phase] = []
        self.kernel_id = ""
        self.kernel_pid = 0
        self.kernel_began = 0.0
        self.cells: Cells | None = None
        self.replaced: list[int] = []  # kernel PIDs a restart replaced
        # The accounting of the current kernel's readings: from its last quiet probe.
        self.cut = 0.0
        self.readings = 0
        self.seen_t = 0.0  # the kernel's newest sample already counted
        self.sent: set[tuple[float, float | None]] = set()  # every sample the kernels took
        self.received: set[tuple[float, float | None]] = set()  # every sample the page's channels took
        self.gaps: list[str] = []
        self.setups: list[float] = []  # the setup cell's round trip in each kernel
        self.firsts: set[float] = set()  # each kernel's first sample's time

    # -- a kernel's life

    def begin_kernel(self, kernel_id: str, phase: Phase) -> None:
        if self.cells is not None:
            self.cells.close()
        self.kernel_id = kernel_id
        self.kernel_began = time.monotonic()
        self.cells = Cells(self.lab, kernel_id)
        setup = self.cells.execute(SETUP)
        if setup.error:
            raise RuntimeError(f"the setup cell failed: {setup.error}")
        self.setups.append(setup.seconds)
        self.cells.execute(PROBE, silent=True)
        found = self.cells.probe()
        self.kernel_pid = int(found["pid"])
        self.cut, self.readings, self.seen_t = 0.0, 0, 0.0
        if found["samples"]:
            self.firsts.add(float(found["samples"][0][0]))
        self.account(found, phase)

    def account(self, found: dict[str, Any], phase: Phase) -> None:
        """Count the kernel's samples since the last probe, and at a quiet moment its readings given and delivered."""
        samples = [(float(t), s) for t, s in found["samples"]]
        new = [s for s in samples if s[0] > self.seen_t]
        if self.seen_t and samples and samples[0][0] > self.seen_t and found["full"]:
            self.gaps.append(f"cycle {phase.cycle} {phase.name}: samples after {self.seen_t:.3f} left the history")
        phase.samples += len(new)
        phase.stalled_samples += sum(s is not None for _, s in new)
        self.sent.update(new)
        if new:
            self.seen_t = new[-1][0]
        if found["quiet"]:
            cut = float(found["cut"])
            if self.cut and samples[0][0] > self.cut and found["full"]:
                self.gaps.append(f"cycle {phase.cycle} {phase.name}: readings after {self.cut:.3f} left the history")
            phase.given = (phase.given or 0) + int(found["readings"]) - self.readings
            phase.delivered = (phase.delivered or 0) + sum(1 for t, s in samples if s is None and self.cut < t <= cut)
            self.cut, self.readings = cut, int(found["readings"])

    # -- the phases

    def measure(self, phase: Phase, at: int) -> None:
        kernel, server = usage(self.kernel_pid), usage(self.lab.pid)
        if at == 0:
            phase.kernel, phase.server = (kernel, None), (server, None)
        else:
            phase.kernel, phase.server = (phase.kernel[0], kernel), (phase.server[0], server)

    def run_phase(self, cycle: int, spec: Spec) -> Phase:
        phase = Phase(cycle, spec.name, spec.fault, began_t=time.time())
        started = time.monotonic()
        hold_s = spec.intervals * self.settings.interval_s * self.settings.scale
        if spec.fault == "kernel restart":
            self.restart_kernel(phase)
        elif spec.fault == "server restart":
            self.restart_server(phase)
        else:
            self.lab.set_fault(spec.fault, self.settings.slow_ms)
        phase.kernel_pid, phase.server_pid, phase.page_load = self.kernel_pid, self.lab.pid, self.browser.loads
        self.measure(phase, 0)
        held = time.monotonic()
        self.hold(phase, hold_s)
        phase.held_s = time.monotonic() - held
        if spec.fault == "stall":  # still stalled: what every surface says now
            phase.truth.update(self.truth(stalled=True))
        elif spec.name == "recovered":
            phase.truth.update(self.truth(stalled=False))
        assert self.cells is not None
        self.account(self.cells.probe(), phase)
        self.received.update(self.browser.take())
        phase.heap_mb = self.browser.heap_mb()
        self.measure(phase, 1)
        phase.seconds = time.monotonic() - started
        phase.kernel_age_s = time.monotonic() - self.kernel_began
        self.phases.append(phase)
        self.log(row(phase))
        return phase

    def hold(self, phase: Phase, seconds: float) -> None:
        """Run small cells every --cell-every seconds and `%gpumem status` once, 60% of the way in (a stall has set
        in by then), for ``seconds``."""
        assert self.cells is not None
        start = time.monotonic()
        end = start + seconds
        status_at = start + 0.6 * seconds
        next_cell = start
        status_done = False
        while (now := time.monotonic()) < end or not status_done:
            if now >= status_at and not status_done:
                reply = self.cells.execute(STATUS)
                phase.status_s.append(reply.seconds)
                if phase.fault == "stall":
                    phase.truth["%gpumem status"] = STALLED_WORDS in reply.stdout
                status_done = True
            elif now >= next_cell:
                phase.cells_s.append(self.cells.execute(SMALL).seconds)
                next_cell += self.settings.cell_every_s
            else:
                time.sleep(min(0.05, max(0.0, min(next_cell, status_at, end) - now)))

    def truth(self, stalled: bool) -> dict[str, bool]:
        """Whether the sidebar, the server's API and its /metrics say what the driver does (``stalled`` or not)."""
        status, body = self.lab.get("/api/gpumem/v1")
        api = status == 200 and ("stalled_since" in json.loads(body)) == stalled
        status, metrics = self.lab.get("/metrics")
        answering = next(
            (
                line.split()[-1]
                for line in metrics.decode().splitlines()
                if line.startswith("jupyter_gpumem_driver_answering")
            ),
            None,
        )
        return {
            "sidebar": self.browser.stalled_shown() == stalled,
            "/api/gpumem/v1": api,
            "/metrics": answering is not None and float(answering) == (0.0 if stalled else 1.0),
        }

    def last_look(self, phase: Phase) -> None:
        """What the kernel did up to now, before it goes: its last window must be accounted for."""
        assert self.cells is not None
        self.lab.set_fault(None, self.settings.slow_ms)
        found = self.cells.probe()
        self.account(found, phase)
        if not found["quiet"]:
            self.gaps.append(f"cycle {phase.cycle} {phase.name}: kernel {self.kernel_pid} not quiet before it went")
        self.replaced.append(self.kernel_pid)
        # What it sent before it goes has reached the page (or is missing): a server restart reloads the page, which
        # forgets what it has not handed over yet. Up to 15 s on a loaded machine; at once when all is in.
        self.settle(15)

    def restart_kernel(self, phase: Phase) -> None:
        self.last_look(phase)
        started = time.monotonic()
        status, body = self.lab.get(f"/api/kernels/{self.kernel_id}/restart", method="POST")
        if status != 200:
            raise RuntimeError(f"the kernel did not restart: {status} {body!r}")
        self.browser.streaming_since(time.time())  # the sidebar reconnected by itself: a sample of the new kernel
        phase.downtime_s = time.monotonic() - started
        self.begin_kernel(self.kernel_id, phase)

    def restart_server(self, phase: Phase) -> None:
        self.last_look(phase)
        assert self.cells is not None
        self.cells.close()
        self.cells = None
        started = time.monotonic()
        self.lab.stop()
        self.lab.start()
        kernel_id = self.browser.open(reset=False)
        phase.downtime_s = time.monotonic() - started
        self.begin_kernel(kernel_id, phase)

    def settle(self, timeout_s: float) -> None:
        """Wait until the page has every sample the kernels took so far, or ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        self.received.update(self.browser.take())
        while not self.sent <= self.received and time.monotonic() < deadline:
            time.sleep(0.1)
            self.received.update(self.browser.take())


def kernel_said(base: Path) -> list[str]:
    """What jupyter-gpumem wrote to the logs of the servers and their kernels (a kernel's stderr goes to its server's
    log): its warnings and errors, such as a sample the sampler took and could not send, each with the traceback
    under it (the lines up to the next log line), the servers' starts in order."""
    entries: list[list[str]] = []
    for log in sorted(base.glob("server-*.log"), key=lambda path: int(path.stem.split("-")[1])):
        under = False  # the lines under one of ours, up to the next log line, are its traceback
        for line in log.read_text(errors="replace").splitlines():
            if under and line and not line.startswith("["):
                entries[-1].append(line.strip())
                continue
            under = "jupyter-gpumem:" in line and not line.startswith("[I ")  # not the server's start, at INFO
            if under:
                entries.append([line.strip()])
    return [" / ".join(entry) for entry in entries]


def where(t: float, phases: list[Phase]) -> str:
    """A sample's time, and the phase it fell in with how far into it (a restart's starts with the restart)."""
    phase = next((p for p in reversed(phases) if p.began_t <= t), None)
    if phase is None:
        return f"{t:.3f} (before the first phase)"
    return f"{t:.3f} (cycle {phase.cycle} {phase.name}, {t - phase.began_t:.1f} s in)"


@dataclass(frozen=True)
class Settings:
    interval_s: float = 0.2
    deadline_s: float = 1.0
    margin_s: float = 1.0
    slow_ms: float = 30.0
    cell_every_s: float = 2.0
    scale: float = 1.0  # phase lengths times this
    history_minutes: float = 1.0
    rss_growth_mib: float = 8.0
    heap_growth_mb: float = 5.0


def run(
    cycles: int,
    settings: Settings = Settings(),
    kernel_every: int = 2,
    server_every: int = 4,
    log: Callable[[str], None] = print,
) -> Result:
    """The soak: ``cycles`` cycles of faults on a JupyterLab started here (this process must run on the stand-in:
    LD_LIBRARY_PATH names it). Returns what was measured and a verdict per criterion."""
    started = time.monotonic()
    phases = schedule(cycles, kernel_every, server_every)
    with tempfile.TemporaryDirectory(prefix="gpumem-soak-") as base, sync_playwright() as playwright:
        lab = LabServer(Path(base), settings.interval_s, settings.history_minutes, settings.deadline_s)
        lab.start()
        chromium = launch_chromium(playwright)
        try:
            page = chromium.new_page(viewport={"width": 1400, "height": 900})
            page.set_default_timeout(60_000)
            soak = Soak(lab, Browser(page, lab), settings, log)
            log(header())
            first = Phase(0, "start", None)
            soak.begin_kernel(soak.browser.open(reset=True), first)
            for cycle, spec in phases:
                soak.run_phase(cycle, spec)
            soak.settle(20)
        finally:
            chromium.close()
            lab.stop()
        said = kernel_said(Path(base))
    leftovers = [pid for pid in soak.replaced if running(pid)]
    missing = sorted(soak.sent - soak.received, key=lambda s: s[0])
    result = Result(
        soak.phases,
        len(soak.sent),
        len(soak.sent & soak.received),
        missing,
        soak.gaps,
        soak.setups,
        soak.browser.on_its_way,
        soak.browser.dropped,
        soak.firsts,
        said,
        leftovers,
        {},
        time.monotonic() - started,
    )
    result.criteria.update(judge(result, settings))
    return result


# ---------------------------------------------------------------------------------------------- verdicts


def lifetimes(phases: list[Phase], key: Callable[[Phase], int]) -> Iterator[list[Phase]]:
    group: list[Phase] = []
    for phase in phases:
        if group and key(group[0]) != key(phase):
            yield group
            group = []
        group.append(phase)
    if group:
        yield group


def growth(
    phases: list[Phase], key: Callable[[Phase], int], value: Callable[[Phase], float | None], full_after_s: float = 0
) -> list[float]:
    """Per life (the same ``key``): the largest ``value`` at a phase's end after the warm-up, less the warm-up's. The
    warm-up is the life's first phase; with ``full_after_s``, the first phase that ends with the kernel's history
    full (older than that), where the life has two such phases: before, the history filling is growth too."""
    grown = []
    for life in lifetimes(phases, key):
        full = [p for p in life if p.kernel_age_s >= full_after_s]
        values = [v for v in (value(p) for p in (full if len(full) >= 2 else life)) if v is not None]
        if len(values) >= 2:
            grown.append(max(values[1:]) - values[0])
    return grown


def thread_growth(phases: list[Phase], key: Callable[[Phase], int], which: str) -> list[float]:
    """Per life (the same ``key``): the fewest threads at the looks (each phase's start and end) in its second half,
    less the most in its first phase. A thread that leaks is there at every later look; a worker that comes and goes
    (a pool's, for the server's file requests) is not."""
    grown = []
    for life in lifetimes(phases, key):
        later = life[1:][-max(1, len(life[1:]) // 2) :]
        warm = [u.threads for p in life[:1] for u in getattr(p, which) if u is not None]
        tail = [u.threads for p in later for u in getattr(p, which) if u is not None]
        if len(life) >= 2 and warm and tail:
            grown.append(float(min(tail) - max(warm)))
    return grown


def end_rss(which: str) -> Callable[[Phase], float | None]:
    def value(phase: Phase) -> float | None:
        end = getattr(phase, which)[1]
        return None if end is None else end.rss_mib

    return value


def judge(result: Result, settings: Settings) -> dict[str, tuple[bool, str]]:
    phases = result.phases
    bound = settings.deadline_s + settings.margin_s
    cells = [s for p in phases for s in p.cells_s + p.status_s]
    stalls = [p for p in phases if p.fault == "stall"]
    worst = max(cells, default=math.inf)
    criteria: dict[str, tuple[bool, str]] = {}
    criteria["no cell blocked"] = (
        bool(cells) and worst < bound,
        f"{len(cells)} cells, the slowest {worst:.3f} s (p99 {percentile(cells, 99):.3f} s), bound {bound:g} s",
    )
    kernel_threads = thread_growth(phases, lambda p: p.kernel_pid, "kernel")
    server_threads = thread_growth(phases, lambda p: p.server_pid, "server")
    threads = kernel_threads + server_threads
    criteria["no thread growth"] = (
        bool(threads) and max(threads) <= THREAD_GROWTH,
        f"in each life's second half over its first phase: kernel {fmt_growth(kernel_threads, ' threads')}, "
        f"server {fmt_growth(server_threads, ' threads')}",
    )
    full_s = settings.history_minutes * 60
    kernel_rss = growth(phases, lambda p: p.kernel_pid, end_rss("kernel"), full_s)
    server_rss = growth(phases, lambda p: p.server_pid, end_rss("server"))
    heap = growth(phases, lambda p: p.page_load, lambda p: p.heap_mb, full_s)
    criteria["no memory growth"] = (
        bool(kernel_rss and server_rss and heap)
        and max(kernel_rss + server_rss) <= settings.rss_growth_mib
        and max(heap) <= settings.heap_growth_mb,
        f"RSS kernel {fmt_growth(kernel_rss, ' MiB')}, server {fmt_growth(server_rss, ' MiB')} (bound "
        f"{settings.rss_growth_mib:g} MiB); JS heap {fmt_growth(heap, ' MB')} (bound {settings.heap_growth_mb:g} MB)",
    )
    given = sum(p.given or 0 for p in phases)
    delivered = sum(p.delivered or 0 for p in phases)
    # A phase whose counts could not be read (None) is short by all it gave, not a crash of the report.
    lost = [
        f"cycle {p.cycle} {p.name}: {(p.given or 0) - (p.delivered or 0)}" for p in phases if p.given != p.delivered
    ]
    criteria["no reading lost"] = (
        given > 0 and given == delivered and not result.gaps,
        f"the driver completed {given} readings, the sampler delivered {delivered}"
        + (f"; short in {', '.join(lost[:6])}" + (" ..." if len(lost) > 6 else "") if lost else "")
        + (f"; {len(result.gaps)} windows not covered" if result.gaps else ""),
    )
    missing = [where(t, phases) + (" (a kernel's first)" if t in result.firsts else "") for t, _ in result.missing]
    criteria["every sample reached the sidebar"] = (
        result.samples > 0 and not result.missing and not result.dropped,
        f"{result.arrived} of the kernel's {result.samples} samples"
        + (f"; missing at t = {', '.join(missing[:5])}" if missing else "")
        + (f"; the page dropped {len(result.dropped)} messages: {result.dropped[0]}" if result.dropped else "")
        + (
            f"; the kernels and servers logged: {' | '.join(result.said[:3])}"
            if result.said and (missing or result.dropped)
            else ""
        ),
    )
    said = [(p, k, v) for p in phases for k, v in p.truth.items()]
    wrong = [f"cycle {p.cycle} {p.name}: {k}" for p, k, v in said if not v]
    criteria["every surface said when the driver stalled"] = (
        bool(stalls) and all(len(p.truth) == 4 for p in stalls) and not wrong,
        f"{len(said) - len(wrong)} of {len(said)} checks" + (f"; wrong: {', '.join(wrong[:6])}" if wrong else ""),
    )
    criteria["no kernel left behind"] = (
        not result.leftovers,
        f"{len(result.leftovers)} of the replaced kernels still running"
        if result.leftovers
        else "every replaced kernel exited",
    )
    return criteria


def fmt_growth(values: list[float], unit: str) -> str:
    return f"{max(values):+.1f}{unit} at most in {len(values)} lives" if values else "not measured"


# ---------------------------------------------------------------------------------------------- output


def header() -> str:
    return (
        f"{'cyc':>3} {'phase':<17}{'s':>6}{'samples':>8}{'stale':>6}{'given':>6}{'deliv':>6}"
        f"{'cells':>6}{'max ms':>8}{'status':>8}{'kthr':>9}{'k RSS MiB':>14}{'sthr':>9}{'s RSS MiB':>14}{'heap MB':>8}"
        f"{'down s':>7}"
    )


def row(p: Phase) -> str:
    def span(pair: tuple[Usage | None, Usage | None], attr: str, fmt: str) -> str:
        a, b = (format(getattr(u, attr), fmt) if u else "-" for u in pair)
        return f"{a}>{b}"

    def opt(value: float | None, fmt: str) -> str:
        return "-" if value is None else format(value, fmt)

    cells = p.cells_s + p.status_s
    return (
        f"{p.cycle:>3} {p.name:<17}{p.seconds:6.1f}{p.samples:8d}{p.stalled_samples:6d}{opt(p.given, 'd'):>6}"
        f"{opt(p.delivered, 'd'):>6}{len(cells):6d}{max(cells, default=0) * 1000:8.0f}"
        f"{max(p.status_s, default=0) * 1000:8.0f}{span(p.kernel, 'threads', 'd'):>9}"
        f"{span(p.kernel, 'rss_mib', '.1f'):>14}{span(p.server, 'threads', 'd'):>9}"
        f"{span(p.server, 'rss_mib', '.1f'):>14}"
        f"{opt(p.heap_mb, '.1f'):>8}{opt(p.downtime_s, '.1f'):>7}"
    )


def summary(result: Result, settings: Settings) -> list[str]:
    lines = []
    kinds: dict[str, list[Phase]] = {}
    for p in result.phases:
        kinds.setdefault(p.name, []).append(p)
    lines.append("")
    lines.append(
        f"{'by phase':<17}{'n':>3}{'cells':>6}{'p99 ms':>8}{'max ms':>8}{'status':>7}{'max ms':>8}"
        f"{'given':>7}{'deliv':>7}{'lost':>5}"
    )
    for name, group in kinds.items():
        cells = [s for p in group for s in p.cells_s]
        status = [s for p in group for s in p.status_s]
        given, delivered = sum(p.given or 0 for p in group), sum(p.delivered or 0 for p in group)
        lines.append(
            f"{name:<17}{len(group):3d}{len(cells):6d}{percentile(cells, 99) * 1000:8.0f}"
            f"{max(cells, default=0) * 1000:8.0f}{len(status):7d}{max(status, default=0) * 1000:8.0f}"
            f"{given:7d}{delivered:7d}{given - delivered:5d}"
        )
    lines.append("")
    held = sum(p.held_s for p in result.phases) / settings.interval_s
    lines.append(
        f"the phases held {held:.0f} intervals (simulated seconds; an hour is 3600): {result.samples} samples, "
        f"{sum(p.stalled_samples for p in result.phases)} of them stalled (a stalled sample comes every interval + "
        f"deadline); interval {settings.interval_s:g} s, NVML deadline {settings.deadline_s:g} s; "
        f"wall {result.wall_s / 60:.1f} min"
    )
    for label, chosen in (
        ("everywhere", result.phases),
        ("while stalled", [p for p in result.phases if p.fault == "stall"]),
    ):
        cells = [s for p in chosen for s in p.cells_s]
        status = [s for p in chosen for s in p.status_s]
        lines.append(
            f"cells {label}: small {len(cells)}, p99 {percentile(cells, 99) * 1000:.0f} ms, max "
            f"{max(cells, default=0) * 1000:.0f} ms; %gpumem status {len(status)}, "
            f"{min(status, default=0) * 1000:.0f} to {max(status, default=0) * 1000:.0f} ms"
        )
    if result.setups:
        lines.append(f"setup cell in each new kernel: max {max(result.setups):.2f} s (outside the bound: its imports)")
    if result.said:
        lines.append(f"jupyter-gpumem in the servers' logs ({len(result.said)} lines): " + " | ".join(result.said[:5]))
    if result.on_its_way:
        lines.append(
            f"page loads: {sum(result.on_its_way)} of {len(result.on_its_way)} found the page's own request to stream "
            "still on its way when the count began (the replay waited for it: a single ask lost the first sample)"
        )
    for name in ("kernel restarted", "server restarted"):
        downs = [p.downtime_s for p in kinds.get(name, []) if p.downtime_s is not None]
        if downs:
            lines.append(f"{name}: until the sidebar had a new sample, max {max(downs):.1f} s")
    for which, key in (("kernel", lambda p: p.kernel_pid), ("server", lambda p: p.server_pid)):
        lives = []
        for life in lifetimes(result.phases, key):
            first, last = getattr(life[0], which)[0], getattr(life[-1], which)[1]
            if first and last:
                lives.append(f"{first.threads}>{last.threads} / {first.rss_mib:.1f}>{last.rss_mib:.1f}")
        lines.append(f"{which} lives, threads / RSS MiB at the first look > the last: {', '.join(lives)}")
    heaps = []
    for life in lifetimes(result.phases, lambda p: p.page_load):
        values = [p.heap_mb for p in life if p.heap_mb is not None]
        if values:
            heaps.append(f"{values[0]:.1f}>{values[-1]:.1f} ({min(values):.1f} to {max(values):.1f})")
    lines.append(f"page loads, JS heap MB at the first phase's end > the last (range): {', '.join(heaps)}")
    lines.append("")
    for name, (ok, detail) in result.criteria.items():
        lines.append(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--minutes", type=float, default=12.0, help="the phases hold this many minutes of samples (sets the cycles)"
    )
    parser.add_argument("--cycles", type=int, help="this many cycles instead of --minutes")
    parser.add_argument("--interval", type=float, default=0.2, help="the sidebar's sampling interval (0.2 to 10 s)")
    parser.add_argument("--deadline", type=float, default=1.0, help="the kernel's NVML deadline in seconds")
    parser.add_argument("--margin", type=float, default=1.0, help="seconds a cell may take beyond the deadline")
    parser.add_argument("--slow-ms", type=float, default=30.0, help="the slow driver's delay per NVML query")
    parser.add_argument("--cell-every", type=float, default=2.0, help="seconds between two small cells")
    parser.add_argument("--scale", type=float, default=1.0, help="every phase's length times this")
    parser.add_argument("--history-minutes", type=float, default=1.0, help="the sidebar's history window")
    parser.add_argument("--kernel-restart-every", type=int, default=2, help="cycles (0: never)")
    parser.add_argument("--server-restart-every", type=int, default=4, help="cycles (0: never)")
    parser.add_argument("--rss-growth-mib", type=float, default=8.0)
    parser.add_argument("--heap-growth-mb", type=float, default=5.0)
    args = parser.parse_args()
    _standin.ensure(SCENARIO)
    settings = Settings(
        interval_s=args.interval,
        deadline_s=args.deadline,
        margin_s=args.margin,
        slow_ms=args.slow_ms,
        cell_every_s=args.cell_every,
        scale=args.scale,
        history_minutes=args.history_minutes,
        rss_growth_mib=args.rss_growth_mib,
        heap_growth_mb=args.heap_growth_mb,
    )
    cycles = args.cycles or cycles_for(
        args.minutes, args.interval, args.scale, args.kernel_restart_every, args.server_restart_every
    )
    print(
        f"{cycles} cycles of faults, sampling every {args.interval:g} s; kernel restart every "
        f"{args.kernel_restart_every or 'no'} cycles, server restart every {args.server_restart_every or 'no'}",
        flush=True,
    )
    result = run(
        cycles, settings, args.kernel_restart_every, args.server_restart_every, log=lambda s: print(s, flush=True)
    )
    for line in summary(result, settings):
        print(line)
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
