"""One row per user, server, kernel and GPU, made from a single-user server's ``/api/gpumem/v1`` body.

Plain immutable data: the page and the metrics render these rows, they never re-read the servers' bodies.
A body is another process's word, and a user can change their server's code: one that is not valid
(wire/schemas/api.v1.json), or whose values the schema admits but no GPU could have (a size beyond any GPU's,
an id that is not an id), becomes that server's row with the reason, and the other servers' rows stand.

Servers run other releases than the hub's (docs/protocol.md, "Versioning and releases mixing"): a body from an older
release of version 1 lacks the fields added since, and reads as "not known" there; one from a newer release has
fields this one does not know, which are left alone; one of another version is that server's row saying, in one
sentence, which releases meet and what to upgrade.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, cast

from jupyter_gpumem._version import __version__
from jupyter_gpumem.wire.api import BODY, PATH, ServerBody
from jupyter_gpumem.wire.schemas import release
from jupyter_gpumem.words import Said

log = logging.getLogger("jupyter_gpumem.hub")


@dataclass(frozen=True, slots=True)
class Row:
    user: str
    server: str  # the server's name; "" for the default server
    kernel_id: str | None  # None: the server's row when it could not be read (``problem`` says why)
    status: str | None  # reporting | stale | not_reporting
    gpu_index: int | None
    gpu_uuid: str | None
    used_bytes: int | None
    budget_bytes: int | None
    over_budget: bool | None
    ceiling_fraction: float | None
    ceiling_bytes: int | None
    limit_kind: str | None  # mig | mps | cooperative
    limit_hard: bool
    execution_state: str | None  # the server's view: idle | busy | starting ...
    idle_s: float | None  # seconds since the kernel's last activity, while idle; None: busy or not known
    problem: str | None = None
    # When the server stopped answering; its rows are then the last ones it gave (``problem`` says why).
    stale_since: float | None = None
    # The server's NVIDIA driver has not answered since then: the GPU figures are the last it gave (api.v1.json).
    driver_stalled_since: float | None = None
    # The jupyter-gpumem release the server runs, as its body says (also where the hub cannot read that body).
    server_version: str | None = None
    driver_limit_bytes: int | None = None  # the hard limit the NVIDIA driver enforces on the kernel's cgroup
    slice: str | None = None  # the profile of the MIG slice the kernel runs on


@dataclass(frozen=True, slots=True)
class GpuRow:
    """A GPU as a server sees it; servers on one node see the same GPU (the same UUID)."""

    uuid: str
    index: int
    name: str | None
    lost: bool
    total_bytes: int | None
    used_bytes: int | None


# Beyond what any GPU holds (the largest have ~0.2 TiB): a size above this is a server's mistake or a lie.
MAX_BYTES = 2**44
MAX_KERNELS = 1000  # per server: the page and the metrics stay bounded whatever one body says
MAX_GPUS = 64
LAST_TIME = 95_617_584_000  # 5000-01-01 UTC: a time of day past it is no server's
# Kernel ids are UUIDs, GPU UUIDs "GPU-<uuid>" or "MIG-<uuid>": printable ASCII without markup, bounded (also
# what prometheus_reader.py accepts in those labels).
ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,95}")
NAME = re.compile(r"[^\x00-\x1f\x7f<>]{1,128}")


def _plausible_time(t: float) -> bool:
    """A time.time() a server could send: finite, not before 1970, before the year 5000 (a time of day is made of
    it on the page: datetime cannot make one past the year 9999)."""
    return math.isfinite(t) and 0 <= t < LAST_TIME


def _values_problem(body: ServerBody) -> Said | None:
    """What the schema admits but no server could mean, as a phrase naming the field (a code, so the page words it in
    the browser's language); None: all plausible."""
    if len(body["kernels"]) > MAX_KERNELS or len(body["gpus"]) > MAX_GPUS:
        return Said(
            "body_too_many",
            kernels=len(body["kernels"]),
            gpus=len(body["gpus"]),
            most_kernels=MAX_KERNELS,
            most_gpus=MAX_GPUS,
        )
    stalled = body.get("stalled_since")
    if stalled is not None and not _plausible_time(stalled):
        return Said("body_not_time", field="stalled_since")
    sizes: list[tuple[str, Any]] = []
    for i, gpu in enumerate(body["gpus"]):
        where = f"gpus[{i}]"
        if gpu["uuid"] is not None and not ID.fullmatch(gpu["uuid"]):
            return Said("body_not_uuid", field=f"{where}.uuid")
        if gpu["name"] is not None and not NAME.fullmatch(gpu["name"]):
            return Said("body_not_gpu_name", field=f"{where}.name")
        sizes += [(f"{where}.total_bytes", gpu["total_bytes"]), (f"{where}.used_bytes", gpu["used_bytes"])]
    for i, kernel in enumerate(body["kernels"]):
        where = f"kernels[{i}]"
        if not ID.fullmatch(kernel["id"]):
            return Said("body_not_kernel_id", field=f"{where}.id")
        if len(kernel["gpus"]) > MAX_GPUS:
            return Said("body_kernel_on_too_many", field=where, gpus=len(kernel["gpus"]), most_gpus=MAX_GPUS)
        last = kernel["last_activity"]
        if last is not None and not _plausible_time(last):
            return Said("body_not_time", field=f"{where}.last_activity")
        sizes.append((f"{where}.ceiling.max_limit_bytes", kernel["ceiling"]["max_limit_bytes"]))
        for j, on in enumerate(kernel["gpus"]):
            if not ID.fullmatch(on["uuid"]):
                return Said("body_not_uuid", field=f"{where}.gpus[{j}].uuid")
            sizes += [
                (f"{where}.gpus[{j}].used_bytes", on["used_bytes"]),
                (f"{where}.gpus[{j}].budget_bytes", on["budget_bytes"]),
            ]
    for field, value in sizes:
        if value is not None and value > MAX_BYTES:
            return Said("body_too_large", field=field, bytes=value)
    return None


def gpus_of_server(data: object) -> list[GpuRow]:
    """The GPUs of a body ``rows_of_server`` found valid (it checks first); the lost and the unnamed included."""
    body = cast(ServerBody, data)
    return [
        GpuRow(g["uuid"], g["index"], g["name"], g["lost"], g["total_bytes"], g["used_bytes"])
        for g in body["gpus"]
        if g["uuid"] is not None  # a GPU with no UUID cannot be told from the same GPU seen by another server
    ]


def refusal(data: object) -> Said | None:
    """The row's sentence for a body of another version than this hub reads (``BODY.other_version``): which
    releases meet and where to upgrade; None: a version-1 body (or none at all)."""
    version = BODY.other_version(data)
    if version is None:
        return None
    theirs = release(data)
    where = Said("hub_environment") if version > BODY.version else Said("server_environment")
    if theirs:
        return Said("server_other_version", release=theirs, version=version, hub_release=__version__, where=where)
    return Said("server_other_version_unnamed", version=version, hub_release=__version__, where=where)


def rows_of_server(user: str, server: str, data: object, now: float) -> list[Row]:
    """The rows of one server's reading. A kernel on no GPU still has one row (no GPU figures)."""
    sender = f"{user}'s server {server!r}"
    refused = refusal(data)
    if refused is not None:
        BODY.say(sender, f"{sender}: {refused}", log)
        return [replace(unreadable(user, server, refused), server_version=release(data))]
    problem = BODY.problem(data)  # fills in the fields an older server does not send
    if problem is None:
        problem = _values_problem(cast(ServerBody, data))
    BODY.tell(sender, problem, log)
    if problem is not None:
        return [unreadable(user, server, Said("body_not_valid", path=PATH, problem=problem))]
    body = cast(ServerBody, data)
    rows: list[Row] = []
    for kernel in body["kernels"]:
        ceiling = kernel["ceiling"]
        state, last = kernel["execution_state"], kernel["last_activity"]
        idle_s = max(0.0, now - last) if state == "idle" and last is not None else None
        # The kernel's row on no GPU; on each GPU it is on, that row with the GPU's figures.
        alone = Row(
            user=user,
            server=server,
            kernel_id=kernel["id"],
            status=kernel["status"],
            gpu_index=None,
            gpu_uuid=None,
            used_bytes=None,
            budget_bytes=None,
            over_budget=None,
            ceiling_fraction=ceiling["max_fraction"],
            ceiling_bytes=ceiling["max_limit_bytes"],
            limit_kind=None,
            limit_hard=False,
            execution_state=state,
            idle_s=idle_s,
            driver_stalled_since=body["stalled_since"],
            server_version=release(body),
        )
        rows.extend(
            replace(
                alone,
                gpu_index=gpu["index"],
                gpu_uuid=gpu["uuid"],
                used_bytes=gpu["used_bytes"],
                budget_bytes=gpu["budget_bytes"],
                over_budget=gpu["over_budget"],
                limit_kind=gpu["limit_kind"],
                limit_hard=gpu["limit_hard"],
                driver_limit_bytes=gpu.get("driver_limit_bytes"),
                slice=gpu.get("slice"),
            )
            for gpu in kernel["gpus"]
        )
        if not kernel["gpus"]:
            rows.append(alone)
    return rows


def unreadable(user: str, server: str, problem: str) -> Row:
    return Row(user, server, None, None, None, None, None, None, None, None, None, None, False, None, None, problem)


def valid(rows: Iterable[Row]) -> bool:
    """Whether these rows are a server's reading (not the one row saying it could not be read)."""
    return all(r.problem is None for r in rows)
