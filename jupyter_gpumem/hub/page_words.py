"""The admin page's words (page.html: headings, column headers, every cell, the summary's cards, the state line, the
filter's placeholder and label), worded here in the page's language, in the ``jupyter_gpumem`` gettext domain every
surface words through. The page's script words nothing: it places these texts, sorts by the raw numbers beside
them and toggles classes (tests/hub/test_page_script.py keeps it so).

``_`` only marks a message for ``jlpm i18n:extract`` (babel's Python extractor finds ``_("…")`` literals); a
language's words come from ``Words``. A message is its English words: ``{name}`` is a value put in as it is (a
figure, a time, a name: figures and units never change), so a translation keeps it. In page.html's own text a
``{name}`` is a slot its script fills with the value (``slots``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta, timezone, tzinfo
from html import escape
from typing import Any

from jupyter_gpumem import i18n
from jupyter_gpumem.hub.poll import PollStats
from jupyter_gpumem.hub.rows import Row
from jupyter_gpumem.units import format_mib, format_tenth
from jupyter_gpumem.words import Said, catalogue, clock, word


def _(message: str) -> str:
    return message


def ngettext(singular: str, plural: str) -> tuple[str, str]:
    """Marks a count's message for ``jlpm i18n:extract`` (babel's ``ngettext:1,2``), as ``_`` marks one."""
    return singular, plural


@dataclass(frozen=True, slots=True)
class Column:
    title: str  # its message
    key: str | None = None  # the row's raw field it sorts by; None: its text
    number: bool = False  # right-aligned, largest first on the first click


# The table's columns, in order: page.html's header row is made from these, and every row's cells.
COLUMNS = (
    Column(_("User")),
    Column(_("Server")),
    Column(_("Kernel"), "kernel_id"),
    Column(_("GPU"), "gpu_index", number=True),
    Column(_("Used"), "used_bytes", number=True),
    Column(_("Budget"), "budget_bytes", number=True),
    Column(_("Over budget")),
    Column(_("Ceiling")),
    Column(_("Limit")),
    Column(_("Idle for"), "idle_s", number=True),
    Column(_("Note")),
)
SORTED_BY = "used_bytes"  # the page opens sorted by memory, largest first

# The limit kinds (comm.v1.json LimitKind) as the column says them: MIG and MPS are names in every language; a kind
# of a newer release is shown as it came.
LIMIT_KINDS = {"mig": "MIG", "mps": "MPS", "cooperative": _("cooperative")}


MESSAGES = (
    _("GPU memory by user"),
    _("Report"),  # the link to the report (hub/report.py)
    _("Not read yet."),
    _("Filter: user, server, kernel, problem"),
    _("Filter rows"),
    *(c.title for c in COLUMNS),
    # What the table's cells say besides figures.
    _("(default)"),
    _("yes"),
    _("no"),
    LIMIT_KINDS["cooperative"],
    _("{kind} (hard)"),
    _("driver {size} (hard)"),
    _("MIG slice {profile}"),
    _("{shown} of {total} rows"),
    # The summary's cards.
    _("GPUs"),
    _("answering servers"),
    _("not answering"),
    _("not readable"),
    _("GPUs lost"),
    _("Kernels over budget"),
    _("Idle kernels holding memory"),
    _("{used}, {idle}"),  # a kernel's memory held and how long it has been idle
    _("Users by memory held"),
    _("Servers by release"),
    _("not said"),
    _("{kernel} (stale)"),
    # The state line at the top.
    _("Read at {time}; updated every {period} s."),
    _("Read at {time}: {poll}; updated every {period} s."),
    _("{answered} of {servers} servers answered ({duration} s)"),
    _("{answered} of {servers} servers scraped by Prometheus ({duration} s)"),
    _("{poll}, {failing} not answering"),
    _("{poll}, {failing} not scraped"),
    _("The service answered {status}; reload the page to log in again."),
    _("The service did not answer ({error}); trying again."),
)

# The summary's counts: one message each, its form chosen by the count and the language's plural rule.
PLURALS = (
    ngettext("{count} GPU", "{count} GPUs"),
    ngettext("{used} of {total} on {count} GPU", "{used} of {total} on {count} GPUs"),
    ngettext("{count} user", "{count} users"),
)

_VALUE = re.compile(r"\{(\w+)\}")
# A browser's UTC offset, in minutes east (the page sends ``-getTimezoneOffset()``): every zone's is a multiple of
# 15 within a day; any other reads as none (this machine's time).
_OFFSET = re.compile(r"-?\d{1,4}")


def zone_of(offset_min: str | None) -> tzinfo | None:
    """The page's time zone from its ``utc_offset_min``; None (this machine's) for none or one no zone has."""
    if offset_min is None or not _OFFSET.fullmatch(offset_min):
        return None
    minutes = int(offset_min)
    return timezone(timedelta(minutes=minutes)) if abs(minutes) <= 14 * 60 and minutes % 15 == 0 else None


def _figure(value: float) -> str:
    """A setting's number as JSON and the browser read it: 1.0 is "1", 0.5 is "0.5"."""
    return str(round(value)) if float(value).is_integer() else f"{value:g}"


class Words:
    """One language's words for the page, times of day in the page's zone."""

    def __init__(self, language: str, zone: tzinfo | None = None):
        self.language, self.zone = language, zone
        self._translation = i18n.translation(language)
        self._catalogue = catalogue(language)

    def __call__(self, message: str, **values: object) -> str:
        return _VALUE.sub(lambda m: str(values[m.group(1)]), self.template(message))

    def template(self, message: str) -> str:
        """A message's words, its ``{name}`` left for the page to fill (``slots``)."""
        return self._translation.gettext(message)

    def count(self, singular: str, plural: str, count: int, **values: object) -> str:
        text = self._translation.ngettext(singular, plural, count)
        return _VALUE.sub(lambda m: str({**values, "count": count}[m.group(1)]), text)

    def code(self, code: str, **values: Any) -> str:
        return word(code, values, self._catalogue, self.zone)

    def said(self, text: str | None) -> str:
        """A sentence field's words: a code's in this language; an older release's plain sentence as it is."""
        if isinstance(text, Said):
            return word(text.code, text.values, self._catalogue, self.zone)
        return text or ""

    def clock(self, t: float) -> str:
        return clock(t, None, self.zone)


def slots(text: str) -> str:
    """A message's words as HTML, each ``{name}`` an empty element the page's script fills with that value."""
    return _VALUE.sub(lambda m: f'<span data-slot="{m.group(1)}"></span>', escape(text))


def header(words: Words) -> str:
    """The table's header row: each column's title, the raw field it sorts by, whether it is a figure."""
    cells = []
    for c in COLUMNS:
        attributes = (f' data-key="{c.key}"' if c.key else "") + (' class="n"' if c.number else "")
        attributes += ' aria-sort="descending"' if c.key == SORTED_BY else ""
        title = escape(words(c.title))
        cells.append(f'<th{attributes} title="{title}">{title}</th>')  # a tooltip, as the cells have
    return "".join(cells)


def _limit(words: Words, r: Row) -> str:
    """What holds a kernel on its GPU: MIG, MPS or %gpumem's budget; the NVIDIA driver's limit on its cgroup; its
    MIG slice."""
    kind = words(LIMIT_KINDS[r.limit_kind]) if r.limit_kind in LIMIT_KINDS else r.limit_kind
    parts = [words("{kind} (hard)", kind=kind) if r.limit_hard else kind] if kind else []
    if r.driver_limit_bytes is not None:
        parts.append(words("driver {size} (hard)", size=format_mib(r.driver_limit_bytes)))
    if r.slice:
        parts.append(words("MIG slice {profile}", profile=r.slice))
    return " · ".join(parts)


def note(words: Words, r: Row) -> str:
    """The row's note: why it is stale, or its problem."""
    if r.stale_since is not None and isinstance(r.problem, Said) and r.problem.code == "not_answering":
        return words.code("not_answering_since", since=r.stale_since, error=r.problem.values["error"])
    if r.driver_stalled_since is not None:
        return words.code("driver_not_answering_since", since=r.driver_stalled_since)
    return words.said(r.problem)


def shown_row(words: Words, r: Row, texts: Mapping[str, str]) -> dict[str, Any]:
    """A row as the page shows it: its cells in COLUMNS' order, its mark (the row's class), and the text the filter
    searches (the note as shown, the problem in English too)."""
    yes_no = "" if r.over_budget is None else words("yes") if r.over_budget else words("no")
    said = note(words, r)
    cells = [
        r.user,
        r.server or words("(default)"),
        (r.kernel_id or "")[:8],
        "" if r.gpu_index is None else str(r.gpu_index),
        texts["used_text"],
        texts["budget_text"],
        yes_no,
        texts["ceiling_text"],
        _limit(words, r),
        texts["idle_text"],
        said,
    ]
    stale = r.stale_since is not None or r.driver_stalled_since is not None
    mark = "stale" if stale else "over" if r.over_budget else "problem" if r.problem else ""
    find = " ".join(x or "" for x in (r.user, r.server, r.kernel_id, r.problem, said, r.gpu_uuid))
    return {"cells": cells, "mark": mark, "find": find}


def _kernel(words: Words, k: Mapping[str, Any], extra: str) -> list[Any]:
    kernel = k["user"] + ("/" + k["server"] if k["server"] else "") + " " + (k["kernel_id"] or "")[:8]
    return [words("{kernel} (stale)", kernel=kernel) if k["stale"] else kernel, extra, False]


def cards(words: Words, s: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The summary's cards (summary.summary's figures), worded: a title, its big figure, its lines (who, figure,
    whether it is bad news), and the GPUs' meter as a CSS width."""
    g, servers = s["gpus"], s["servers"]
    if g["total_bytes"] is None:
        big = words.count("{count} GPU", "{count} GPUs", g["count"])
    else:
        big = words.count(
            "{used} of {total} on {count} GPU",
            "{used} of {total} on {count} GPUs",
            g["count"],
            used=g["used_text"],
            total=g["total_text"],
        )
    meter = f"{format_tenth(100 * (g['used_bytes'] or 0) / g['total_bytes'])}%" if g["total_bytes"] else None
    over, idle, users = s["over_budget"], s["idle_holding"], s["users"]

    def card(title: str, lines: list[list[Any]], big: str | None = None, **more: Any) -> dict[str, Any]:
        return {"title": words(title), "big": big, "lines": lines, "over": False, "meter": None, **more}

    return [
        card(
            "GPUs",
            [
                [words("answering servers"), str(servers["answering"]), False],
                [words("not answering"), str(servers["not_answering"]), servers["not_answering"] > 0],
                [words("not readable"), str(servers["unreadable"]), False],
                [words("GPUs lost"), str(g["lost"]), g["lost"] > 0],
            ],
            big,
            meter=meter,
        ),
        card(
            "Kernels over budget",
            [_kernel(words, k, f"{k['used_text']} / {k['budget_text']}") for k in over["top"]],
            str(over["count"]),
            over=over["count"] > 0,
        ),
        card(
            "Idle kernels holding memory",
            [_kernel(words, k, words("{used}, {idle}", used=k["used_text"], idle=k["idle_text"])) for k in idle["top"]],
            str(idle["count"]),
        ),
        card(
            "Users by memory held",
            [[u["user"], u["used_text"], False] for u in users["top"]],
            words.count("{count} user", "{count} users", users["count"]),
        ),
        # Which jupyter-gpumem releases the servers read run: releases mix on a hub (docs/protocol.md).
        card("Servers by release", [[r or words("not said"), str(n), False] for r, n in s["releases"].items()]),
    ]


def state(
    words: Words, t: float | None, interval_s: float, poll: PollStats | None, prometheus: bool, problem: str | None
) -> str:
    """The line at the top: when the rows were read, how the poll went; while Prometheus cannot be read, that."""
    if problem:
        return words.said(problem)
    if t is None:
        return words("Not read yet.")
    time, period = words.clock(t), _figure(poll.period_s if poll else interval_s)
    if poll is None:
        return words("Read at {time}; updated every {period} s.", time=time, period=period)
    v = {"answered": poll.answered, "servers": poll.servers, "duration": format_tenth(poll.duration_s)}
    if prometheus:
        said = words("{answered} of {servers} servers scraped by Prometheus ({duration} s)", **v)
    else:
        said = words("{answered} of {servers} servers answered ({duration} s)", **v)
    if poll.not_answering:
        failing = poll.not_answering
        if prometheus:
            said = words("{poll}, {failing} not scraped", poll=said, failing=failing)
        else:
            said = words("{poll}, {failing} not answering", poll=said, failing=failing)
    return words("Read at {time}: {poll}; updated every {period} s.", time=time, poll=said, period=period)
