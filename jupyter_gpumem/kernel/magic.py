"""The `%gpumem` line magic."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping

from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.display import display

from jupyter_gpumem import values
from jupyter_gpumem.budget.policy import PolicyError, parse
from jupyter_gpumem.frameworks import ADAPTERS, Adapter
from jupyter_gpumem.i18n import gettext as _
from jupyter_gpumem.kernel.control import Controller, say
from jupyter_gpumem.kernel.recorder import Recorder, report
from jupyter_gpumem.kernel.release import release
from jupyter_gpumem.kernel.stream import Stream
from jupyter_gpumem.render import framework_names, free, html, list_of
from jupyter_gpumem.render.explain import explain
from jupyter_gpumem.render.text import render


def help_text() -> str:
    """``%gpumem --help``, in the language in use."""
    return _(
        """\
%gpumem — GPU memory from inside the notebook

Usage:
  %gpumem                 the same as %gpumem status
  %gpumem status          every GPU (name, UUID, total/used/free memory, utilisation) and every
                          process on it with its GPU memory and CPU%; this kernel is marked.
                          N/A means the driver cannot tell, which is not zero. Then the policy:
                          in force, or recorded and waiting for the framework's import, and how
                          this kernel's memory splits against the budget now.
  %gpumem key=value ...   set this kernel's GPU memory policy (put it in the first cell). Settings
                          combine with earlier ones; a fraction and a limit replace each other.
  %gpumem show            the live view in this cell's output: this kernel against its budget,
                          a chart and every process on the GPU, updated while other cells run
                          (the same as the GPU Memory sidebar; jupyter_gpumem.show() returns it)
  %gpumem explain         why this kernel's memory differs from its budget right now, in its own
                          numbers (memory outside the allocator, every visible GPU, N/A), and what
                          to change
  %gpumem cells [N]       which cell took the memory: the last 20 (or N) cells with their first line,
                          duration, peak, what they left held and the change, as nvidia-smi counts
                          it (from the readings every interval: a shorter peak can be missed) and by
                          the framework's allocator (exact, once it has started)
  %gpumem free            give back what the kernel can without a restart: the last error's traceback
                          (which keeps its frames' tensors alive), a garbage collection, what the
                          frameworks' allocators keep cached; and say what came back, as nvidia-smi
                          counts it and by the allocator. Nothing you still reference is touched. For
                          an allocator that never gives memory back (TensorFlow's), it says what a
                          restart would.
  %gpumem reset           forget a policy that has not been applied yet
  %gpumem --help          this text (also: %gpumem help, %gpumem -h)

Settings:
  fraction=0.4            at most 40% of each selected GPU's memory as nvidia-smi counts it: the
                          framework's allocator gets the budget minus the CUDA context and
                          libraries, which live outside its limit (estimated per GPU generation, or
                          what an earlier kernel measured on this GPU model; shown).
  limit=6GiB              the same as an absolute budget per GPU (GiB, MiB, GB or MB).
  growth=on|off           allocate on demand (with a fraction or limit: grow up to it).
{growth}
  gpus=1 | gpus=0,2 | gpus=GPU-<uuid> | gpus=none
                          the only GPUs this kernel may touch; the others stay free of it.
  threads=2               CPU threads for {threaded} (intra-op and inter-op); or
  intra=4 inter=1         each on its own.
  framework=auto|{frameworks}
                          auto (default): the frameworks imported (several share the budget), else
                          the one installed; with several installed, whichever is imported.
  strict=off              the frameworks' raw meaning: cap the allocator pool only.
  mps=on                  where an MPS server is in use, also make the budget this process's MPS
                          pinned memory limit (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT): a hard cap, set
                          before CUDA starts. Without it the budget is cooperative (docs/containers.md).

Examples:
  %gpumem fraction=0.5 gpus=1     # half of GPU 1 as nvidia-smi counts it, nothing of GPU 0
  %gpumem threads=1 growth=on     # many jobs on one GPU, about one CPU core each
  %gpumem limit=6GiB

Out of memory? After a GPU out-of-memory error the cell shows what did not fit and the batch size that
would; jupyter_gpumem.batched(model.evaluate, x, y) then runs it in batches for you.

Too late? Once the framework has started (its first op), its settings are fixed: %gpumem says what is
in force and changes nothing. Restart the kernel and run %gpumem first.

Administrators set defaults and ceilings with JUPYTER_GPUMEM_* variables or c.GpumemConfig
(docs/configuration.md). From code: jupyter_gpumem.take_snapshot() returns the status figures.
"""
    ).format(**_framework_lines(ADAPTERS))


def _framework_lines(adapters: Mapping[str, type[Adapter]]) -> dict[str, str]:
    """The help's lines that name frameworks, from the registry: each ``growth`` phrase with the frameworks it is
    true of, those with CPU thread settings, and framework='s names."""
    growth: dict[str, list[str]] = {}
    for adapter in adapters.values():
        growth.setdefault(adapter.growth, []).append(adapter.name)
    lines = [
        _("{frameworks}: {what}.").format(frameworks=list_of(names), what=_(what)) for what, names in growth.items()
    ]
    return {
        "growth": "\n".join(" " * 26 + line for line in lines),
        "threaded": framework_names([a for a in adapters.values() if a.threads]),  # type: ignore[misc]
        "frameworks": "|".join(adapters),
    }


CELLS_SHOWN = 20  # the last cells %gpumem cells lists, unless told how many
MAX_CELLS_SHOWN = 10_000

# How long a one-off status call watches new processes to give them a CPU% figure.
STATUS_CPU_WINDOW_S = 0.2


@magics_class
class GpumemMagics(Magics):
    def __init__(self, shell: InteractiveShell | None, control: Controller, cells: Recorder, stream: Stream):
        """The kernel's parts the subcommands drive (runtime.Runtime owns them)."""
        super().__init__(shell)
        self._control = control
        self._cells = cells
        self._stream = stream

    @line_magic
    def gpumem(self, line: str) -> None:
        """GPU memory status, and this kernel's GPU memory policy (fraction, limit, growth, gpus, threads).
        Run `%gpumem --help` for every subcommand and setting."""
        try:
            words = shlex.split(line)
        except ValueError as error:
            _refuse(
                _("%gpumem could not read its arguments ({error}). Run %gpumem --help for the accepted forms.").format(
                    error=error
                )
            )
            return
        command = words[0] if words else "status"
        control = self._control
        if command in ("--help", "-h", "help") and len(words) <= 1:
            print(help_text())
        elif command == "status" and len(words) <= 1:
            snapshot = control.snapshot(cpu_window_s=STATUS_CPU_WINDOW_S)
            control.recheck(snapshot)
            reading = control.read(snapshot)
            lines = control.status_lines(reading) if not snapshot.problem or control.has_policy else []
            text = "\n".join([render(snapshot, reading), *lines])
            display(html.status(snapshot, reading, text, lines))  # type: ignore[no-untyped-call]
        elif command == "explain" and len(words) <= 1:
            display(html.explain(explain(control.read(control.snapshot()))))  # type: ignore[no-untyped-call]
        elif command == "show" and len(words) <= 1:
            display(self._stream.add_view())  # type: ignore[no-untyped-call]
        elif command == "reset" and len(words) <= 1:
            say(control.reset())
        elif command == "cells" and len(words) <= 2:
            try:
                shown = values.whole(words[1], 0, MAX_CELLS_SHOWN) if len(words) == 2 else CELLS_SHOWN
            except values.Refused:
                _refuse(
                    _(
                        "%gpumem cells {count}: the count is a whole number from 0 to {most}, such as %gpumem cells 20."
                    ).format(count=repr(values.shown(words[1])), most=MAX_CELLS_SHOWN)
                )
                return
            display(report(self._cells, control, self._stream.sampler.interval_s, shown))  # type: ignore[no-untyped-call]
        elif command == "free" and len(words) <= 1:
            say(free.lines(release(self.shell, control)))
        elif all("=" in word for word in words):
            try:
                say(control.request(parse(words)))
            except PolicyError as error:
                _refuse(_("{error} Nothing was changed.").format(error=error))
        else:
            _refuse(
                _(
                    "%gpumem does not know {words}. It accepts: status, cells, explain, free, reset, show, key=value "
                    "settings, --help. Run %gpumem --help for details."
                ).format(words=repr(" ".join(words)))
            )


def _refuse(sentence: str) -> None:
    print(sentence, file=sys.stderr)
