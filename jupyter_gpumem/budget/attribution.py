"""Which GPU memory is this kernel's own, where the driver's PIDs may not be this kernel's PIDs.

Every hub on Kubernetes or Docker runs kernels in a PID namespace of their own. Depending on the driver,
NVML then lists the kernel under its host PID (which exists nowhere in the container), under its own
PID (drivers that translate PIDs into the caller's namespace, and hide the processes of other
containers), or not at all (docs/containers.md). So the figure "this kernel" is attributed, in this
order, and says which holds:

- exact: NVML lists this kernel's PID; or NVML's PIDs are this namespace's and this kernel is not
  among them (then it holds nothing there);
- matched: exactly one listed process of another namespace appeared when this kernel's framework
  started, and its memory moves with the framework's pool (``Matcher``, over samples); never one picked
  among several that fit;
- estimated: the framework has started and tells its pool: the pool plus the overhead measured or
  remembered for this GPU model (overhead.py);
- unknown, with the reason. Never 0.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Literal

from jupyter_gpumem.budget.framework_interface import Allocator
from jupyter_gpumem.budget.overhead import Overhead
from jupyter_gpumem.gpu.model import Device, Snapshot
from jupyter_gpumem.i18n import pgettext
from jupyter_gpumem.units import GiB, MiB
from jupyter_gpumem.words import Said

Source = Literal["exact", "matched", "estimated", "unknown"]

# Where this kernel stands towards the PIDs NVML reports:
# host: it shares the host's PID namespace; translated: it has a PID namespace of its own, and NVML
# lists processes by its PIDs (this kernel's, or another process of its namespace); untranslated: NVML
# lists processes, none of them of its namespace; unlisted: NVML lists none of its namespace's
# processes and nothing that tells (no process, or none whose program could be checked).
PidStance = Literal["host", "translated", "untranslated", "unlisted"]

UNTRANSLATED = Said("own_untranslated")
UNLISTED = Said("own_unlisted")

# Memory in use that no listed process accounts for, above which the driver is said to hide processes.
# The driver's own reservation stays below it (a few hundred MiB on current GPUs).
HIDDEN_MIN_BYTES = 1 * GiB


@dataclass(frozen=True)
class Own:
    """This kernel's memory on one GPU, as nvidia-smi counts it, and what the figure rests on."""

    bytes: int | None  # None: unknown, never 0
    source: Source
    reason: Said  # a phrase for people: what the figure rests on, or why it is unknown
    pid: int | None = None  # the PID NVML lists for this kernel here (exact or matched)
    candidates: int = 0  # listed processes that could be this kernel's, when none is matched

    @property
    def holds(self) -> bool:
        """This kernel holds memory here, as far as is known: NVML lists it, or the figure is matched or
        estimated."""
        return self.bytes is not None and (self.pid is not None or self.source == "estimated")

    def describe(self) -> str:
        """ "exact: NVML lists this kernel's PID", in the language in use (i18n)."""
        return pgettext("figure source", "{source}: {reason}").format(
            source=_source_words(self.source), reason=self.reason.words()
        )

    @property
    def because(self) -> str:
        """The reason without where this kernel stands (own_unknown's ``where``), for text that said it already:
        why the figure is unknown, and the listed processes that could be this kernel's; in the language in use."""
        if self.reason.code != "own_unknown":
            return self.reason.words()
        return "".join(_words(self.reason.values[name]) for name in ("why", "candidates"))


def _words(value: object) -> str:
    return value.words() if isinstance(value, Said) else str(value)


def _source_words(source: Source) -> str:
    """What a figure rests on, one word (the sidebar's Exact, Matched, Estimated, Unknown in lower case)."""
    return {
        "exact": pgettext("figure source", "exact"),
        "matched": pgettext("figure source", "matched"),
        "estimated": pgettext("figure source", "estimated"),
        "unknown": pgettext("figure source", "unknown"),
    }[source]


def pid_stance(snapshot: Snapshot) -> PidStance | None:
    """Where this kernel stands towards NVML's PIDs; None without GPUs to tell it from."""
    if snapshot.problem or not snapshot.devices:
        return None
    if snapshot.host_pid_namespace is not False:
        return "host"
    listed = [p for d in snapshot.devices for p in d.processes]
    if any(p.is_self or p.local for p in listed):
        return "translated"
    if listed and all(p.local is False for p in listed):
        return "untranslated"
    return "unlisted"


def unlisted_bytes(device: Device, stance: PidStance | None) -> int | None:
    """Memory in use on the GPU that no listed process accounts for, where the driver hides processes:
    in a container of its own, when it is at least HIDDEN_MIN_BYTES. None otherwise, or when it cannot be
    told (a figure N/A). With the host's PIDs (or untranslated ones) every process is listed."""
    if stance not in ("translated", "unlisted") or device.lost or not device.processes_known or device.mig_enabled:
        return None
    listed = [p.used_bytes for p in device.processes]
    if device.used_bytes is None or None in listed:
        return None
    rest = device.used_bytes - sum(b or 0 for b in listed)
    return rest if rest >= HIDDEN_MIN_BYTES else None


def listed(device: Device, stance: PidStance | None, match: Match | None, framework: str | None = None) -> Own | None:
    """The figure when NVML lists this kernel here: exact (its own PID) or matched; else None."""
    mine = [p for p in device.processes if p.is_self]
    if mine:
        if device.listed_own_bytes is None:
            return Own(None, "unknown", Said("own_listed_not_told"), pid=mine[0].pid)
        return Own(device.listed_own_bytes, "exact", Said("own_listed"), pid=mine[0].pid)
    if stance in ("untranslated", "unlisted") and match is not None and match.pid is not None:
        used = next((p.used_bytes for p in device.processes if p.pid == match.pid), None)
        if used is not None:
            name = framework or Said("its_framework")
            return Own(used, "matched", Said("own_matched", pid=match.pid, framework=name), pid=match.pid)
    return None


def attribute(
    device: Device,
    stance: PidStance | None,
    match: Match | None,
    *,
    started: bool,
    allocator: Allocator | None,
    framework: str | None,
    overhead: Callable[[], Overhead],
) -> Own:
    """This kernel's memory on ``device``. ``started``: its framework has started; ``allocator``: the
    framework's figures here, if any; ``overhead()``: what lies outside its pool here (measured,
    remembered, else estimated), asked only for an estimate."""
    if device.lost:
        return Own(None, "unknown", Said("own_gpu_lost"))
    found = listed(device, stance, match, framework)
    if found is not None:
        return found
    if not device.processes_known:
        return Own(None, "unknown", Said("own_processes_not_listed"))
    if stance in (None, "host", "translated"):
        return Own(0, "exact", Said("own_not_listed"))
    where = UNTRANSLATED if stance == "untranslated" else UNLISTED
    name = framework or Said("its_framework")
    count = match.candidates if match else 0
    could: Said | str = ""
    if count > 1:
        could = Said("own_candidates", candidates=count)
    elif count == 1:
        could = Said("own_candidate", framework=name)
    pool = allocator.pool if allocator else None
    if started and pool:
        aside = overhead()
        said = Said(
            "own_estimated",
            framework=name,
            pool_bytes=pool,
            outside_bytes=aside.bytes,
            outside=aside.describe(),
            candidates=could,
        )
        return Own(pool + aside.bytes, "estimated", said, candidates=count)
    if not started:
        why = Said("own_not_started", framework=name)
    elif allocator is None:
        why = Said("own_framework_untold", framework=name)
    elif pool is None:
        why = Said("own_pool_untold", framework=name)
    else:
        why = Said("own_no_pool", framework=name)
    return Own(None, "unknown", Said("own_unknown", where=where, why=why, candidates=could), candidates=count)


# ---------------------------------------------------------------------- matching over samples

MOVE_BYTES = 64 * MiB  # a change of the pool that the correlation looks at
APPEAR_S = 10.0  # "appeared when the framework started": first listed within this of its start
GROWTH_BYTES = 1 * GiB  # what may come outside the pool along with its growth (cuBLAS/cuDNN at first use)
SLACK_BYTES = 16 * MiB  # what NVML and the allocator may differ by in one step


@dataclass(frozen=True)
class Match:
    """What the samples so far say about one GPU's candidates."""

    pid: int | None  # the one candidate whose memory moved with the pool; None while there is no such one
    candidates: int  # candidates that could still be this kernel's


@dataclass
class _Candidate:
    used: int | None  # NVML's figure when the pool last moved (or when it was first seen)
    pool: int | None  # the pool then
    fits: int = 0  # moves of the pool it followed
    misses: int = 0  # samples in a row it did not follow a move (one may be a sample taken mid-move)

    def follows(self, used: int | None, pool: int | None) -> bool:
        """Take one sample; False once it has clearly not followed the pool."""
        if used is None or pool is None:
            return True  # nothing to compare
        if self.used is None or self.pool is None:
            self.used, self.pool = used, pool
        moved = pool - self.pool
        slack = max(SLACK_BYTES, abs(moved) // 50)
        miss = used < pool - slack  # this kernel's process holds at least its framework's pool
        if abs(moved) >= MOVE_BYTES:
            grew = used - self.used
            # Along with a growth, the context may take more (libraries loaded at first use); not with a shrink.
            if moved - slack <= grew <= moved + (GROWTH_BYTES if moved > 0 else slack) and not miss:
                self.fits += 1
                self.used, self.pool, self.misses = used, pool, 0
                return True
            miss = True
        if not miss:
            self.misses = 0
            return True
        self.misses += 1
        return self.misses < 2


@dataclass
class _Gpu:
    first_look: float  # when this GPU was first read: what was listed then did not "appear"
    seen: dict[int, float] = field(default_factory=dict)  # PID -> when first listed
    before: float | None = None  # the last sample before the framework started here
    started: float | None = None  # the first sample since it started here
    candidates: dict[int, _Candidate] = field(default_factory=dict)
    ruled_out: set[int] = field(default_factory=set)


class Matcher:
    """Which listed process of another PID namespace is this kernel's, correlated over samples.

    Owned by the Controller and fed by ``Controller.read``, on the sampler thread (and on the main
    thread for `%gpumem status` / `explain`): one lock around each sample, as overhead.Calibration does.
    A candidate is a process not of this namespace that was first listed within APPEAR_S of the moment
    the framework started on that GPU, and not already at the first look. It is ruled out when the pool
    moves and its memory does not follow (twice in a row: a sample may fall between an allocation and
    NVML's figure), or when it holds less than the pool. The match is the one candidate left, once it
    has followed a move.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._gpus: dict[str, _Gpu] = {}

    def observe(
        self, snapshot: Snapshot, pools: Mapping[str, int | None], started: Collection[str]
    ) -> dict[str, Match]:
        """``pools``: GPU uuid -> the framework's pool there (None: not told); ``started``: the GPUs on
        which the framework has started (it reports figures there)."""
        found = {}
        with self._lock:
            for device in snapshot.devices:
                if device.uuid is None or device.lost or not device.processes_known:
                    continue
                found[device.uuid] = self._observe(
                    device, snapshot.taken_at, pools.get(device.uuid), device.uuid in started
                )
        return found

    def _observe(self, device: Device, now: float, pool: int | None, started: bool) -> Match:
        assert device.uuid is not None
        gpu = self._gpus.setdefault(device.uuid, _Gpu(first_look=now))
        rows = {p.pid: p for p in device.processes}
        for gone in gpu.seen.keys() - rows.keys():
            del gpu.seen[gone]
            gpu.candidates.pop(gone, None)
            gpu.ruled_out.discard(gone)
        for pid in rows:
            gpu.seen.setdefault(pid, now)
        if not started:
            gpu.before = now
            return Match(None, 0)
        if gpu.started is None:
            gpu.started = now
        if (
            gpu.before is not None and now <= gpu.started + APPEAR_S
        ):  # without a look before the start, nothing "appeared"
            for pid, row in rows.items():
                appeared = gpu.first_look < gpu.seen[pid] and gpu.seen[pid] >= gpu.started - APPEAR_S
                if appeared and row.local is not True and not row.is_self and pid not in gpu.ruled_out:
                    gpu.candidates.setdefault(pid, _Candidate(row.used_bytes, pool))
        for pid, candidate in list(gpu.candidates.items()):
            if not candidate.follows(rows[pid].used_bytes, pool):
                del gpu.candidates[pid]
                gpu.ruled_out.add(pid)
        left = list(gpu.candidates.items())
        if len(left) == 1 and left[0][1].fits and not left[0][1].misses:
            return Match(left[0][0], 1)
        return Match(None, len(left))
