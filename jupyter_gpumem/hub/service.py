"""The service process: polls every running server's ``/api/gpumem/v1`` through the hub's proxy, and
serves the admin page and the aggregated ``/metrics`` under its prefix.

Run by JupyterHub as a managed service; it reads JupyterHub's service environment
(``JUPYTERHUB_API_TOKEN``, ``JUPYTERHUB_API_URL``, ``JUPYTERHUB_SERVICE_URL``,
``JUPYTERHUB_SERVICE_PREFIX``) and ``JUPYTER_GPUMEM_HUB_PROXY_URL``: the proxy's address as this service
reaches it (default ``JUPYTERHUB_PUBLIC_URL``, else ``http://127.0.0.1:8000``).
"""

from __future__ import annotations

import asyncio
import html
import json
import logging
import os
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlparse

from jupyterhub.services.auth import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
    HubOAuthCallbackHandler,
    HubOAuthenticated,
)
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from tornado import web
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from jupyter_gpumem.hub.rows import Row, rows_of_server, unreadable
from jupyter_gpumem.units import format_duration, format_mib

log = logging.getLogger("jupyter_gpumem.hub")

# Admins have ``admin-ui``; a Prometheus token may instead carry ``read:metrics``.
PAGE_SCOPES = {"admin-ui"}
METRICS_SCOPES = {"admin-ui", "read:metrics"}

SERVER = ("user", "server")
KERNEL = (*SERVER, "kernel_id")
KERNEL_GPU = (*KERNEL, "gpu_uuid", "gpu_index")


class Poller:
    """Holds the latest rows; one poll reads every ready server concurrently."""

    def __init__(self, api_url: str, proxy_url: str, token: str, interval_s: float):
        self.api_url = api_url.rstrip("/")
        self.proxy_url = proxy_url.rstrip("/")
        self.token = token
        self.interval_s = interval_s
        self.rows: list[Row] = []
        self.t: float | None = None
        self.client = AsyncHTTPClient()

    async def _get(self, url: str) -> Any:
        request = HTTPRequest(url, headers={"Authorization": f"token {self.token}"}, request_timeout=10)
        response = await self.client.fetch(request)
        return json.loads(response.body)

    async def _server(self, user: str, name: str, url: str) -> list[Row]:
        try:
            body = await self._get(f"{self.proxy_url}{url.rstrip('/')}/api/gpumem/v1")
        except HTTPClientError as error:
            problem = "jupyter-gpumem is not installed in this server" if error.code == 404 else str(error)
            return [unreadable(user, name, problem)]
        except Exception as error:  # a server stopping mid-poll, a refused connection: shown, not raised
            return [unreadable(user, name, str(error) or type(error).__name__)]
        return rows_of_server(user, name, body, time.time())

    async def poll(self) -> None:
        users = await self._get(f"{self.api_url}/users?state=ready")
        tasks = [
            self._server(user["name"], name, server["url"])
            for user in users
            for name, server in (user.get("servers") or {}).items()
            if server.get("ready")
        ]
        rows = [row for result in await asyncio.gather(*tasks) for row in result]
        self.rows = sorted(rows, key=lambda r: (r.user, r.server, r.kernel_id or "", r.gpu_index or 0))
        self.t = time.time()

    async def run(self) -> None:
        while True:
            try:
                await self.poll()
            except Exception:
                log.exception("could not read the hub's list of users; trying again in %g s", self.interval_s)
            await asyncio.sleep(self.interval_s)


def _bytes(value: int | None) -> str:
    return "" if value is None else format_mib(value)


def _ceiling(row: Row) -> str:
    parts = []
    if row.ceiling_fraction is not None:
        parts.append(f"{row.ceiling_fraction:.0%}")
    if row.ceiling_bytes is not None:
        parts.append(format_mib(row.ceiling_bytes))
    return " / ".join(parts)


COLUMNS = ("User", "Server", "Kernel", "GPU", "Used", "Budget", "Over budget", "Ceiling", "Limit", "Idle for")

STYLE = """
body { font-family: var(--jp-ui-font-family, system-ui, sans-serif); font-size: 13px; margin: 16px;
  color: var(--jp-ui-font-color1, #212121); background: var(--jp-layout-color1, #fff); }
h1 { font-size: 11px; text-transform: uppercase; letter-spacing: .05em; font-weight: 600; }
table { border-collapse: collapse; }
th, td { height: 24px; padding: 0 8px; border-bottom: 1px solid var(--jp-border-color2, #e0e0e0);
  white-space: nowrap; max-width: 24em; overflow: hidden; text-overflow: ellipsis; }
th { cursor: pointer; text-align: left; font-weight: 600; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
tr:hover td { background: var(--jp-layout-color2, #eee); }
tr.over td { color: var(--jp-error-color1, #d32f2f); }
"""

# Sorting on the client: each cell carries its sort key; clicking a header sorts by it, twice reverses.
SCRIPT = """
document.querySelectorAll('th').forEach((th, i) => th.addEventListener('click', () => {
  const body = document.querySelector('tbody');
  const dir = th.dataset.dir === 'asc' ? -1 : 1; th.dataset.dir = dir === 1 ? 'asc' : 'desc';
  const key = r => r.children[i].dataset.k ?? r.children[i].textContent;
  const rows = [...body.rows].sort((a, b) => {
    const x = key(a), y = key(b), nx = parseFloat(x), ny = parseFloat(y);
    return dir * (isNaN(nx) || isNaN(ny) ? x.localeCompare(y) : nx - ny);
  });
  rows.forEach(r => body.appendChild(r));
}));
"""


def render_page(rows: list[Row], t: float | None, refresh_s: float) -> str:
    def cell(text: str, key: Any = None, number: bool = False, title: str | None = None) -> str:
        attrs = ' class="n"' if number else ""
        if key is not None:
            attrs += f' data-k="{html.escape(str(key))}"'
        attrs += f' title="{html.escape(title or text)}"'
        return f"<td{attrs}>{html.escape(text)}</td>"

    lines = []
    for r in rows:
        over = "yes" if r.over_budget else ("no" if r.over_budget is False else "")
        limit = f"{r.limit_kind} (hard)" if r.limit_hard and r.limit_kind else (r.limit_kind or "")
        gpu = "" if r.gpu_index is None else str(r.gpu_index)
        kernel = r.problem or (r.kernel_id or "")[:8]
        cells = [
            cell(r.user),
            cell(r.server or "(default)"),
            cell(kernel, title=r.problem or r.kernel_id or ""),
            cell(gpu, r.gpu_index, True, r.gpu_uuid or ""),
            cell(_bytes(r.used_bytes), r.used_bytes if r.used_bytes is not None else -1, True),
            cell(_bytes(r.budget_bytes), r.budget_bytes if r.budget_bytes is not None else -1, True),
            cell(over),
            cell(_ceiling(r)),
            cell(limit),
            cell("" if r.idle_s is None else format_duration(r.idle_s), r.idle_s if r.idle_s is not None else -1, True),
        ]
        lines.append(f"<tr{' class=over' if r.over_budget else ''}>{''.join(cells)}</tr>")
    read = "not yet" if t is None else time.strftime("%H:%M:%S", time.localtime(t))
    head = "".join(f"<th>{c}</th>" for c in COLUMNS)
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><meta http-equiv="refresh" content="{refresh_s:g}">
<title>GPU memory by user</title><style>{STYLE}</style></head>
<body><h1>GPU memory by user</h1><p>Read at {read}; this page refreshes every {refresh_s:g} s.</p>
<table><thead><tr>{head}</tr></thead><tbody>
{chr(10).join(lines)}
</tbody></table><script>{SCRIPT}</script></body></html>
"""


# Family name -> (help, label names); every family is described, with or without samples.
FAMILIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "jupyter_gpumem_hub_read_timestamp_seconds": ("when the service last read the servers", ()),
    "jupyter_gpumem_hub_server_up": ("1 when the user's server answered /api/gpumem/v1", SERVER),
    "jupyter_gpumem_hub_kernel_memory_used_bytes": ("the kernel's processes as nvidia-smi counts them", KERNEL_GPU),
    "jupyter_gpumem_hub_kernel_budget_bytes": ("the kernel's budget", KERNEL_GPU),
    "jupyter_gpumem_hub_kernel_over_budget": ("1 when memory > budget", KERNEL_GPU),
    "jupyter_gpumem_hub_kernel_ceiling_bytes": ("the administrator's max_limit for the kernel", KERNEL),
    "jupyter_gpumem_hub_kernel_ceiling_ratio": ("the administrator's max_fraction for the kernel", KERNEL),
    "jupyter_gpumem_hub_kernel_idle_seconds": ("seconds since the kernel's last activity, while idle", KERNEL),
}


def families(rows: list[Row], t: float | None) -> list[Metric]:
    """The rows of one poll as prometheus_client's families; a figure that is not known has no sample."""
    built = {name: GaugeMetricFamily(name, help_text, labels=labels) for name, (help_text, labels) in FAMILIES.items()}

    def add(name: str, labels: tuple[Any, ...], value: float | None) -> None:
        if value is not None:
            built[name].add_metric([str(v) for v in labels], float(value))

    add("jupyter_gpumem_hub_read_timestamp_seconds", (), t)
    servers: dict[tuple[str, str], bool] = {}
    seen: set[tuple[str, str, str]] = set()
    for r in rows:
        servers[(r.user, r.server)] = servers.get((r.user, r.server), True) and r.problem is None
        if r.kernel_id is None:
            continue
        k = (r.user, r.server, r.kernel_id)
        if k not in seen:  # a kernel's figures, once however many GPUs it has
            seen.add(k)
            add("jupyter_gpumem_hub_kernel_ceiling_bytes", k, r.ceiling_bytes)
            add("jupyter_gpumem_hub_kernel_ceiling_ratio", k, r.ceiling_fraction)
            add("jupyter_gpumem_hub_kernel_idle_seconds", k, r.idle_s)
        if r.gpu_index is None:
            continue
        g = (*k, r.gpu_uuid, r.gpu_index)
        add("jupyter_gpumem_hub_kernel_memory_used_bytes", g, r.used_bytes)
        add("jupyter_gpumem_hub_kernel_budget_bytes", g, r.budget_bytes)
        add("jupyter_gpumem_hub_kernel_over_budget", g, None if r.over_budget is None else int(r.over_budget))
    for server, up in servers.items():
        add("jupyter_gpumem_hub_server_up", server, int(up))
    return list(built.values())


class _Poll(Collector):
    def __init__(self, rows: list[Row], t: float | None):
        self._families = families(rows, t)

    def collect(self) -> Iterator[Metric]:
        return iter(self._families)


def render_metrics(rows: list[Row], t: float | None) -> bytes:
    """The exposition of one poll, through a registry of its own (the service has no process metrics to add)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Poll(rows, t))
    return generate_latest(registry)


class _Base(HubOAuthenticated, web.RequestHandler):  # type: ignore[misc]  # jupyterhub has no types
    def initialize(self, poller: Poller) -> None:
        self.poller = poller


class PageHandler(_Base):
    hub_scopes = PAGE_SCOPES

    @web.authenticated
    def get(self) -> None:
        self.finish(render_page(self.poller.rows, self.poller.t, max(5.0, self.poller.interval_s)))


class MetricsHandler(_Base):
    hub_scopes = METRICS_SCOPES

    @web.authenticated
    def get(self) -> None:
        self.set_header("Content-Type", CONTENT_TYPE_LATEST)
        self.finish(render_metrics(self.poller.rows, self.poller.t))


class JsonHandler(_Base):
    hub_scopes = PAGE_SCOPES

    @web.authenticated
    def get(self) -> None:
        self.set_header("Content-Type", "application/json")
        rows = [{f: getattr(r, f) for f in Row.__dataclass_fields__} for r in self.poller.rows]
        self.finish(json.dumps({"t": self.poller.t, "rows": rows}))


def make_app(poller: Poller, prefix: str) -> web.Application:
    prefix = "/" + prefix.strip("/") + "/"
    return web.Application(
        [
            (prefix, PageHandler, {"poller": poller}),
            (prefix + "metrics", MetricsHandler, {"poller": poller}),
            (prefix + "api/rows", JsonHandler, {"poller": poller}),
            (prefix + "oauth_callback", HubOAuthCallbackHandler),
        ],
        cookie_secret=os.urandom(32),
    )


async def main() -> None:
    logging.basicConfig(level=logging.INFO)
    env = os.environ
    proxy = env.get("JUPYTER_GPUMEM_HUB_PROXY_URL") or env.get("JUPYTERHUB_PUBLIC_URL") or "http://127.0.0.1:8000"
    interval_s = float(env.get("JUPYTER_GPUMEM_HUB_INTERVAL_S", "5"))
    poller = Poller(env["JUPYTERHUB_API_URL"], proxy, env["JUPYTERHUB_API_TOKEN"], interval_s)
    prefix = env.get("JUPYTERHUB_SERVICE_PREFIX", "/services/gpumem/")
    bind = urlparse(env.get("JUPYTERHUB_SERVICE_URL", "http://127.0.0.1:10101"))
    make_app(poller, prefix).listen(bind.port or 80, bind.hostname or "127.0.0.1")
    log.info("GPU memory by user at %s, reading servers through %s", quote(prefix), proxy)
    await poller.run()
