"""The `%gpumem status` table: plain text that reads the same in a notebook and a terminal."""

from __future__ import annotations

import os
import unicodedata

from .model import Device, GpuProcess, Snapshot
from .units import format_bytes, format_percent, format_total

_PROCESS_HEADER = f"{'PID':>8}  {'USER':<12} {'GPU MEMORY':>10}  {'CPU%':>5}  {'TYPE':<8}  NAME"
_INDENT = "       "


def printable(text: str) -> str:
    """Text from the GPU host (process names, users) with control characters made visible, so a
    hostile name cannot forge lines or colours in the output."""
    return "".join(c if unicodedata.category(c)[0] != "C" else c.encode("unicode_escape").decode("ascii") for c in text)


def _process_line(proc: GpuProcess) -> str:
    cpu = "N/A" if proc.cpu_percent is None else f"{proc.cpu_percent:.0f}"
    user = printable(proc.user) if proc.user else "N/A"
    name = printable(proc.name) if proc.name else "N/A"
    mark = "  <- this kernel" if proc.is_self else ""
    return f"{proc.pid:>8}  {user[:12]:<12} {format_bytes(proc.used_bytes):>10}  {cpu:>5}  {proc.kind:<8}  {name}{mark}"


def _device_lines(device: Device) -> list[str]:
    title = printable(device.name or "unknown GPU")
    uuid = printable(device.uuid or "uuid unknown")
    lines = [f"GPU {device.index:<2} {title}  ·  {uuid}"]
    if device.lost:
        lines.append(
            f"{_INDENT}LOST: the driver reports this GPU has fallen off the bus "
            "(NVML_ERROR_GPU_IS_LOST). It needs a reset (nvidia-smi -r) or a reboot; "
            "the other GPUs read as usual."
        )
        return lines
    util = (
        f"{device.utilization_percent}%"
        if device.utilization_percent is not None
        else "N/A (not reported in MIG mode)"
        if device.mig_enabled
        else "N/A"
    )
    lines.append(
        f"{_INDENT}memory {format_bytes(device.used_bytes)} used of {format_total(device.total_bytes)}"
        f" ({format_percent(device.used_bytes, device.total_bytes)})"
        f" · {format_bytes(device.free_bytes)} free · utilisation {util}"
    )
    for slot, mig in enumerate(device.mig_devices):
        lines.append(
            f"{_INDENT}MIG {slot}  {printable(mig.uuid or 'uuid unknown')}  "
            f"{format_bytes(mig.used_bytes)} used of {format_bytes(mig.total_bytes)}"
        )
    if not device.processes_known:
        lines.append(f"{_INDENT}processes: the driver does not report them on this GPU")
    elif not device.processes:
        lines.append(f"{_INDENT}no processes")
    else:
        lines.append(_INDENT + _PROCESS_HEADER)
        # Largest first; N/A last, since unknown is not small.
        rows = sorted(device.processes, key=lambda p: -1 if p.used_bytes is None else p.used_bytes, reverse=True)
        lines.extend(_INDENT + _process_line(p) for p in rows)
        if any(p.used_bytes is None for p in device.processes):
            lines.append(
                f"{_INDENT}N/A memory: the driver cannot tell per-process memory on this GPU "
                "(Windows WDDM, some MIG setups); it is unknown, not zero."
            )
    return lines


def render(snapshot: Snapshot) -> str:
    if snapshot.problem:
        return snapshot.problem
    driver = printable(snapshot.driver_version or "version unknown")
    lines = [f"jupyter-gpumem · NVIDIA driver {driver} · this kernel: pid {snapshot.own_pid}"]
    if snapshot.simulated_scenario:
        scenario = printable(os.path.basename(snapshot.simulated_scenario))
        lines.append(f"SIMULATED GPU: stand-in NVML, scenario {scenario}; no real GPU or driver is involved.")
    if not snapshot.devices:
        lines.append("The NVIDIA driver is loaded but reports no GPUs.")
    for device in snapshot.devices:
        lines.append("")
        lines.extend(_device_lines(device))
    if snapshot.devices and not snapshot.own_processes:
        lines.append("")
        lines.append(
            f"This kernel (pid {snapshot.own_pid}) holds no GPU memory that NVML can see: "
            "own process not visible. Either it has not used a GPU yet, or it runs in a container "
            "whose PIDs the driver cannot match (the driver reports host PIDs; run with --pid=host)."
        )
    return "\n".join(lines)
