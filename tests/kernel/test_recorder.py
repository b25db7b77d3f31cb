"""`%gpumem cells` in a real kernel on the stand-in NVML: the cell during which this kernel's memory climbed and
fell is named with its peak, what it left held and the change."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.kernel

# This kernel holds 3100 MiB (own_process); the cell takes it to 5000 MiB for a few readings, then down to 1000.
CLIMB_AND_FALL = """# climbs and falls
import os, time
from pathlib import Path
from jupyter_gpumem import standin
path = Path(os.environ[standin.SCENARIO_VARIABLE])
text = path.read_text()
standin.write_scenario(path, text.replace("used=3100MiB", "used=5000MiB"))
time.sleep(2.5)
standin.write_scenario(path, text.replace("used=3100MiB", "used=1000MiB"))
time.sleep(1.5)
"""


def test_the_cell_during_which_memory_climbed_and_fell_is_named_with_its_peak(kernel_with):
    kernel = kernel_with("own_process")
    kernel.run("%load_ext jupyter_gpumem")
    kernel.run("x = 1")
    kernel.run(CLIMB_AND_FALL)

    reply = kernel.run("%gpumem cells")

    assert reply.status == "ok" and reply.stderr == ""
    rows = {line.split()[0]: line.split() for line in reply.stdout.splitlines() if line.startswith("[")}
    climbed = rows["[3]"]
    assert climbed[1:5] == ["#", "climbs", "and", "falls"] and climbed[5].startswith("4.")  # 4 s of sleeps
    assert climbed[7:] == ["4.9", "GiB", "1000", "MiB", "-2.1", "GiB"]  # peak, held after, change
    assert rows["[2]"][1:] == ["x", "=", "1", "0.0", "s", "—", "—", "—"]  # no reading while it ran
    assert "GPU 0 NVIDIA RTX A4000" in reply.stdout and "readings every 1 s" in reply.stdout
    html = reply.displayed[0]["data"]["text/html"]
    assert "jp-GpuMem-cells" in html and "<code># climbs and falls</code>" in html and "4.9 GiB" in html


CLIMB = """# model = build()
import os, time
from pathlib import Path
from jupyter_gpumem import standin
path = Path(os.environ[standin.SCENARIO_VARIABLE])
standin.write_scenario(path, path.read_text().replace("used=3100MiB", "used=5000MiB"))
time.sleep(1.5)
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
    kernel.run("%load_ext jupyter_gpumem")
    kernel.run(CLIMB)

    reply = kernel.run(OUT_OF_MEMORY)

    assert reply.status == "error"
    assert (
        "  Cell [2] (# model = build()) raised this kernel's memory from 3.0 GiB to 4.9 GiB as nvidia-smi counts it, "
        "and it is still held (%gpumem cells lists every cell).\n"
    ) in reply.stdout
    assert "Its traceback keeps 1 PyTorch tensor of the failed call alive: %gpumem free releases it" in reply.stdout
