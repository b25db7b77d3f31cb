"""Rich output: `%gpumem status` and `explain` as HTML, with their plain text as the ``text/plain`` fallback.

The HTML renders the same Reading as the text (report.py, explain.py) and decides nothing again. Colours
are JupyterLab's ``--jp-*`` variables (with fallbacks for frontends without them, VS Code among them), so
the light and dark themes both read well. Every string from the GPU host (process names, users, GPU
names) is made printable (report.printable) and then escaped: a process named ``<img src=x
onerror=alert(1)>`` shows exactly that.
"""

from __future__ import annotations

import html
import os
from typing import Any

from jupyter_gpumem.budget.attribution import PidStance, pid_stance, unlisted_bytes
from jupyter_gpumem.budget.privacy import others_line
from jupyter_gpumem.budget.reading import Reading
from jupyter_gpumem.gpu.model import Device, GpuProcess, Snapshot
from jupyter_gpumem.render.text import LOST, NA_MEMORY, kernel_lines, printable, unlisted_note
from jupyter_gpumem.units import format_mib, format_percent, format_total

# One stylesheet for every rich output, scoped to its class. JupyterLab's variables first, VS Code's next,
# then a plain fallback.
CSS = """
.jp-gpumem-rich { font-family: var(--jp-ui-font-family, var(--vscode-font-family, sans-serif));
  font-size: var(--jp-ui-font-size1, 13px); color: var(--jp-ui-font-color1, var(--vscode-editor-foreground, #222));
  line-height: 1.4; }
.jp-gpumem-rich p { margin: 2px 0; }
.jp-gpumem-rich .jp-gpumem-muted { color: var(--jp-ui-font-color2, #616161); }
.jp-gpumem-rich .jp-gpumem-gpu { margin: 8px 0 2px 0; font-weight: 600; }
.jp-gpumem-rich .jp-gpumem-sim { color: var(--jp-warn-color0, #b45f06); font-weight: 600; }
.jp-gpumem-rich table.jp-gpumem-processes { border-collapse: collapse; margin: 2px 0 4px 0;
  font-variant-numeric: tabular-nums; }
.jp-gpumem-rich table.jp-gpumem-processes th { text-align: left; font-weight: 600; padding: 1px 10px 1px 4px;
  color: var(--jp-ui-font-color1, #222); border-bottom: 1px solid var(--jp-border-color2, #e0e0e0); }
.jp-gpumem-rich table.jp-gpumem-processes td { padding: 1px 10px 1px 4px; white-space: nowrap;
  max-width: 28em; overflow: hidden; text-overflow: ellipsis; }
.jp-gpumem-rich table.jp-gpumem-processes .jp-gpumem-num { text-align: right; }
.jp-gpumem-rich tr.jp-gpumem-self td { background: var(--jp-layout-color2, #eee); font-weight: 600; }
.jp-gpumem-rich .jp-gpumem-badge { margin-left: 6px; padding: 0 4px; border-radius: 2px; font-size: 0.85em;
  background: var(--jp-brand-color1, #1976d2); color: var(--jp-ui-inverse-font-color1, #fff); font-weight: 600; }
.jp-gpumem-rich .jp-gpumem-na { color: var(--jp-ui-font-color2, #616161); font-style: italic; }
.jp-gpumem-rich .jp-gpumem-lost { color: var(--jp-error-color1, #d32f2f); font-weight: 600; }
.jp-gpumem-rich .jp-gpumem-warn { color: var(--jp-warn-color1, #f57c00); }
.jp-gpumem-rich .jp-gpumem-error { color: var(--jp-error-color1, #d32f2f); }
.jp-gpumem-rich .jp-gpumem-detail { margin-left: 1.5em; }
"""

NA_TITLE = "the driver cannot tell: unknown, not zero"


def esc(text: object) -> str:
    """Text from anywhere as HTML: control characters made visible, then escaped (quotes too)."""
    return html.escape(printable(str(text)), quote=True)


def na(text: str, title: str = NA_TITLE) -> str:
    return f'<span class="jp-gpumem-na" title="{esc(title)}">{esc(text)}</span>'


def figure(text: str) -> str:
    """A figure, styled as N/A when it is one."""
    return na(text) if text.startswith("N/A") else esc(text)


class Rich:
    """Output with an HTML form and its plain text as the fallback: a terminal, a log or a frontend
    without HTML shows the text exactly as before."""

    def __init__(self, text: str, html_body: str):
        self.text = text
        self.html = f'<div class="jp-gpumem-rich"><style>{CSS}</style>{html_body}</div>'

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": self.text, "text/html": self.html}

    def __repr__(self) -> str:
        return self.text


def status(snapshot: Snapshot, reading: Reading | None, text: str, policy_lines: list[str]) -> Rich:
    """`%gpumem status`: ``text`` is report.render's table plus ``policy_lines`` (what the text shows)."""
    return Rich(text, status_html(snapshot, reading, policy_lines))


def status_html(snapshot: Snapshot, reading: Reading | None, policy_lines: list[str]) -> str:
    if snapshot.problem:
        return "".join(f"<p>{esc(line)}</p>" for line in [snapshot.problem, *policy_lines])
    driver = snapshot.driver_version or "version unknown"
    parts = [
        '<p class="jp-gpumem-muted">jupyter-gpumem · NVIDIA driver '
        f"{esc(driver)} · this kernel: pid {snapshot.own_pid}</p>"
    ]
    if snapshot.simulated_scenario:
        scenario = os.path.basename(snapshot.simulated_scenario)
        parts.append(
            f'<p class="jp-gpumem-sim" title="{esc(snapshot.simulated_scenario)}">SIMULATED GPU: stand-in NVML, '
            f"scenario {esc(scenario)}; no real GPU or driver is involved.</p>"
        )
    if not snapshot.devices:
        parts.append("<p>The NVIDIA driver is loaded but reports no GPUs.</p>")
    stance = pid_stance(snapshot)
    for device in snapshot.devices:
        parts.append(_device_html(device, reading, stance))
    lines = kernel_lines(snapshot, stance, reading)
    if lines:
        parts.append('<div class="jp-gpumem-kernel">')
        parts.extend(_line(line) for line in lines)
        parts.append("</div>")
    if policy_lines:
        parts.append('<div class="jp-gpumem-policy">')
        parts.extend(_line(line) for line in policy_lines)
        parts.append("</div>")
    return "".join(parts)


def _line(line: str) -> str:
    """A line of the text form; an indented one stays indented."""
    if line.startswith(" "):
        return f'<p class="jp-gpumem-detail">{esc(line.strip())}</p>'
    return f"<p>{esc(line)}</p>"


def _device_html(device: Device, reading: Reading | None, stance: PidStance | None) -> str:
    title = device.name or "unknown GPU"
    uuid = device.uuid or "uuid unknown"
    parts = [
        f'<section class="jp-gpumem-device" data-gpu="{device.index}">',
        f'<p class="jp-gpumem-gpu">GPU {device.index} {esc(title)} '
        f'<span class="jp-gpumem-muted">· {esc(uuid)}</span></p>',
    ]
    if device.lost:
        parts.append(f'<p class="jp-gpumem-lost">{esc(LOST)}</p></section>')
        return "".join(parts)
    if device.utilization_percent is not None:
        util = esc(f"{device.utilization_percent}%")
    else:
        util = na("N/A (not reported in MIG mode)" if device.mig_enabled else "N/A", "the driver does not report it")
    parts.append(
        '<p class="jp-gpumem-memory">memory '
        f'<span class="jp-gpumem-used">{figure(format_mib(device.used_bytes))}</span> used of '
        f'<span class="jp-gpumem-total">{figure(format_total(device.total_bytes))}</span> '
        f"({figure(format_percent(device.used_bytes, device.total_bytes))}) · "
        f'<span class="jp-gpumem-free">{figure(format_mib(device.free_bytes))}</span> free · utilisation {util}</p>'
    )
    for slot, mig in enumerate(device.mig_devices):
        parts.append(
            f"<p>MIG {slot} {esc(mig.uuid or 'uuid unknown')} {figure(format_mib(mig.used_bytes))} used of "
            f"{figure(format_mib(mig.total_bytes))}</p>"
        )
    processes, others = reading.shown(device) if reading else (device.processes, None)
    if not device.processes_known:
        parts.append("<p>processes: the driver does not report them on this GPU</p>")
    elif not device.processes:
        parts.append('<p class="jp-gpumem-muted">no processes</p>')
    elif processes:
        own = reading.own(device) if reading else None
        matched = own.pid if own and own.source == "matched" else None
        rows = sorted(processes, key=lambda p: -1 if p.used_bytes is None else p.used_bytes, reverse=True)
        parts.append(
            '<table class="jp-gpumem-processes"><thead><tr><th class="jp-gpumem-num">PID</th><th>User</th>'
            '<th class="jp-gpumem-num">GPU memory</th><th class="jp-gpumem-num">CPU%</th><th>Type</th>'
            "<th>Name</th></tr></thead><tbody>"
        )
        parts.extend(_process_row(p, matched) for p in rows)
        parts.append("</tbody></table>")
    if others and others.processes:
        parts.append(f'<p class="jp-gpumem-others">{esc(others_line(others, format_mib))}</p>')
    if any(p.used_bytes is None for p in device.processes):
        parts.append(f'<p class="jp-gpumem-muted">{esc(NA_MEMORY)}</p>')
    hidden = unlisted_bytes(device, stance)
    if hidden is not None:
        parts.append(f"<p>{esc(unlisted_note(hidden, stance))}</p>")
    parts.append("</section>")
    return "".join(parts)


def _process_row(proc: GpuProcess, matched: int | None) -> str:
    cpu = "N/A" if proc.cpu_percent is None else f"{proc.cpu_percent:.0f}"
    badge = (
        '<span class="jp-gpumem-badge">this kernel</span>'
        if proc.is_self
        else '<span class="jp-gpumem-badge">this kernel (matched)</span>'
        if proc.pid == matched
        else ""
    )
    name = figure(proc.name) if proc.name else na("N/A", "the name cannot be read")
    user = esc(proc.user) if proc.user else na("N/A", "the user cannot be read")
    whole = esc(proc.name or "N/A")
    mine = proc.is_self or proc.pid == matched
    return (
        f'<tr class="{"jp-gpumem-self" if mine else ""}" data-pid="{proc.pid}">'
        f'<td class="jp-gpumem-num">{proc.pid}</td><td>{user}</td>'
        f'<td class="jp-gpumem-num">{figure(format_mib(proc.used_bytes))}</td>'
        f'<td class="jp-gpumem-num">{na(cpu, "the host cannot see this process") if cpu == "N/A" else esc(cpu)}</td>'
        f'<td>{esc(proc.kind)}</td><td title="{whole}"><span class="jp-gpumem-name">{name}</span>{badge}</td></tr>'
    )


def explain(lines: list[str]) -> Rich:
    """`%gpumem explain`: its lines, the indented ones as details under their GPU."""
    return Rich("\n".join(lines), '<div class="jp-gpumem-explain">' + "".join(_line(x) for x in lines) + "</div>")
