"""The process table: one definition of its rows, its columns and its order, for every table Python draws
(the text status, the HTML status, the inline view's still picture). The sidebar's own is table.ts.

A row is made from either source (a snapshot's GpuProcess or a protocol sample's process), then every
surface sorts and writes it the same way: largest first, N/A last (unknown is not small), then by PID,
as table.ts's first order. N/A is a cell of its own, never 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from jupyter_gpumem.gpu.model import GpuProcess
from jupyter_gpumem.i18n import gettext as _
from jupyter_gpumem.render.width import cut, left, right
from jupyter_gpumem.units import format_mib, format_tenth

NA = "N/A"
PENDING = "…"


class Row(NamedTuple):
    pid: int
    user: str | None
    used_bytes: int | None
    cpu_percent: float | None
    cpu_pending: bool  # the host sees the process but has not measured its CPU yet
    kind: str | None  # compute | graphics; None where the source does not say (a protocol sample)
    name: str | None
    badge: str | None  # "this kernel", "this kernel (matched)"


def largest_first(rows: Iterable[Row]) -> list[Row]:
    return sorted(rows, key=lambda r: (r.used_bytes is None, -(r.used_bytes or 0), r.pid))


def _badge(is_self: bool, matched: bool) -> str | None:
    return _("this kernel") if is_self else _("this kernel (matched)") if matched else None


def of_processes(processes: Iterable[GpuProcess], matched: int | None) -> list[Row]:
    """A snapshot's processes; ``matched``: the PID attribution matched to this kernel (docs/containers.md)."""
    return largest_first(
        Row(
            p.pid,
            p.user,
            p.used_bytes,
            p.cpu_percent,
            bool(p.local) and p.cpu_percent is None,
            p.kind,
            p.name,
            _badge(p.is_self, p.pid == matched),
        )
        for p in processes
    )


def of_sample(gpu: Mapping[str, Any]) -> list[Row]:
    """A protocol sample's processes of one GPU (docs/protocol.md); ``own_pid`` not marked ``self`` is matched."""
    own = gpu.get("own_pid")
    return largest_first(
        Row(
            p["pid"],
            p.get("user"),
            p.get("used_bytes"),
            p.get("cpu_percent"),
            bool(p.get("cpu_pending")),
            None,
            p.get("name"),
            _badge(bool(p.get("self")), own is not None and p["pid"] == own),
        )
        for p in gpu["processes"]
    )


def _cpu(row: Row) -> str:
    if row.cpu_percent is not None:
        return format_tenth(row.cpu_percent)
    return PENDING if row.cpu_pending else NA


class Column(NamedTuple):
    key: str  # as table.ts names its columns, for the class jp-GpuMem-col-<key>
    title: str
    tooltip: str  # what the heading means
    na_title: str  # what N/A means in this column
    numeric: bool  # right-aligned, tabular digits
    width: int  # characters in the text table; 0: the rest of the line
    cell: Callable[[Row], str]


def columns() -> tuple[Column, ...]:
    """The columns, worded in the language in use."""
    return (
        Column("pid", _("PID"), _("Process ID, as nvidia-smi shows it"), "", True, 8, lambda r: str(r.pid)),
        Column("user", _("User"), _("The user the process runs as"), _("the user cannot be read"), False, 12,
               lambda r: r.user or NA),
        Column("usedBytes", _("GPU memory"), _("GPU memory of the process, as nvidia-smi counts it"),
               _("the driver cannot tell: unknown, not zero"), True, 10, lambda r: format_mib(r.used_bytes)),
        Column("cpuPercent", _("CPU%"), _("CPU use of the process, % of one core"),
               _("the host cannot see this process"), True, 6, _cpu),
        Column("type", _("Type"), _("compute (CUDA) or graphics"), "", False, 8, lambda r: r.kind or NA),
        # Last: the only column without a bound, so the text table never wraps before it.
        Column("name", _("Name"), _("The executable's name (never its command line)"), _("the name cannot be read"),
               False, 0, lambda r: r.name or NA),
    )  # fmt: skip


def view_columns() -> tuple[Column, ...]:
    """The inline view's still picture: the protocol's sample it draws carries no process type, and the live view
    it stands in for (table.ts) has no such column."""
    return tuple(c for c in columns() if c.key != "type")


def text_lines(rows: list[Row], shown: Callable[[str], str]) -> list[str]:
    """The table as text: a heading, then a row each, this kernel's marked; ``shown`` makes a host string
    printable."""

    def line(cells: list[str]) -> str:
        fitted = [
            cell
            if not c.width
            else right(cut(cell, c.width), c.width)
            if c.numeric
            else left(cut(cell, c.width), c.width)
            for c, cell in zip(shown_columns, cells, strict=True)
        ]
        return "  ".join(fitted)

    shown_columns = columns()
    lines = [line([c.title.upper() for c in shown_columns])]
    for row in rows:
        mark = f"  <- {row.badge}" if row.badge else ""
        lines.append(line([shown(c.cell(row)) for c in shown_columns]) + mark)
    return lines
