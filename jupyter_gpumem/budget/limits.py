"""Which limit holds this kernel's GPU memory on each GPU, and whether it is hard.

- mig (hard): the GPU is split into MIG partitions; a process on one cannot use more than its memory.
- mps (hard): an MPS server is in use and ``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`` caps this process on that
  GPU (per process, not per container; read by CUDA when it starts in the process).
- cooperative: %gpumem's budget; the framework keeps to it, nothing enforces it.

Also: reading and writing ``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`` (``0=1G,1=512MB``: CUDA device ordinals,
after CUDA_VISIBLE_DEVICES) for ``%gpumem … mps=on`` (docs/containers.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from jupyter_gpumem import values
from jupyter_gpumem.budget.plan import Plan, kernel_slices, visible_indices
from jupyter_gpumem.gpu.model import MigDevice, Snapshot
from jupyter_gpumem.i18n import gettext as _
from jupyter_gpumem.units import GiB, MiB, format_mib
from jupyter_gpumem.words import Said, word

Kind = Literal["mig", "mps", "cooperative"]

PINNED = "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"
PIPE = "CUDA_MPS_PIPE_DIRECTORY"
DEFAULT_PIPE = "/tmp/nvidia-mps"
FORM = "0=1G,1=512MB"

_SIZE = re.compile(r"([0-9]{1,15}(?:\.[0-9]{1,15})?)([KMGT])B?", re.IGNORECASE)  # ASCII, bounded: never inf
_SCALE = {"K": 1 << 10, "M": MiB, "G": GiB, "T": 1 << 40}


class PinnedError(ValueError):
    """A CUDA_MPS_PINNED_DEVICE_MEM_LIMIT that cannot be read; the text says why, as a sentence."""


def parse_pinned(text: str) -> dict[int, int]:
    """``"0=1G,1=512MB"`` -> {0: 1 GiB, 1: 512 MiB}: bytes per CUDA device ordinal. Units K, M, G, T, with or
    without B, as powers of 1024. Raises PinnedError (the sentence) for anything else."""

    def refuse(why: Said) -> PinnedError:
        return PinnedError(Said("mps_limit_unreadable", variable=PINNED, text=text, form=FORM, why=why))

    limits: dict[int, int] = {}
    if not text.strip():
        raise refuse(Said("mps_limit_empty"))
    for item in text.split(","):
        ordinal, sep, size = (part.strip() for part in item.partition("="))
        if not sep or not values.DIGITS.fullmatch(ordinal):
            raise refuse(Said("mps_limit_no_ordinal", item=repr(item.strip())))
        found = _SIZE.fullmatch(size)
        if found is None:
            raise refuse(Said("mps_limit_no_unit", size=repr(size)))
        amount = int(float(found[1]) * _SCALE[found[2].upper()])
        if amount <= 0:
            raise refuse(Said("mps_limit_zero", ordinal=ordinal))
        if int(ordinal) in limits:
            raise refuse(Said("mps_limit_twice", ordinal=ordinal))
        limits[int(ordinal)] = amount
    return limits


def format_pinned(limits: Mapping[int, int]) -> str:
    """{0: 4 GiB, 1: 512 MiB} -> "0=4096MB,1=512MB" (whole MiB, rounded down)."""
    return ",".join(f"{ordinal}={amount // MiB}MB" for ordinal, amount in sorted(limits.items()))


def mps_pipe(environ: Mapping[str, str]) -> Path:
    return Path(environ.get(PIPE) or DEFAULT_PIPE)


def mps_server(environ: Mapping[str, str]) -> bool:
    """An MPS control daemon is reachable: its ``control`` pipe is in the pipe directory."""
    return (mps_pipe(environ) / "control").exists()


def cuda_order(visible: str | None, devices: Sequence[tuple[int, str]]) -> list[str]:
    """The GPUs (by NVML uuid) in CUDA's order: CUDA device ordinal i is the i-th. ``visible``:
    CUDA_VISIBLE_DEVICES, read as plan.visible_indices reads it; ``devices``: (NVML index, uuid) of every GPU.
    Assumes CUDA counts in PCI order as NVML does (CUDA_DEVICE_ORDER=PCI_BUS_ID, which %gpumem sets where it
    matters)."""
    if visible is None:
        return [uuid for _, uuid in sorted(devices)]
    uuid_of = dict(devices)
    return [uuid_of[index] for index in visible_indices(visible, devices)[0]]


@dataclass(frozen=True)
class Limit:
    kind: Kind
    bytes: int | None  # the partition's memory, the pinned limit, or the budget; None: not known

    @property
    def hard(self) -> bool:
        return self.kind != "cooperative"

    def describe(self) -> str:
        if self.kind == "mig":
            if self.bytes is None:
                return _("hard: a MIG partition (which one is not known)")
            return _("hard: a MIG partition of {size}").format(size=format_mib(self.bytes))
        if self.kind == "mps":
            return _("hard: the MPS limit of {size} on this process's memory").format(size=format_mib(self.bytes))
        return _("cooperative: %gpumem's budget of {size}, which the framework keeps to").format(
            size=format_mib(self.bytes)
        )


@dataclass(frozen=True)
class Limits:
    """Every GPU's limit (by uuid; a GPU with none is absent), and what to tell about MPS."""

    gpus: dict[str, Limit] = field(default_factory=dict)
    mps_server: bool = False
    pinned: dict[int, int] | None = None  # this process's MPS limits by CUDA ordinal, when set and readable
    problems: tuple[Said, ...] = ()  # sentences: a limit that cannot be read, or one that limits nothing
    slices: Mapping[str, MigDevice | None] = field(default_factory=dict)  # plan.kernel_slices: by GPU uuid


def read(snapshot: Snapshot, environ: Mapping[str, str] | None, budgets: Mapping[str, int | None]) -> Limits:
    """The limits on this kernel's memory now. ``environ``: the kernel's environment (None: MPS is not
    looked at); ``budgets``: %gpumem's budget per GPU (uuid)."""
    server = environ is not None and mps_server(environ)
    environ = environ or {}
    problems: list[Said] = []
    pinned = None
    text = environ.get(PINNED)
    if text is not None:
        try:
            pinned = parse_pinned(text)
        except PinnedError as error:
            problems.append(Said("sentence", phrase=error.args[0]))
        if pinned and not server:
            problems.append(Said("mps_limit_without_server", variable=PINNED, pipe=str(mps_pipe(environ))))
    order = cuda_order(environ.get("CUDA_VISIBLE_DEVICES"), [(d.index, d.uuid) for d in snapshot.devices if d.uuid])
    slices = kernel_slices(environ.get("CUDA_VISIBLE_DEVICES"), snapshot.devices)
    gpus = {}
    for device in snapshot.devices:
        if device.uuid is None or device.lost:
            continue
        ordinal = order.index(device.uuid) if device.uuid in order else None
        if device.mig_enabled:
            piece = slices.get(device.uuid)
            gpus[device.uuid] = Limit("mig", piece.total_bytes if piece is not None else None)
        elif server and pinned and ordinal is not None and ordinal in pinned:
            gpus[device.uuid] = Limit("mps", pinned[ordinal])
        elif budgets.get(device.uuid) is not None:
            gpus[device.uuid] = Limit("cooperative", budgets[device.uuid])
    return Limits(gpus, server, pinned, tuple(problems), slices)


# ---------------------------------------------------------------------- %gpumem … mps=on


def mps_refusal(plan: Plan, environ: Mapping[str, str], started: Sequence[str]) -> str | None:
    """Why mps=on cannot take effect here (a sentence), or None. ``started``: the frameworks that have
    started CUDA in this kernel."""
    if not mps_server(environ):
        return _(
            "mps=on needs an MPS server, and none is in use here (no control pipe in {pipe}): an administrator "
            "starts one (nvidia-cuda-mps-control -d; docs/containers.md). Without it %gpumem's budget is "
            "cooperative."
        ).format(pipe=mps_pipe(environ))
    if started:
        return _(
            "mps=on is too late: {frameworks} started CUDA in this kernel, and CUDA reads {variable} only when it "
            "starts. Restart the kernel and run %gpumem {policy} first."
        ).format(frameworks=word("join_and", {}).join(started), variable=PINNED, policy=plan.policy.describe())
    if not any(g.budget_bytes is not None for g in plan.gpus):
        return _(
            "mps=on caps each GPU at this kernel's budget, and no budget is set: add fraction= or limit= "
            "(for example %gpumem fraction=0.4 mps=on)."
        )
    text = environ.get(PINNED)
    if text:
        try:
            parse_pinned(text)
        except PinnedError as error:
            said = error.args[0]
            return _("{error}, so mps=on cannot keep to it; ask your administrator.").format(
                error=said.words() if isinstance(said, Said) else str(error)
            )
    return None


def mps_environment(plan: Plan, environ: Mapping[str, str], before: str | None) -> dict[str, str]:
    """The variables that make the plan's budgets this process's MPS limits when CUDA starts. ``before``:
    the limit set before %gpumem changed anything (an administrator's): never raised, only lowered."""
    devices = [(g.index, g.uuid) for g in plan.gpus] + [(d.index, d.uuid) for d in (*plan.hidden, *plan.lost) if d.uuid]
    visible = plan.cuda_visible_devices or environ.get("CUDA_VISIBLE_DEVICES")
    order = cuda_order(visible, devices)
    budgets = {g.uuid: g.budget_bytes for g in plan.gpus}
    limits = parse_pinned(before) if before else {}
    for ordinal, uuid in enumerate(order):
        budget = budgets.get(uuid)
        if budget is not None:
            limits[ordinal] = min(budget, limits.get(ordinal, budget))
    return {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", PINNED: format_pinned(limits)}
