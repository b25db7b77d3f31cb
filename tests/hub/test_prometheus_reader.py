"""The service reading Prometheus's HTTP API (hub/prometheus_reader.py) when Prometheus misbehaves: a stand-in
Prometheus on 127.0.0.1 (real HTTP, tornado) answers each instant query from a table, hangs, answers too much or
answers nonsense. What the real Prometheus gives is tests/hub/test_prometheus.py's. Also the service's views:
built once per poll, never per request (real HTTP through the service's own handlers and HubAuth)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from fleet import ADMIN_TOKEN, TokenOwner
from server_fixtures import free_port
from tornado import web
from tornado.httpclient import AsyncHTTPClient

from jupyter_gpumem.hub.poll import Poller
from jupyter_gpumem.hub.prometheus_reader import QUERIES, PrometheusReader
from jupyter_gpumem.hub.rows import rows_of_server
from jupyter_gpumem.hub.service import make_app, render_rows

GiB = 2**30
Series = list[tuple[dict[str, str], str]]


def kernel(user: str, kernel_id: str, used: str, **labels: str) -> dict[str, Series]:
    """One kernel on GPU 0 of ``user``'s default server, as Prometheus holds it (prometheus.yml's labels)."""
    on = {"user": user, "kernel_id": kernel_id, "gpu_uuid": "GPU-0", "gpu_index": "0", **labels}
    return {
        "up": [({"user": user, "instance": "proxy:8000"}, "1")],
        "used": [(on, used)],
        "budget": [(on, str(2 * GiB))],
        "over": [(on, "0")],
        "reporting": [({"user": user, "kernel_id": kernel_id}, "1")],
    }


def merged(*parts: dict[str, Series]) -> dict[str, Series]:
    found: dict[str, Series] = {}
    for part in parts:
        for query, series in part.items():
            found.setdefault(query, []).extend(series)
    return found


class Stand:
    """What the stand-in Prometheus does: answer from ``series`` (by query name), or ``behave`` instead."""

    def __init__(self, series: dict[str, Series]):
        self.series = series
        self.behave: str = "answer"  # answer | hang | huge | html | error
        self.queries = 0


class Query(web.RequestHandler):
    def initialize(self, stand: Stand) -> None:
        self.stand = stand

    async def get(self) -> None:
        self.stand.queries += 1
        if self.stand.behave == "hang":
            await asyncio.sleep(30)  # far past any deadline; the client gives up first
        name = {expr: name for name, expr in QUERIES.items()}[self.get_argument("query")]
        result = [
            {"metric": labels, "value": [time.time(), value]} for labels, value in self.stand.series.get(name, [])
        ]
        answer: Any = {"status": "success", "data": {"resultType": "vector", "result": result}}
        if self.stand.behave == "huge":
            answer["padding"] = "x" * (2 * 2**20)
        elif self.stand.behave == "html":
            self.finish("<html>login</html>")
            return
        elif self.stand.behave == "error":
            answer = {"status": "error", "errorType": "bad_data", "error": "parse error"}
        self.finish(json.dumps(answer))


@asynccontextmanager
async def stand_in(series: dict[str, Series]) -> AsyncIterator[tuple[Stand, str]]:
    stand, port = Stand(series), free_port()
    server = web.Application([(r"/api/v1/query", Query, {"stand": stand})]).listen(port, "127.0.0.1")
    try:
        yield stand, f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def reading(series: dict[str, Series], check: Callable[[PrometheusReader, Stand], Any], **settings: Any) -> None:
    async def go() -> None:
        async with stand_in(series) as (stand, url):
            reader = PrometheusReader(url, **{"deadline_s": 0.5, "max_body_bytes": 2**20, **settings})
            await asyncio.wait_for(check(reader, stand), 20)

    asyncio.run(go())


def test_a_figure_no_gpu_could_have_is_that_servers_row_and_never_reaches_the_page() -> None:
    series = merged(
        kernel("alice", "k-alice", str(3 * GiB)),
        kernel("mallory", "k-mallory", str(2**62)),
        kernel("trudy", "<img src=x onerror=alert(1)>", str(GiB)),
        kernel("eve", "k-eve", "NaN"),
        {"over": [({"user": "oscar", "kernel_id": "k-oscar", "gpu_uuid": "GPU-0", "gpu_index": "0"}, "0.5")]},
        {"used": [({"user": "peggy", "kernel_id": "k-peggy", "gpu_uuid": "GPU-0", "gpu_index": "4096"}, "1")]},
    )

    async def check(reader: PrometheusReader, _: Stand) -> None:
        await reader.read()
        why = {r.user: r.problem for r in reader.rows}
        assert why["alice"] is None and [r.used_bytes for r in reader.rows if r.user == "alice"] == [3 * GiB]
        valid = "its figures in Prometheus are not valid: "
        assert why["mallory"] == valid + "its used sample is not a whole number of bytes a GPU can hold"
        assert why["trudy"] == valid + "its kernel_id label is not an id"
        assert why["eve"] == valid + "its used sample is not a whole number of bytes a GPU can hold"
        assert why["oscar"] == valid + "its over sample is neither 0 nor 1"
        assert why["peggy"] == valid + "its gpu_index label is not a GPU's index"
        page = render_rows(reader).decode()
        assert str(2**62) not in page and "<img" not in page and "NaN" not in page
        assert reader.problem is None and json.loads(page)["source"]["problem"] is None

    reading(series, check)


@pytest.mark.parametrize(
    ("behave", "sentence"),
    [
        ("hang", "it did not answer within 0.5 s"),
        ("huge", "its answer is larger than 1 MiB"),
        ("html", "its answer is not JSON"),
        ("error", "it answered something that is not a query's result"),
    ],
)
def test_a_prometheus_that_hangs_or_answers_nonsense_is_one_sentence_and_the_last_rows_stay_stale(
    behave: str, sentence: str
) -> None:
    async def check(reader: PrometheusReader, stand: Stand) -> None:
        await reader.read()
        assert [(r.user, r.used_bytes, r.stale_since) for r in reader.rows] == [("alice", 3 * GiB, None)]
        t = reader.t
        stand.behave = behave
        start = time.monotonic()
        await reader.read()
        if behave == "hang":
            # Every query at once, each within the deadline: one after another they would take 0.5 s each. The
            # bound leaves a loaded machine its slack (the stand-in answers on this same event loop).
            assert time.monotonic() - start < 0.5 * (len(QUERIES) - 1)
        assert reader.problem == (
            f"Prometheus at {reader.url} cannot be read: {sentence}. "
            "The rows below are its last figures; check that Prometheus runs."
        )
        assert [(r.user, r.used_bytes) for r in reader.rows] == [("alice", 3 * GiB)]
        assert all(r.stale_since is not None for r in reader.rows) and reader.t == t
        assert json.loads(render_rows(reader))["source"]["problem"] == reader.problem
        stand.behave = "answer"
        await reader.read()  # back: fresh rows, no sentence
        assert reader.problem is None and all(r.stale_since is None for r in reader.rows)

    # The deadline is what the hang is about; the other answers get one no loaded machine reaches, so that they are
    # read whole and judged (a 2 MiB answer to each query, made on this same event loop, once took longer than
    # 0.5 s beside two test suites and read as a hang).
    reading(kernel("alice", "k-alice", str(3 * GiB)), check, deadline_s=0.5 if behave == "hang" else 15)


def test_a_prometheus_that_is_down_is_one_sentence() -> None:
    async def check() -> None:
        reader = PrometheusReader(f"http://127.0.0.1:{free_port()}", deadline_s=0.5)
        await reader.read()
        assert reader.problem is not None and reader.problem.startswith(f"Prometheus at {reader.url} cannot be read")
        assert reader.rows == [] and reader.stats is not None

    asyncio.run(asyncio.wait_for(check(), 20))


NOW = 1_763_740_800.0


def body(kernel_id: str) -> dict[str, Any]:
    from test_metrics import FIGURES, whole

    figures = json.loads(json.dumps(FIGURES))
    figures["kernels"][0]["id"] = kernel_id
    return whole(figures)


def test_the_metrics_and_the_json_are_built_once_per_poll_never_per_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """A request sends what the last poll built: rows changed since (without a poll) are not what it sends."""

    hub_port, service_port = free_port(), free_port()
    # The hub's API on a thread of its own: HubAuth may ask it with a blocking request from the service's loop.
    hub_loop = asyncio.new_event_loop()
    started = threading.Event()

    def hub() -> None:
        asyncio.set_event_loop(hub_loop)
        web.Application([(r"/hub/api/user", TokenOwner)]).listen(hub_port, "127.0.0.1")
        hub_loop.call_soon(started.set)
        hub_loop.run_forever()

    thread = threading.Thread(target=hub, daemon=True)
    thread.start()
    assert started.wait(10)

    async def go() -> None:
        monkeypatch.setenv("JUPYTERHUB_API_URL", f"http://127.0.0.1:{hub_port}/hub/api")
        monkeypatch.setenv("JUPYTERHUB_API_TOKEN", ADMIN_TOKEN)
        poller = Poller(f"http://127.0.0.1:{hub_port}/hub/api", "http://127.0.0.1:1", ADMIN_TOKEN)
        service = make_app(poller, "/services/gpumem/").listen(service_port, "127.0.0.1")
        client = AsyncHTTPClient(force_instance=True)

        async def served() -> list[str]:
            found = []
            for path in ("metrics", "api/rows"):
                url = f"http://127.0.0.1:{service_port}/services/gpumem/{path}"
                response = await client.fetch(url, headers={"Authorization": f"token {ADMIN_TOKEN}"})
                found.append(response.body.decode())
            return found

        try:
            poller.rows, poller.t = rows_of_server("alice", "", body("k-first"), NOW), NOW
            assert poller.on_poll is not None
            poller.on_poll()  # what Poller.poll does at its end
            first = await served()
            assert all("k-first" in text for text in first)
            poller.rows = rows_of_server("alice", "", body("k-second"), NOW)  # no poll has ended since
            assert await served() == first
            poller.on_poll()
            assert all("k-second" in text and "k-first" not in text for text in await served())
        finally:
            client.close()
            service.stop()

    try:
        asyncio.run(asyncio.wait_for(go(), 30))
    finally:
        hub_loop.call_soon_threadsafe(hub_loop.stop)
        thread.join(10)


def test_a_server_whose_driver_does_not_answer_has_its_rows_say_since_when() -> None:
    since = time.time() - 90
    series = merged(
        kernel("alice", "k-alice", str(3 * GiB)),
        kernel("bob", "k-bob", str(GiB)),
        kernel("mallory", "k-mallory", str(GiB)),
        {"stalled_since": [({"user": "bob", "instance": "proxy:8000"}, str(since))]},
        {"stalled_since": [({"user": "mallory", "instance": "proxy:8000"}, "1e300")]},
    )

    async def check(reader: PrometheusReader, _: Stand) -> None:
        await reader.read()
        rows = {r.user: r for r in reader.rows}
        assert rows["alice"].driver_stalled_since is None and rows["alice"].problem is None
        assert rows["bob"].driver_stalled_since == pytest.approx(since) and rows["bob"].used_bytes == GiB
        assert (
            rows["mallory"].problem == "its figures in Prometheus are not valid: its stalled_since sample is not a time"
        )

    reading(series, check)
