"""jupyter-gpumem: GPU memory control and a live view for Jupyter notebooks.

In a notebook::

    %load_ext jupyter_gpumem
    %gpumem status
    %gpumem show        # the live view in the cell's output (jupyter_gpumem.show() returns it)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jupyter_gpumem._version import __version__
from jupyter_gpumem.gpu.model import Device, GpuProcess, MigDevice, Snapshot
from jupyter_gpumem.gpu.snapshot import take_snapshot

if TYPE_CHECKING:
    from jupyter_gpumem.kernel.notebook import (
        GpuMemView,
        batched,
        figure,
        largest_batch,
        load_ipython_extension,
        show,
        unload_ipython_extension,
    )

__all__ = [
    "Device",
    "GpuMemView",
    "GpuProcess",
    "MigDevice",
    "Snapshot",
    "__version__",
    "batched",
    "figure",
    "largest_batch",
    "load_ipython_extension",
    "show",
    "take_snapshot",
    "unload_ipython_extension",
]
# Names a notebook uses (kernel/notebook.py), loaded on first use: the server, the hub and IPython's extension
# manager all import this package, and only a kernel needs the runtime behind them (about 0.3 s of imports).
_NOTEBOOK = {
    "GpuMemView",
    "_connect_sidebar",
    "batched",
    "figure",
    "largest_batch",
    "load_ipython_extension",
    "show",
    "unload_ipython_extension",
}


def __getattr__(name: str) -> object:
    if name in _NOTEBOOK:
        from jupyter_gpumem.kernel import notebook

        return getattr(notebook, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "jupyter-gpumem"}]
