"""The comm protocol between a kernel and the sidebar, version 1 (docs/protocol.md).

Kernel to sidebar: ``hello`` (the comm_open data: settings and the history to replay), then one
``sample`` per interval. Sidebar to kernel: ``configure``. Every message is a JSON object carrying
``"protocol": 1``; anything else is dropped with one warning by whichever side receives it.
Fixtures in tests/fixtures/protocol/ are checked by the Python and the TypeScript tests alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ._version import __version__
from .model import Device, Snapshot
from .plan import Plan

PROTOCOL = 1
TARGET = "jupyter_gpumem"  # the comm target the sidebar registers

INTERVAL_RANGE_S = (0.2, 10.0)
HISTORY_RANGE_S = (10.0, 24 * 3600.0)


class ProtocolError(ValueError):
    """A message that is not protocol 1; its text says what is wrong with it."""


@dataclass(frozen=True)
class Framework:
    """What the sampler knows of the framework: its name, whether its runtime has started, and the
    allocator's in-use and peak bytes per framework GPU (in the framework's order)."""

    name: str
    started: bool
    memory: tuple[tuple[int, int], ...] = ()


def encode_sample(
    snapshot: Snapshot, plan: Plan | None, framework: Framework | None, framework_uuids: list[str]
) -> dict[str, Any]:
    """One sample as JSON-ready data. ``framework_uuids`` maps the framework's GPU i to an NVML UUID."""
    budgets = {g.uuid: g.budget_bytes for g in plan.gpus} if plan else {}
    hidden = {d.uuid for d in plan.hidden} if plan else set()
    allocator = dict(zip(framework_uuids, framework.memory, strict=False)) if framework else {}
    return {
        "t": round(snapshot.taken_at, 3),
        "problem": snapshot.problem,
        "simulated": snapshot.simulated_scenario,
        "policy": plan.policy.describe() if plan and not plan.policy.is_empty else None,
        "framework": framework.name if framework else None,
        "framework_started": bool(framework and framework.started),
        "gpus": [_encode_device(d, budgets, d.uuid in hidden, allocator) for d in snapshot.devices],
    }


def _encode_device(
    device: Device, budgets: dict[str, int | None], hidden: bool, allocator: dict[str, tuple[int, int]]
) -> dict[str, Any]:
    in_use, peak = allocator.get(device.uuid or "", (None, None))
    return {
        "index": device.index,
        "uuid": device.uuid,
        "name": device.name,
        "lost": device.lost,
        "hidden": hidden,  # the policy keeps this kernel off it (gpus=)
        "total_bytes": device.total_bytes,
        "used_bytes": device.used_bytes,
        "own_bytes": device.own_bytes,
        "budget_bytes": budgets.get(device.uuid or ""),
        "framework_bytes": in_use,
        "framework_peak_bytes": peak,
        "processes_known": device.processes_known,
        "processes": [
            {
                "pid": p.pid,
                "name": p.name,
                "user": p.user,
                "used_bytes": p.used_bytes,
                "cpu_percent": None if p.cpu_percent is None else round(p.cpu_percent, 1),
                "self": p.is_self,
            }
            for p in device.processes
        ],
    }


def figures_only(sample: dict[str, Any]) -> dict[str, Any]:
    """The sample as history keeps it: the charted figures, without the process table."""
    return {**sample, "gpus": [{k: v for k, v in g.items() if k != "processes"} for g in sample["gpus"]]}


def hello(interval_s: float, history_s: float, history: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "protocol": PROTOCOL,
        "type": "hello",
        "package_version": __version__,
        "interval_s": interval_s,
        "history_s": history_s,
        "history": history,
    }


def sample_message(sample: dict[str, Any]) -> dict[str, Any]:
    return {"protocol": PROTOCOL, "type": "sample", "sample": sample}


@dataclass(frozen=True)
class Configure:
    interval_s: float
    history_s: float


def check_settings(interval_s: Any, history_s: Any) -> Configure:
    """Raises ProtocolError unless both are numbers within the documented ranges."""
    for name, value, (low, high) in (
        ("interval_s", interval_s, INTERVAL_RANGE_S),
        ("history_s", history_s, HISTORY_RANGE_S),
    ):
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ProtocolError(f"{name} must be a number of seconds, not {value!r}")
        if not low <= value <= high:
            raise ProtocolError(f"{name}={value:g} is outside {low:g}-{high:g} s")
    return Configure(float(interval_s), float(history_s))


def parse_request(data: Any) -> Configure:
    """A message from the sidebar. Raises ProtocolError (what is wrong) for anything but protocol 1."""
    if not isinstance(data, dict):
        raise ProtocolError(f"expected a JSON object, got {type(data).__name__}")
    if data.get("protocol") != PROTOCOL:
        raise ProtocolError(f"protocol {data.get('protocol')!r} is not {PROTOCOL}")
    if data.get("type") != "configure":
        raise ProtocolError(f"unknown message type {data.get('type')!r}")
    return check_settings(data.get("interval_s"), data.get("history_s"))
