"""The `%gpumem status` table: plain text that reads the same in a notebook and a terminal."""

from __future__ import annotations

import os
import unicodedata
from typing import cast

from jupyter_gpumem.budget.attribution import PidStance, pid_stance, unlisted_bytes
from jupyter_gpumem.budget.privacy import others_line
from jupyter_gpumem.budget.reading import Reading
from jupyter_gpumem.gpu.model import Device, Snapshot
from jupyter_gpumem.gpu.reader import stalled
from jupyter_gpumem.i18n import gettext as _
from jupyter_gpumem.render import table, words
from jupyter_gpumem.units import format_mib, format_percent, format_total
from jupyter_gpumem.words import Said, word

_INDENT = "       "


def lost() -> str:
    return _(
        "LOST: the driver reports this GPU has fallen off the bus (NVML_ERROR_GPU_IS_LOST). It needs a reset "
        "(nvidia-smi -r) or a reboot; the other GPUs read as usual."
    )


def na_memory() -> str:
    return _(
        "N/A memory: the driver cannot tell per-process memory on this GPU (Windows WDDM, some MIG setups); "
        "it is unknown, not zero."
    )


# Control characters (C0, DEL, C1), invisible formatting (the bidi overrides and isolates, zero widths, the
# BOM), lone surrogates and the line and paragraph separators: a name from the GPU host holding one could
# forge a line, a colour, or read backwards on screen. format/printable.ts printable() escapes the same set
# (tests/fixtures/golden/ pins that both do).
_UNPRINTABLE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def printable(text: str) -> str:
    """Text from the GPU host (process names, users, GPU names) with every character that could forge a line
    or reorder the text written as an escape ("\\u202e"); everything else, non-ASCII included, as it is."""
    return "".join(_escape(c) if unicodedata.category(c) in _UNPRINTABLE else c for c in text)


def _escape(c: str) -> str:
    code = ord(c)
    if c in _NAMED:
        return _NAMED[c]
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _device_lines(device: Device, stance: PidStance | None, reading: Reading | None) -> list[str]:
    title = printable(device.name or _("unknown GPU"))
    uuid = printable(device.uuid or _("uuid unknown"))
    lines = [f"GPU {device.index:<2} {title}  ·  {uuid}"]
    if device.lost:
        lines.append(_INDENT + lost())
        return lines
    util = (
        f"{device.utilization_percent}%"
        if device.utilization_percent is not None
        else _("N/A (not reported in MIG mode)")
        if device.mig_enabled
        else "N/A"
    )
    lines.append(
        _INDENT
        + _("memory {used} used of {total} ({percent}) · {free} free · utilisation {utilisation}").format(
            used=format_mib(device.used_bytes),
            total=format_total(device.total_bytes),
            percent=format_percent(device.used_bytes, device.total_bytes),
            free=format_mib(device.free_bytes),
            utilisation=util,
        )
    )
    if device.memory_shared:
        lines.append(_INDENT + Said("memory_shared").words())
    mine = reading.limits.slices.get(device.uuid or "") if reading else None
    for slot, mig in enumerate(device.mig_devices):
        profile = f"{printable(mig.profile)}  " if mig.profile else ""
        lines.append(
            f"{_INDENT}MIG {slot}  {printable(mig.uuid or _('uuid unknown'))}  {profile}"
            + _("{used} used of {total}").format(used=format_mib(mig.used_bytes), total=format_mib(mig.total_bytes))
        )
    if mine is not None:
        lines.append(
            _INDENT + Said("mig_slice", profile=mine.profile or "?", total_bytes=cast(int, mine.total_bytes)).words()
        )
    processes, others = reading.shown(device) if reading else (device.processes, None)
    if not device.processes_known:
        lines.append(_INDENT + _("processes: the driver does not report them on this GPU"))
    elif not device.processes:
        lines.append(_INDENT + _("no processes"))
    elif processes:
        rows = table.of_processes(processes, matched_pid(device, reading))
        lines.extend(_INDENT + line for line in table.text_lines(rows, printable))
    if others and others.processes:
        lines.append(_INDENT + printable(others_line(others, format_mib)))
    if any(p.used_bytes is None for p in device.processes):
        lines.append(_INDENT + na_memory())
    hidden = unlisted_bytes(device, stance)
    if hidden is not None:
        lines.append(_INDENT + unlisted_note(hidden, stance))
    return lines


def matched_pid(device: Device, reading: Reading | None) -> int | None:
    """The PID attribution matched to this kernel on this GPU, where NVML does not list the kernel's own."""
    own = reading.own(device) if reading else None
    return own.pid if own and own.source == "matched" else None


def unlisted_note(hidden: int, stance: PidStance | None) -> str:
    if stance == "translated":
        return _(
            "not listed: {hidden} in use that no listed process accounts for: the driver hides other containers' "
            "processes"
        ).format(hidden=format_mib(hidden))
    return _(
        "not listed: {hidden} in use that no listed process accounts for: processes the driver does not list "
        "(other containers', perhaps this one's)"
    ).format(hidden=format_mib(hidden))


def render(snapshot: Snapshot, reading: Reading | None = None) -> str:
    """The table; with a Reading (of this snapshot), also this kernel's own memory where NVML does not list
    it under its PID: matched, estimated or unknown, and why."""
    if snapshot.problem:
        return words(snapshot.problem)
    driver = printable(snapshot.driver_version or _("version unknown"))
    lines = [
        _("jupyter-gpumem · NVIDIA driver {driver} · this kernel: pid {pid}").format(
            driver=driver, pid=snapshot.own_pid
        )
    ]
    if snapshot.simulated_scenario:
        scenario = printable(os.path.basename(snapshot.simulated_scenario))
        lines.append(
            _("SIMULATED GPU: stand-in NVML, scenario {scenario}; no real GPU or driver is involved.").format(
                scenario=scenario
            )
        )
    silent = stalled(snapshot)
    if silent:
        lines.append(words(silent))
    elif not snapshot.devices:
        lines.append(_("The NVIDIA driver is loaded but reports no GPUs."))
    stance = pid_stance(snapshot)
    for device in snapshot.devices:
        lines.append("")
        lines.extend(_device_lines(device, stance, reading))
    kernel = kernel_lines(snapshot, stance, reading)
    if kernel:
        lines.append("")
        lines.extend(kernel)
    return "\n".join(lines)


def kernel_lines(snapshot: Snapshot, stance: PidStance | None, reading: Reading | None) -> list[str]:
    """Where this kernel stands towards NVML's PIDs (docs/containers.md), and its figure per GPU where NVML
    does not list it under its own PID."""
    pid = snapshot.own_pid
    owns = [(d, reading.own(d)) for d in snapshot.devices if not d.lost] if reading else []
    estimated = any(own.source == "estimated" for _device, own in owns)
    if stance == "untranslated":
        lines = [
            _(
                "This kernel (pid {pid}) runs in a container whose PIDs the driver does not translate: none of the "
                "PIDs NVML lists is a process of this container (they are missing here, or run other programs). So "
                "its own memory is matched, estimated or unknown, never taken for 0. For exact figures: a driver "
                "that translates PIDs into containers, or the host's PID namespace (--pid=host, hostPID: true; "
                "docs/containers.md)."
            ).format(pid=pid)
        ]
    elif stance == "unlisted" and estimated:
        lines = [
            _(
                "This kernel (pid {pid}) runs in a container whose processes the driver does not list: its "
                "framework holds GPU memory, and NVML lists no process of this container. So its own memory is "
                "estimated or unknown (docs/containers.md)."
            ).format(pid=pid)
        ]
    elif stance == "unlisted":
        lines = [
            _(
                "This kernel (pid {pid}) runs in a container (a PID namespace of its own), and NVML lists no process "
                "of it: the driver hides this container's processes, or none of them has used a GPU yet. So its own "
                "memory is estimated (once its framework has started) or unknown (docs/containers.md)."
            ).format(pid=pid)
        ]
    elif stance == "translated" and snapshot.own_processes:
        lines = [
            _(
                "This kernel (pid {pid}) runs in a container, and the driver lists processes by the container's own "
                "PIDs, so its figures are exact."
            ).format(pid=pid)
        ]
    elif stance == "translated":
        lines = [
            _(
                "This kernel (pid {pid}) runs in a container, and the driver lists processes by the container's own "
                "PIDs, so its figures are exact; it holds no GPU memory that NVML can see."
            ).format(pid=pid)
        ]
    elif stance == "host" and not snapshot.own_processes:
        lines = [
            _(
                "This kernel (pid {pid}) holds no GPU memory that NVML can see: NVML lists the processes of this PID "
                "namespace, and not this kernel."
            ).format(pid=pid)
        ]
    else:
        lines = []
    for device, own in owns:
        if own.source == "exact" or (own.source == "unknown" and own.pid is not None):
            continue  # the table shows it (N/A included)
        if own.source == "matched":
            told = _("this kernel holds {used} (matched: {reason})").format(
                used=format_mib(own.bytes), reason=own.reason.words()
            )
        elif own.source == "estimated":
            told = _("this kernel holds about {used} (estimated: {reason})").format(
                used=format_mib(own.bytes), reason=own.reason.words()
            )
        else:
            told = _("this kernel's memory is unknown, not 0: {why}").format(why=words(own.because))
        # the full stop is the catalogue's ("。" in Japanese and Chinese), not an English "." after a translation
        lines.append("  " + word("sentence", {"phrase": f"GPU {device.index}: {printable(told)}"}))
    return lines
