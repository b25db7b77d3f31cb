"""The service process: polls every running server's ``/api/gpumem/v1`` through the hub's proxy, and
serves the admin page and the aggregated ``/metrics`` under its prefix.

Run by JupyterHub as a managed service; it reads JupyterHub's service environment
(``JUPYTERHUB_API_TOKEN``, ``JUPYTERHUB_API_URL``, ``JUPYTERHUB_SERVICE_URL``,
``JUPYTERHUB_SERVICE_PREFIX``) and ``JUPYTER_GPUMEM_HUB_PROXY_URL``: the proxy's address as this service
reaches it (default ``JUPYTERHUB_PUBLIC_URL``, else ``http://127.0.0.1:8000``).
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict
from functools import cache
from html import escape
from pathlib import Path
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

from jupyter_gpumem import i18n, values
from jupyter_gpumem.hub import page_words, report
from jupyter_gpumem.hub.language import choose, tag
from jupyter_gpumem.hub.poll import Poller, write_targets
from jupyter_gpumem.hub.prometheus_reader import MAX_NAME, PrometheusReader, Unusable
from jupyter_gpumem.hub.rows import Row
from jupyter_gpumem.hub.summary import summary, texts
from jupyter_gpumem.i18n import ENGLISH
from jupyter_gpumem.words import wire

log = logging.getLogger("jupyter_gpumem.hub")

# Admins have ``admin-ui``; a Prometheus token may instead carry ``read:metrics``.
PAGE_SCOPES = {"admin-ui"}
METRICS_SCOPES = {"admin-ui", "read:metrics"}

SERVER = ("user", "server")
KERNEL = (*SERVER, "kernel_id")
KERNEL_GPU = (*KERNEL, "gpu_uuid", "gpu_index")


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
    "jupyter_gpumem_hub_user_group_info": (
        "1 for each JupyterHub group a user with a running server is in",
        ("user", "group"),
    ),
}
# Reading from Prometheus, the service's /metrics has only what Prometheus cannot get from the servers themselves.
MEMBERSHIP = ("jupyter_gpumem_hub_user_group_info",)


def families(rows: list[Row], t: float | None, groups: Mapping[str, Iterable[str]] | None = None) -> list[Metric]:
    """The rows of one poll, and each user's groups (report-rules.yml's per-group series), as prometheus_client's
    families; a figure that is not known has no sample."""
    built = {name: GaugeMetricFamily(name, help_text, labels=labels) for name, (help_text, labels) in FAMILIES.items()}

    def add(name: str, labels: tuple[Any, ...], value: float | None) -> None:
        if value is not None:
            built[name].add_metric([str(v) for v in labels], float(value))

    add("jupyter_gpumem_hub_read_timestamp_seconds", (), t)
    servers: dict[tuple[str, str], bool] = {}
    seen: set[tuple[str, str, str]] = set()
    for r in rows:
        servers[(r.user, r.server)] = servers.get((r.user, r.server), True) and r.problem is None
        if r.kernel_id is None or r.stale_since is not None:  # a server not answering: its last figures, unsampled
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
    for user, names in sorted((groups or {}).items()):
        for group in sorted(set(names)):
            if _label(user) and _label(group):  # the hub's names; bounded and printable, as any label read
                add("jupyter_gpumem_hub_user_group_info", (user, group), 1)
    return list(built.values())


def _label(text: str) -> bool:
    return 0 < len(text) <= MAX_NAME and text.isprintable()


class _Poll(Collector):
    def __init__(self, found: list[Metric]):
        self._families = found

    def collect(self) -> Iterator[Metric]:
        return iter(self._families)


def render_metrics(
    rows: list[Row], t: float | None, groups: Mapping[str, Iterable[str]] | None = None, only: Iterable[str] = ()
) -> bytes:
    """The exposition of one poll, through a registry of its own (the service has no process metrics to add);
    ``only``: those families alone."""
    found = families(rows, t, groups)
    keep = set(only)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Poll([f for f in found if f.name in keep] if keep else found))
    return generate_latest(registry)


PAGE_TEMPLATE = (Path(__file__).parent / "page.html").read_text(encoding="utf-8")


# A message of the page's own text, a {name} in it a slot its script fills (page_words.slots).
PAGE_MESSAGE = re.compile(r"\{\{((?:[^{}]|\{\w+\})+)\}\}")


@cache
def page(language: str) -> bytes:
    """The admin page in ``language`` ("en", "ja_JP", "zh_CN"; ``language.choose`` of the request's header): its
    own words and the table's header from page_words, English for anything a catalogue leaves untranslated. The
    rest (cells, cards, the state line) comes worded in the JSON it asks for in its language (``render_rows``)."""
    words = page_words.Words(language)
    html = PAGE_MESSAGE.sub(
        lambda m: tag(language) if m.group(1) == "lang" else page_words.slots(words.template(m.group(1))), PAGE_TEMPLATE
    )
    return html.replace("<!--COLUMNS-->", page_words.header(words)).encode()


Source = Poller | PrometheusReader


def render_rows(poller: Source, words: page_words.Words | None = None) -> bytes:
    """The page's JSON: the poll, the summary, every row, and where they come from (with Prometheus, the
    sentence the page shows while it cannot be read); beside them, what the page shows, worded in ``words``'
    language and zone (None: English, this machine's): each row's cells, the summary's cards, the state line."""
    words = words or page_words.Words(ENGLISH)
    prometheus = poller.url if isinstance(poller, PrometheusReader) else None
    problem = poller.problem if isinstance(poller, PrometheusReader) else None
    rows = []
    for r in poller.rows:
        text = texts(r)
        raw = {f: getattr(r, f) for f in Row.__dataclass_fields__}
        rows.append({**raw, "problem_said": wire(r.problem), **text, "shown": page_words.shown_row(words, r, text)})
    told = summary(poller.rows, poller.gpus)
    shown = page_words.state(words, poller.t, poller.interval_s, poller.stats, prometheus is not None, problem)
    return json.dumps(
        {
            "t": poller.t,
            "source": {"prometheus": prometheus, "problem": problem, "problem_said": wire(problem)},
            "interval_s": poller.interval_s,
            "poll": None if poller.stats is None else asdict(poller.stats),
            "summary": told,
            "rows": rows,
            "language": words.language,
            "state": shown,
            "cards": page_words.cards(words, told),
        },
        separators=(",", ":"),
        allow_nan=False,  # NaN is not JSON: fail, never emit it
    ).encode()


class Views:
    """The metrics and the JSON of the latest poll, built once per poll: a request only sends bytes."""

    def __init__(self, poller: Source, groups: Callable[[], Mapping[str, Iterable[str]]] | None = None):
        self.poller = poller
        # Each user's groups: the poller's own list of the hub, or (reading from Prometheus) the one main() keeps.
        self.groups = groups or (lambda: poller.groups if isinstance(poller, Poller) else {})
        self.metrics = render_metrics([], None, only=MEMBERSHIP if isinstance(poller, PrometheusReader) else ())
        self.json = render_rows(poller)
        self.worded: dict[tuple[str, str | None], bytes] = {}  # the latest poll's, per language and zone asked
        poller.on_poll = self.build

    def json_in(self, language: str, offset_min: str | None) -> bytes:
        """The latest poll's JSON worded in ``language`` at the browser's UTC offset, built on the first ask after
        each poll; a few are kept (three languages, a zone or two: a hub's admins)."""
        key = (language, offset_min if page_words.zone_of(offset_min) else None)
        if key in self.worded:
            return self.worded[key]
        body = render_rows(self.poller, page_words.Words(language, page_words.zone_of(offset_min)))
        if len(self.worded) < 8:
            self.worded[key] = body
        return body

    def build(self) -> None:
        groups = self.groups()
        if isinstance(self.poller, PrometheusReader):
            self.metrics = render_metrics([], None, groups, only=MEMBERSHIP)
        else:
            self.metrics = render_metrics(self.poller.rows, self.poller.t, groups)
        self.json = render_rows(self.poller)
        self.worded = {}


class _Base(HubOAuthenticated, web.RequestHandler):  # type: ignore[misc]  # jupyterhub has no types
    def initialize(self, views: Views) -> None:
        self.views = views


# Where the page's XSRF token goes: the content of its <meta name="xsrf-token">, empty in page.html.
XSRF_SLOT = b'<meta name="xsrf-token" content="">'


def with_xsrf(html: bytes, token: str | bytes) -> bytes:
    """The page with the request's XSRF token in its ``<meta name="xsrf-token">`` (escaped, although JupyterHub's
    token is URL-safe base64), which its script sends as ``X-XSRFToken`` on every request it makes."""
    text = token.decode("ascii", "replace") if isinstance(token, bytes) else token
    return html.replace(XSRF_SLOT, b'<meta name="xsrf-token" content="%s">' % escape(text, quote=True).encode(), 1)


class PageHandler(_Base):
    hub_scopes = PAGE_SCOPES

    @web.authenticated
    def get(self) -> None:
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.set_header("Vary", "Accept-Language")  # a cache keeps a page per language
        html = page(choose(self.request.headers.get("Accept-Language")))
        # JupyterHub (5 and 6) accepts the page's cookie-authenticated fetch() only with the XSRF token
        # (jupyterhub/_xsrf_utils.py: _needs_check_xsrf, check_xsrf_cookie); HubOAuth's xsrf_token is the _xsrf
        # cookie's value, set on this navigation when missing or stale (get_xsrf_token), so the two match. A
        # request that brought its own API token in a header needs none (its fetches bring it too; the hub skips
        # the check): it gets the page as every such client does, and no _xsrf cookie. A ?token= in the URL is
        # kept in the OAuth cookie (HubAuth._persist_url_token_if_set): the page's fetches are then by cookie.
        if not getattr(self, "_token_authenticated", False) or self.get_argument("token", ""):
            self.set_header("Cache-Control", "no-store")  # the page now holds this login's token: no cache keeps it
            html = with_xsrf(html, self.xsrf_token)
        self.finish(html)


class MetricsHandler(_Base):
    hub_scopes = METRICS_SCOPES

    @web.authenticated
    def get(self) -> None:
        self.set_header("Content-Type", CONTENT_TYPE_LATEST)
        self.finish(self.views.metrics)


class JsonHandler(_Base):
    hub_scopes = PAGE_SCOPES

    def get_login_url(self) -> str:
        """The page's fetch() without a valid login (or XSRF token) gets 403, and the page asks for a reload: sent
        to the hub's OAuth, it would come back to this URL with the same token and go round until the browser
        stops it (ERR_TOO_MANY_REDIRECTS). A navigation to the URL is sent through the OAuth as the page is."""
        if self.request.headers.get("Sec-Fetch-Mode", "navigate") != "navigate":
            raise web.HTTPError(403)
        return str(super().get_login_url())

    @web.authenticated
    def get(self) -> None:
        self.set_header("Content-Type", "application/json")
        if "language" not in self.request.arguments:
            self.finish(self.views.json)  # English, this machine's times: what any other client reads
            return
        # The page asks in its own language (its <html lang>) and its browser's UTC offset: whatever these say, the
        # language is one with a catalogue or English, and the zone a real one or this machine's.
        language = i18n.locale_for(self.get_argument("language")[:35])
        self.finish(self.views.json_in(language, self.get_argument("utc_offset_min", None)))


class ReportHandler(_Base):
    """``report`` (the page), ``report.json`` and ``report.csv``: the report of the range and group the query asks
    for (report.py), made from Prometheus when asked, within the reporter's deadline."""

    hub_scopes = PAGE_SCOPES

    def initialize(self, views: Views, reporter: report.Reporter | None = None, kind: str = "html") -> None:
        super().initialize(views)
        self.reporter, self.kind = reporter, kind

    @web.authenticated
    async def get(self) -> None:
        language = choose(self.request.headers.get("Accept-Language"))
        say = report.Words(language)
        self.set_header("Vary", "Accept-Language")
        self.set_header("Cache-Control", "no-store")
        args = {k: self.get_argument(k, "") for k in ("days", "from", "to", "group") if self.get_argument(k, "")}
        group = args.get("group") or None
        made: report.Report | None = None
        chosen: report.Range | None = None
        problem: str | None = None
        try:
            chosen = report.parse_range(args, time.time())
            if self.reporter is None:
                problem, status = say(report.NO_PROMETHEUS), 503
            else:
                made, status = await self.reporter.report(chosen, group), 200
        except report.Refused as refused:
            problem, status = say(refused.message, **refused.values), 400
        except Unusable as error:
            url = self.reporter.url if self.reporter is not None else ""
            problem, status = report.problem_said(url, error, say), 503
        self.set_status(status)
        if self.kind == "csv":
            if made is None:
                self.set_header("Content-Type", "text/plain; charset=utf-8")
                self.finish(problem or "")
                return
            self.set_header("Content-Type", "text/csv; charset=utf-8")
            name = "gpumem-report-" + "-".join(made.range.query().values()) + ".csv"
            self.set_header("Content-Disposition", f'attachment; filename="{name}"')
            self.finish(report.csv_text(made))
        elif self.kind == "json":
            self.set_header("Content-Type", "application/json")
            found = report.as_json(made, say) if made is not None else {"problem": problem}
            self.finish(json.dumps(found, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode())
        else:
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.finish(report.html(made, chosen, group, language, problem))


def make_app(
    poller: Source,
    prefix: str,
    groups: Callable[[], Mapping[str, Iterable[str]]] | None = None,
    reporter: report.Reporter | None = None,
) -> web.Application:
    """The page, its JSON, the report (from ``reporter``'s Prometheus) and ``/metrics``. Reading from Prometheus,
    ``/metrics`` has only each user's groups (``groups``, from the hub): every other figure is already in Prometheus,
    from the servers themselves; served again they would be stored twice, a scrape behind, and any sum over both
    would count each twice."""
    prefix = "/" + prefix.strip("/") + "/"
    views = {"views": Views(poller, groups)}
    reports = {**views, "reporter": reporter}
    return web.Application(
        [
            (prefix, PageHandler, views),
            (prefix + "metrics", MetricsHandler, views),
            (prefix + "api/rows", JsonHandler, views),
            (prefix + "report", ReportHandler, {**reports, "kind": "html"}),
            (prefix + "report.json", ReportHandler, {**reports, "kind": "json"}),
            (prefix + "report.csv", ReportHandler, {**reports, "kind": "csv"}),
            # The package's plotly.js chunk, which the report's chart loads (never a CDN).
            (prefix + "static/(.*)", web.StaticFileHandler, {"path": str(report.STATIC)}),
            (prefix + "oauth_callback", HubOAuthCallbackHandler),
        ],
        cookie_secret=os.urandom(32),
    )


def _setting(name: str, default: float, most: float = 1e9) -> float:
    """A positive number from the environment; one that is not (NaN, inf, 0, "lots") is said, and the default used."""
    text = os.environ.get(f"JUPYTER_GPUMEM_HUB_{name}", "")
    try:
        return values.number(text, 1e-3, most) if text else default
    except values.Refused as refused:
        log.warning("JUPYTER_GPUMEM_HUB_%s=%r: %s; using %g", name, values.shown(text), refused, default)
        return default


async def main() -> None:
    logging.basicConfig(level=logging.INFO)
    logging.getLogger("tornado.access").setLevel(logging.WARNING)  # a line per request, thousands per poll
    env = os.environ
    proxy = env.get("JUPYTER_GPUMEM_HUB_PROXY_URL") or env.get("JUPYTERHUB_PUBLIC_URL") or "http://127.0.0.1:8000"
    poller = Poller(
        env["JUPYTERHUB_API_URL"],
        proxy,
        env["JUPYTERHUB_API_TOKEN"],
        interval_s=_setting("INTERVAL_S", 5.0),
        deadline_s=_setting("DEADLINE_S", 3.0),
        concurrency=int(_setting("CONCURRENCY", 64)),
        max_body_bytes=int(_setting("MAX_BODY_BYTES", 4 * 2**20)),
        max_requests_per_s=_setting("MAX_REQUESTS_PER_S", 200.0),
        file_sd=Path(env["JUPYTER_GPUMEM_HUB_FILE_SD"]) if env.get("JUPYTER_GPUMEM_HUB_FILE_SD") else None,
    )
    prefix = env.get("JUPYTERHUB_SERVICE_PREFIX", "/services/gpumem/")
    bind = urlparse(env.get("JUPYTERHUB_SERVICE_URL", "http://127.0.0.1:10101"))
    prometheus = env.get("JUPYTER_GPUMEM_HUB_PROMETHEUS_URL")
    reports_from = env.get("JUPYTER_GPUMEM_HUB_REPORT_PROMETHEUS_URL") or prometheus
    reporter = (
        report.Reporter(
            reports_from,
            deadline_s=_setting("REPORT_DEADLINE_S", 10.0),
            max_body_bytes=int(_setting("PROMETHEUS_MAX_BYTES", 64 * 2**20)),
        )
        if reports_from
        else None
    )
    if reporter is not None:
        reporter.start()  # the standard reports kept ready
    if not prometheus:
        make_app(poller, prefix, reporter=reporter).listen(bind.port or 80, bind.hostname or "127.0.0.1")
        log.info("GPU memory by user at %s, reading servers through %s", quote(prefix), proxy)
        await poller.run()
        return
    file_sd = poller.file_sd

    async def targets() -> None:  # the hub's list only (a request per 200 users), never the servers
        listed = await poller.servers()  # also each user's groups, for /metrics
        if file_sd is not None:
            write_targets(file_sd, poller.proxy_url, listed)

    reader = PrometheusReader(
        prometheus,
        interval_s=_setting("INTERVAL_S", 5.0),
        deadline_s=_setting("DEADLINE_S", 3.0),
        max_body_bytes=int(_setting("PROMETHEUS_MAX_BYTES", 64 * 2**20)),
        targets=targets,
    )
    app = make_app(reader, prefix, lambda: poller.groups, reporter)
    app.listen(bind.port or 80, bind.hostname or "127.0.0.1")
    log.info("GPU memory by user at %s, read from Prometheus at %s", quote(prefix), prometheus)
    await reader.run()
