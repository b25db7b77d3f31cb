"""`%gpumem cells`: which cell took the memory. Each executed cell's record (kernel/recorder.py keeps them) as a
table per GPU, text and HTML, and the out-of-memory advice's line naming the cell that raised the memory.

Two counts, side by side. As nvidia-smi counts it: from the sampler's readings while the cell ran (its peak is
the largest of them, with the reading before the cell; held after is the last reading before the next cell), so
a peak between two readings is missed and a cell shorter than the interval may have no reading of its own. By
the framework's allocator, once it has started: PyTorch's and TensorFlow's peaks are reset when the cell starts,
so their peak is the cell's, exactly; JAX cannot reset its peak, so a JAX cell's peak is known only when it
raised the kernel's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jupyter_gpumem.budget.framework_interface import Allocator
from jupyter_gpumem.i18n import gettext as _
from jupyter_gpumem.i18n import ngettext
from jupyter_gpumem.render.width import columns, cut, left, right
from jupyter_gpumem.units import format_duration, format_gib_or_mib, format_tenth
from jupyter_gpumem.wire.comm import Cell as CellSpan

LINE_CHARS = 40  # of a cell's first line in the table


@dataclass
class Cell:
    """One executed cell. Its NVML figures are per GPU uuid; its allocator figures per framework GPU (the
    framework's order), as the framework gave them with the peak since the cell started."""

    count: int | None  # its execution count; None while it runs, and for a cell not stored in the history
    line: str  # its first line that is not blank
    start_t: float  # time.time()
    end_t: float | None = None  # None while it runs
    error: bool = False
    held_before: dict[str, int | None] = field(default_factory=dict)  # the last reading before it started
    peak: dict[str, int | None] = field(default_factory=dict)  # the largest reading from then to the next cell
    held_after: dict[str, int | None] = field(default_factory=dict)  # the last reading before the next cell
    framework: str | None = None  # the started frameworks' names, as the allocator figures are theirs
    allocator_before: tuple[Allocator, ...] = ()
    allocator_after: tuple[Allocator, ...] = ()
    peak_exact: bool = False  # the allocator's peak is this cell's (reset when it started, or started in it)

    @property
    def duration_s(self) -> float | None:
        return None if self.end_t is None else self.end_t - self.start_t

    def change(self, uuid: str) -> int | None:
        before, after = self.held_before.get(uuid), self.held_after.get(uuid)
        return None if before is None or after is None else after - before

    def allocator_peak(self, index: int) -> int | None:
        """The framework's peak during this cell on its GPU ``index``; None where it cannot be told (JAX, when
        the cell stayed below the kernel's earlier peak)."""
        if index >= len(self.allocator_after):
            return None
        after = self.allocator_after[index]
        if self.peak_exact:
            return after.peak
        before = self.allocator_before[index] if index < len(self.allocator_before) else None
        return after.peak if before is None or after.peak > before.peak else None


def first_line(source: str) -> str:
    return next((line.strip() for line in source.splitlines() if line.strip()), "")


def short(line: str, chars: int = LINE_CHARS) -> str:
    return line if columns(line) <= chars else cut(line, chars - 1) + "…"


def label(cell: Cell) -> str:
    return f"[{cell.count}]" if cell.count is not None else "[ ]"


@dataclass(frozen=True)
class Table:
    """The cells on one GPU, as the text and the HTML show them."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]  # per cell: label, first line, then the figures (one per column after those)
    errors: tuple[bool, ...]  # per row: the cell raised


def tables(cells: list[Cell], gpus: list[tuple[str, str]], uuids: list[str]) -> list[Table]:
    """``gpus``: (uuid, "GPU 0 name") of every GPU; ``uuids``: the framework's GPUs by uuid, in its order."""
    out = []
    for uuid, name in gpus:
        index = uuids.index(uuid) if uuid in uuids else None
        nvml = any(c.peak.get(uuid) is not None for c in cells)
        framework = next((c.framework for c in reversed(cells) if c.framework and index is not None
                          and index < len(c.allocator_after)), None)  # fmt: skip
        if not nvml and framework is None:
            continue
        columns = [_("CELL"), _("FIRST LINE"), _("TIME"), _("PEAK"), _("HELD AFTER"), _("CHANGE")]
        if framework:
            columns += [
                _("{framework} PEAK").format(framework=framework),
                _("{framework} HELD").format(framework=framework),
            ]
        rows = []
        for cell in cells:
            row = [label(cell), short(cell.line), _duration(cell.duration_s)]
            row += [_figure(cell.peak.get(uuid)), _figure(cell.held_after.get(uuid)), _signed(cell.change(uuid))]
            if framework:
                held = (
                    cell.allocator_after[index].in_use
                    if index is not None and index < len(cell.allocator_after)
                    else None
                )
                row += [_figure(cell.allocator_peak(index) if index is not None else None), _figure(held)]
            rows.append(tuple(row))
        out.append(Table(name, tuple(columns), tuple(rows), tuple(c.error for c in cells)))
    return out


def notes(interval_s: float, framework: bool) -> list[str]:
    said = [
        _(
            "PEAK, HELD AFTER and CHANGE are this kernel's memory as nvidia-smi counts it, from readings every "
            "{interval_s} s: a peak between two readings is missed, and a cell shorter than that may have none (—)."
        ).format(interval_s=f"{interval_s:g}")
    ]
    if framework:
        said.append(
            _(
                "The framework's columns are its allocator's, exact: PyTorch's and TensorFlow's peak is reset as "
                "each cell starts; JAX cannot reset its peak, so a JAX cell shows one only where it raised the "
                "kernel's."
            )
        )
    return said


def empty() -> str:
    return _(
        "jupyter-gpumem: no cell has GPU memory figures yet: NVML tells of no memory this kernel holds, and no "
        "framework has started."
    )


def footer(found: list[Table], interval_s: float, hidden: int) -> list[str]:
    """What the table's figures mean, and how many cells it leaves out."""
    said = (
        [
            ngettext(
                "{hidden} earlier cell is not shown (%gpumem cells {all} shows it).",
                "{hidden} earlier cells are not shown (%gpumem cells {all} shows them).",
                hidden,
            ).format(hidden=hidden, all=hidden + len(found[0].rows))
        ]
        if hidden
        else []
    )
    return [*said, *notes(interval_s, any(len(t.columns) > 6 for t in found))]


def text(found: list[Table], interval_s: float, hidden: int) -> str:
    if not found:
        return empty()
    out = [_("jupyter-gpumem: GPU memory per cell, oldest first.")]
    for table in found:
        widths = [max(columns(r[i]) for r in (table.columns, *table.rows)) for i in range(len(table.columns))]
        out.append("")
        out.append(table.title)
        for row in (table.columns, *table.rows):
            cells = [left(v, w) if i < 2 else right(v, w) for i, (v, w) in enumerate(zip(row, widths, strict=True))]
            out.append("  ".join(cells).rstrip())
    out.append("")
    out.extend(footer(found, interval_s, hidden))
    return "\n".join(out)


def culprit(cells: list[Cell], uuid: str) -> str | None:
    """The advice's line: the finished cell that raised this kernel's memory on that GPU the most, as nvidia-smi
    counts it, with what it held before and after."""
    raised = [(change, c) for c in cells if c.end_t is not None and (change := c.change(uuid)) and change > 0]
    if not raised:
        return None
    _change, cell = max(raised, key=lambda pair: pair[0])
    return "  " + _(
        "Cell {cell} ({line}) raised this kernel's memory from {before} to {after} as nvidia-smi counts it, and it "
        "is still held (%gpumem cells lists every cell)."
    ).format(
        cell=label(cell),
        line=short(cell.line),
        before=format_gib_or_mib(cell.held_before[uuid]),
        after=format_gib_or_mib(cell.held_after[uuid]),
    )


def span(cell: Cell) -> CellSpan:
    """A cell as the comm sample carries it (wire/comm.py CellSpan): what the chart marks and its hover names."""
    return {"count": cell.count, "line": short(cell.line), "start_t": round(cell.start_t, 3),
            "end_t": None if cell.end_t is None else round(cell.end_t, 3), "error": cell.error}  # fmt: skip


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return _("running")
    return f"{format_tenth(seconds)} s" if seconds < 10 else format_duration(seconds)


def _figure(value: int | None) -> str:
    return "—" if value is None else format_gib_or_mib(value)


def _signed(value: int | None) -> str:
    if value is None:
        return "—"
    if value == 0:
        return "0"
    return ("+" if value > 0 else "-") + format_gib_or_mib(abs(value))
