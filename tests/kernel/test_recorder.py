"""`%gpumem cells` in a real kernel on the stand-in NVML: the cell during which this kernel's memory climbed and
fell is named with its peak, what it left held and the change."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.kernel

# The first cell: the extension, and ``changed``, which changes the stand-in's figures and returns once the kernel has
# taken a reading after the change, however loaded the machine (a fixed sleep once ended before the sampler had read
# the new figure: the advice then named no cell). It waits for the first reading, so that every later cell starts
# with this kernel's memory known.
LOAD = """%load_ext jupyter_gpumem
import os, time
from pathlib import Path
from jupyter_gpumem import standin
from jupyter_gpumem.kernel.runtime import runtime
path = Path(os.environ[standin.SCENARIO_VARIABLE])
text = path.read_text()
def read_after(t):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(s["t"] > t for s in runtime().stream.sampler.history()):
        time.sleep(0.05)
def changed(used):
    written = time.time()
    standin.write_scenario(path, text.replace("used=3100MiB", used))
    read_after(written)
read_after(0)
"""

# This kernel holds 3100 MiB (own_process); the cell takes it to 5000 MiB for a few readings, then down to 1000.
CLIMB_AND_FALL = """# climbs and falls
changed("used=5000MiB")
time.sleep(2.5)
changed("used=1000MiB")
time.sleep(1.5)
"""


def test_the_cell_during_which_memory_climbed_and_fell_is_named_with_its_peak(kernel_with):
    kernel = kernel_with("own_process")
    kernel.run(LOAD)
    kernel.run("x = 1")
    kernel.run(CLIMB_AND_FALL)

    reply = kernel.run("%gpumem cells")

    assert reply.status == "ok" and reply.stderr == ""
    rows = {line.split()[0]: line.split() for line in reply.stdout.splitlines() if line.startswith("[")}
    climbed = rows["[3]"]
    assert climbed[1:5] == ["#", "climbs", "and", "falls"] and float(climbed[5]) >= 4 and climbed[6] == "s"  # sleeps
    assert climbed[7:] == ["4.9", "GiB", "1000", "MiB", "-2.1", "GiB"]  # peak, held after, change
    # No reading while it ran, or by chance one in the moment before the next cell began (a cell's readings run to
    # the next one's start): then nothing changed.
    assert rows["[2]"][1:] in (
        ["x", "=", "1", "0.0", "s", "—", "—", "—"],
        ["x", "=", "1", "0.0", "s", "3.0", "GiB", "3.0", "GiB", "0"],
    )
    assert "GPU 0 NVIDIA RTX A4000" in reply.stdout and "readings every 1 s" in reply.stdout
    html = reply.displayed[0]["data"]["text/html"]
    assert "jp-GpuMem-cells" in html and "<code># climbs and falls</code>" in html and "4.9 GiB" in html


CLIMB = """# model = build()
changed("used=5000MiB")
"""

# PyTorch's out-of-memory wording, raised where a function holds a tensor (PyTorch's CPU build: a real one).
OUT_OF_MEMORY = """import torch
def step():
    activations = torch.zeros(4, 4)
    raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 16.00 GiB total capacity)")
step()
"""


def test_the_out_of_memory_advice_names_the_cell_that_took_the_memory_and_offers_free(kernel_with):
    kernel = kernel_with("own_process")
    kernel.run(LOAD)
    kernel.run(CLIMB)

    reply = kernel.run(OUT_OF_MEMORY)

    assert reply.status == "error"
    assert (
        "  Cell [2] (# model = build()) raised this kernel's memory from 3.0 GiB to 4.9 GiB as nvidia-smi counts it, "
        "and it is still held (%gpumem cells lists every cell).\n"
    ) in reply.stdout
    assert "Its traceback keeps 1 PyTorch tensor of the failed call alive: %gpumem free releases it" in reply.stdout
