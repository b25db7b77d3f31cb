"""Idle kernels holding GPU memory: which to warn and which to shut down, from the Figures (docs/hub.md).

Off by default: an administrator opts in with ``GpumemServer.idle_warn_minutes`` and
``idle_shutdown_minutes``. jupyter_server's own culler (``MappingKernelManager.cull_idle_timeout``) knows
idleness but not GPU memory; this one acts only on kernels that hold GPU memory, which is what other users
of a shared GPU wait for (TensorFlow and the caching allocators never give memory back to the driver).

This module only decides: it reads a Figures and what was decided before (each kernel's ``Episode``) and
returns the new episodes and the actions. It touches no file, loop or kernel; the Watcher acts
(watcher.py). A kernel is a candidate while all of these hold:

- its execution state, as the server's kernel manager keeps it, is ``idle`` (busy, starting, dead,
  restarting and unknown kernels are left alone) and its last activity is known;
- it holds GPU memory: the sum over GPUs of the memory NVML counts for its own processes, the kernel
  manager's pid and its descendants in the process table (figures.KernelSource.processes). Never the kernel's
  own figure from its report, nor a process its report names: any process of the user can write a report, so
  it could make a kernel that holds nothing look as if it held another process's memory. Unknown counts as
  nothing (a container whose PIDs the driver does not see, N/A): a kernel is never warned or shut down for
  memory that cannot be shown to be its own.

An idle episode is identified by the kernel's last activity: a new value (it ran something, even between
two readings) ends the episode and its notice, and starts a new one. So does holding nothing, or not
being idle. A failed NVML reading decides nothing (a driver hiccup neither withdraws nor advances).

The timeline of one episode, with warn = N and shutdown = M (seconds here, minutes in the settings):

- warning (only when 0 < N and, with a shutdown, N < M): once, at N idle. It names when the kernel will be
  shut down: at M idle, but never sooner than M - N after the warning itself (a kernel that starts holding
  memory long after it went idle still gets the whole notice period).
- shutdown (only when 0 < M): at that time (without a warning: at M idle) the shutdown notice is written,
  and GRACE_S later, if the kernel is still idle and holding memory, it is shut down. A warning setting at
  or above the shutdown's gives no warning: the shutdown notice is the only one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal, NamedTuple

from jupyter_gpumem.server.figures import Figures, Kernel
from jupyter_gpumem.words import Said

# Between the shutdown notice and the shutdown: the kernel samples (and relays the notice) every second,
# so this gives it at least two samples to show the user why.
GRACE_S = 3.0

Kind = Literal["warn", "shutdown_notice", "shutdown", "withdraw", "gone"]


@dataclass(frozen=True, slots=True)
class Settings:
    warn_s: float = 0.0  # 0: no warning
    shutdown_s: float = 0.0  # 0: no shutdown

    @property
    def on(self) -> bool:
        return self.warn_s > 0 or self.shutdown_s > 0

    @property
    def warns(self) -> bool:
        return self.warn_s > 0 and (self.shutdown_s <= 0 or self.warn_s < self.shutdown_s)


OFF = Settings()


@dataclass(frozen=True, slots=True)
class Episode:
    """What has been done about one kernel in its current idle episode."""

    idle_since: float  # its last activity (time.time()): another value is another episode
    warned_at: float | None = None
    shutdown_at: float | None = None  # as the warning said it
    noticed_at: float | None = None  # when the shutdown notice was written
    shut_down: bool = False  # the shutdown was asked for


class Action(NamedTuple):
    """warn / shutdown_notice: write that notice; shutdown: shut the kernel down; withdraw: the episode is
    over (the kernel ran something, or holds nothing now), remove its notice; gone: the kernel is no longer
    listed, remove its notice."""

    kind: Kind
    kernel_id: str
    held_bytes: int
    idle_s: float
    shutdown_at: float | None = None


def held_bytes(kernel: Kernel) -> int:
    """The GPU memory the kernel holds over all GPUs: NVML's figure for its own processes, never its report's."""
    return sum(max(0, gpu.used_bytes or 0) for gpu in kernel.gpus)


def decide(
    figures: Figures, settings: Settings, episodes: Mapping[str, Episode], now: float
) -> tuple[dict[str, Episode], list[Action]]:
    """The episodes after this reading, and what to do now."""
    if not settings.on or figures.problem is not None or figures.t is None:
        return dict(episodes), []
    found: dict[str, Episode] = {}
    actions: list[Action] = []
    for kernel in figures.kernels:
        old = episodes.get(kernel.id)
        held = held_bytes(kernel)
        idle = kernel.execution_state == "idle" and kernel.last_activity is not None
        since = kernel.last_activity if idle else None
        if old is not None and (since is None or held == 0 or old.idle_since != since) and _noticed(old):
            actions.append(Action("withdraw", kernel.id, held, 0.0 if since is None else now - since))
        if since is None or held == 0:
            continue
        episode = old if old is not None and old.idle_since == since else Episode(since)
        episode, action = _step(kernel.id, episode, settings, held, now)
        found[kernel.id] = episode
        if action is not None:
            actions.append(action)
    listed = {kernel.id for kernel in figures.kernels}
    actions += [Action("gone", kernel_id, 0, 0.0) for kernel_id in episodes if kernel_id not in listed]
    return found, actions


def _step(kernel_id: str, episode: Episode, settings: Settings, held: int, now: float) -> tuple[Episode, Action | None]:
    idle_s = now - episode.idle_since
    if episode.shut_down:
        return episode, None
    if episode.noticed_at is not None:
        if now - episode.noticed_at >= GRACE_S:
            return replace(episode, shut_down=True), Action("shutdown", kernel_id, held, idle_s)
        return episode, None
    if settings.warns and episode.warned_at is None:
        if idle_s < settings.warn_s:
            return episode, None
        shutdown_at = (
            max(episode.idle_since + settings.shutdown_s, now + settings.shutdown_s - settings.warn_s)
            if settings.shutdown_s > 0
            else None
        )
        return replace(episode, warned_at=now, shutdown_at=shutdown_at), Action(
            "warn", kernel_id, held, idle_s, shutdown_at
        )
    if settings.shutdown_s <= 0:
        return episode, None
    due = episode.shutdown_at if episode.shutdown_at is not None else episode.idle_since + settings.shutdown_s
    if now < due:
        return episode, None
    return replace(episode, noticed_at=now), Action("shutdown_notice", kernel_id, held, idle_s, now + GRACE_S)


def _noticed(episode: Episode) -> bool:
    return episode.warned_at is not None or episode.noticed_at is not None


def notice(action: Action, now: float) -> dict[str, object]:
    """The notice file's content for a warn or shutdown_notice action decided at ``now`` (docs/server.md)."""
    held, idle = action.held_bytes, action.idle_s
    if action.kind == "warn" and action.shutdown_at is None:
        kind, text = "idle_warning", Said("idle_warning", held_bytes=held, idle_s=idle)
    elif action.kind == "warn" and action.shutdown_at is not None:
        kind = "idle_warning"
        idle_then = action.shutdown_at - (now - action.idle_s)
        text = Said(
            "idle_warning_shutdown",
            held_bytes=held,
            idle_s=idle,
            shutdown_at=action.shutdown_at,
            now=now,
            then_s=idle_then,
        )
    else:
        kind, text = "idle_shutdown", Said("idle_shutdown", held_bytes=held, idle_s=idle)
    return {
        "protocol": 1,
        "type": "notice",
        "t": now,
        "kind": kind,
        "text": text,
        "text_said": text.wire(),
        "shutdown_at": action.shutdown_at,
    }
