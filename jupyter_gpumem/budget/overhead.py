"""The GPU memory a framework's process holds outside its allocator pool: the CUDA context, the loaded
modules, cuDNN/cuBLAS handles and workspaces. None of it is inside the framework's limit, so a budget
that holds as nvidia-smi counts it sets this much aside.

- Estimated before the framework starts: per GPU generation (compute capability) and framework, with
  CUDA_MODULE_LOADING=LAZY (which %gpumem sets).
- Measured once it has started and its pool size is known: NVML's figure for this process minus the pool.
- Remembered per GPU model + driver + framework version in a small JSON file under the user's cache
  directory, so the next kernel on the same kind of machine plans with the measured figure.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from jupyter_gpumem.gpu.files import replace_json
from jupyter_gpumem.gpu.model import Device, Snapshot
from jupyter_gpumem.units import MiB
from jupyter_gpumem.words import Said

try:
    import fcntl
except ImportError:  # Windows: writes stay atomic (os.replace); two writers at once may lose one entry
    fcntl = None  # type: ignore[assignment]

# CUDA context with lazy module loading, by compute capability major version: grows with the number of
# SMs and the size of the runtime's per-GPU structures (DESIGN.md: 300-500 MiB on current GPUs).
CONTEXT_MIB = {3: 200, 5: 200, 6: 250, 7: 300, 8: 350, 9: 450, 10: 500, 12: 500}
UNKNOWN_CONTEXT_MIB = 300
GENERATIONS = {
    3: "Kepler",
    5: "Maxwell",
    6: "Pascal",
    7: "Volta/Turing",
    8: "Ampere/Ada",
    9: "Hopper",
    10: "Blackwell",
    12: "Blackwell",
}

CACHE_FORMAT = 1
Source = Literal["estimated", "remembered", "measured"]


@dataclass(frozen=True)
class Overhead:
    bytes: int
    source: Source  # estimated; remembered (measured by an earlier kernel); measured (by this one)
    basis: str  # for people: what the figure rests on

    def describe(self) -> Said:
        """ "estimated: TensorFlow on Ampere/Ada (compute 8.6)" """
        return Said("overhead", source=SOURCES[self.source], basis=self.basis)


SOURCES = {
    "estimated": Said("overhead_estimated"),
    "remembered": Said("overhead_remembered"),
    "measured": Said("overhead_measured"),
}


def estimate(device: Device, framework: str, library_bytes: int) -> Overhead:
    """Before the framework starts: the CUDA context for this GPU's generation plus the framework's
    libraries (its handles and workspaces)."""
    if device.compute_capability is None:
        basis = Said("overhead_generation_unknown", framework=framework)
        return Overhead(UNKNOWN_CONTEXT_MIB * MiB + library_bytes, "estimated", basis)
    major, minor = device.compute_capability
    nearest = max((m for m in CONTEXT_MIB if m <= major), default=min(CONTEXT_MIB))  # a newer GPU: the latest
    generation = GENERATIONS[nearest] if nearest == major else Said("a_gpu")
    basis = Said("overhead_generation", framework=framework, generation=generation, compute=f"{major}.{minor}")
    return Overhead(CONTEXT_MIB[nearest] * MiB + library_bytes, "estimated", basis)


def cache_dir() -> Path:
    """The user's cache directory for jupyter-gpumem (XDG on Linux)."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = str(Path.home() / "Library" / "Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "jupyter-gpumem"


def cache_key(device: Device, driver: str | None, framework: str, version: str | None) -> str:
    return f"{device.name or 'unknown GPU'} | driver {driver or 'unknown'} | {framework} {version or 'unknown'}"


class Calibration:
    """Overheads measured in this kernel, and those remembered from earlier kernels in ``path``.

    A corrupt or unreadable file is ignored (``problem`` says so, once) and replaced at the next
    measurement. Writers take an exclusive lock on a side file, merge with what is on disk, and
    replace the file atomically, so concurrent kernels neither corrupt it nor lose each other's entries;
    readers need no lock.
    """

    def __init__(self, path: Path | None = None):
        self.path = path or cache_dir() / "overhead.json"
        self.problem: str | None = None  # one sentence about a file that had to be ignored
        self._entries: dict[str, int] | None = None  # read on first use
        self._measured: dict[str, Overhead] = {}  # GPU uuid -> this kernel's measurement
        self._lock = threading.Lock()  # the sampler thread measures; the main thread plans

    def planned(self, device: Device, driver: str | None, framework: str, version: str | None) -> Overhead | None:
        """What an earlier kernel measured on this GPU model, driver and framework version, if any."""
        key = cache_key(device, driver, framework, version)
        with self._lock:
            remembered = self._remembered().get(key)
        if remembered is None:
            return None
        return Overhead(remembered, "remembered", Said("overhead_earlier_kernel", key=key))

    def measured(self, uuid: str | None) -> Overhead | None:
        """This kernel's own measurement on that GPU, if its framework has started there."""
        with self._lock:
            return self._measured.get(uuid or "")

    def observe(
        self,
        snapshot: Snapshot,
        pools: dict[str, int],
        framework: str,
        version: str | None,
        owns: Mapping[str, int] | None = None,
    ) -> list[Overhead]:
        """Measure from NVML's figure for this process and the allocator pools (GPU uuid -> bytes the
        framework has reserved). Keeps the largest seen per GPU; remembers it when it grew. Returns the
        new measurements. ``owns``: this process's figure per GPU where NVML lists it under another PID
        (a container's, matched: attribution.py); without it, what NVML lists under this kernel's PID."""
        grown = []
        for device in snapshot.devices:
            pool = pools.get(device.uuid or "")
            own = device.listed_own_bytes if owns is None else owns.get(device.uuid or "")
            if pool is None or own is None or own <= pool or device.uuid is None:
                continue
            amount = own - pool
            with self._lock:
                known = self._measured.get(device.uuid)
                if known is not None and amount <= known.bytes:
                    continue
                key = cache_key(device, snapshot.driver_version, framework, version)
                basis = Said("overhead_this_kernel", framework=framework)
                self._measured[device.uuid] = Overhead(amount, "measured", basis)
                grown.append(self._measured[device.uuid])
                if amount > self._remembered().get(key, 0):
                    self._save(key, amount)
        return grown

    # ------------------------------------------------------------------ the file

    def _remembered(self) -> dict[str, int]:
        if self._entries is None:
            self._entries, self.problem = _read(self.path)
        return self._entries

    def _save(self, key: str, amount: int) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with _locked(self.path.with_name(self.path.name + ".lock")):
                entries, _ = _read(self.path)
                entries[key] = max(amount, entries.get(key, 0))
                data = {"format": CACHE_FORMAT, "overhead_bytes": entries, "updated": time.time()}
                replace_json(self.path, data, indent=1, sort_keys=True)
            self._entries = entries
        except OSError as error:
            self.problem = self.problem or f"jupyter-gpumem could not save its overhead cache {self.path} ({error})."
            self._entries = {**(self._entries or {}), key: amount}


def _read(path: Path) -> tuple[dict[str, int], str | None]:
    """The entries, and a sentence when the file had to be ignored. A missing file is no problem."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}, None
    except (OSError, ValueError) as error:
        return {}, _ignored(path, error)
    entries = data.get("overhead_bytes") if isinstance(data, dict) and data.get("format") == CACHE_FORMAT else None
    if not isinstance(entries, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and 0 < v < 1 << 40 for v in entries.values()
    ):
        return {}, _ignored(path, "not a format 1 cache")
    return dict(entries), None


def _ignored(path: Path, why: object) -> str:
    return (
        f"jupyter-gpumem ignored its overhead cache {path} ({why}); it plans with estimates and rewrites "
        "the file at the next measurement."
    )


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    with open(lock_path, "a") as handle:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield  # the lock goes with the file handle
