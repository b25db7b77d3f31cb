"""`largest_batch`'s result (kernel/largest.py) as text and as HTML: the sizes measured and their peaks, the
line through them, the limit, the margin, the answer and its headroom. Both forms show one View, worded by the
kernel; nothing here decides anything again."""

from __future__ import annotations

from dataclasses import dataclass

from jupyter_gpumem.i18n import pgettext
from jupyter_gpumem.render.html import render
from jupyter_gpumem.render.width import columns, left, right


@dataclass(frozen=True)
class View:
    headline: str
    measured: list[tuple[str, str, str]]  # batch size, peak as nvidia-smi would print it, the exact-ish small figure
    facts: list[tuple[str, str]]  # label, value
    notes: list[str]  # sentences: not a line, why there is no answer
    counted: str  # "counted by …", or empty


def text(view: View) -> str:
    lines = [view.headline]
    if view.measured:
        batch, peak = pgettext("largest_batch table", "batch"), pgettext("largest_batch table", "peak")
        lines.append(f"  {right(batch, 7)}  {right(peak, 10)}")
        lines.extend(
            f"  {right(n, 7)}  {right(mib, 10)}" + (f"  ({small})" if small else "") for n, mib, small in view.measured
        )
    if view.counted:
        lines.append(f"  {view.counted}")
    # The label's colon is the language's: Chinese writes a full-width one.
    labels = [pgettext("largest_batch fact", "{label}:").format(label=label) for label, _ in view.facts]
    width = max((columns(label) for label in labels), default=0)
    lines.extend(f"  {left(label, width)} {value}" for label, (_, value) in zip(labels, view.facts, strict=True))
    lines.extend(f"  {note}" for note in view.notes)
    return "\n".join(lines)


def html(view: View) -> str:
    return render("largest.html.j2", view=view)
