"""The HTML the kernel writes (`%gpumem status`, `explain`, the inline view's still picture), through one
layer: jinja2 templates in render/templates/, autoescaped, with the one stylesheet (gpumem.css, which the
labextension's base.css imports too) in each output, so it looks the same without the labextension.

Every value a template writes passes ``_shown`` (control and bidi characters made visible: printable), then
jinja2's autoescape: a process named ``<img src=x onerror=alert(1)>`` shows exactly that. The HTML renders
the same Reading as the text (text.py, explain.py) and decides nothing again.

The templates' words go through gettext (jinja2's i18n extension, bound to jupyter_gpumem.i18n, so the language
in use when a template renders applies): ``{{ _("...") }}`` for a sentence, and for one with values
``{{ _("memory {used} used of {total}") | fill(used=..., total=...) }}``, the same ``{name}`` placeholders as
Python's, filled after translation with each value made printable and escaped (markup made here kept).
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_gpumem.budget.attribution import PidStance, pid_stance, unlisted_bytes
from jupyter_gpumem.budget.privacy import others_line
from jupyter_gpumem.budget.reading import Reading
from jupyter_gpumem.gpu.model import Device, Snapshot
from jupyter_gpumem.gpu.reader import stalled
from jupyter_gpumem.i18n import gettext, ngettext, pgettext
from jupyter_gpumem.render import cells as cells_words
from jupyter_gpumem.render import table, viewtext, words
from jupyter_gpumem.render.text import kernel_lines, lost, matched_pid, na_memory, printable, unlisted_note
from jupyter_gpumem.units import format_mib, format_percent, format_total

if TYPE_CHECKING:
    import jinja2

TEMPLATES = Path(__file__).parent / "templates"


def _shown(value: Any) -> Any:
    """The one place a value enters the HTML: text made printable (markup made here, such as the stylesheet,
    is left as it is), then escaped by the autoescape."""
    if isinstance(value, str) and not hasattr(value, "__html__"):
        return printable(words(value))
    return value


def _fill(template: str, **values: Any) -> Any:
    """A translated sentence with its ``{name}`` values put in: the sentence escaped, each value as ``_shown``
    writes it (markup made here, such as a macro's span, kept)."""
    import markupsafe

    return markupsafe.Markup(markupsafe.escape(template)).format(**{k: _shown(v) for k, v in values.items()})


@functools.cache
def _environment() -> jinja2.Environment:
    # Imported at the first HTML output, not when the extension loads: it is most of this module's cost.
    import jinja2
    import markupsafe

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        finalize=_shown,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,
        extensions=["jinja2.ext.i18n"],
    )
    env.install_gettext_callables(gettext, ngettext, newstyle=False, pgettext=pgettext)  # type: ignore[attr-defined]
    env.filters["fill"] = _fill
    css = (TEMPLATES / "gpumem.css").read_text()
    # Smaller in every output (and saved notebook): no comments, no layout whitespace.
    css = re.sub(r"\s+", " ", re.sub(r"/\*.*?\*/", "", css, flags=re.S))
    css = re.sub(r"\s*([{};])\s*|(\()\s+|\s+(\))", r"\1\2\3", css).strip()
    env.globals.update(css=markupsafe.Markup(css), table=table, viewtext=viewtext, basename=os.path.basename, lost=lost)
    return env


def render(template: str, **context: Any) -> str:
    return _environment().get_template(template).render(**context)


def fragment(template: str, macro: str, *args: Any) -> str:
    """One macro of a template, as HTML (a part of an output, which the whole output wraps)."""
    return str(getattr(_environment().get_template(template).module, macro)(*args))


class Rich:
    """Output with an HTML form and its plain text as the fallback: a terminal, a log or a frontend
    without HTML shows the text exactly as before."""

    def __init__(self, text: str, html_body: str):
        self.text = text
        self.html = html_body

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": self.text, "text/html": self.html}

    def __repr__(self) -> str:
        return self.text


def status(snapshot: Snapshot, reading: Reading | None, text: str, policy_lines: list[str]) -> Rich:
    """`%gpumem status`: ``text`` is text.render's table plus ``policy_lines`` (what the text shows)."""
    return Rich(text, status_html(snapshot, reading, policy_lines))


def status_html(snapshot: Snapshot, reading: Reading | None, policy_lines: list[str]) -> str:
    stance = pid_stance(snapshot)
    return render(
        "status.html.j2",
        snapshot=snapshot,
        stalled=stalled(snapshot),
        devices=[_device(device, reading, stance) for device in snapshot.devices],
        kernel_lines=[] if snapshot.problem else kernel_lines(snapshot, stance, reading),
        policy_lines=policy_lines,
    )


def _device(device: Device, reading: Reading | None, stance: PidStance | None) -> dict[str, Any]:
    """What the status shows of one GPU, worked out here so that the template only lays it out."""
    processes, others = reading.shown(device) if reading else (device.processes, None)
    hidden = unlisted_bytes(device, stance)
    return {
        "device": device,
        "used": format_mib(device.used_bytes),
        "total": format_total(device.total_bytes),
        "percent": format_percent(device.used_bytes, device.total_bytes),
        "free": format_mib(device.free_bytes),
        "mig": [(m.uuid or gettext("uuid unknown"), format_mib(m.used_bytes), format_mib(m.total_bytes)) for m in
                device.mig_devices],
        "rows": table.of_processes(processes, matched_pid(device, reading)),
        "others": others_line(others, format_mib) if others and others.processes else None,
        "na_memory": na_memory() if any(p.used_bytes is None for p in device.processes) else None,
        "unlisted": None if hidden is None else unlisted_note(hidden, stance),
    }  # fmt: skip


def explain(lines: list[str]) -> Rich:
    """`%gpumem explain`: its lines, the indented ones as details under their GPU."""
    return Rich("\n".join(lines), render("explain.html.j2", lines=lines))


def lines(text_lines: list[str], kind: str = "jp-GpuMem-messages") -> Rich:
    """The kernel's messages (``%gpumem fraction=…``, ``free``, ``reset``, a framework's import applying the policy):
    HTML in a notebook, the same lines as text in a terminal or a log."""
    return Rich("\n".join(text_lines), render("lines.html.j2", lines=text_lines, kind=kind))


def cells(found: list[cells_words.Table], interval_s: float, hidden: int, stalled: str | None = None) -> Rich:
    """`%gpumem cells`: a table per GPU, with render/cells.py's text beside it; ``stalled``: the driver has not
    answered (reader.stalled's sentence), said first."""
    text = cells_words.text(found, interval_s, hidden)
    return Rich(
        f"{stalled}\n{text}" if stalled else text,
        render("cells.html.j2", tables=found, notes=cells_words.footer(found, interval_s, hidden) if found else [],
               empty=cells_words.empty(), stalled=stalled),
    )  # fmt: skip
