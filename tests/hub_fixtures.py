"""A real JupyterHub on this machine: configurable-http-proxy from node_modules, the DummyAuthenticator,
SimpleLocalProcessSpawner, the jupyter-gpumem hub service, and single-user servers on the stand-in NVML.

Used by tests/test_hub.py. Free ports, a directory of its own, every wait with a deadline, and the hub
(which stops its proxy, services and spawned servers) stopped at the end.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from server_fixtures import clean_environment, free_port, http, stop, wait_for

from jupyter_gpumem import standin

ROOT = Path(__file__).resolve().parent.parent
PROXY = ROOT / "node_modules" / ".bin" / "configurable-http-proxy"
ADMIN_TOKEN = "gpumem-hub-test-admin-token"
PROMETHEUS_TOKEN = "gpumem-hub-test-prometheus-token"  # a service whose role grants read:metrics alone


@dataclass
class Hub:
    url: str  # the proxy's public URL
    base: Path
    scenario: Path

    def api(self, path: str, method: str = "GET", body: Any = None, token: str = ADMIN_TOKEN) -> tuple[int, Any]:
        status, data = http(f"{self.url}/hub/api{path}", token, method, body)
        return status, (json.loads(data) if data.strip() else None)

    def start_server(self, user: str) -> None:
        status, body = self.api(f"/users/{user}/server", "POST")
        assert status in (201, 202), (status, body)
        wait_for(lambda: self.api(f"/users/{user}")[1]["servers"].get("", {}).get("ready"), 90, f"{user}'s server")

    def token_for(self, user: str) -> str:
        status, body = self.api(f"/users/{user}/tokens", "POST", {"note": "test", "expires_in": 3600})
        assert status == 201, (status, body)
        return str(body["token"])

    def run_cell(self, user: str, kernel_id: str, code: str, timeout: float = 60) -> None:
        """Run ``code`` in the user's kernel as a notebook does, over the websocket through the proxy."""
        asyncio.run(asyncio.wait_for(self._run_cell(user, kernel_id, code, timeout), timeout))

    async def _run_cell(self, user: str, kernel_id: str, code: str, timeout: float) -> None:
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        url = self.url.replace("http", "ws", 1) + f"/user/{user}/api/kernels/{kernel_id}/channels"
        request = HTTPRequest(
            url, headers={"Authorization": f"token {ADMIN_TOKEN}"}, connect_timeout=timeout, request_timeout=timeout
        )
        connection = await websocket_connect(request)
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "msg_type": "execute_request", "username": user, "session": msg_id}
        content = {"code": code, "silent": False, "store_history": False, "allow_stdin": False}
        message = {"header": {**header, "version": "5.3"}, "parent_header": {}, "metadata": {}, "content": content}
        await connection.write_message(json.dumps({**message, "channel": "shell", "buffers": []}))
        while True:
            raw = await connection.read_message()
            if raw is None:
                raise ConnectionError(f"the server closed kernel {kernel_id}'s websocket")
            msg = json.loads(raw)
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
        connection.close()

    def user_get(self, user: str, path: str, token: str = ADMIN_TOKEN) -> tuple[int, bytes]:
        return http(f"{self.url}/user/{user}{path}", token)


def hub_config(
    base: Path,
    library_dir: Path,
    proxy_port: int,
    hub_port: int,
    api_port: int,
    service_port: int,
    kernel_config: str,
    groups: dict[str, list[str]],
    policies: dict[str, dict[str, str]],
) -> str:
    profile = base / "ipython" / "profile_default"
    profile.mkdir(parents=True, exist_ok=True)
    (profile / "ipython_kernel_config.py").write_text(kernel_config)
    scenario = base / "active.scenario"
    environment = standin.environment(library_dir, scenario, base={})
    environment.update({"IPYTHONDIR": str(profile.parent), "XDG_CACHE_HOME": str(base / "cache")})
    url = f"http://127.0.0.1:{proxy_port}"
    return f"""
import sys
from jupyter_gpumem.hub import group_environment
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {proxy_port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.command = [{str(PROXY)!r}]
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{api_port}"
c.ConfigurableHTTPProxy.auth_token = "gpumem-hub-test-proxy"
c.JupyterHub.db_url = "sqlite:///{base}/hub.sqlite"
c.JupyterHub.cookie_secret_file = "{base}/cookie_secret"
c.JupyterHub.pid_file = "{base}/hub.pid"
c.JupyterHub.cleanup_servers = True
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = "gpumem-test-password"
c.Authenticator.allow_all = True
c.Authenticator.admin_users = {{"gpuadmin"}}
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = "{base}/home/{{username}}"
c.Spawner.cmd = [sys.executable, "-m", "jupyterhub.singleuser"]
c.Spawner.args = ["--ServerApp.allow_root=True", "--GpumemServer.interval_s=0.5"]
c.Spawner.http_timeout = 90
c.Spawner.start_timeout = 90
c.Spawner.environment = {environment!r}
c.Spawner.pre_spawn_hook = group_environment({policies!r})
c.JupyterHub.load_groups = {{name: {{"users": users}} for name, users in {groups!r}.items()}}
c.JupyterHub.services = [
    {{
        "name": "gpumem",
        "url": "http://127.0.0.1:{service_port}",
        "command": [sys.executable, "-m", "jupyter_gpumem.hub"],
        "environment": {{"JUPYTER_GPUMEM_HUB_PROXY_URL": "{url}", "JUPYTER_GPUMEM_HUB_INTERVAL_S": "0.5"}},
        "oauth_client_allowed_scopes": ["admin-ui"],
    }},
    {{"name": "test-admin", "api_token": "{ADMIN_TOKEN}"}},
    {{"name": "prometheus", "api_token": "{PROMETHEUS_TOKEN}"}},
]
c.JupyterHub.load_roles = [
    {{
        "name": "gpumem",
        "scopes": ["list:users", "read:users", "read:servers", "access:servers"],
        "services": ["gpumem"],
    }},
    {{
        "name": "test-admin",
        "scopes": ["admin:users", "admin:servers", "admin:groups", "tokens", "access:servers", "admin-ui",
                   "read:metrics", "access:services"],
        "services": ["test-admin"],
    }},
    {{"name": "prometheus", "scopes": ["read:metrics"], "services": ["prometheus"]}},
]
"""


@contextmanager
def running_hub(
    base: Path,
    library_dir: Path,
    scenario_text: str,
    kernel_config: str,
    groups: dict[str, list[str]],
    policies: dict[str, dict[str, str]],
) -> Iterator[Hub]:
    if not PROXY.exists():
        raise RuntimeError("configurable-http-proxy is needed: run `jlpm install` (package.json lists it).")
    base.mkdir(parents=True, exist_ok=True)
    for attempt in range(3):
        ports = [free_port() for _ in range(4)]
        config = base / f"jupyterhub_config-{attempt}.py"
        config.write_text(hub_config(base, library_dir, *ports, kernel_config, groups, policies))
        standin.write_scenario(base / "active.scenario", scenario_text)
        log_path = base / f"hub-{attempt}.log"
        env = clean_environment()
        env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
        with log_path.open("w") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "jupyterhub", "-f", str(config)],
                cwd=base,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        hub = Hub(f"http://127.0.0.1:{ports[0]}", base, base / "active.scenario")
        if _ready(hub, process, 90):
            break
        stop(process, 60)
        if "address already in use" not in log_path.read_text().lower():
            raise RuntimeError(f"jupyterhub did not start:\n{log_path.read_text()}")
    else:
        raise RuntimeError(f"jupyterhub found no free ports:\n{log_path.read_text()}")
    try:
        yield hub
    finally:
        stop(process, 60)  # the hub stops its spawned servers, its services and its proxy


def _ready(hub: Hub, process: subprocess.Popen[bytes], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < deadline:
        try:
            if http(f"{hub.url}/hub/api/")[0] == 200:
                return True
        except OSError:
            pass
        time.sleep(0.3)
    return False
