"""The fleet's report (docs/hub.md, "The report"): per user and per JupyterHub group, over the last day, 7 days,
30 days or two dates, the GPU memory held (GiB-hours), of it in idle kernels, the peak, the hours over budget and
the GPU-hours, from report-rules.yml's series in Prometheus; a chart of the top holders; a CSV for chargeback.

Each figure is one instant query over the recorded series: the whole hours of the range from the hourly series (a
month is 720 samples a series), the partial hours at its ends from the 5-minute ones (``sum_over_time`` or
``max_over_time`` of each piece, at its own time with ``@``), so a figure is exact to the 5-minute step, as the
5-minute series alone would give it. Which hours the hourly series hold, the rules' clock says (one query before
the figures'). The figures' queries run all at once within the deadline, then one range query for the chart;
Prometheus's answers are read as the page's are (prometheus_reader.py: a deadline, a size cap, the shape checked)
and each label and value checked before it counts. Figures stay numbers (``Report``) until the edge:
``html``, ``as_json`` and ``csv_text`` word and format them, in the page's language, with units.py. A figure
Prometheus has no series for is None, shown "N/A", never 0.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import logging
import math
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from tornado.httpclient import AsyncHTTPClient

from jupyter_gpumem import i18n
from jupyter_gpumem.hub.language import tag
from jupyter_gpumem.hub.prometheus_reader import MAX_NAME, Unusable, answer_of, samples
from jupyter_gpumem.units import GiB, format_duration, format_gib_or_mib, format_tenth, round_half_up

log = logging.getLogger("jupyter_gpumem.hub")


def _(message: str) -> str:
    """Marks a message for ``jlpm i18n:extract``; ``Words`` looks it up in a language."""
    return message


STEP_S = 300  # report-rules.yml's interval: each recorded sample stands for the 5 minutes before it
HOUR_S = 3600  # its hourly group's interval
HOUR_LAG_S = 300  # an hourly sample at T holds the 5-minute samples of (T - HOUR_S - HOUR_LAG_S, T - HOUR_LAG_S]
HOURS_PER_STEP = STEP_S / 3600
MAX_DAYS = 400  # beyond any retention worth a report; a range is refused past it
TOP = 10  # users in the chart
MAX_SERIES = 200_000  # per answer: the report stays bounded whatever Prometheus holds
MOST = 2.0**62  # no figure of a fleet comes near: a sum or a peak beyond it is not one

# A figure: its recorded series (``user:…`` and ``group:…``), how it is taken over the range, and its scale.
FIGURES: dict[str, tuple[str, str, float]] = {
    "memory_gib_hours": ("jupyter_gpumem_kernel_memory_used_bytes:avg5m", "sum", HOURS_PER_STEP / GiB),
    "idle_gib_hours": ("jupyter_gpumem_kernel_idle_memory_used_bytes:avg5m", "sum", HOURS_PER_STEP / GiB),
    "peak_bytes": ("jupyter_gpumem_kernel_memory_used_bytes:max5m", "max", 1.0),
    "over_budget_hours": ("jupyter_gpumem_kernel_over_budget:avg5m", "sum", HOURS_PER_STEP),
    "gpu_hours": ("jupyter_gpumem_gpus_held:avg5m", "sum", HOURS_PER_STEP),
}
MEMBERSHIP = "user_group:jupyter_gpumem_hub_user_group_info:max5m"
# Each 5-minute series' hourly roll-up (its :avg5m samples added, its :max5m ones' most), and the hours evaluated.
HOURLY = {
    **{series: series.replace(":avg5m", ":sum1h").replace(":max5m", ":max1h") for series, _, _ in FIGURES.values()},
    MEMBERSHIP: MEMBERSHIP.replace(":max5m", ":max1h"),
}
CLOCK = "jupyter_gpumem_report_hour"
CSV_COLUMNS = ("user", "groups", *FIGURES)
# The chart's step: the first of these that gives at most CHART_POINTS points over the range.
CHART_STEPS_S = (300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400)
CHART_POINTS = 300
CHOICES_DAYS = (1, 7, 30)
KEPT = 16  # reports kept at once (a minute each)


class Refused(ValueError):
    """A range or group the report cannot be made for: its text is an English message with ``values``, worded in
    the page's language where it is shown."""

    def __init__(self, message: str, **values: object):
        super().__init__(message.format(**values))
        self.message, self.values = message, values


@dataclass(frozen=True)
class Range:
    """From ``start`` to ``end`` (seconds since the epoch): the last ``days`` days, or from the first date's
    midnight to the last date's end (UTC, ``first`` and ``last`` as YYYY-MM-DD)."""

    start: float
    end: float
    days: int | None = None
    first: str | None = None
    last: str | None = None

    def query(self) -> dict[str, str]:
        """The range as the page's and the CSV's URL say it."""
        if self.days is not None:
            return {"days": str(self.days)}
        return {"from": self.first or "", "to": self.last or ""}


def _date(text: str) -> datetime:
    """A date as YYYY-MM-DD exactly (as the page's date input sends it), not after the year 9998: the day after it
    must still be a date."""
    try:
        if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text) or text >= "9999":
            raise ValueError(text)
        return datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise Refused(_("{value} is not a date (YYYY-MM-DD)."), value=text[:40]) from None


def parse_range(args: Mapping[str, str], now: float) -> Range:
    """The range a request asks for: ``days=N`` (1 to MAX_DAYS, ending now, to the minute), or ``from`` and ``to``
    (dates, both included, UTC; a last date of today ends now); nothing: the last 7 days. ``Refused`` otherwise."""
    now = math.floor(now / 60) * 60  # a minute's requests share one report (Reporter's cache)
    first, last = args.get("from", "").strip(), args.get("to", "").strip()
    if first or last:
        start, end = _date(first or last), _date(last or first) + timedelta(days=1)
        if start >= end:
            raise Refused(_("The first date, {first}, is after the last one, {last}."), first=first, last=last)
        if end - start > timedelta(days=MAX_DAYS):
            raise Refused(_("A report covers at most {most} days."), most=MAX_DAYS)
        if start.timestamp() >= now:
            raise Refused(_("The range starts after now."))
        return Range(start.timestamp(), min(end.timestamp(), now), None, first or last, last or first)
    text = args.get("days", "7").strip()
    if not (re.fullmatch(r"[0-9]{1,4}", text) and 1 <= int(text) <= MAX_DAYS):  # ASCII digits: "²" is a digit too
        raise Refused(_("{value} is not a number of days from 1 to {most}."), value=text[:40], most=MAX_DAYS)
    return Range(now - int(text) * 86400, now, int(text))


@dataclass(frozen=True)
class Line:
    """A user (``members``: their groups) or a group (``members``: its users) and their figures (None: N/A)."""

    name: str
    members: tuple[str, ...]
    figures: dict[str, float | None]


@dataclass(frozen=True)
class Report:
    range: Range
    group: str | None  # the filter: only this group's members, and this group
    users: list[Line]
    groups: list[Line]
    known_groups: list[str]  # every group in the range, for the filter
    chart_step_s: int
    chart_times: list[float]
    chart: list[tuple[str, list[float | None]]]  # (user, GiB held at each time) for the top holders
    made: float = field(default_factory=time.time)


def _label(labels: dict[str, str], key: str) -> str | None:
    value = labels.get(key, "")
    return value if 0 < len(value) <= MAX_NAME and value.isprintable() else None


def _number(text: object) -> float | None:
    try:
        value = float(text) if isinstance(text, str) else math.nan
    except ValueError:
        return None
    return value if math.isfinite(value) and 0 <= value < MOST else None


def _regex(names: list[str]) -> str:
    """A PromQL string holding an RE2 alternation that matches exactly ``names``."""
    special = set("\\.+*?()|[]{}^$")
    alternation = "|".join("".join("\\" + c if c in special else c for c in name) for name in names)
    return json.dumps(alternation)  # PromQL's double-quoted strings escape as JSON's do


@dataclass(frozen=True)
class Pieces:
    """How a range ``(start, end]`` (milliseconds) is read: ``hours``, runs of consecutive hourly samples (the first's
    and the last's times), and ``steps``, the rest of the range from the 5-minute series, as ``(after, until]``."""

    hours: list[tuple[int, int]]
    steps: list[tuple[int, int]]


def pieces(start_ms: int, end_ms: int, clock_ms: list[int]) -> Pieces:
    """Every hour the clock says was evaluated whose 5-minute samples lie in the range, the first ones first, none
    overlapping another (a backfill evaluated at another offset than Prometheus: its hours are read from the 5-minute
    series); what they leave, 5-minute pieces."""
    hour, lag = HOUR_S * 1000, HOUR_LAG_S * 1000
    hours: list[tuple[int, int]] = []
    steps: list[tuple[int, int]] = []
    covered, previous = start_ms, None
    for t in sorted(set(clock_ms)):
        after, until = t - hour - lag, t - lag
        if after < covered or until > end_ms:
            previous = t  # a run read as one range must hold no sample it skips
            continue
        if after > covered:
            steps.append((covered, after))
        if hours and hours[-1][1] == previous == t - hour:
            hours[-1] = (hours[-1][0], t)
        else:
            hours.append((t, t))
        covered, previous = until, t
    if covered < end_ms:
        steps.append((covered, end_ms))
    return Pieces(hours, steps)


def _over(how: str, series: str, window_ms: int, until_ms: int) -> str:
    return f"{how}_over_time({series}[{max(1, window_ms)}ms] @ {until_ms / 1000:.3f})"


def expression(how: str, level: str, series: str, by: str, plan: Pieces) -> str:
    """One figure over the range, per ``by``: each piece's ``how`` over its samples (the hours' from ``HOURLY``),
    each piece's answer labelled apart so that ``or`` keeps them all, then ``how`` across the pieces."""
    hourly = f"{level}:{HOURLY[series]}" if level else HOURLY[series]
    # A run's samples, from its first (a millisecond before it holds none) to its last; a piece's samples in
    # (after, until] (Prometheus 2's ranges hold both ends: a millisecond less).
    terms = [_over(how, hourly, last - first + 1, last) for first, last in plan.hours]
    terms += [_over(how, f"{level}:{series}" if level else series, b - a - 1, b) for a, b in plan.steps]
    labelled = " or ".join(f'label_replace({e}, "piece", "{i}", "", "")' for i, e in enumerate(terms))
    return f"{how} by ({by}) ({labelled})"


@dataclass(frozen=True)
class Figures:
    """What Prometheus says of a range, every user and group (a report filters them)."""

    range: Range
    users: list[Line]
    groups: list[Line]
    known_groups: list[str]
    made: float


class Reporter:
    """Makes reports from the Prometheus at ``url``: each query within ``deadline_s``, an answer over
    ``max_body_bytes`` not read. What Prometheus says of a range is kept ``keep_s`` seconds (the rules record every
    5 minutes), a group's report made from it; ``run`` keeps the last day's, 7 days' and 30 days' ready (so a
    request gets them at once, at most ``keep_s`` old: the range they say ends then). Requests for one being made
    wait for it; a failure is not kept."""

    def __init__(self, url: str, deadline_s: float = 10.0, max_body_bytes: int = 64 * 2**20, keep_s: float = 300.0):
        self.url = url.rstrip("/")
        self.deadline_s, self.max_body_bytes, self.keep_s = deadline_s, max_body_bytes, keep_s
        self.client = AsyncHTTPClient(
            force_instance=True,
            max_clients=2 * len(FIGURES) + 4,
            max_body_size=max_body_bytes,
            max_buffer_size=max_body_bytes,
        )
        self._kept: dict[tuple[object, ...], tuple[float, asyncio.Future[Any]]] = {}

    async def _get(self, path: str, query: dict[str, str]) -> object:
        return await answer_of(
            self.client, f"{self.url}/api/v1/{path}?{urlencode(query)}", self.deadline_s, self.max_body_bytes
        )

    async def _vector(self, expr: str, at: float) -> list[tuple[dict[str, str], object]]:
        return samples(await self._get("query", {"query": expr, "time": f"{at:.3f}"}), MAX_SERIES)

    @staticmethod
    def _range_key(r: Range) -> tuple[object, ...]:
        return ("days", r.days) if r.days is not None else ("dates", r.start, r.end)

    async def _kept_or(self, key: tuple[object, ...], make: Callable[[], Awaitable[Any]]) -> Any:
        now = time.monotonic()
        for old in [k for k, (t, _) in self._kept.items() if now - t > self.keep_s]:
            del self._kept[old]
        if key not in self._kept:
            while len(self._kept) >= KEPT:  # the oldest first: memory stays bounded whatever ranges are asked
                del self._kept[next(iter(self._kept))]
            self._kept[key] = (now, asyncio.ensure_future(make()))
        made = self._kept[key][1]
        try:
            return await asyncio.shield(made)
        except Exception:
            if self._kept.get(key, (0, None))[1] is made:
                del self._kept[key]  # the next request asks again
            raise

    def _keep(self, key: tuple[object, ...], value: object) -> None:
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        done.set_result(value)
        self._kept[key] = (time.monotonic(), done)

    async def report(self, r: Range, group: str | None = None) -> Report:
        """The report of ``r`` (``Unusable``: Prometheus could not be read, its text says why)."""
        key = self._range_key(r)
        figures: Figures = await self._kept_or(("figures", *key), lambda: self._figures(r))
        made: Report = await self._kept_or(("report", group, *key, figures.made), lambda: self._report(figures, group))
        return made

    def start(self) -> None:
        """``run``, in the background of the running loop (kept here: the loop holds only a weak reference)."""
        self._running = asyncio.ensure_future(self.run())

    async def run(self) -> None:
        """Keeps the last day's, 7 days' and 30 days' reports (every group's) ready, never more than ``keep_s`` old."""
        while True:
            for days in CHOICES_DAYS:
                r = parse_range({"days": str(days)}, time.time())
                try:
                    key = ("figures", *self._range_key(r))
                    kept = self._kept.get(key)
                    if kept is None or not kept[1].done():
                        # None yet (the service just started), or a request's in the making: made once, shared
                        figures = await self._kept_or(key, partial(self._figures, r))
                    elif time.monotonic() - kept[0] < self.keep_s / 2:
                        figures = kept[1].result()  # a request's, just made
                    else:
                        figures = await self._figures(r)  # requests meanwhile get the kept one
                        self._keep(key, figures)
                    key = ("report", None, *self._range_key(r), figures.made)
                    self._keep(key, await self._report(figures, None))
                except Exception as error:  # Unusable, or a bug of ours: said, and tried again
                    log.warning("the %d-day report could not be made: %s", days, error)
            await asyncio.sleep(self.keep_s * 0.8)

    async def _clock(self, start_ms: int, end_ms: int) -> list[int]:
        """The times (ms) of the hourly samples whose hours may lie in the range."""
        last = end_ms + HOUR_LAG_S * 1000
        expr = f"{CLOCK}[{last - start_ms}ms]"
        answer = await self._get("query", {"query": expr, "time": f"{last / 1000:.3f}"})
        data = answer.get("data") if isinstance(answer, dict) and answer.get("status") == "success" else None
        result = data.get("result") if isinstance(data, dict) and data.get("resultType") == "matrix" else None
        if not isinstance(result, list):
            raise Unusable("it answered something that is not a query's result")
        times: list[int] = []
        for item in result[:4]:  # one series, a few where external labels tell Prometheus servers apart
            points = item.get("values") if isinstance(item, dict) else None
            for point in points[: 2 * MAX_DAYS * 24] if isinstance(points, list) else []:
                if isinstance(point, list) and len(point) == 2 and isinstance(point[0], int | float):
                    times.append(round(point[0] * 1000))
        return times

    async def _figures(self, r: Range) -> Figures:
        start_ms, end_ms = round(r.start * 1000), round(r.end * 1000)
        plan = pieces(start_ms, end_ms, await self._clock(start_ms, end_ms))
        exprs = {
            (level, name): expression(how, level, series, level, plan)
            for level in ("user", "group")
            for name, (series, how, _) in FIGURES.items()
        }
        exprs[("membership", "")] = expression("max", "", MEMBERSHIP, "user, group", plan)
        answers = dict(zip(exprs, await asyncio.gather(*(self._vector(e, r.end) for e in exprs.values())), strict=True))
        membership: dict[str, set[str]] = {}
        for labels, _value in answers[("membership", "")]:
            user, name = _label(labels, "user"), _label(labels, "group")
            if user is not None and name is not None:
                membership.setdefault(user, set()).add(name)
        found: dict[str, dict[str, dict[str, float | None]]] = {"user": {}, "group": {}}
        for (level, name), answer in answers.items():
            if level == "membership":
                continue
            scale = FIGURES[name][2]
            for labels, text in answer:
                who = _label(labels, level)
                value = _number(text)
                if who is not None:
                    found[level].setdefault(who, {})[name] = None if value is None else value * scale
        members: dict[str, set[str]] = {}
        for user, names in membership.items():
            for name in names:
                members.setdefault(name, set()).add(user)
        users = [
            Line(u, tuple(sorted(membership.get(u, ()))), {n: found["user"].get(u, {}).get(n) for n in FIGURES})
            for u in sorted(set(found["user"]) | set(membership))
        ]
        groups = [
            Line(g, tuple(sorted(members.get(g, ()))), {n: found["group"].get(g, {}).get(n) for n in FIGURES})
            for g in sorted(set(found["group"]) | set(members))
        ]
        return Figures(r, users, groups, sorted(set(members) | set(found["group"])), time.time())

    async def _report(self, figures: Figures, group: str | None) -> Report:
        """A group's report (None: everyone's) from what Prometheus said; its chart asked for here."""
        r = figures.range
        users = [u for u in figures.users if group is None or group in u.members]
        groups = [g for g in figures.groups if group is None or g.name == group]
        step = next((s for s in CHART_STEPS_S if (r.end - r.start) / s <= CHART_POINTS), CHART_STEPS_S[-1])
        top = sorted(
            (u for u in users if (u.figures["memory_gib_hours"] or 0) > 0),
            key=lambda u: (-(u.figures["memory_gib_hours"] or 0), u.name),
        )[:TOP]
        times, chart = await self._chart(r, step, [u.name for u in top])
        return Report(r, group, users, groups, figures.known_groups, step, times, chart, figures.made)

    async def _chart(
        self, r: Range, step: int, names: list[str]
    ) -> tuple[list[float], list[tuple[str, list[float | None]]]]:
        """Each top holder's GiB held, averaged over each ``step`` up to each time; None where there is no sample."""
        first = math.ceil((r.start + step) / step) * step
        times = [float(t) for t in range(first, int(r.end) + 1, step)]
        if not names or not times:
            return times, [(n, []) for n in names]
        series = f"user:{FIGURES['memory_gib_hours'][0]}"
        # The GiB held over each step (t - step, t]: its 5-minute samples added, over the step's 5 minutes (none held
        # where none). Prometheus 2's ranges hold both ends: less a millisecond, a sample counts in one step only.
        expr = f"sum_over_time({series}{{user=~{_regex(names)}}}[{step * 1000 - 1}ms]) / {step // STEP_S} / {GiB}"
        answer = await self._get(
            "query_range", {"query": expr, "start": str(first), "end": str(times[-1]), "step": str(step)}
        )
        data = answer.get("data") if isinstance(answer, dict) and answer.get("status") == "success" else None
        result = data.get("result") if isinstance(data, dict) and data.get("resultType") == "matrix" else None
        if not isinstance(result, list) or len(result) > len(names):
            raise Unusable("it answered something that is not a range query's result")
        at = {t: i for i, t in enumerate(times)}
        held: dict[str, list[float | None]] = {n: [None] * len(times) for n in names}
        for item in result:
            labels = item.get("metric") if isinstance(item, dict) else None
            points = item.get("values") if isinstance(item, dict) else None
            user = _label(labels, "user") if isinstance(labels, dict) else None
            if user not in held or not isinstance(points, list):
                continue
            for point in points[: len(times)]:
                if isinstance(point, list) and len(point) == 2 and isinstance(point[0], int | float):
                    i = at.get(float(point[0]))
                    if i is not None:
                        held[user][i] = _number(point[1])
        return times, [(n, held[n]) for n in names]


# The page's words (report.html's {{…}} and what ``html`` writes), in the jupyter_gpumem domain.
PAGE_WORDS = (
    _("GPU memory report"),
    _("Last day"),
    _("Last 7 days"),
    _("Last 30 days"),
    _("From"),
    _("To"),
    _("Show"),
    _("Group"),
    _("All groups"),
    _("Download CSV"),
    _("Users"),
    _("Groups"),
    _("Top holders"),
    _("Live page"),
    _("Click a column to sort."),
)
COLUMNS = {
    "user": (_("User"), _("Groups")),
    "group": (_("Group"), _("Members")),
}
FIGURE_WORDS = {
    "memory_gib_hours": _("Memory (GiB-hours)"),
    "idle_gib_hours": _("Idle (GiB-hours)"),
    "peak_bytes": _("Peak"),
    "over_budget_hours": _("Over budget (hours)"),
    "gpu_hours": _("GPU-hours"),
}
GROUP_OVER_BUDGET = _("Over budget (member-hours)")


class Words:
    """The report's words in a language ("ja_JP"): its catalogue's, English for what it leaves untranslated."""

    def __init__(self, language: str):
        self.language = language
        self._translation = i18n.translation(language)

    def __call__(self, message: str, **values: object) -> str:
        return self._translation.gettext(message).format(**values)


def _clock(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M")


def range_said(r: Range, say: Words) -> str:
    if r.days in CHOICES_DAYS:
        head = say({1: _("Last day"), 7: _("Last 7 days"), 30: _("Last 30 days")}[r.days])
    elif r.days is not None:
        head = say(_("Last {days} days"), days=r.days)
    else:
        head = say(_("{first} to {last}"), first=r.first, last=r.last)
    return say(_("{range}: {start} to {end} UTC"), range=head, start=_clock(r.start), end=_clock(r.end))


def figure_text(name: str, value: float | None) -> str:
    """A figure as the page shows it: bytes by units.py, hours and GiB-hours to a tenth; "N/A" when not known."""
    if value is None:
        return "N/A"
    return format_gib_or_mib(value) if name == "peak_bytes" else format_tenth(value)


def _columns(level: str, say: Words) -> list[tuple[str, str, bool]]:
    """(key, header, numeric) of a table's columns."""
    name, members = COLUMNS[level]
    figures = [
        (n, say(GROUP_OVER_BUDGET if level == "group" and n == "over_budget_hours" else w), True)
        for n, w in FIGURE_WORDS.items()
    ]
    # A group's members are a count (numeric: sorted as a number); a user's are their groups' names.
    return [("name", say(name), False), ("members", say(members), level == "group"), *figures]


def _cells(line: Line, level: str) -> dict[str, tuple[str, float | str | None]]:
    """Each cell's text and the value it sorts by."""
    members = ", ".join(line.members) if level == "user" else str(len(line.members))
    cells: dict[str, tuple[str, float | str | None]] = {
        "name": (line.name, line.name),
        "members": (members, members if level == "user" else len(line.members)),
    }
    cells.update({n: (figure_text(n, v), v) for n, v in line.figures.items()})
    return cells


def as_json(report: Report, say: Words) -> dict[str, Any]:
    """The report as report.json carries it: figures as numbers (None: N/A), and as the page words them."""

    def lines(found: list[Line], level: str) -> list[dict[str, Any]]:
        members = "groups" if level == "user" else "members"
        return [
            {
                "name": line.name,
                members: list(line.members),
                "figures": line.figures,
                "texts": {k: t for k, (t, _) in _cells(line, level).items()},
            }
            for line in found
        ]

    return {
        "range": {
            "start": report.range.start,
            "end": report.range.end,
            **report.range.query(),
            "said": range_said(report.range, say),
        },
        "group": report.group,
        "known_groups": report.known_groups,
        "columns": {level: [[k, h, n] for k, h, n in _columns(level, say)] for level in ("user", "group")},
        "users": lines(report.users, "user"),
        "groups": lines(report.groups, "group"),
        "chart": chart_data(report, say),
        "made": report.made,
    }


def chart_data(report: Report, say: Words) -> dict[str, Any]:
    """What the page's plotly chart draws: the times (UTC), each top holder's GiB held, and its titles."""
    return {
        "times": [datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S") for t in report.chart_times],
        "series": [
            # plotly reads a trace's name as HTML (its legend and hover render <a>, <b>, <br>): a user's name is text.
            {"name": escape(user, quote=False), "gib": [None if v is None else round(v, 4) for v in held]}
            for user, held in report.chart
        ],
        "title": say(
            _("GPU memory held by the top holders, averaged over {step}"),
            count=len(report.chart),
            step=format_duration(report.chart_step_s),
        ),
        "y_title": say(_("GiB held")),
        "x_title": say(_("Time (UTC)")),
    }


_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def _csv_safe(text: str) -> str:
    """A name as a spreadsheet reads it as text, never as a formula (OWASP's CSV injection: a quote before it)."""
    return "'" + text if text.startswith(_FORMULA) else text


def csv_text(report: Report) -> str:
    """One row per user: ``CSV_COLUMNS``; GiB-hours and hours to 4 decimals, the peak in bytes, "N/A" where
    Prometheus has no figure; a user's groups separated by ";"."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for line in report.users:
        row: list[str] = [_csv_safe(line.name), ";".join(_csv_safe(g) for g in line.members)]
        for name, value in line.figures.items():
            if value is None:
                row.append("N/A")
            else:
                row.append(str(round_half_up(value)) if name == "peak_bytes" else f"{value:.4f}")
        writer.writerow(row)
    return out.getvalue()


TEMPLATE = (Path(__file__).parent / "report.html").read_text(encoding="utf-8")
# The plotly.js chunk the package's static folder has (jlpm build:inline; the hub service serves it as static/).
STATIC = Path(__file__).parents[1] / "static"


def plotly_module() -> str | None:
    found = sorted(STATIC.glob("plotly-basic.min-*.js"))
    return found[0].name if found else None


def _table(found: list[Line], level: str, say: Words) -> str:
    columns = _columns(level, say)
    head = "".join(
        f'<th data-key="{k}"{" data-n" if n else ""} aria-sort="{"descending" if k == "memory_gib_hours" else "none"}">'
        f"{escape(h)}</th>"
        for k, h, n in columns
    )
    rows = []
    # As the page sorts: by memory held, largest first, N/A last (a 0 is a figure: before N/A).
    by_memory = sorted(
        found, key=lambda x: (x.figures["memory_gib_hours"] is None, -(x.figures["memory_gib_hours"] or 0), x.name)
    )
    for line in by_memory:
        cells = _cells(line, level)
        tds = []
        for k, _h, numeric in columns:
            text, value = cells[k]
            sort = "" if value is None else f' data-v="{escape(str(value), quote=True)}"'
            tds.append(
                f'<td{" class=n" if numeric else ""}{sort} title="{escape(text, quote=True)}">{escape(text)}</td>'
            )
        rows.append("<tr>" + "".join(tds) + "</tr>")
    return f'<table data-level="{level}"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _script_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False).replace("</", "<\\/")


def html(report: Report | None, r: Range | None, group: str | None, language: str, problem: str | None) -> bytes:
    """The report page in ``language``: the form (range and group), then the sentence or the tables and the chart,
    every word and figure written here; the page's script only sorts the tables and draws the chart."""
    say = Words(language)
    page = TEMPLATE.replace("{{lang}}", tag(language))
    for message in PAGE_WORDS:
        page = page.replace("{{" + message + "}}", escape(say(message)))
    days = r.days if r is not None else None
    options = [(str(d), say({1: _("Last day"), 7: _("Last 7 days"), 30: _("Last 30 days")}[d])) for d in CHOICES_DAYS]
    choice = "".join(
        f'<option value="{v}"{" selected" if str(days) == v else ""}>{escape(w)}</option>' for v, w in options
    )
    first = r.first if r is not None and r.first else ""
    last = r.last if r is not None and r.last else ""
    known = report.known_groups if report is not None else ([group] if group else [])
    groups = "".join(
        f'<option value="{escape(g, quote=True)}"{" selected" if g == group else ""}>{escape(g)}</option>'
        for g in known
    )
    shown = report.range if report is not None else r  # a kept report's range ends when it was made
    state = escape(problem) if problem else escape(range_said(shown, say)) if shown is not None else ""
    body = ""
    if report is not None:
        query = urlencode({**report.range.query(), **({"group": group} if group else {})})
        top = f'<h2>{escape(say(_("Top holders")))}</h2><div id="chart"></div>' if report.chart else ""
        body = (
            f'<p><a href="report.csv?{escape(query, quote=True)}" download>{escape(say(_("Download CSV")))}</a></p>'
            f"{top}"
            f"<h2>{escape(say(_('Users')))} ({len(report.users)})</h2>{_table(report.users, 'user', say)}"
            f"<h2>{escape(say(_('Groups')))} ({len(report.groups)})</h2>{_table(report.groups, 'group', say)}"
        )
    chart = chart_data(report, say) if report is not None and report.chart else None
    return (
        page.replace("<!--DAYS-->", choice)
        .replace('value="" data-from', f'value="{escape(first, quote=True)}" data-from')
        .replace('value="" data-to', f'value="{escape(last, quote=True)}" data-to')
        .replace("<!--GROUPS-->", groups)
        .replace("<!--STATE-->", state)
        .replace("<!--REPORT-->", body)
        .replace("/*CHART*/null", _script_json(chart))
        .replace("/*PLOTLY*/null", _script_json(plotly_module()))
        .encode()
    )


UNREADABLE = _("Prometheus at {url} cannot be read: {error}. No report until it answers; check that Prometheus runs.")


def problem_said(url: str, error: Exception, say: Words) -> str:
    """Prometheus could not be read: where, why, and what to do (the page's sentence, for a report)."""
    return say(UNREADABLE, url=url, error=str(error) or type(error).__name__)


NO_PROMETHEUS = _(
    "Reports are made from Prometheus: set JUPYTER_GPUMEM_HUB_REPORT_PROMETHEUS_URL (or "
    "JUPYTER_GPUMEM_HUB_PROMETHEUS_URL) in the service's environment, with report-rules.yml among its rules."
)
