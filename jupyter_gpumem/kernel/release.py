"""`%gpumem free`: give back what the kernel can without a restart, and say what came back.

After an exception, Python and IPython keep the failing frames alive (``sys.last_traceback``, ``sys.last_value``,
``sys.last_exc``, the shell's last execution result), and with them every tensor those frames held (pytorch#37726).
Dropping those references, then a garbage collection, frees what only they held; then each started framework
gives back what it can (PyTorch's cache; JAX's compilation caches). Nothing the notebook still references is
touched: the frames themselves are not cleared, so an exception the user kept keeps its locals.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterable
from types import TracebackType

from IPython.core.interactiveshell import InteractiveShell

from jupyter_gpumem.frameworks import Adapter
from jupyter_gpumem.kernel.control import Controller
from jupyter_gpumem.render.free import Freed

LAST_ERROR = ("last_type", "last_value", "last_traceback", "last_exc")


def release(shell: InteractiveShell | None, control: Controller) -> Freed:
    before = control.read(control.snapshot())
    error, tensors = _drop_last_error(shell, control.adapters.values())
    collected = gc.collect()
    released = []
    for adapter in control.adapters.values():
        outcome = adapter.release()
        if outcome is not None:
            released.append((adapter.name, outcome.sentence, outcome.restart_only))
    # Under a driver that did not answer, a second wait would tell nothing more: one deadline, not two.
    after = before.snapshot if before.snapshot.stalled_since is not None else control.snapshot()
    return Freed(error, tensors, collected, tuple(released), before, control.read(after))


def _drop_last_error(shell: InteractiveShell | None, adapters: Iterable[Adapter]) -> tuple[str | None, dict[str, int]]:
    """Forget the last error everywhere Python and IPython keep it; its class and the tensors it held."""
    value = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
    result = getattr(shell, "last_execution_result", None)
    if value is None and result is not None:
        value = getattr(result, "error_in_exec", None)
    tensors = held_tensors(getattr(value, "__traceback__", None), adapters) if value is not None else {}
    for name in LAST_ERROR:
        if hasattr(sys, name):
            delattr(sys, name)
    if shell is not None:
        if result is not None and getattr(result, "error_in_exec", None) is not None:
            shell.last_execution_result = None  # replaced by this cell's own result when it ends
        if getattr(shell.InteractiveTB, "tb", None) is not None:
            shell.InteractiveTB.tb = None  # kept by %debug's last use
    return (type(value).__name__ if value is not None else None), tensors


def held_tensors(traceback: TracebackType | None, adapters: Iterable[Adapter]) -> dict[str, int]:
    """Per framework, its arrays that the traceback's function frames hold as locals. A cell's own frame is left
    out: its locals are the notebook's namespace, which the user holds anyway."""
    owners = {module: adapter.name for adapter in adapters for module in adapter.array_modules}
    counts: dict[str, int] = {}
    seen: set[int] = set()
    while traceback is not None:
        frame = traceback.tb_frame
        if frame.f_locals is not frame.f_globals:
            for value in frame.f_locals.values():
                owner = owners.get(type(value).__module__.partition(".")[0])
                if owner and id(value) not in seen and not isinstance(value, type) and hasattr(value, "shape"):
                    seen.add(id(value))
                    counts[owner] = counts.get(owner, 0) + 1
        traceback = traceback.tb_next
    return counts
