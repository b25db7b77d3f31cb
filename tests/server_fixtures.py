"""A real `jupyter server` with the jupyter-gpumem server extension on the stand-in NVML, kernels
started and run through its REST and websocket API, and Debian's `prometheus` scraping it.

Used by tests/server/test_server.py and benchmarks/metrics.py. Every process gets a free port, a token and
directories of its own, and every wait has a deadline.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from jupyter_gpumem import standin
from jupyter_gpumem.wire.report import report_path

TOKEN = "gpumem-server-test"
T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(check: Callable[[], T | None], timeout: float, what: str, interval: float = 0.1) -> T:
    """``check()``'s first truthy result; after ``timeout`` seconds, an AssertionError naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:g} s for {what}")
        time.sleep(interval)


def eventually(assertion: Callable[[], T], timeout: float = 30, interval: float = 0.2) -> T:
    """``assertion()``'s result once it stops raising AssertionError; after ``timeout`` seconds, its last
    AssertionError (with pytest's diff of what differs)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return assertion()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(interval)


def strict_json(text: bytes | str) -> Any:
    """JSON as a browser's JSON.parse reads it: NaN and Infinity are not JSON, and no answer of ours may hold them."""

    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in a JSON answer, which JSON.parse refuses")

    return json.loads(text, parse_constant=refuse)


def http(url: str, token: str | None = None, method: str = "GET", body: Any = None) -> tuple[int, bytes]:
    """Status and body, also for an error status."""
    headers = {"Authorization": f"token {token}"} if token else {}
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@dataclass
class Server:
    url: str
    runtime: Path  # JUPYTER_RUNTIME_DIR: the kernels' connection files, and their reports beside them
    scenario: Path
    kernels: list[str] = field(default_factory=list)

    def get(self, path: str, token: str | None = TOKEN) -> tuple[int, bytes]:
        return http(self.url + path, token)

    def api(self) -> dict[str, Any]:
        status, body = self.get("/api/gpumem/v1")
        assert status == 200, (status, body)
        return dict(strict_json(body))

    def metrics(self) -> str:
        status, body = self.get("/metrics")
        assert status == 200, (status, body)
        return body.decode()

    def set_scenario(self, text: str) -> None:
        standin.write_scenario(self.scenario, text)

    def start_kernel(self, name: str = "python3") -> str:
        status, body = http(self.url + "/api/kernels", TOKEN, "POST", {"name": name})
        assert status == 201, (status, body)
        kernel_id = str(json.loads(body)["id"])
        self.kernels.append(kernel_id)
        return kernel_id

    def stop_kernel(self, kernel_id: str) -> None:
        http(f"{self.url}/api/kernels/{kernel_id}", TOKEN, "DELETE")
        self.kernels.remove(kernel_id)

    def report(self, kernel_id: str) -> Path:
        """Where this kernel reports to its server (jupyter_server names connection files kernel-<id>.json)."""
        return report_path(self.runtime / f"kernel-{kernel_id}.json")

    def execute(self, kernel_id: str, code: str, timeout: float = 60) -> tuple[str, str | None]:
        """Run ``code`` in the kernel as a notebook does, over the server's websocket: its stdout and
        the name of the error it raised, if any."""
        return asyncio.run(asyncio.wait_for(self._execute(kernel_id, code, timeout), timeout))

    async def _execute(self, kernel_id: str, code: str, timeout: float) -> tuple[str, str | None]:
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        ws_url = self.url.replace("http", "ws", 1) + f"/api/kernels/{kernel_id}/channels?token={TOKEN}"
        # A kernel still starting (many at once on few cores) answers the websocket late.
        connection = await websocket_connect(HTTPRequest(ws_url, connect_timeout=timeout, request_timeout=timeout))
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "msg_type": "execute_request", "username": "test", "session": msg_id}
        content = {"code": code, "silent": False, "store_history": False, "allow_stdin": False}
        message = {"header": {**header, "version": "5.3"}, "parent_header": {}, "metadata": {}, "content": content}
        await connection.write_message(json.dumps({**message, "channel": "shell", "buffers": []}))
        stdout, error, replied, idle = [], None, False, False
        while not (replied and idle):
            raw = await connection.read_message()
            if raw is None:
                raise ConnectionError(f"the server closed kernel {kernel_id}'s websocket")
            msg = json.loads(raw)
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = msg["msg_type"]
            if kind == "stream" and msg["content"]["name"] == "stdout":
                stdout.append(msg["content"]["text"])
            elif kind == "error":
                error = msg["content"]["ename"]
            replied = replied or kind == "execute_reply"
            idle = idle or (kind == "status" and msg["content"]["execution_state"] == "idle")
        connection.close()
        return "".join(stdout), error


def clean_environment() -> dict[str, str]:
    """This process's environment without anything that configures jupyter-gpumem or a framework."""
    prefixes = ("JUPYTER_GPUMEM_", "CUDA_", "TF_", "XLA_", "PYTORCH_", "JUPYTER_", "IPYTHON")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    env["LD_LIBRARY_PATH"] = ""
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    return env


@contextmanager
def running_server(
    base: Path,
    library_dir: Path,
    scenario_text: str,
    kernel_config: str,
    *,
    extensions: dict[str, bool] | None = None,
    arguments: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    base_url: str = "/",
) -> Iterator[Server]:
    """`jupyter server` on a free port with token TOKEN, reading the stand-in NVML and ``scenario_text``.

    Its kernels start with ``kernel_config`` as their ipython_kernel_config.py; the kernelspec "plain"
    starts one without it (so without jupyter_gpumem loaded). The jupyter-gpumem extension is enabled
    by the configuration its package installs; ``extensions`` overrides ServerApp.jpserver_extensions.
    jupyter-resource-usage, where installed, is off unless ``extensions`` turns it on. ``base_url``: the
    server's (as JupyterHub's /user/<name>/); the Server's url ends with it.
    """
    base.mkdir(parents=True, exist_ok=True)
    scenario = base / "active.scenario"
    standin.write_scenario(scenario, scenario_text)
    profile = base / "ipython" / "profile_default"
    profile.mkdir(parents=True)
    (profile / "ipython_kernel_config.py").write_text(kernel_config)
    plain = base / "data" / "kernels" / "plain"
    plain.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec = {"argv": argv, "display_name": "Python 3 (plain)", "language": "python"}
    (plain / "kernel.json").write_text(json.dumps({**spec, "env": {"IPYTHONDIR": str(base / "ipython-plain")}}))
    (base / "config").mkdir()
    enabled = {"jupyter_resource_usage": False, **(extensions or {})}
    config = {"ServerApp": {"jpserver_extensions": enabled}}
    (base / "config" / "jupyter_server_config.json").write_text(json.dumps(config))
    (base / "root").mkdir()
    server_env = standin.environment(library_dir, scenario, base={**clean_environment(), **(env or {})})
    server_env.update(
        {
            "IPYTHONDIR": str(base / "ipython"),
            "JUPYTER_CONFIG_DIR": str(base / "config"),
            "JUPYTER_DATA_DIR": str(base / "data"),
            "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
            "XDG_CACHE_HOME": str(base / "cache"),  # the kernels' overhead cache: none from earlier runs
        }
    )
    for attempt in range(3):  # a free port can be taken by another process before the server binds it
        port = free_port()
        log_path = base / f"server-{attempt}.log"
        with log_path.open("w") as log:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "jupyter_server",
                    "--no-browser",
                    "--ip=127.0.0.1",
                    f"--port={port}",
                    "--ServerApp.port_retries=0",
                    f"--IdentityProvider.token={TOKEN}",
                    f"--ServerApp.root_dir={base / 'root'}",
                    "--ServerApp.allow_root=True",
                    f"--ServerApp.base_url={base_url}",
                    *arguments,
                ],
                env=server_env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        server = Server(f"http://127.0.0.1:{port}{base_url.rstrip('/')}", base / "runtime", scenario)
        if _ready(server, process, timeout=60):
            break
        stop(process)
        if "address already in use" not in log_path.read_text().lower():
            raise RuntimeError(f"jupyter server did not start:\n{log_path.read_text()}")
    else:
        raise RuntimeError(f"jupyter server found no free port:\n{log_path.read_text()}")
    try:
        yield server
    finally:
        for kernel_id in list(server.kernels):
            server.stop_kernel(kernel_id)
        stop(process)


def _ready(server: Server, process: subprocess.Popen[bytes], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < deadline:
        try:
            if server.get("/api/status")[0] == 200:
                return True
        except OSError:
            pass
        time.sleep(0.2)
    return False


def stop(process: subprocess.Popen[bytes], timeout_s: float = 20) -> None:
    """Terminate, and kill what is still running after ``timeout_s``."""
    process.terminate()
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def running_prometheus(
    base: Path, target: str, token: str, interval_s: float = 1.0, metrics_path: str = "/metrics"
) -> Iterator[str]:
    """Debian's prometheus scraping ``target`` (host:port) with ``token`` as its bearer token; its URL."""
    binary = shutil.which("prometheus")
    if binary is None:
        raise RuntimeError("Debian's prometheus is needed for this test: apt-get install prometheus (.ci/setup does).")
    base.mkdir(parents=True, exist_ok=True)
    config = base / "prometheus.yml"
    # YAML is a superset of JSON.
    scrape = {
        "job_name": "jupyter",
        "metrics_path": metrics_path,
        "authorization": {"type": "Bearer", "credentials": token},
        "static_configs": [{"targets": [target]}],
    }
    settings = {"global": {"scrape_interval": f"{interval_s:g}s", "scrape_timeout": f"{interval_s:g}s"}}
    config.write_text(json.dumps({**settings, "scrape_configs": [scrape]}))
    for attempt in range(3):
        port = free_port()
        log_path = base / f"prometheus-{attempt}.log"
        with log_path.open("w") as log:
            process = subprocess.Popen(
                [
                    binary,
                    f"--config.file={config}",
                    f"--storage.tsdb.path={base / f'tsdb-{attempt}'}",
                    f"--web.listen-address=127.0.0.1:{port}",
                    "--log.level=warn",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        url = f"http://127.0.0.1:{port}"
        if prometheus_ready(process, url, 60):
            break
        stop(process)
        if "address already in use" not in log_path.read_text().lower():
            raise RuntimeError(f"prometheus did not start:\n{log_path.read_text()}")
    else:
        raise RuntimeError(f"prometheus found no free port:\n{log_path.read_text()}")
    try:
        yield url
    finally:
        stop(process)


def prometheus_ready(process: subprocess.Popen[Any], url: str, seconds: float) -> bool:
    """Whether the Prometheus ``process`` at ``url`` answers ready within ``seconds``; False once it has exited."""
    deadline = time.monotonic() + seconds
    while process.poll() is None and time.monotonic() < deadline:
        try:
            if http(url + "/-/ready")[0] == 200:
                return True
        except OSError:
            pass
        time.sleep(0.2)
    return False


def prometheus_query(url: str, query: str) -> list[dict[str, Any]]:
    """The instant vector ``query`` returns now: a list of {"metric": labels, "value": [t, "text"]}."""
    status, body = http(f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": query}))
    assert status == 200, (status, body)
    return list(json.loads(body)["data"]["result"])
