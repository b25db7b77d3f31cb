"""The `%gpumem` line magic."""

from __future__ import annotations

import shlex
import sys

from IPython.core.magic import Magics, line_magic, magics_class

from .report import render
from .snapshot import take_snapshot

HELP = """\
%gpumem — GPU memory from inside the notebook

Usage:
  %gpumem                 the same as %gpumem status
  %gpumem status          every GPU (name, UUID, total/used/free memory, utilisation) and every
                          process on it with its GPU memory and CPU%; this kernel is marked.
                          N/A means the driver cannot tell, which is not zero.
  %gpumem --help          this text (also: %gpumem help, %gpumem -h)

From code: jupyter_gpumem.take_snapshot() returns the same figures as a Snapshot dataclass.
"""

# How long a one-off status call watches new processes to give them a CPU% figure.
STATUS_CPU_WINDOW_S = 0.2


@magics_class
class GpumemMagics(Magics):
    @line_magic
    def gpumem(self, line: str) -> None:
        """GPU memory status for this kernel. Run `%gpumem --help` for every subcommand."""
        try:
            words = shlex.split(line)
        except ValueError as error:
            _refuse(
                f"%gpumem could not read its arguments ({error}). Run %gpumem --help for the accepted forms."
            )
            return
        command = words[0] if words else "status"
        if command in ("--help", "-h", "help"):
            print(HELP)
        elif command == "status" and len(words) <= 1:
            print(render(take_snapshot(cpu_window_s=STATUS_CPU_WINDOW_S)))
        else:
            _refuse(
                f"%gpumem does not know {' '.join(words)!r}. It accepts: status, --help. "
                "Run %gpumem --help for details."
            )


def _refuse(sentence: str) -> None:
    print(sentence, file=sys.stderr)
