"""The page's rows from Prometheus instead of from the servers (``JUPYTER_GPUMEM_HUB_PROMETHEUS_URL``).

Past one node Prometheus already scrapes every single-user server's own ``/metrics`` (prometheus/prometheus.yml,
kubernetes.yml: each series carries the target's ``user`` and ``server``), so the service asks it, with a few
instant queries per interval over HTTP API ``/api/v1/query``, for what it would otherwise ask thousands of
servers through the proxy, and makes the same rows (rows.py) from the answers: the page, its JSON and its
summary are then the same code's.

Prometheus's answer is another process's data, holding what users' servers said: it is read with a deadline and
a size cap, its shape is checked, and every label and value is checked for what no server could mean (rows.py's
bounds) before it becomes a row; a server whose figures fail becomes that server's row saying why. A Prometheus
that is down, slow or answers nonsense is one sentence (``problem``) and the last rows stay, marked stale.

What the servers' metrics do not carry is not on these rows: a kernel's execution state and idle time (the
server's kernel manager, in ``/api/gpumem/v1`` only), and ``stale`` versus ``not_reporting`` (one gauge, 0).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode

from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from jupyter_gpumem import values
from jupyter_gpumem.hub.poll import PollStats
from jupyter_gpumem.hub.rows import ID, MAX_BYTES, MAX_GPUS, MAX_KERNELS, NAME, GpuRow, Row, unreadable
from jupyter_gpumem.words import Said

log = logging.getLogger("jupyter_gpumem.hub")

# Only series with a user label: a hub's servers, as both shipped configurations label them (not, say, a
# Jupyter server that Prometheus scrapes outside the hub).
HUB = '{user!=""}'
KERNEL_QUERIES = {
    "up": f"up{HUB}",
    "used": f"jupyter_gpumem_kernel_memory_used_bytes{HUB}",
    "budget": f"jupyter_gpumem_kernel_budget_bytes{HUB}",
    "over": f"jupyter_gpumem_kernel_over_budget{HUB}",
    "limit": f"jupyter_gpumem_kernel_limit_info{HUB}",
    "reporting": f"jupyter_gpumem_kernel_reporting{HUB}",
    "ceiling_ratio": f"jupyter_gpumem_kernel_ceiling_ratio{HUB}",
    "ceiling_bytes": f"jupyter_gpumem_kernel_ceiling_bytes{HUB}",
}
# A GPU once however many servers see it (servers on one node share its UUID): Prometheus does the folding.
GPU_QUERIES = {
    "gpu_total": f"max by (gpu_uuid, gpu_index) (jupyter_gpumem_gpu_memory_total_bytes{HUB})",
    "gpu_used": f"max by (gpu_uuid, gpu_index) (jupyter_gpumem_gpu_memory_used_bytes{HUB})",
    "gpu_lost": f"max by (gpu_uuid, gpu_index) (jupyter_gpumem_gpu_lost{HUB})",
    "gpu_name": f"max by (gpu_uuid, gpu_index, name) (jupyter_gpumem_gpu_info{HUB})",
}
# Per server: since when its NVIDIA driver has not answered (its last answer), only where it does not now.
SERVER_QUERIES = {
    "stalled_since": f"(jupyter_gpumem_read_timestamp_seconds{HUB} - jupyter_gpumem_reading_age_seconds{HUB}) "
    f"unless on (instance, user, server) (jupyter_gpumem_driver_answering{HUB} == 1)",
}
QUERIES = {**KERNEL_QUERIES, **GPU_QUERIES, **SERVER_QUERIES}
KIND = {"used": "bytes", "budget": "bytes", "ceiling_bytes": "bytes", "gpu_total": "bytes", "gpu_used": "bytes",
        "over": "flag", "reporting": "flag", "up": "flag", "gpu_lost": "flag", "limit": "flag", "gpu_name": "flag",
        "ceiling_ratio": "ratio", "stalled_since": "time"}  # fmt: skip
# JupyterHub's user and server names: printable, bounded (the page sets them as text, never as markup).
MAX_NAME = 255
MAX_SERVERS = 100_000  # the page and the summary stay bounded whatever Prometheus holds


# What a sample must be; a sentence says which rule failed, never the value itself (another process's text).
_WHAT = {
    "bytes": "not a whole number of bytes a GPU can hold",
    "flag": "neither 0 nor 1",
    "ratio": "not a share from 0 to 1",
    "time": "not a time",
}


class Invalid(ValueError):
    """A label or value no server could mean; its text names the field."""


class Unusable(Exception):
    """Prometheus did not answer in time, or not with a query's result: its text is the page's sentence."""


def _name(labels: dict[str, str], key: str, empty: bool) -> str:
    value = labels.get(key, "")  # Prometheus drops an empty label: the default server's name is ""
    if len(value) > MAX_NAME or (not value and not empty) or not value.isprintable():
        raise Invalid(f"its {key} label is not a JupyterHub {key} name")
    return value


def _id(labels: dict[str, str], key: str) -> str:
    value = labels.get(key, "")
    if not ID.fullmatch(value):
        raise Invalid(f"its {key} label is not an id")
    return value


def _index(labels: dict[str, str]) -> int:
    value = labels.get("gpu_index", "")
    if not (values.DIGITS.fullmatch(value) and int(value) < MAX_GPUS):
        raise Invalid("its gpu_index label is not a GPU's index")
    return int(value)


def _value(kind: str, name: str, text: object) -> float:
    try:
        value = float(text) if isinstance(text, str) else math.nan
    except ValueError:
        value = math.nan
    plausible = math.isfinite(value) and value >= 0
    if kind == "bytes":
        plausible = plausible and value <= MAX_BYTES and value == int(value)
    elif kind == "flag":
        plausible = value in (0.0, 1.0)
    elif kind == "ratio":
        plausible = plausible and value <= 1
    elif kind == "time":
        plausible = plausible and value <= time.time() + 86400  # a clock a day ahead is no clock
    if not plausible:
        raise Invalid(f"its {name} sample is {_WHAT[kind]}")
    return value


def samples(answer: object, max_samples: int) -> list[tuple[dict[str, str], object]]:
    """An instant vector's (labels, value text) pairs; ``Unusable`` when the answer is not one."""
    data = answer.get("data") if isinstance(answer, dict) and answer.get("status") == "success" else None
    result = data.get("result") if isinstance(data, dict) and data.get("resultType") == "vector" else None
    if not isinstance(result, list):
        raise Unusable("it answered something that is not a query's result")
    if len(result) > max_samples:
        raise Unusable(f"it answered {len(result)} series for one query (at most {max_samples} are read)")
    found = []
    for item in result:
        labels = item.get("metric") if isinstance(item, dict) else None
        value = item.get("value") if isinstance(item, dict) else None
        if not (isinstance(labels, dict) and all(isinstance(v, str) for v in labels.values())):
            raise Unusable("it answered a series whose labels are not text")
        if not (isinstance(value, list) and len(value) == 2):
            raise Unusable("it answered a series without a value")
        found.append((labels, value[1]))
    return found


@dataclass
class _Kernel:
    status: str | None = None
    ceiling_fraction: float | None = None
    ceiling_bytes: int | None = None
    gpus: dict[tuple[str, int], dict[str, Any]] | None = None


def rows_of_answers(
    answers: dict[str, list[tuple[dict[str, str], object]]],
) -> tuple[list[Row], list[GpuRow], int, int]:
    """The rows and GPUs from each query's samples; a server with an implausible label or value is its own row
    saying why. Also how many servers Prometheus scraped and how many it could not."""
    servers: dict[tuple[str, str], dict[str, _Kernel] | str] = {}
    scraped = failed = 0
    for labels, text in answers.get("up", []):
        try:
            key = (_name(labels, "user", False), _name(labels, "server", True))
        except Invalid:
            continue  # not a name to show a row under
        try:
            up = _value("flag", "up", text)
        except Invalid as error:
            servers[key] = str(error)
            continue
        if up:
            scraped += 1
            servers.setdefault(key, {})
        else:
            failed += 1
            servers[key] = Said("prometheus_not_scraping")
    for query in KERNEL_QUERIES:
        if query == "up":
            continue
        for labels, text in answers.get(query, []):
            try:
                key = (_name(labels, "user", False), _name(labels, "server", True))
            except Invalid:
                continue
            kernels = servers.setdefault(key, {})
            if isinstance(kernels, str):
                continue  # already that server's row saying why
            try:
                _add(kernels, query, labels, _value(KIND[query], query, text))
            except Invalid as error:
                servers[key] = Said("prometheus_figures_not_valid", error=str(error))
    stalled: dict[tuple[str, str], float] = {}
    for labels, text in answers.get("stalled_since", []):
        try:
            key = (_name(labels, "user", False), _name(labels, "server", True))
        except Invalid:
            continue
        try:
            stalled[key] = _value("time", "stalled_since", text)
        except Invalid as error:
            servers[key] = Said("prometheus_figures_not_valid", error=str(error))
    rows: list[Row] = []
    for (user, server), kernels in servers.items():
        if isinstance(kernels, str):
            rows.append(unreadable(user, server, kernels))
        elif len(kernels) > MAX_KERNELS:
            rows.append(unreadable(user, server, Said("prometheus_too_many", kernels=len(kernels), most=MAX_KERNELS)))
        else:
            since = stalled.get((user, server))
            rows.extend(replace(r, driver_stalled_since=since) for r in _rows(user, server, kernels))
    rows.sort(key=lambda r: (r.user, r.server, r.kernel_id or "", r.gpu_index or 0))
    return rows, _gpus(answers), scraped, failed


def _add(kernels: dict[str, _Kernel], query: str, labels: dict[str, str], value: float) -> None:
    kernel = kernels.setdefault(_id(labels, "kernel_id"), _Kernel())
    if query == "reporting":
        kernel.status = "reporting" if value else "not_reporting"
    elif query == "ceiling_ratio":
        kernel.ceiling_fraction = value
    elif query == "ceiling_bytes":
        kernel.ceiling_bytes = int(value)
    else:
        gpus = kernel.gpus = kernel.gpus if kernel.gpus is not None else {}
        if len(gpus) >= MAX_GPUS:
            raise Invalid(f"a kernel is on more than {MAX_GPUS} GPUs")
        on = gpus.setdefault((_id(labels, "gpu_uuid"), _index(labels)), {})
        if query == "limit":
            kind = labels.get("kind", "")
            if kind not in ("mig", "mps", "cooperative"):
                raise Invalid("its kind label is not a kind of limit")
            on.update(limit_kind=kind, limit_hard=labels.get("hard") == "true")
        elif query == "over":
            on["over_budget"] = bool(value)
        else:
            on[{"used": "used_bytes", "budget": "budget_bytes"}[query]] = int(value)


def _rows(user: str, server: str, kernels: dict[str, _Kernel]) -> list[Row]:
    rows: list[Row] = []
    for kernel_id, k in kernels.items():
        alone = Row(user, server, kernel_id, k.status, None, None, None, None, None, k.ceiling_fraction,
                    k.ceiling_bytes, None, False, None, None)  # fmt: skip
        on = k.gpus or {}
        rows.extend(
            replace(
                alone,
                gpu_uuid=uuid,
                gpu_index=index,
                used_bytes=g.get("used_bytes"),
                budget_bytes=g.get("budget_bytes"),
                over_budget=g.get("over_budget"),
                limit_kind=g.get("limit_kind"),
                limit_hard=g.get("limit_hard", False),
            )
            for (uuid, index), g in on.items()
        )
        if not on:
            rows.append(alone)
    return rows


def _gpus(answers: dict[str, list[tuple[dict[str, str], object]]]) -> list[GpuRow]:
    """The GPUs whose labels and figures are plausible; one that is not is left out (logged), never guessed."""
    found: dict[str, dict[str, Any]] = {}
    for query, field in (("gpu_total", "total_bytes"), ("gpu_used", "used_bytes"), ("gpu_lost", "lost"),
                         ("gpu_name", "name")):  # fmt: skip
        for labels, text in answers.get(query, []):
            try:
                gpu = found.setdefault(_id(labels, "gpu_uuid"), {"index": _index(labels)})
                value = _value(KIND[query], query, text)
                name = labels.get("name", "")
                if field == "name" and not NAME.fullmatch(name):
                    raise Invalid("its name label is not a GPU's name")
            except Invalid as error:
                log.warning("a GPU's figures in Prometheus are left out: %s", error)
                continue
            gpu[field] = name if field == "name" else bool(value) if field == "lost" else int(value)
    return [
        GpuRow(uuid, g["index"], g.get("name"), g.get("lost", False), g.get("total_bytes"), g.get("used_bytes"))
        for uuid, g in sorted(found.items())
    ]


async def answer_of(client: AsyncHTTPClient, url: str, deadline_s: float, max_body_bytes: int) -> object:
    """Prometheus's JSON answer at ``url`` (its HTTP API), within the deadline and the size; ``Unusable`` with the
    sentence's reason when it is not one (also the report's, report.py)."""
    request = HTTPRequest(url, connect_timeout=deadline_s, request_timeout=deadline_s, follow_redirects=False)
    try:
        response = await client.fetch(request)
    except HTTPClientError as error:
        if error.code == 599 and "timeout" in str(error).lower():
            raise Unusable(f"it did not answer within {deadline_s:g} s") from error
        if error.code == 599 and error.response is None and "closed" in str(error).lower():
            raise Unusable(f"its answer is larger than {max_body_bytes / 2**20:g} MiB") from error
        raise Unusable(f"it answered {error.code} {error.message or ''}".strip()) from error
    except (OSError, asyncio.TimeoutError) as error:
        raise Unusable(f"it cannot be reached ({error or type(error).__name__})") from error
    try:
        return values.loads(response.body)
    except values.Refused as error:
        raise Unusable(
            "its answer is not JSON" if error.kind == "not_json" else f"its answer is unusable: {error}"
        ) from error


class PrometheusReader:
    """The Poller's counterpart (the same ``rows``, ``gpus``, ``t``, ``stats``, ``on_poll``), reading Prometheus.

    ``problem``: None, or the sentence the page shows while Prometheus cannot be read (the rows are then the
    last ones read, marked stale). ``targets``, when given, runs first in every round (the file_sd targets
    Prometheus reads, prometheus.yml); its failure is logged and does not stop the reading."""

    def __init__(
        self,
        url: str,
        interval_s: float = 5.0,
        deadline_s: float = 3.0,
        max_body_bytes: int = 64 * 2**20,
        targets: Callable[[], Awaitable[None]] | None = None,
    ):
        self.url = url.rstrip("/")
        self.interval_s, self.deadline_s, self.max_body_bytes = interval_s, deadline_s, max_body_bytes
        self.targets = targets
        self.rows: list[Row] = []
        self.gpus: list[GpuRow] = []
        self.t: float | None = None
        self.stats: PollStats | None = None
        self.problem: Said | None = None
        self.on_poll: Callable[[], None] | None = None
        self._good: list[Row] = []
        self._failing_since: float | None = None
        self.client = AsyncHTTPClient(
            force_instance=True,
            max_clients=len(QUERIES) + 2,
            max_body_size=max_body_bytes,
            max_buffer_size=max_body_bytes,
        )

    async def _query(self, expr: str) -> list[tuple[dict[str, str], object]]:
        answer = await answer_of(self.client, f"{self.url}/api/v1/query?{urlencode({'query': expr})}",
                                 self.deadline_s, self.max_body_bytes)  # fmt: skip
        return samples(answer, MAX_SERVERS * 4)

    async def read(self) -> None:
        """One round: every query at once, each within the deadline; then the views, once."""
        start, cpu, now = time.monotonic(), time.process_time(), time.time()
        if self.targets is not None:
            try:
                await self.targets()
            except Exception:
                log.exception("could not write Prometheus's targets from the hub's list of servers")
        try:
            found = await asyncio.gather(*(self._query(expr) for expr in QUERIES.values()))
            rows, gpus, scraped, failed = rows_of_answers(dict(zip(QUERIES, found, strict=True)))
        except Exception as error:  # Unusable, or whatever else an answer causes: one sentence, never the loop's end
            if not isinstance(error, Unusable):
                log.warning("reading Prometheus's answers failed", exc_info=True)
            self._failing_since = self._failing_since or now
            self.problem = Said("prometheus_unreadable", url=self.url, error=str(error) or type(error).__name__)
            self.rows = [replace(r, problem=Said("not_answering", error=str(error)), stale_since=self._failing_since)
                         for r in self._good]  # fmt: skip
            scraped = failed = 0
        else:
            self.problem, self._failing_since = None, None
            self.rows = self._good = rows
            self.gpus = gpus
            self.t = now
        self.stats = PollStats(now, time.monotonic() - start, time.process_time() - cpu, self.interval_s,
                               scraped + failed, scraped, failed, 0)  # fmt: skip
        if self.on_poll is not None:
            self.on_poll()

    async def run(self) -> None:
        while True:
            start = time.monotonic()
            await self.read()  # never raises for Prometheus's sake: that is ``problem``
            await asyncio.sleep(max(0.0, start + self.interval_s - time.monotonic()))
