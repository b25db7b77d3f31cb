"""A made-up month of a hub's history for the report (issue 47): what every single-user server and the hub service
would have said, scraped every 5 minutes, as report-rules.yml records it, in OpenMetrics text for ``promtool tsdb
create-blocks-from openmetrics``; and the generator's own sums of it, the truth the report must match.

Every user, from a seed of their own: zero to three groups; sessions of a running server (1 to 20 hours, several a
month); in a session one to three kernels one after the other (a restart: a kernel gone, a slot with none, another
kernel id), sometimes a second one on another GPU at once; memory that changes within a kernel; busy and idle;
over a 4 GiB budget at times (never, for every fifth user); gaps (the server not scraped for 15 to 40 minutes, its
memory not seen then). Some users run a release without ``jupyter_gpumem_kernel_busy`` (their idle figure is N/A),
some a server without kernels (every figure N/A). The hub service says each user's groups while their server runs.

A scrape at a slot's start holds for its 5 minutes, so each rule's 5-minute sample at the slot's end is the slot's
figure (``recorded``); ``truth`` adds up the slots, never Prometheus's series.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from server_fixtures import free_port, prometheus_ready, stop

GiB = 2**30
SLOT_S = 300
GROUPS = ("physics", "chemistry", "biology", "maths", "vision", "language")
BUDGET = 4 * GiB


@dataclass
class Kernel:
    kernel_id: str
    gpu: int
    held: dict[int, int] = field(default_factory=dict)  # slot -> bytes, for the slots it was scraped
    busy: dict[int, int] = field(default_factory=dict)


@dataclass
class User:
    name: str
    groups: tuple[str, ...]
    node: int
    busy_known: bool
    up: set[int] = field(default_factory=set)  # slots where the server ran (the service lists it: its groups said)
    kernels: list[Kernel] = field(default_factory=list)


def user_name(i: int) -> str:
    return f"u{i:04d}"


def make(users: int, slots: int, seed: int = 47) -> list[User]:
    """``users`` users' histories over ``slots`` slots of 5 minutes (slot 0 is the history's first)."""
    made = []
    for i in range(users):
        rng = random.Random(seed * 100_003 + i)
        groups = tuple(sorted(rng.sample(GROUPS, rng.choices((0, 1, 2, 3), (1, 5, 3, 1))[0])))
        user = User(user_name(i), groups, i // 8, busy_known=i % 40 != 7)
        sessions = rng.randint(3, 9)
        for _ in range(sessions):
            length = rng.randint(12, 240)
            first = rng.randrange(0, max(1, slots - length))
            span = range(first, min(slots, first + length))
            if any(s in user.up for s in range(first - 2, span.stop + 2)):
                continue  # a server runs once at a time: this session would overlap another
            user.up.update(span)
            if i % 67 == 3:
                continue  # a server where no kernel runs: the service lists it, nothing else
            _session(user, rng, list(span), 7 if i % 5 == 0 else 12)  # every fifth user within budget
        made.append(user)
    return made


def _session(user: User, rng: random.Random, span: list[int], most: int) -> None:
    # Restarts: the session's slots cut into 1 to 3 kernels, a slot with none between two (the kernel gone).
    cuts = sorted(rng.sample(range(3, len(span) - 3), min(rng.randint(0, 2), max(0, len(span) - 8))))
    pieces, start = [], 0
    for cut in cuts:
        if cut - 1 > start:
            pieces.append(span[start : cut - 1])
        start = cut
    pieces.append(span[start:])
    gaps: set[int] = set()
    if rng.random() < 0.4 and len(span) > 20:  # not scraped for 15 to 40 minutes
        at = rng.randrange(5, len(span) - 10)
        gaps.update(span[at : at + rng.randint(3, 8)])
    for piece in pieces:
        if not piece:
            continue
        kernels = [Kernel(f"k{len(user.kernels)}", rng.randrange(4))]
        if rng.random() < 0.25:  # a second kernel at once, on another GPU
            kernels.append(Kernel(f"k{len(user.kernels) + 1}", (kernels[0].gpu + 1) % 4))
        for kernel in kernels:
            held, busy = rng.randint(0, most) * GiB // 2, rng.random() < 0.4
            for slot in piece:
                if rng.random() < 0.1:
                    held = rng.randint(0, most) * GiB // 2
                if rng.random() < 0.15:
                    busy = not busy
                if slot in gaps:
                    continue
                kernel.held[slot] = held
                if user.busy_known:
                    kernel.busy[slot] = int(busy)
            user.kernels.append(kernel)


def slot_figures(user: User) -> dict[int, tuple[int, int | None, int, int]]:
    """slot -> (bytes held, of it idle (None: the server says nothing of busy), over budget 0/1, GPUs held), for
    the slots with samples."""
    found: dict[int, list[int]] = {}
    gpus: dict[int, dict[int, int]] = {}
    for k in user.kernels:
        for s, held in k.held.items():
            row = found.setdefault(s, [0, 0, 0])
            row[0] += held
            row[1] += held if k.busy.get(s) == 0 else 0
            row[2] = max(row[2], int(held > BUDGET))
            on = gpus.setdefault(s, {})
            on[k.gpu] = on.get(k.gpu, 0) + held
    return {
        s: (r[0], r[1] if user.busy_known else None, r[2], sum(1 for b in gpus[s].values() if b > 0))
        for s, r in found.items()
    }


RECORDED = {
    "memory": "jupyter_gpumem_kernel_memory_used_bytes:avg5m",
    "idle": "jupyter_gpumem_kernel_idle_memory_used_bytes:avg5m",
    "peak": "jupyter_gpumem_kernel_memory_used_bytes:max5m",
    "over": "jupyter_gpumem_kernel_over_budget:avg5m",
    "gpus": "jupyter_gpumem_gpus_held:avg5m",
}
MEMBERSHIP = "user_group:jupyter_gpumem_hub_user_group_info:max5m"
# report-rules.yml's hourly group: each :avg5m series' samples added (:sum1h), each :max5m one's most (:max1h), over
# (T - 65m, T - 5m] at each hour T it evaluates; and its clock, 1 at each T.
HOURLY = {name: s.replace(":avg5m", ":sum1h").replace(":max5m", ":max1h") for name, s in RECORDED.items()}
HOURLY_MEMBERSHIP = MEMBERSHIP.replace(":max5m", ":max1h")
CLOCK = "jupyter_gpumem_report_hour"
HOUR_S = 3600
HOUR_AT = 900  # the hourly evaluations, a quarter past each hour: a 5-minute sample lies on each hour's edges
HOUR_LAG_S = 300


def _by_slot(users: list[User]) -> tuple[dict[str, dict[int, tuple[int, ...]]], dict[str, dict[int, tuple[int, ...]]]]:
    """Per user, slot -> (held, idle or -1 (nothing said of busy), peak, over, GPUs); per group the same added over
    its members (idle -1 where none of them said), their peak the most they held together."""
    per: dict[str, dict[int, tuple[int, ...]]] = {}
    groups: dict[str, dict[int, list[int]]] = {}
    for u in users:
        per[u.name] = {}
        for s, (held, idle, over, gpus) in slot_figures(u).items():
            per[u.name][s] = (held, -1 if idle is None else idle, held, over, gpus)
            for group in u.groups:
                row = groups.setdefault(group, {}).setdefault(s, [0, -1, 0, 0, 0])
                row[0] += held
                if idle is not None:  # members saying busy or idle: the group's idle figure exists
                    row[1] = max(row[1], 0) + idle
                row[3] += over
                row[4] += gpus
    by_group = {g: {s: (r[0], r[1], r[0], r[3], r[4]) for s, r in rows.items()} for g, rows in groups.items()}
    return per, by_group


def recorded(users: list[User], start: int, slots: range) -> Iterator[str]:
    """report-rules.yml's series over the history's ``slots``, as the rules record them: the sample at the end of
    each slot (``start`` + 5 minutes × (slot + 1)) is the slot's figure (a slot's scrape holds for its 5 minutes),
    a user's where their kernels said something, a group's where one of its members' did, a membership where the
    user's server ran; the hourly series at each hour's evaluation in the same stretch of time, from those samples
    (added, or their most) as the hourly rules compute them; OpenMetrics lines, each series' samples in time order."""
    per, by_group = _by_slot(users)
    who = {"user": per, "group": by_group}

    def at(s: int) -> int:
        return start + (s + 1) * SLOT_S

    first, stop = at(slots.start), at(slots.stop)
    hours = range(first + (HOUR_AT - first) % HOUR_S, stop, HOUR_S)

    def hour_slots(t: int) -> range:
        """The slots whose sample the hourly rules' evaluation at ``t`` reads: (t - 65m, t - 5m]."""
        after, until = t - HOUR_S - HOUR_LAG_S, t - HOUR_LAG_S
        return range(max(0, (after - start) // SLOT_S), max(0, (until - start) // SLOT_S))

    for i, (name, series) in enumerate(RECORDED.items()):
        index = (0, 1, 2, 3, 4)[i]
        for level in ("user", "group"):
            yield f"# TYPE {level}:{series} gauge\n"
            for key, rows in sorted(who[level].items()):
                yield "".join(
                    f'{level}:{series}{{{level}="{key}"}} {rows[s][index]} {at(s)}\n'
                    for s in sorted(x for x in rows if x in slots)
                    if rows[s][index] >= 0
                )
            yield f"# TYPE {level}:{HOURLY[name]} gauge\n"
            for key, rows in sorted(who[level].items()):
                lines = []
                for t in hours:
                    values = [rows[s][index] for s in hour_slots(t) if s in rows and rows[s][index] >= 0]
                    if values:
                        value = max(values) if name == "peak" else sum(values)
                        lines.append(f'{level}:{HOURLY[name]}{{{level}="{key}"}} {value} {t}\n')
                yield "".join(lines)
    yield f"# TYPE {MEMBERSHIP} gauge\n"
    for u in users:
        for group in u.groups:
            yield "".join(
                f'{MEMBERSHIP}{{user="{u.name}",group="{group}"}} 1 {at(s)}\n' for s in sorted(u.up) if s in slots
            )
    yield f"# TYPE {HOURLY_MEMBERSHIP} gauge\n"
    for u in users:
        for group in u.groups:
            yield "".join(
                f'{HOURLY_MEMBERSHIP}{{user="{u.name}",group="{group}"}} 1 {t}\n'
                for t in hours
                if any(s in u.up for s in hour_slots(t))
            )
    yield f"# TYPE {CLOCK} gauge\n"
    yield "".join(f"{CLOCK} 1 {t}\n" for t in hours)
    yield "# EOF\n"


SCRAPE_S = 30  # the raw series' scrapes, on the rules' 30 s sampling points


def raw(users: list[User], start: int, slots: range) -> Iterator[str]:
    """What the servers and the hub's service said over ``slots``, as Prometheus would have scraped it every 30 s:
    each kernel's jupyter_gpumem_kernel_memory_used_bytes (on its GPU), _busy, _over_budget (held above the 4 GiB
    budget), and the hub's jupyter_gpumem_hub_user_group_info while the user's server ran; a slot's figures at each of
    its 10 scrapes (a series ends where the slot has none: read with a lookback under 30 s, as its staleness marker
    would end it). Every third user's kernels in a container (only their own figure, ``source="estimated"``), every
    other user's with their own figure beside the driver's (``source="exact"``, never counted twice). The same history
    as ``recorded``'s, for the rules to run over (tests/hub/test_report_rules.py); OpenMetrics lines."""
    times = [(s, start + s * SLOT_S + j * SCRAPE_S) for s in slots for j in range(SLOT_S // SCRAPE_S)]
    families: dict[str, list[str]] = {}

    def add(name: str, labels: dict[str, str], values: dict[int, int]) -> None:
        text = ",".join(f'{k}="{v}"' for k, v in labels.items())
        families.setdefault(name, []).append("".join(f"{name}{{{text}}} {values[s]} {at}\n" for s, at in times
                                                     if s in values))  # fmt: skip

    for i, u in enumerate(users):
        server = {"job": "jupyter-gpumem-file-sd", "instance": f"node{u.node}:443", "user": u.name, "server": ""}
        for k in u.kernels:
            on = {**server, "kernel_id": k.kernel_id, "gpu_uuid": f"GPU-{k.gpu}", "gpu_index": str(k.gpu)}
            if i % 3 == 0:
                add("jupyter_gpumem_kernel_own_memory_bytes", {**on, "source": "estimated"}, k.held)
            else:
                add("jupyter_gpumem_kernel_memory_used_bytes", on, k.held)
                if i % 2:
                    add("jupyter_gpumem_kernel_own_memory_bytes", {**on, "source": "exact"}, k.held)
            add("jupyter_gpumem_kernel_over_budget", on, {s: int(b > BUDGET) for s, b in k.held.items()})
            if k.busy:
                add("jupyter_gpumem_kernel_busy", {**server, "kernel_id": k.kernel_id}, k.busy)
        hub = {"job": "jupyter-gpumem-hub", "instance": "hub:443", "user": u.name}
        for group in u.groups:
            add("jupyter_gpumem_hub_user_group_info", {**hub, "group": group}, dict.fromkeys(u.up, 1))
    for name, lines in families.items():
        yield f"# TYPE {name} gauge\n" + "".join(lines)
    yield "# EOF\n"


@dataclass
class Truth:
    """One user's or group's figures (None: no data, N/A); a user's groups or a group's members."""

    figures: dict[str, float | None]
    members: tuple[str, ...] = ()


FIGURES = ("memory_gib_hours", "idle_gib_hours", "peak_bytes", "over_budget_hours", "gpu_hours")
SLOT_H = SLOT_S / 3600


def _figures(rows: list[tuple[int, int | None, int, int]]) -> dict[str, float | None]:
    if not rows:
        return dict.fromkeys(FIGURES)
    idle = [r[1] for r in rows if r[1] is not None]
    return {
        "memory_gib_hours": sum(r[0] for r in rows) * SLOT_H / GiB,
        "idle_gib_hours": sum(idle) * SLOT_H / GiB if idle else None,
        "peak_bytes": max(r[0] for r in rows),
        "over_budget_hours": sum(r[2] for r in rows) * SLOT_H,
        "gpu_hours": sum(r[3] for r in rows) * SLOT_H,
    }


def truth(users: list[User], slots: range) -> tuple[dict[str, Truth], dict[str, Truth]]:
    """The generator's own sums over ``slots``: per user (whose server ran in them), and per group (its members';
    the peak the most its members held at one time, the over-budget hours its members' added)."""
    by_user: dict[str, Truth] = {}
    per: dict[str, dict[int, tuple[int, int | None, int, int]]] = {}
    for u in users:
        if not any(s in slots for s in u.up):
            continue
        per[u.name] = {s: r for s, r in slot_figures(u).items() if s in slots}
        by_user[u.name] = Truth(_figures(list(per[u.name].values())), u.groups)
    by_group: dict[str, Truth] = {}
    for group in GROUPS:
        members = [u for u in users if group in u.groups and u.name in by_user]
        if not members:
            continue
        together: dict[int, list[tuple[int, int | None, int, int]]] = {}
        for u in members:
            for s, r in per[u.name].items():
                together.setdefault(s, []).append(r)
        rows = []
        for found in together.values():
            idle = [r[1] for r in found if r[1] is not None]
            rows.append((sum(r[0] for r in found), sum(idle) if idle else None, sum(r[2] for r in found),
                         sum(r[3] for r in found)))  # fmt: skip
        by_group[group] = Truth(_figures(rows), tuple(sorted(u.name for u in members)))
    return by_user, by_group


DAY_S = 86400


def promtool(*args: str, cwd: Path | None = None) -> subprocess.Popen[str]:
    binary = shutil.which("promtool")
    assert binary, "Debian's prometheus package provides promtool: apt-get install prometheus (.ci/setup does)"
    return subprocess.Popen([binary, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd)


def _wait(process: subprocess.Popen[str], timeout: float = 600) -> None:
    out, _ = process.communicate(timeout=timeout)
    assert process.returncode == 0, out


@contextmanager
def prometheus(tsdb: Path, log: Path, *flags: str, config: Path | None = None) -> Iterator[str]:
    """Debian's prometheus on ``tsdb`` (kept 60 days: the history is a month old), with ``flags``, reading
    ``config`` (None: no scrapes, no rules); its URL."""
    binary = shutil.which("prometheus")
    assert binary, "Debian's prometheus is needed: apt-get install prometheus (.ci/setup does)"
    if config is None:
        config = tsdb.parent / "prometheus-empty.yml"
        config.write_text("global: {evaluation_interval: 5m}\n")
    port = free_port()
    with log.open("a") as out:
        process = subprocess.Popen(
            [binary, f"--config.file={config}", f"--storage.tsdb.path={tsdb}", f"--web.listen-address=127.0.0.1:{port}",
             "--log.level=warn", "--storage.tsdb.retention.time=60d", "--query.max-samples=200000000", *flags],
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        assert prometheus_ready(process, url, 120), log.read_text()[-3000:]
        yield url
    finally:
        stop(process)


@contextmanager
def month(users: list[User], slots: int, base: Path) -> Iterator[tuple[int, str]]:
    """The history backfilled under ``base`` with its last sample (at the last slot's end) 5 minutes before now, and
    Prometheus on it: (slot 0's time, its URL)."""
    start = int(time.time()) // SLOT_S * SLOT_S - SLOT_S - slots * SLOT_S
    with prometheus(backfill(users, start, slots, base), base / "prometheus.log") as url:
        yield start, url


def backfill(users: list[User], start: int, slots: int, base: Path, block: str = "24h") -> Path:
    """A TSDB under ``base`` holding report-rules.yml's series over the history (``start``: slot 0's time, on a
    5-minute boundary), made with ``promtool tsdb create-blocks-from openmetrics`` a day a file, two promtools at a
    time, in blocks of at most ``block`` (promtool's default, 2h, leaves 360 blocks a month, which Prometheus reads one
    by one at each query until it has compacted them; a live Prometheus's are compacted up to a tenth of its
    retention: 6 days at 60)."""
    tsdb = base / "tsdb"
    tsdb.mkdir(parents=True)
    days = range(start // DAY_S * DAY_S, start + (slots + 1) * SLOT_S, DAY_S)
    running: list[subprocess.Popen[str]] = []
    for day in days:
        # The slots whose sample (at the slot's end) falls in this day.
        first, last = max(0, (day - start) // SLOT_S - 1), min(slots, (day + DAY_S - start) // SLOT_S - 1)
        path = base / f"recorded-{day}.om"
        with path.open("w") as out:
            out.writelines(recorded(users, start, range(first, last)))
        if len(running) >= 2:
            _wait(running.pop(0))
        running.append(promtool("tsdb", "create-blocks-from", "openmetrics", "-q", f"--max-block-duration={block}",
                                str(path), str(tsdb)))  # fmt: skip
    for process in running:
        _wait(process)
    return tsdb
