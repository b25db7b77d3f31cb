"""A simulated hub fleet on 127.0.0.1, one process, one port: JupyterHub's REST API as the service uses it
(``/hub/api/users`` with JupyterHub's own pagination, ``/hub/api/user`` for tokens) and, behind the same port as
behind configurable-http-proxy, every user's single-user server: ``/user/<name>/api/gpumem/v1`` and
``/user/<name>/metrics``.

    python tests/hub/fleet.py --port 8000 --servers 1000 --faults hung=30,slow=10,404=5,502=5,malformed=5

Each user's kind is ``kinds(...)``'s, the same list the tests and benchmarks/hub_scale.py compute from the same
arguments: ``healthy``; ``hung`` (never answers); ``slow`` (answers after ``--slow-s``); ``404`` (jupyter-gpumem not
installed); ``502`` (the proxy cannot reach it); ``malformed`` (``kernels`` not a list); ``huge`` (a body of 8 MiB);
``absurd`` (a valid body with a size of 2**50 bytes and a kernel id with markup); ``stops`` (answers once, then
hangs); ``big_time``, ``nan`` and ``deep`` (a hostile user's: a last activity of 401 digits, NaN, an array nested
100,000 deep); ``no_kernels`` (a valid body of a server where no kernel runs). Servers of other releases than this
one answer with the body their release sends (tests/fixtures/releases/): ``older`` (0.1.0 as it shipped), ``first``
(the first body the API had), ``newer`` (an invented newer release of /api/gpumem/v1, with fields this one does not
know), ``major2`` (an invented /api/gpumem/v2 body, which this hub cannot read). ``GET /fleet/stats``: requests
served so far, by kind. ``--list-delay-s``: the hub's list answers each page that late (a hub whose database is
slow).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from tornado import web

API = Path(__file__).resolve().parents[1] / "fixtures" / "api" / "body.json"
RELEASES = Path(__file__).resolve().parents[1] / "fixtures" / "releases"
# A server of another release: the kind, and the folder of tests/fixtures/releases/ whose body it sends.
RELEASE_KINDS = {"older": "0.1.0", "first": "0.1.0-first", "newer": "newer-minor", "major2": "newer-major"}
# A hostile user's server (issue 43): a time of 401 digits, NaN, an array nested 100,000 deep.
HOSTILE = {
    "big_time": lambda text: re.sub(r'"last_activity":[^,}]+', '"last_activity":' + "9" * 401, text, count=1),
    "nan": lambda text: text.replace('"used_bytes":', '"used_bytes":NaN,"x":', 1),
    "deep": lambda text: "[" * 100_000 + "]" * 100_000,
    # Not hostile, and common: a server where no kernel runs (its rows[0] once failed every poll).
    "no_kernels": lambda text: json.dumps({**json.loads(text), "kernels": []}),
}
KINDS = ("hung", "slow", "404", "502", "malformed", "huge", "absurd", "stops", *RELEASE_KINDS, *HOSTILE)
GiB = 2**30
MAX_PAGE = 200  # JupyterHub's api_page_max_limit: a list asked for without pagination stops there
ADMIN_TOKEN = "gpumem-fleet-admin"
USERS_PER_NODE = 16  # users on one node share its GPUs (the same UUIDs)


def kinds(servers: int, faults: dict[str, int], seed: int = 25) -> list[tuple[str, str]]:
    """(user, kind) for every server: the faults spread among the healthy ones, the same for the same arguments."""
    bad = [kind for kind, count in faults.items() for _ in range(count)]
    every = bad + ["healthy"] * (servers - len(bad))
    random.Random(seed).shuffle(every)
    return [(f"u{i:05d}", kind) for i, kind in enumerate(every)]


def parse_faults(text: str) -> dict[str, int]:
    faults = {k: int(v) for k, v in (part.split("=") for part in text.split(",") if part)}
    unknown = set(faults) - set(KINDS)
    if unknown:
        raise SystemExit(f"unknown fault kinds {sorted(unknown)}; known: {', '.join(KINDS)}")
    return faults


def body(index: int, now: float, release: str | None = None) -> dict[str, Any]:
    """A valid /api/gpumem/v1 body: one kernel on one of its node's GPUs, its memory and idle time varied. With
    ``release`` (a folder of tests/fixtures/releases/), that release's body, varied the same way in the fields it has
    (none is added: a field its release did not send stays absent)."""
    data = json.loads((API if release is None else RELEASES / release / "api" / "body.json").read_text())
    node = index // USERS_PER_NODE
    for gpu in data["gpus"]:
        gpu["uuid"] = f"GPU-node{node:04d}-{gpu['index']}"
    kernel = data["kernels"][0]
    gpu = kernel["gpus"][0]
    gpu["uuid"] = data["gpus"][gpu["index"]]["uuid"]
    gpu["used_bytes"] = (index % 7) * GiB // 2
    gpu["budget_bytes"] = 2 * GiB
    gpu["over_budget"] = gpu["used_bytes"] > gpu["budget_bytes"]
    kernel["id"] = f"kernel-{index:05d}"
    if "execution_state" in kernel:
        kernel["execution_state"] = "idle" if index % 3 else "busy"
        kernel["last_activity"] = now - 60 * (index % 120)
    data["kernels"] = [kernel]
    data["t"] = now
    return data


def metrics(index: int, now: float) -> bytes:
    """The server extension's metrics for ``body(index)``: the families the hub's Prometheus rules read."""
    data = body(index, now)
    registry = CollectorRegistry(auto_describe=False)
    families: list[GaugeMetricFamily] = []

    def family(name: str, labels: list[str]) -> GaugeMetricFamily:
        families.append(GaugeMetricFamily(name, name, labels=labels))
        return families[-1]

    stamp = family("jupyter_gpumem_read_timestamp_seconds", [])
    stamp.add_metric([], now)
    lost, total, used = (family(f"jupyter_gpumem_gpu_{n}", ["gpu_uuid", "gpu_index"]) for n in GPU_FAMILIES)
    for gpu in data["gpus"]:
        labels = [gpu["uuid"], str(gpu["index"])]
        lost.add_metric(labels, 0)
        total.add_metric(labels, gpu["total_bytes"])
        used.add_metric(labels, gpu["used_bytes"])
    reporting = family("jupyter_gpumem_kernel_reporting", ["kernel_id"])
    ratio = family("jupyter_gpumem_kernel_ceiling_ratio", ["kernel_id"])
    ceiling = family("jupyter_gpumem_kernel_ceiling_bytes", ["kernel_id"])
    limit = family("jupyter_gpumem_kernel_limit_info", ["kernel_id", "gpu_uuid", "gpu_index", "kind", "hard"])
    info = family("jupyter_gpumem_gpu_info", ["gpu_uuid", "gpu_index", "name"])
    for gpu in data["gpus"]:
        info.add_metric([gpu["uuid"], str(gpu["index"]), gpu["name"]], 1)
    k_used, k_budget, k_over = (
        family(f"jupyter_gpumem_kernel_{n}", ["kernel_id", "gpu_uuid", "gpu_index"]) for n in KERNEL_FAMILIES
    )
    for kernel in data["kernels"]:
        reporting.add_metric([kernel["id"]], int(kernel["status"] == "reporting"))
        for fam, value in ((ratio, kernel["ceiling"]["max_fraction"]), (ceiling, kernel["ceiling"]["max_limit_bytes"])):
            if value is not None:
                fam.add_metric([kernel["id"]], value)
        for gpu in kernel["gpus"]:
            labels = [kernel["id"], gpu["uuid"], str(gpu["index"])]
            k_used.add_metric(labels, gpu["used_bytes"])
            k_budget.add_metric(labels, gpu["budget_bytes"])
            k_over.add_metric(labels, int(gpu["over_budget"]))
            limit.add_metric([*labels, gpu["limit_kind"], "true" if gpu["limit_hard"] else "false"], 1)

    class _All:
        def collect(self) -> list[GaugeMetricFamily]:
            return families

    registry.register(_All())  # type: ignore[arg-type]
    return generate_latest(registry)


GPU_FAMILIES = ("lost", "memory_total_bytes", "memory_used_bytes")
KERNEL_FAMILIES = ("memory_used_bytes", "budget_bytes", "over_budget")


def groups_of(index: int) -> list[str]:
    """User number ``index``'s JupyterHub groups: every second in physics, every third in chemistry."""
    return [group for group, every in (("physics", 2), ("chemistry", 3)) if index % every == 0]


class Fleet:
    def __init__(self, servers: list[tuple[str, str]], slow_s: float, list_delay_s: float = 0.0):
        self.servers = servers
        self.list_delay_s = list_delay_s
        self.kind = dict(servers)
        self.index = {name: i for i, (name, _) in enumerate(servers)}
        self.slow_s = slow_s
        self.stats: Counter[str] = Counter()


class Users(web.RequestHandler):
    def initialize(self, fleet: Fleet) -> None:
        self.fleet = fleet

    async def get(self) -> None:
        """As JupyterHub 5/6: without the pagination media type, at most MAX_PAGE users and no word of the rest."""
        models = [
            {
                "name": name,
                "kind": "user",
                "groups": groups_of(i),
                "servers": {"": {"name": "", "ready": True, "url": f"/user/{name}/"}},
            }
            for i, (name, _) in enumerate(self.fleet.servers)
        ]
        offset = int(self.get_argument("offset", "0"))
        await asyncio.sleep(self.fleet.list_delay_s)
        self.fleet.stats["hub_api" if offset == 0 else "hub_api_page"] += 1  # hub_api: one per poll
        limit = min(int(self.get_argument("limit", str(MAX_PAGE))), MAX_PAGE)
        page = models[offset : offset + limit]
        if "application/jupyterhub-pagination+json" not in self.request.headers.get("Accept", ""):
            self.finish(json.dumps(page))
            return
        after = offset + limit
        more = {"offset": after, "limit": limit, "url": f"{self.request.protocol}://{self.request.host}"}
        more["url"] += f"/hub/api/users?{urlencode({'state': 'ready', 'offset': after, 'limit': limit})}"
        pagination = {"offset": offset, "limit": limit, "total": len(models), "next": None}
        if after < len(models):
            pagination["next"] = more
        self.finish(json.dumps({"items": page, "_pagination": pagination}))


class TokenOwner(web.RequestHandler):
    """``GET /hub/api/user``: who a token is, as HubAuth asks it. Only the fleet's admin token is known."""

    def get(self) -> None:
        if self.request.headers.get("Authorization", "").split()[-1:] != [ADMIN_TOKEN]:
            raise web.HTTPError(403)
        self.finish({"kind": "service", "name": "fleet-admin", "scopes": ["admin-ui", "read:metrics"]})


class Server(web.RequestHandler):
    def initialize(self, fleet: Fleet) -> None:
        self.fleet = fleet

    async def get(self, user: str, what: str) -> None:
        kind = self.fleet.kind.get(user)
        if kind is None:
            raise web.HTTPError(404)
        self.fleet.stats[kind] += 1
        index = self.fleet.index[user]
        if kind == "stops" and what != "metrics":
            kind = "hung" if self.fleet.stats[f"stops:{user}"] else "healthy"
            self.fleet.stats[f"stops:{user}"] += 1
        if kind == "hung":
            self.closed = asyncio.Event()
            await self.closed.wait()  # until the client gives up; no answer, ever
            return
        if kind == "slow":
            await asyncio.sleep(self.fleet.slow_s)
        if kind in ("404", "502"):
            raise web.HTTPError(int(kind))
        if what == "metrics":
            self.set_header("Content-Type", "text/plain; version=0.0.4")
            self.finish(metrics(index, time.time()))
            return
        data = body(index, time.time(), RELEASE_KINDS.get(kind))
        if kind == "malformed":
            data["kernels"] = {"not": "a list"}
        elif kind == "huge":
            data["padding"] = "x" * (8 * 2**20)
        elif kind == "absurd":
            data["kernels"][0]["gpus"][0]["used_bytes"] = 2**50  # beyond any GPU, exact in JavaScript
            data["kernels"][0]["id"] = "<img src=x onerror=alert(1)>" * 20
        text = json.dumps(data, separators=(",", ":"))
        self.set_header("Content-Type", "application/json")
        self.finish(HOSTILE[kind](text) if kind in HOSTILE else text)

    def on_connection_close(self) -> None:
        closed = getattr(self, "closed", None)
        if closed is not None:
            closed.set()


class Stats(web.RequestHandler):
    def initialize(self, fleet: Fleet) -> None:
        self.fleet = fleet

    def get(self) -> None:
        self.finish(dict(self.fleet.stats))


async def serve(port: int, servers: list[tuple[str, str]], slow_s: float, list_delay_s: float = 0.0) -> None:
    fleet = Fleet(servers, slow_s, list_delay_s)
    app = web.Application(
        [
            (r"/hub/api/users", Users, {"fleet": fleet}),
            (r"/hub/api/user", TokenOwner),
            (r"/user/([^/]+)/(api/gpumem/v1|metrics)", Server, {"fleet": fleet}),
            (r"/fleet/stats", Stats, {"fleet": fleet}),
        ]
    )
    app.listen(port, "127.0.0.1", backlog=4096)
    print("ready", flush=True)
    await asyncio.Event().wait()


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--servers", type=int, required=True)
    parser.add_argument("--faults", default="")
    parser.add_argument("--slow-s", type=float, default=12.0)
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--list-delay-s", type=float, default=0.0)
    args = parser.parse_args(argv)
    servers = kinds(args.servers, parse_faults(args.faults), args.seed)
    asyncio.run(serve(args.port, servers, args.slow_s, args.list_delay_s))


if __name__ == "__main__":
    main(sys.argv[1:])
