"""A real JupyterHub on this machine: configurable-http-proxy from node_modules, the DummyAuthenticator,
LocalProcessSpawner with real Unix users (made by useradd for the test, removed with their homes after it),
the jupyter-gpumem hub service, and single-user servers on the stand-in NVML.

Used by tests/hub/test_hub.py. Free ports, a directory of its own, every wait with a deadline, and the hub
(which stops its proxy, services and spawned servers) stopped at the end.

The users' servers and kernels run from a Python environment every user can read (``shared_python``): the
test's own virtual environment links to an interpreter under /root, which other users cannot reach. The
stand-in NVML, the scenario and the kernels' IPython configuration lie in the same world-readable directory.
"""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from importlib.metadata import Distribution, distribution
from pathlib import Path
from typing import Any

import psutil
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from server_fixtures import clean_environment, free_port, http, stop, strict_json, wait_for

import jupyter_gpumem
from jupyter_gpumem import standin

ROOT = Path(__file__).resolve().parent.parent
PROXY = ROOT / "node_modules" / ".bin" / "configurable-http-proxy"
ADMIN_TOKEN = "gpumem-hub-test-admin-token"
PROMETHEUS_TOKEN = "gpumem-hub-test-prometheus-token"  # a service whose role grants read:metrics alone
# What a single-user server with jupyter-gpumem needs: the singleuser app, the frontend a hub image serves
# (JupyterLab), and the package's own requirements.
SINGLEUSER_NEEDS = ("jupyterhub", "jupyterlab", "jupyter_gpumem")


def _requirements_closure(roots: Iterable[str]) -> list[Distribution]:
    """The installed distributions ``roots`` need, themselves included (no extras, markers evaluated)."""
    found: dict[str, Distribution] = {}
    todo = [Requirement(name) for name in roots]
    while todo:
        requirement = todo.pop()
        key = canonicalize_name(requirement.name)
        if key in found:
            continue
        found[key] = dist = distribution(requirement.name)
        for text in dist.requires or []:
            needed = Requirement(text)
            if needed.marker is None or needed.marker.evaluate({"extra": ""}):
                todo.append(needed)
    return sorted(found.values(), key=lambda d: canonicalize_name(d.metadata["Name"]))


def _copy_distribution(dist: Distribution, prefix: Path, site: Path, python: Path) -> None:
    """Install an installed distribution again by copying the files its RECORD lists. Scripts get
    ``python`` as their interpreter; an editable install's path hooks are left out (its sources are copied
    by the caller)."""
    for entry in dist.files or []:
        source = Path(str(dist.locate_file(entry)))
        name = entry.name
        if name.endswith(".pth") or name.startswith("__editable__") or not source.is_file():
            continue
        target = Path(os.path.normpath(site / str(entry)))
        if prefix not in target.parents:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.parent == prefix / "bin":
            data = source.read_bytes()
            if data.startswith(b"#!") and b"python" in data.split(b"\n", 1)[0]:
                data = b"#!" + str(python).encode() + b"\n" + data.split(b"\n", 1)[1]
            target.write_bytes(data)
            target.chmod(0o755)
        else:
            try:  # a hard link where the file system allows it: nothing to copy
                os.link(source, target)
            except OSError:
                shutil.copy2(source, target)


def shared_python(prefix: Path) -> Path:
    """A virtual environment at ``prefix`` that every Unix user can run: Debian's python of this Python's
    version, with the distributions a single-user server with jupyter-gpumem needs copied from this test's
    environment (the same versions, offline; hard links where the file system allows), jupyter_gpumem from
    the source tree, its labextension where the wheel puts it, and the server-extension configuration its wheel
    installs. Returns its python."""
    interpreter = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    if not interpreter.exists():
        raise RuntimeError(f"{interpreter} is needed: the users' servers run on a Python they can read (apt: python3)")
    subprocess.run([str(interpreter), "-m", "venv", "--without-pip", str(prefix)], check=True, timeout=120)
    python = prefix / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout.strip()
    )
    for dist in _requirements_closure(SINGLEUSER_NEEDS):
        _copy_distribution(dist, prefix, site, python)
    package = Path(jupyter_gpumem.__file__).parent
    ignore = shutil.ignore_patterns("labextension", "__pycache__")
    shutil.copytree(package, site / package.name, ignore=ignore, dirs_exist_ok=True)  # editable or not
    # The checkout's labextension build, where the wheel puts it (an editable install's RECORD names the files of
    # the build it was installed with, whose hashed names are gone once the extension is rebuilt).
    build = package / "labextension"
    if build.is_dir():
        labextension = prefix / "share" / "jupyter" / "labextensions" / "jupyter-gpumem"
        shutil.rmtree(labextension, ignore_errors=True)
        shutil.copytree(build, labextension)
    enabling = ROOT / "jupyter-config" / "jupyter_server_config.d" / "jupyter_gpumem.json"
    (prefix / "etc" / "jupyter" / "jupyter_server_config.d").mkdir(parents=True, exist_ok=True)
    shutil.copy2(enabling, prefix / "etc" / "jupyter" / "jupyter_server_config.d" / enabling.name)
    readable(prefix)
    return python


def readable(top: Path) -> None:
    """Every directory under ``top`` (itself included) 0755, every file readable by all."""
    top.chmod(0o755)
    for directory, subdirectories, files in os.walk(top):
        for name in subdirectories:
            (Path(directory) / name).chmod(0o755)
        for name in files:
            path = Path(directory) / name
            mode = path.lstat().st_mode
            if not path.is_symlink() and mode & 0o444 != 0o444:
                path.chmod(mode | 0o444)


def write_scenario(path: Path, text: str) -> None:
    """standin.write_scenario, but readable by every user (its temporary file is 0600) and still atomic."""
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as tmp:
        tmp.write(text)
    os.chmod(tmp.name, 0o644)
    os.replace(tmp.name, path)


def _remove_user(name: str) -> None:
    try:
        uid = pwd.getpwnam(name).pw_uid
    except KeyError:
        return
    for process in psutil.process_iter(["uids"]):  # what the test started as this user, by PID
        if process.info["uids"] is not None and process.info["uids"].real == uid:
            with suppress(psutil.NoSuchProcess):
                process.kill()
    deadline = time.monotonic() + 30
    while True:
        result = subprocess.run(["userdel", "--remove", name], capture_output=True, text=True, timeout=60)
        # 6: the home was already gone; 8: a process of the user is still exiting.
        if result.returncode in (0, 6) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    if result.returncode not in (0, 6):
        raise RuntimeError(f"userdel {name}: {result.stderr}")


def run_user(base: str) -> str:
    """A Unix user name of this test run's own (``base-<pid of pytest>``): two suites on one machine make their
    users side by side, and neither removes the other's."""
    return f"{base}-{os.getpid()}"


def _leftovers(name: str) -> list[str]:
    """Users of the same base as ``name`` made by a run whose pytest has ended (it crashed, or was killed)."""
    base = name.rpartition("-")[0]
    return [
        user.pw_name
        for user in pwd.getpwall()
        if user.pw_name.rpartition("-")[0] == base
        and user.pw_name.rpartition("-")[2].isdigit()
        and not psutil.pid_exists(int(user.pw_name.rpartition("-")[2]))
    ]


@contextmanager
def unix_users(names: Iterable[str]) -> Iterator[list[str]]:
    """Unix users with homes of their own, made for the test and removed with their homes and processes after
    it, also when it fails; users of the same names, or left over from an earlier run that crashed, go first."""
    if os.geteuid() != 0:
        raise RuntimeError(
            "tests/hub/test_hub.py runs as root: it makes Unix users, and LocalProcessSpawner switches to them"
        )
    made = list(names)
    try:
        for name in made:
            for leftover in [name, *_leftovers(name)]:
                _remove_user(leftover)
            subprocess.run(
                ["useradd", "--create-home", "--user-group", "--shell", "/usr/sbin/nologin", name],
                check=True,
                capture_output=True,
                timeout=60,
            )
        yield made
    finally:
        for name in made:
            _remove_user(name)


@dataclass
class Output:
    """What a cell sent back: its stdout and stderr, and the text/plain of what it displayed."""

    stdout: str = ""
    stderr: str = ""
    displayed: list[str] = field(default_factory=list)
    error: str | None = None  # the name of the error it raised, if any

    @property
    def text(self) -> str:
        return "\n".join([self.stdout, self.stderr, *self.displayed])


@dataclass
class Comm:
    """What a kernel sent on a comm: the comm_open data, and the comm_msg data after it; ``raw`` holds every
    one of those messages as it came over the websocket."""

    comm_id: str
    opened: dict[str, Any]
    messages: list[dict[str, Any]]
    raw: list[str]


@dataclass
class Hub:
    url: str  # the proxy's public URL
    base: Path
    scenario: Path

    def api(self, path: str, method: str = "GET", body: Any = None, token: str = ADMIN_TOKEN) -> tuple[int, Any]:
        status, data = http(f"{self.url}/hub/api{path}", token, method, body)
        return status, (json.loads(data) if data.strip() else None)

    def start_server(self, user: str) -> None:
        """Ask the hub to spawn the user's default server; ``wait_for_server`` waits for it."""
        status, body = self.api(f"/users/{user}/server", "POST")
        assert status in (201, 202), (status, body)

    def wait_for_server(self, user: str, timeout: float = 90) -> None:
        wait_for(lambda: self.api(f"/users/{user}")[1]["servers"].get("", {}).get("ready"), timeout, f"{user}'s server")

    def token_for(self, user: str) -> str:
        status, body = self.api(f"/users/{user}/tokens", "POST", {"note": "test", "expires_in": 3600})
        assert status == 201, (status, body)
        return str(body["token"])

    def set_scenario(self, text: str) -> None:
        write_scenario(self.scenario, text)

    def run_cell(self, user: str, kernel_id: str, code: str, timeout: float = 60, token: str = ADMIN_TOKEN) -> Output:
        """Run ``code`` in the user's kernel as a notebook does, over the websocket through the proxy."""
        output, _ = asyncio.run(asyncio.wait_for(self._session(user, kernel_id, code, token, timeout), timeout))
        return output

    def comm(
        self, user: str, kernel_id: str, code: str, messages: int, timeout: float = 60, token: str = ADMIN_TOKEN
    ) -> Comm:
        """Run ``code`` silently, as the sidebar runs its connect call, and read the comm it opens: its
        comm_open and the next ``messages`` comm_msg on it, over the websocket through the proxy."""
        session = self._session(user, kernel_id, code, token, timeout, silent=True, comm_messages=messages)
        _, comm = asyncio.run(asyncio.wait_for(session, timeout))
        assert comm is not None
        return comm

    async def _session(
        self,
        user: str,
        kernel_id: str,
        code: str,
        token: str,
        timeout: float,
        silent: bool = False,
        comm_messages: int = 0,
    ) -> tuple[Output, Comm | None]:
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        url = self.url.replace("http", "ws", 1) + f"/user/{user}/api/kernels/{kernel_id}/channels"
        request = HTTPRequest(
            url, headers={"Authorization": f"token {token}"}, connect_timeout=timeout, request_timeout=timeout
        )
        connection = await websocket_connect(request)
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "msg_type": "execute_request", "username": user, "session": msg_id}
        content = {"code": code, "silent": silent, "store_history": False, "allow_stdin": False}
        message = {"header": {**header, "version": "5.3"}, "parent_header": {}, "metadata": {}, "content": content}
        await connection.write_message(json.dumps({**message, "channel": "shell", "buffers": []}))
        output, comm, idle = Output(), None, False
        while not idle or (comm_messages and (comm is None or len(comm.messages) < comm_messages)):
            raw = await connection.read_message()
            if raw is None:
                raise ConnectionError(f"the server closed kernel {kernel_id}'s websocket")
            assert isinstance(raw, str)
            msg = json.loads(raw)
            kind, body = msg["msg_type"], msg["content"]
            if kind == "comm_open" and msg.get("parent_header", {}).get("msg_id") == msg_id:
                comm = Comm(body["comm_id"], body["data"], [], [raw])
            elif kind == "comm_msg" and comm is not None and body["comm_id"] == comm.comm_id:
                comm.messages.append(body["data"])
                comm.raw.append(raw)
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if kind == "stream":
                output.stdout += body["text"] if body["name"] == "stdout" else ""
                output.stderr += body["text"] if body["name"] == "stderr" else ""
            elif kind in ("display_data", "execute_result"):
                output.displayed.append(body["data"].get("text/plain", ""))
            elif kind == "error":
                output.error = body["ename"]
            elif kind == "status" and body["execution_state"] == "idle":
                idle = True
        connection.close()
        return output, comm

    def user_get(self, user: str, path: str, token: str = ADMIN_TOKEN) -> tuple[int, bytes]:
        return http(f"{self.url}/user/{user}{path}", token)


def hub_config(
    base: Path,
    shared: Path,
    proxy_port: int,
    hub_port: int,
    api_port: int,
    service_port: int,
    groups: dict[str, list[str]],
    policies: dict[str, dict[str, str]],
) -> str:
    """``shared``: the world-readable directory with the users' Python (``env``), the stand-in NVML (``nvml``)
    and the scenario (``scenario``)."""
    prefix = shared / "env"
    environment = standin.environment(shared / "nvml", shared / "scenario" / "active.scenario", base={})
    environment.update({"PATH": f"{prefix / 'bin'}:/usr/local/bin:/usr/bin:/bin", "VIRTUAL_ENV": str(prefix)})
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
# Pages of one user: the service must follow the hub's pagination to see both users (a hub of a thousand
# users has pages of 200 by default, and a list asked for without pagination stops at the first page).
c.JupyterHub.api_page_max_limit = 1
c.JupyterHub.api_page_default_limit = 1
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = "gpumem-test-password"
c.Authenticator.allow_all = True
c.Authenticator.admin_users = {{"gpuadmin"}}
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [{str(prefix / "bin" / "jupyterhub-singleuser")!r}]
c.Spawner.args = ["--GpumemServer.interval_s=0.5"]
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
def shared_directory(library_dir: Path, kernel_config: str) -> Iterator[Path]:
    """A world-readable directory (0755, under /tmp) with what the users' servers and kernels read: the
    Python environment ``env`` (shared_python), the stand-in NVML ``nvml``, and ``scenario/`` for the
    scenario. ``kernel_config`` is the environment's etc/ipython/ipython_kernel_config.py, as an
    administrator configures every kernel of an environment. Removed at the end."""
    shared = Path(tempfile.mkdtemp(prefix="gpumem-hub-", dir="/tmp"))
    try:
        shared_python(shared / "env")  # about 2 s with hard links, 20 s copying, on 2 busy cores
        (shared / "env" / "etc" / "ipython").mkdir(parents=True, exist_ok=True)
        (shared / "env" / "etc" / "ipython" / "ipython_kernel_config.py").write_text(kernel_config)
        shutil.copytree(library_dir, shared / "nvml")
        (shared / "scenario").mkdir()
        readable(shared)
        yield shared
    finally:
        shutil.rmtree(shared, ignore_errors=True)


@contextmanager
def running_hub(
    base: Path,
    shared: Path,
    scenario_text: str,
    groups: dict[str, list[str]],
    policies: dict[str, dict[str, str]],
) -> Iterator[Hub]:
    """JupyterHub with LocalProcessSpawner: the users in ``groups`` must exist (``unix_users``), ``shared`` is
    a ``shared_directory``."""
    if not PROXY.exists():
        raise RuntimeError("configurable-http-proxy is needed: run `jlpm install` (package.json lists it).")
    base.mkdir(parents=True, exist_ok=True)
    scenario = shared / "scenario" / "active.scenario"
    for attempt in range(3):
        ports = [free_port() for _ in range(4)]
        config = base / f"jupyterhub_config-{attempt}.py"
        config.write_text(hub_config(base, shared, ports[0], ports[1], ports[2], ports[3], groups, policies))
        write_scenario(scenario, scenario_text)
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
        hub = Hub(f"http://127.0.0.1:{ports[0]}", base, scenario)
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


FLEET = Path(__file__).resolve().parent / "hub" / "fleet.py"


@dataclass
class Fleet:
    """The simulated fleet (tests/hub/fleet.py) and the hub service in front of it."""

    url: str  # the fleet: the hub's API and, as through the proxy, every user's server
    service: str  # the service's prefix URL, ending in /
    process: subprocess.Popen[bytes]

    def stats(self) -> dict[str, int]:
        return dict(json.loads(http(f"{self.url}/fleet/stats")[1]))

    def rows(self) -> dict[str, Any]:
        from fleet import ADMIN_TOKEN  # tests/hub/ is on the path where this is used

        status, data = http(f"{self.service}api/rows", ADMIN_TOKEN)
        assert status == 200, (status, data[:300])
        return dict(strict_json(data))


def _start(command: list[str], log_path: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log_path.open("w") as log:
        return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)


def _wait_http(
    url: str, process: subprocess.Popen[bytes], log_path: Path, token: str | None = None, timeout: float = 60
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{url} did not start:\n{log_path.read_text()[-3000:]}")
        with suppress(OSError):
            if http(url, token)[0] == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer in {timeout} s:\n{log_path.read_text()[-3000:]}")


@contextmanager
def running_fleet(
    base: Path,
    servers: int,
    faults: str,
    service_env: dict[str, str] | None = None,
    slow_s: float = 12.0,
    list_delay_s: float = 0.0,
) -> Iterator[Fleet]:
    """The fleet (tests/hub/fleet.py, its arguments), then ``running_service`` in front of it; both stopped at the
    end."""
    base.mkdir(parents=True, exist_ok=True)
    fleet_port = free_port()
    env = clean_environment()
    fleet_log = base / "fleet.log"
    fleet = _start(
        [sys.executable, str(FLEET), f"--port={fleet_port}", f"--servers={servers}", f"--faults={faults}",
         f"--slow-s={slow_s}", f"--list-delay-s={list_delay_s}"],
        fleet_log,
        env,
    )  # fmt: skip
    url = f"http://127.0.0.1:{fleet_port}"
    try:
        _wait_http(f"{url}/fleet/stats", fleet, fleet_log)
        with running_service(base, url, service_env) as (page, service):
            yield Fleet(url, page, service)
    finally:
        stop(fleet)


@contextmanager
def running_service(
    base: Path, url: str, service_env: dict[str, str] | None = None, name: str = "service"
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``python -m jupyter_gpumem.hub`` in front of the fleet at ``url``, with the environment JupyterHub gives a
    managed service (its API token, the hub's API URL, its own URL and prefix) plus ``service_env``: its prefix
    URL (ending in /) and process, stopped at the end. Its log is ``base/<name>.log``."""
    from fleet import ADMIN_TOKEN

    service_port = free_port()
    env = clean_environment()
    prefix = "/services/gpumem/"
    env.update(
        {
            "JUPYTERHUB_API_TOKEN": ADMIN_TOKEN,
            "JUPYTERHUB_API_URL": f"{url}/hub/api",
            "JUPYTERHUB_SERVICE_NAME": "gpumem",
            "JUPYTERHUB_SERVICE_URL": f"http://127.0.0.1:{service_port}",
            "JUPYTERHUB_SERVICE_PREFIX": prefix,
            "JUPYTERHUB_CLIENT_ID": "service-gpumem",
            "JUPYTERHUB_BASE_URL": "/",
            "JUPYTER_GPUMEM_HUB_PROXY_URL": url,
            **(service_env or {}),
        }
    )
    service_log = base / f"{name}.log"
    service = _start([sys.executable, "-m", "jupyter_gpumem.hub"], service_log, env)
    try:
        page = f"http://127.0.0.1:{service_port}{prefix}"
        _wait_http(page + "api/rows", service, service_log, ADMIN_TOKEN)  # with Prometheus: no /metrics
        yield page, service
    finally:
        stop(service)
