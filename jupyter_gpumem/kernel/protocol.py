"""The comm protocol between a kernel and the sidebar, version 1 (docs/protocol.md).

Kernel to sidebar: ``hello`` (the comm_open data: settings and the history to replay), then one
``sample`` per interval. Sidebar to kernel: ``configure``. Every message is a JSON object carrying
``"protocol": 1``; anything else is dropped with one warning by whichever side receives it. The reference is
the schema, jupyter_gpumem/wire/schemas/comm.v1.json; the fixtures in tests/fixtures/protocol/ are checked
against it by the Python and the TypeScript tests alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import cast

from jupyter_gpumem._version import __version__
from jupyter_gpumem.budget.attribution import unlisted_bytes
from jupyter_gpumem.budget.privacy import Others as OthersFigure
from jupyter_gpumem.budget.reading import Reading
from jupyter_gpumem.gpu.model import Device, MigDevice
from jupyter_gpumem.gpu.model import GpuProcess as GpuProcessModel
from jupyter_gpumem.render import messages
from jupyter_gpumem.units import format_tenth
from jupyter_gpumem.wire.comm import (
    CONFIGURE,
    HISTORY_RANGE_S,
    INTERVAL_RANGE_S,
    PROTOCOL,
    TABLE,
    Hello,
    Notice,
    OtherUsers,
    PolicyState,
    Sample,
    SampleGpu,
    SampleMessage,
    UserShare,
)
from jupyter_gpumem.wire.comm import Cell as CellSpan
from jupyter_gpumem.wire.comm import Configure as ConfigureMessage
from jupyter_gpumem.wire.comm import GpuProcess as ProcessRow
from jupyter_gpumem.words import wire


class ProtocolError(ValueError):
    """A message that is not protocol 1; its text says what is wrong with it."""


def encode_sample(reading: Reading, notice: Notice | None = None, cells: list[CellSpan] | None = None) -> Sample:
    """One sample as JSON-ready data; ``notice``: what the server tells this kernel's user now, if anything
    (publish.Publisher.notice); ``cells``: the cells to mark (recorder.Recorder.spans), carried only when there are."""
    snapshot, state = reading.snapshot, reading.state
    plan = state.plan
    hidden = {d.uuid for d in plan.hidden} if plan else set()
    # Each sentence goes twice: in English for readers of older releases, and as its code and values (``*_said``)
    # that a reader of this release words itself (docs/protocol.md, "Codes and words").
    note, takes, limit_note = messages.policy_note(state, reading.started), state.takes, messages.limit_note(reading)
    sample: Sample = {
        "t": round(snapshot.taken_at, 3),
        "problem": snapshot.problem,
        "problem_said": wire(snapshot.problem),
        "simulated": snapshot.simulated_scenario,
        "policy": plan.policy.describe() if plan and not plan.policy.is_empty else None,
        "policy_state": cast(PolicyState | None, messages.policy_state(state, reading.started)),
        "policy_note": note,
        "policy_note_said": wire(note),
        "framework": state.framework,
        "framework_said": wire(state.framework),  # several frameworks' names; one name is data, null here
        "framework_started": reading.started,
        "takes": takes,
        "takes_said": wire(takes),
        "pid_namespace": reading.stance,
        "limit_note": limit_note,
        "limit_note_said": wire(limit_note),
        "gpus": [_encode_device(d, reading, d.uuid in hidden) for d in snapshot.devices],
        "notice": notice,
    }
    if snapshot.stalled_since is not None:
        sample["stalled_since"] = round(snapshot.stalled_since, 3)
    if snapshot.driver_limits_unknown is not None:
        sample["driver_limits_unknown"] = wire(snapshot.driver_limits_unknown)
    if cells:
        sample["cells"] = cells
    return sample


def _machine_shape(device: Device, reading: Reading) -> SampleGpu:
    """What a shared GPU adds (each only where it applies): memory shared with the CPU, the driver's limit on this
    kernel's cgroup, the MIG slice it runs on."""
    shape = cast(SampleGpu, {})
    if device.memory_shared:
        shape["memory_shared"] = True
    if (limit := device.driver_limit) is not None:
        shape["driver_limit"] = {
            "hard_bytes": limit.hard_bytes,
            "soft_bytes": limit.soft_bytes,
            "used_bytes": limit.used_bytes,
            "cgroup": limit.cgroup,
        }
    if (piece := reading.limits.slices.get(device.uuid or "")) is not None:
        shape["slice"] = {
            "uuid": piece.uuid,
            "name": piece.name,
            "profile": piece.profile,
            "total_bytes": piece.total_bytes,
            "used_bytes": piece.used_bytes,
            "gpu_instance_id": piece.gpu_instance_id,
        }
    return shape


def on_slice(device: Device, piece: MigDevice | None) -> Device:
    """The GPU as a kernel on one of its MIG slices has it: the slice's memory, and the processes on the slice (those
    of the other slices are other tenants, on memory this kernel cannot use)."""
    if piece is None or piece.total_bytes is None:
        return device
    used = piece.used_bytes
    return replace(
        device,
        total_bytes=piece.total_bytes,
        used_bytes=used,
        free_bytes=None if used is None else max(0, piece.total_bytes - used),
        processes=tuple(p for p in device.processes if p.gpu_instance_id in (None, piece.gpu_instance_id)),
    )


def _encode_device(device: Device, reading: Reading, hidden: bool) -> SampleGpu:
    device = on_slice(device, reading.limits.slices.get(device.uuid or ""))
    uuid = device.uuid or ""
    allocator = reading.allocators.get(uuid)
    split = reading.breakdowns.get(uuid)
    overhead = split.overhead if split else None
    own = reading.own(device)
    limit = reading.limits.gpus.get(uuid)
    processes, others = reading.shown(device)
    return {
        "index": device.index,
        "uuid": device.uuid,
        "name": device.name,
        "lost": device.lost,
        "hidden": hidden,  # the policy keeps this kernel off it (gpus=)
        "total_bytes": device.total_bytes,
        "used_bytes": device.used_bytes,
        "own_bytes": own.bytes,
        "own_source": own.source,
        "own_reason": own.reason,
        "own_reason_said": wire(own.reason),
        "own_pid": own.pid,
        "own_candidates": own.candidates,
        "unlisted_bytes": unlisted_bytes(device, reading.stance),
        "limit_kind": limit.kind if limit else None,
        "limit_hard": bool(limit and limit.hard),
        "limit_bytes": limit.bytes if limit else None,
        "budget_bytes": split.budget_bytes if split else None,
        "in_force": bool(split and split.in_force),
        "pool_bytes": split.pool_bytes if split else None,
        "pool_known": bool(split and split.pool_known),
        "overhead_bytes": overhead.bytes if overhead else None,
        "overhead_source": overhead.source if overhead else None,
        "over_reason": split.reason if split else None,
        "over_reason_said": wire(split.reason if split else None),
        "framework_bytes": allocator.in_use if allocator else None,
        "framework_peak_bytes": allocator.peak if allocator else None,
        "processes_known": device.processes_known,
        "processes": [_encode_process(p) for p in processes],
        "others": _encode_others(others),  # other users' processes, where privacy does not list them
        **_machine_shape(device, reading),
    }


def _encode_process(p: GpuProcessModel) -> ProcessRow:
    row: ProcessRow = {
        "pid": p.pid,
        "name": p.name,
        "user": p.user,
        "used_bytes": p.used_bytes,
        "cpu_percent": None if p.cpu_percent is None else float(format_tenth(p.cpu_percent)),
        "self": p.is_self,
        "local": p.local,
        # Seen by the host but its CPU% not measured yet (the first refresh): not the same as N/A.
        "cpu_pending": bool(p.local) and p.cpu_percent is None,
    }
    if p.gpu_instance_id is not None:  # on a GPU in MIG mode: its slice
        row["gpu_instance_id"] = p.gpu_instance_id
    return row


def _encode_others(others: OthersFigure | None) -> OtherUsers | None:
    if others is None:
        return None
    users: list[UserShare] | None = None
    if others.users is not None:
        users = [{"user": u.user, "processes": u.processes, "used_bytes": u.used_bytes} for u in others.users]
    return {"processes": others.processes, "used_bytes": others.used_bytes, "users": users}


def figures_only(sample: Sample) -> Sample:
    """The sample as history keeps it: the charted figures, without the process table and the notice."""
    gpus = [cast(SampleGpu, {k: v for k, v in g.items() if k not in TABLE}) for g in sample["gpus"]]
    return cast(Sample, {**{k: v for k, v in sample.items() if k != "notice"}, "gpus": gpus})


def hello(interval_s: float, history_s: float, history: list[Sample]) -> Hello:
    return {
        "protocol": 1,
        "type": "hello",
        "package_version": __version__,
        "interval_s": interval_s,
        "history_s": history_s,
        "history": history,
    }


def sample_message(sample: Sample) -> SampleMessage:
    return {"protocol": 1, "type": "sample", "sample": sample}


@dataclass(frozen=True)
class Configure:
    interval_s: float
    history_s: float
    language: str | None = None  # the interface's BCP 47 tag ("ja-JP"); None: the sidebar did not say


def check_settings(interval_s: object, history_s: object) -> Configure:
    """Raises ProtocolError unless both are numbers within the schema's ranges."""
    return Configure(
        _seconds("interval_s", interval_s, INTERVAL_RANGE_S), _seconds("history_s", history_s, HISTORY_RANGE_S)
    )


def _seconds(name: str, value: object, bounds: tuple[float, float]) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ProtocolError(f"{name} must be a number of seconds, not {value!r}")
    low, high = bounds
    if not low <= value <= high:
        raise ProtocolError(f"{name}={value:g} is outside {low:g}-{high:g} s")
    return float(value)


def parse_request(data: object) -> Configure:
    """A message from the sidebar. Raises ProtocolError (what is wrong) for anything but a protocol 1
    ``configure`` (the schema's ``$defs/configure``)."""
    theirs = CONFIGURE.other_version(data)
    if theirs is not None:
        side = "this kernel runs (%pip install -U jupyter-gpumem)" if theirs > PROTOCOL else "JupyterLab runs"
        raise ProtocolError(
            f"message.protocol is {theirs}: the sidebar speaks protocol {theirs}; this kernel's jupyter-gpumem "
            f"{__version__} reads protocol {PROTOCOL}: upgrade jupyter-gpumem where {side}"
        )
    problem = CONFIGURE.problem(data)
    if problem is not None:
        raise ProtocolError(problem)
    message = cast(ConfigureMessage, data)
    settings = check_settings(message["interval_s"], message["history_s"])
    return Configure(settings.interval_s, settings.history_s, message.get("language"))
