"""One process table for the text status, the HTML status and the inline view's still picture: the same order
everywhere (largest first, N/A last since unknown is not small, then by PID) and the same columns, but for
the still picture's, whose protocol sample carries no process type."""

from __future__ import annotations

import json
import re
from dataclasses import replace

from conftest import FIXTURES
from protocol_fixtures import s1_snapshot

from jupyter_gpumem.gpu.model import GpuProcess
from jupyter_gpumem.kernel.widget import table_html
from jupyter_gpumem.render.html import status_html
from jupyter_gpumem.render.text import render
from jupyter_gpumem.units import MiB

# (pid, MiB); given in an order that no surface should keep.
GIVEN = [(505, None), (502, 10), (504, 700), (503, 700), (501, None), (506, 3000)]
ORDER = [506, 503, 504, 502, 501, 505]


def snapshot():  # type: ignore[no-untyped-def]
    base = s1_snapshot()
    gpu = base.devices[1]
    processes = tuple(
        GpuProcess(pid, gpu.uuid or "", None if mib is None else mib * MiB, "compute", "python", "alice", 1.0, False)
        for pid, mib in GIVEN
    )
    return replace(base, devices=(replace(gpu, processes=processes),))


def sample_gpu() -> dict[str, object]:
    gpu = json.loads((FIXTURES / "protocol" / "sample.json").read_text())["sample"]["gpus"][1]
    row = {"name": "python", "user": "alice", "cpu_percent": 1.0, "self": False, "local": True, "cpu_pending": False}
    return {**gpu, "own_pid": None, "processes": [{**row, "pid": pid, "used_bytes": mib and mib * MiB} for pid, mib in
                                                   GIVEN]}  # fmt: skip


def pids_in_html(markup: str) -> list[int]:
    return [int(pid) for pid in re.findall(r'<tr class="[^"]*" data-pid="(\d+)"', markup)]


def test_every_surface_puts_the_largest_first_and_na_last() -> None:
    text = render(snapshot())
    assert [int(line.split()[0]) for line in text.splitlines() if re.match(r"\s+50\d ", line)] == ORDER
    assert pids_in_html(status_html(snapshot(), None, [])) == ORDER
    assert pids_in_html(table_html(sample_gpu())) == ORDER


def test_the_surfaces_share_their_columns_and_the_still_picture_only_lacks_the_type() -> None:
    text = render(snapshot())
    heading = next(line.split() for line in text.splitlines() if "PID" in line)
    status = re.findall(r"<th[^>]*>([^<]*)</th>", status_html(snapshot(), None, []))
    still = re.findall(r"<th[^>]*>([^<]*)</th>", table_html(sample_gpu()))
    assert " ".join(heading) == " ".join(status).upper() == "PID USER GPU MEMORY CPU% TYPE NAME"
    assert still == [c for c in status if c != "Type"]
