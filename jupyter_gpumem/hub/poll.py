"""Reading every running single-user server's ``/api/gpumem/v1`` through the hub's proxy, once per interval.

No server hides another. Users control their servers' code, and a server may hang, crawl, answer 502 through
the proxy or send anything at all, so: each request has a deadline (connect and response) that starts when the
request does, never while it waits its turn; at most ``concurrency`` requests are in flight, and the servers
that did not answer last time start only after every other one has started, so a hung server holds a slot for one
deadline at most and ahead of healthy ones only the first time it is asked; in each group the longest unasked start
first, so a server a poll did not reach in its period is asked first in the next, and the servers that do not
answer take turns; an answer larger than ``max_body_bytes`` is refused unread; a body is checked (rows.py) before
any of it is shown. A server that does not answer keeps its last rows, marked stale with when it stopped. A poll
starts no request after its period, counted from when the hub's list arrived (a slow list takes none of the servers'
time), so it ends within the list's time plus the period plus the deadline; the next poll starts a period after that
one's requests began, so a slow hub's list is asked for at most once per its time plus the period.

The period is the interval, stretched so that the servers are asked at most ``max_requests_per_s`` times a
second on average: the proxy also carries the users' own traffic (docs/hub.md: past that, Prometheus).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlparse

from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from jupyter_gpumem import values
from jupyter_gpumem.hub.rows import GpuRow, Row, gpus_of_server, rows_of_server, unreadable, valid
from jupyter_gpumem.wire.api import PATH
from jupyter_gpumem.words import Said

log = logging.getLogger("jupyter_gpumem.hub")

PAGINATION = "application/jupyterhub-pagination+json"
PAGE_LIMIT = 200  # JupyterHub's default api_page_max_limit; it caps a larger limit itself
NOT_ANSWERING = {502, 503, 504, 599}  # the proxy could not reach it; 599: tornado's timeout or closed stream


@dataclass(frozen=True, slots=True)
class PollStats:
    """What one poll did, for the page and the benchmark (benchmarks/hub_scale.py)."""

    t: float  # when it started (time.time())
    duration_s: float
    cpu_s: float  # the service's CPU time during the poll, whatever else its event loop did meanwhile
    period_s: float
    servers: int
    answered: int  # a body, valid or not
    not_answering: int
    not_reached: int  # not started within the period (kept as they were)


@dataclass
class _Server:
    rows: list[Row]
    gpus: list[GpuRow]
    answered: bool  # in its last poll
    good: list[Row] | None = None  # the last valid reading's rows, shown stale while it does not answer
    failing_since: float | None = None
    asked_at: float = -math.inf  # when its last request started (time.monotonic; -inf: never asked)


class HubListError(Exception):
    """The hub's list of users could not be read (its cause is chained)."""


class _TooLarge(Exception):
    """The answer is over the size the service reads."""


class _NotAnswering(Exception):
    """The server did not answer in time, refused, or the proxy could not reach it (502)."""


class Poller:
    """Holds the latest rows and GPUs; ``on_poll`` builds the views once per poll (never per request)."""

    def __init__(
        self,
        api_url: str,
        proxy_url: str,
        token: str,
        interval_s: float = 5.0,
        deadline_s: float = 3.0,
        concurrency: int = 64,
        max_body_bytes: int = 4 * 2**20,
        max_requests_per_s: float = 200.0,
        file_sd: Path | None = None,
    ):
        self.api_url = api_url.rstrip("/")
        self.proxy_url = proxy_url.rstrip("/")
        self.token = token
        self.interval_s, self.deadline_s = interval_s, deadline_s
        self.max_requests_per_s = max_requests_per_s
        self.rows: list[Row] = []
        self.gpus: list[GpuRow] = []
        self.t: float | None = None
        self.stats: PollStats | None = None
        self.on_poll: Callable[[], None] | None = None
        self._servers: dict[tuple[str, str], _Server] = {}
        self._slots = asyncio.Semaphore(concurrency)
        # A few connections beyond the slots, so that tornado's own queue (whose wait counts against a
        # request's timeout) is never used.
        self.client = AsyncHTTPClient(
            force_instance=True,
            max_clients=concurrency + 4,
            max_body_size=max_body_bytes,
            max_buffer_size=max_body_bytes,
        )
        self.max_body_bytes = max_body_bytes
        self.file_sd = file_sd
        self.groups: dict[str, tuple[str, ...]] = {}  # user -> their groups, from the last full list of the hub
        self._asking = -math.inf  # when the last poll's period began: the hub's list had arrived (time.monotonic)

    def period_s(self, servers: int) -> float:
        return max(self.interval_s, servers / self.max_requests_per_s if self.max_requests_per_s > 0 else 0.0)

    async def _get(self, url: str, timeout_s: float, accept: str = "application/json") -> Any:
        """The JSON at ``url``; ``_TooLarge`` when the answer says or proves it is over ``max_body_bytes``
        (the client closes the connection without reading it: tornado calls that a closed stream)."""
        length, chunks = [0], list[bytes]()

        def header(line: str) -> None:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length" and value.strip().isdigit():
                length[0] = int(value)

        request = HTTPRequest(
            url,
            headers={"Authorization": f"token {self.token}", "Accept": accept},
            connect_timeout=timeout_s,
            request_timeout=timeout_s,
            follow_redirects=False,  # a redirect is a login page, not a server's figures
            header_callback=header,
            streaming_callback=chunks.append,
        )
        try:
            await self.client.fetch(request)
        except HTTPClientError as error:
            if error.code == 599 and (length[0] > self.max_body_bytes or chunks):
                raise _TooLarge(self.max_body_bytes) from error
            raise
        return values.loads(b"".join(chunks))

    async def servers(self) -> list[tuple[str, str, str]]:
        """(user, server name, server URL) of every ready server, through every page of the hub's list."""
        found: list[tuple[str, str, str]] = []
        groups: dict[str, tuple[str, ...]] = {}
        offset = 0
        while True:
            query = urlencode({"state": "ready", "offset": offset, "limit": PAGE_LIMIT})
            data = await self._get(f"{self.api_url}/users?{query}", max(10.0, self.deadline_s), PAGINATION)
            users = data["items"] if isinstance(data, dict) else data  # a hub without pagination: one list
            for user in users:
                for name, server in (user.get("servers") or {}).items():
                    if server.get("ready"):
                        found.append((user["name"], name, server["url"]))
                groups[user["name"]] = tuple(g for g in user.get("groups") or () if isinstance(g, str))
            following = data.get("_pagination", {}).get("next") if isinstance(data, dict) else None
            if not following:
                self.groups = groups  # the ready users' JupyterHub groups, for /metrics (report-rules.yml)
                return found
            offset = int(following["offset"])

    async def _read(self, user: str, name: str, url: str) -> tuple[list[Row], list[GpuRow]]:
        try:
            body = await self._get(f"{self.proxy_url}{url.rstrip('/')}/api/gpumem/v1", self.deadline_s)
        except HTTPClientError as error:
            if error.code == 404:
                return [unreadable(user, name, Said("not_installed"))], []
            if error.code in NOT_ANSWERING:
                raise _NotAnswering(_why(error, self.deadline_s)) from error
            answered = Said("answered_status", path=PATH, status=error.code, message=error.message or "")
            return [unreadable(user, name, answered)], []
        except (OSError, asyncio.TimeoutError) as error:  # refused, reset: a server stopping mid-poll
            raise _NotAnswering(str(error) or type(error).__name__) from error
        except _TooLarge:
            too_large = Said("answer_too_large", path=PATH, most_mib=self.max_body_bytes / 2**20)
            return [unreadable(user, name, too_large)], []
        except values.Refused as error:  # not JSON, or values no reader can use (NaN, 10**400, nested 10,000 deep)
            if error.kind == "not_json":
                return [unreadable(user, name, Said("answer_not_json", path=PATH, error=str(error)))], []
            return [unreadable(user, name, Said("body_not_valid", path=PATH, problem=str(error)))], []
        except Exception as error:  # whatever else one server's answer causes is that server's row, not the poll's
            return [self._failed(user, name, error)], []
        try:
            rows = rows_of_server(user, name, body, time.time())
            return rows, gpus_of_server(body) if valid(rows) else []  # no rows: a server without kernels
        except Exception as error:  # a bug of ours on one body: that server's row says so, the others stand
            return [self._failed(user, name, error)], []

    def _failed(self, user: str, name: str, error: Exception) -> Row:
        log.warning("reading %s's server %r failed", user, name, exc_info=True)
        return unreadable(user, name, Said("answer_unreadable", path=PATH, error=type(error).__name__))

    async def _one(self, key: tuple[str, str], url: str, stop_at: float, now: float) -> str:
        async with self._slots:
            asked_at = time.monotonic()
            if asked_at > stop_at:
                return "not_reached"
            known = self._servers.get(key)
            try:
                rows, gpus = await self._read(*key, url)
            except _NotAnswering as error:
                since = known.failing_since if known and known.failing_since is not None else now
                good = known.good if known else None
                why = Said("not_answering", error=error.args[0])
                shown = [replace(r, problem=why, stale_since=since) for r in good] if good else []
                shown = shown or [replace(unreadable(*key, why), stale_since=since)]
                self._servers[key] = _Server(shown, known.gpus if known else [], False, good, since, asked_at)
                return "not_answering"
            good = rows if valid(rows) else None  # no rows is valid: a server without kernels (rows[0] was a crash)
            self._servers[key] = _Server(rows, gpus, True, good, asked_at=asked_at)
            return "answered"

    async def poll(self) -> None:
        start, cpu, now = time.monotonic(), time.process_time(), time.time()
        try:
            listed = await self.servers()
        except Exception as error:  # the hub's answer, not a server's: said as such, the last rows kept
            raise HubListError from error
        if self.file_sd is not None:
            write_targets(self.file_sd, self.proxy_url, listed)
        period, asking = self.period_s(len(listed)), time.monotonic()
        self._asking = asking
        keys = {(user, name): url for user, name, url in listed}
        for gone in set(self._servers) - set(keys):
            del self._servers[gone]  # stopped since the last poll

        # The servers that did not answer last time after every other (see the module's docstring); in each group
        # the longest unasked first, so that one a poll did not reach is asked first in the next, and the servers
        # that do not answer take turns: none is left behind for good.
        def turn(key: tuple[str, str]) -> tuple[bool, float]:
            known = self._servers.get(key)
            return (known.failing_since is not None, known.asked_at) if known else (False, -math.inf)

        order = sorted(keys, key=turn)
        results = await asyncio.gather(*(self._one(k, keys[k], asking + period, now) for k in order))
        for key in keys:
            self._servers.setdefault(key, _Server([unreadable(*key, "not read yet")], [], False))
        rows = [row for server in self._servers.values() for row in server.rows]
        self.rows = sorted(rows, key=lambda r: (r.user, r.server, r.kernel_id or "", r.gpu_index or 0))
        fresh = sorted(self._servers.values(), key=lambda s: not s.answered)  # a GPU's figures from a fresh reading
        self.gpus = list({g.uuid: g for s in reversed(fresh) for g in s.gpus}.values())
        self.t = now
        self.stats = PollStats(
            t=now,
            duration_s=time.monotonic() - start,
            cpu_s=time.process_time() - cpu,  # reading and checking; building the views comes after
            period_s=period,
            servers=len(keys),
            answered=results.count("answered"),
            not_answering=results.count("not_answering"),
            not_reached=results.count("not_reached"),
        )
        if self.on_poll is not None:
            self.on_poll()  # the views, built once per poll

    async def run(self) -> None:
        while True:
            start = time.monotonic()
            try:
                await self.poll()
            except HubListError:
                log.exception("could not read the hub's list of users; trying again in %g s", self.interval_s)
            except Exception:  # a bug of ours: named as such, never blamed on the hub's list
                log.exception("jupyter-gpumem: a poll of the servers failed; trying again in %g s", self.interval_s)
            period = self.stats.period_s if self.stats else self.interval_s
            await asyncio.sleep(max(0.0, max(start, self._asking) + period - time.monotonic()))


def _why(error: HTTPClientError, deadline_s: float) -> Said | str:
    if error.code == 599 and "timeout" in str(error).lower():
        return Said("no_answer_within", seconds=deadline_s)
    return f"{error.code} {error.message or ''}".strip()


def write_targets(path: Path, proxy_url: str, listed: list[tuple[str, str, str]]) -> None:
    """Prometheus's file_sd targets for every ready server, through the proxy as the service reads them
    (prometheus/prometheus.yml). Written whole and renamed into place: Prometheus never reads half a file."""
    proxy = urlparse(proxy_url)
    targets = [
        {
            "targets": [proxy.netloc],
            "labels": {
                "__scheme__": proxy.scheme,
                "__metrics_path__": f"{proxy.path.rstrip('/')}{url.rstrip('/')}/metrics",
                "user": user,
                "server": name,
            },
        }
        for user, name, url in listed
    ]
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(targets, indent=1, allow_nan=False))
    os.replace(partial, path)
