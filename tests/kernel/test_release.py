"""`%gpumem free` in a real kernel on the stand-in NVML: what only the last error's traceback held is gone, what
the notebook holds is not, and what came back is said as nvidia-smi counts it."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.kernel

# An object whose collection "frees GPU memory": it rewrites the stand-in's scenario so that this kernel holds
# 1000 MiB instead of 3100, as a tensor going away would show in nvidia-smi.
SETUP = """
import os, weakref
from pathlib import Path
from jupyter_gpumem import standin

class Tensor:
    def __del__(self):
        path = Path(os.environ[standin.SCENARIO_VARIABLE])
        standin.write_scenario(path, path.read_text().replace("used=3100MiB", "used=1000MiB"))

def fail(name):
    held_only_by_the_traceback = Tensor()
    globals()[name] = weakref.ref(held_only_by_the_traceback)
    raise ValueError("the cell fails")

kept = Tensor()
kept_ref = weakref.ref(kept)
"""


def test_free_releases_what_only_the_last_traceback_held_and_says_what_came_back(kernel_with):
    kernel = kernel_with("own_process")
    kernel.run("%load_ext jupyter_gpumem")
    assert kernel.run(SETUP).status == "ok"
    assert kernel.run("fail('dropped_ref')").status == "error"
    # A garbage collection alone does not free it: the traceback keeps its frames alive.
    assert kernel.run("import gc; gc.collect(); print(dropped_ref() is None)").stdout == "False\n"

    reply = kernel.run("%gpumem free")

    assert reply.status == "ok" and reply.stderr == ""
    assert "The last error's traceback (ValueError) is released" in reply.stdout
    assert "this kernel held 3100 MiB and now holds 1000 MiB as nvidia-smi counts it: 2100 MiB came back" in (
        reply.stdout
    )
    html = reply.displayed[0]["data"]["text/html"]
    assert "jp-GpuMem-messages" in html and "2100 MiB came back" in html
    assert kernel.run("print(dropped_ref() is None, kept_ref() is not None)").stdout == "True True\n"


def test_free_leaves_an_error_the_notebook_kept_with_its_frames(kernel_with):
    kernel = kernel_with("own_process")
    kernel.run("%load_ext jupyter_gpumem")
    kernel.run(SETUP)
    kernel.run("try:\n    fail('saved_ref')\nexcept ValueError as error:\n    saved = error")
    assert kernel.run("fail('dropped_ref')").status == "error"

    reply = kernel.run("%gpumem free")

    assert reply.status == "ok"
    assert kernel.run("print(dropped_ref() is None, saved_ref() is not None)").stdout == "True True\n"


def test_free_without_an_error_says_nothing_was_kept_and_nothing_came_back(kernel_with):
    kernel = kernel_with("own_process")
    kernel.run("%load_ext jupyter_gpumem")

    out = kernel.run("%gpumem free").stdout

    assert "No error's traceback was being kept." in out
    assert "this kernel holds 3100 MiB as nvidia-smi counts it; nothing came back" in out
