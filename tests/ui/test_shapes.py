"""Shapes of shared GPUs in the browser (issue 44): a kernel on a MIG 1g.5gb slice (started with
CUDA_VISIBLE_DEVICES naming the slice) and a kernel under a GPU memory limit the NVIDIA driver enforces on its
cgroup (a real cgroup v2 directory, as root). The sidebar's lines, the status bar's figure and tooltip, the inline
view's lines and the chart's driver-limit line; screenshots of the sidebar at 250 and 600 px, light and dark, of
each, in tests/artifacts/."""

from __future__ import annotations

import json
import re
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from checks import chart, layout
from labserver import (
    ARTIFACTS,
    SCENARIOS,
    TOKEN,
    Lab,
    open_notebook,
    open_sidebar,
    run_cell,
    running_lab,
    set_sidebar_width,
    set_theme,
)
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

MiB = 1024**2
GiB = 1024**3
FIRST_SLICE = "MIG-1d7f3b29-6a4e-5c81-9f02-b8e45a7c3d16"
SLICE_LINE = "this kernel's MIG slice: 1g.5gb, 4864 MiB"
# A Kubernetes pod's cgroup, long and without spaces, under a directory whose name is markup.
POD = "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod7c4f1e2a_9b3d_4e8f_a1c2_5d6e7f8a9b0c.slice"
HOSTILE = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """A lab of this module's own, with a kernelspec whose kernels see only the first 1g.5gb slice, as a hub's
    spawner would start them (CUDA_VISIBLE_DEVICES=MIG-<uuid>)."""
    base = tmp_path_factory.mktemp("shapes")
    with running_lab(base, (SCENARIOS / "mig_1g5gb.scenario").read_text()) as lab:
        folder = base / "share" / "kernels" / "mig-slice"
        folder.mkdir(parents=True)
        (folder / "kernel.json").write_text(
            json.dumps(
                {
                    "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                    "display_name": "Python 3 (a MIG slice)",
                    "language": "python",
                    "env": {"CUDA_VISIBLE_DEVICES": FIRST_SLICE},
                }
            )
        )
        yield lab


def api(lab: Lab, path: str, method: str = "GET") -> Any:
    request = urllib.request.Request(f"{lab.url}/api/{path}?token={TOKEN}", method=method)
    with urllib.request.urlopen(request, timeout=30) as response:
        body = response.read()
    return json.loads(body) if body else None


def no_kernels(lab: Lab) -> None:
    """Shut down every kernel of the lab: the stand-in's ``pid=kernel`` is the oldest kernel reading the scenario."""
    for kernel in api(lab, "kernels"):
        api(lab, f"kernels/{kernel['id']}", "DELETE")


# The driver-limit line has been drawn by plotly (in its data and as a path), the y axis reaching above it.
LIMIT_DRAWN = """() => {
  const gd = document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-plot');
  const i = (gd?._fullData ?? []).findIndex(t => t.uid === 'driverLimit');
  if (i < 0) return null;
  const path = gd.querySelectorAll('.scatterlayer .trace')[i]?.querySelector('.js-line');
  const d = path?.getAttribute('d') ?? '';
  if (!/L/.test(d)) return null;
  const t = gd._fullData[i];
  const box = path.getBoundingClientRect(), plot = gd.querySelector('.nsewdrag').getBoundingClientRect();
  return { y: Array.from(t.y), name: t.name, colour: path.style.stroke, width: path.style.strokeWidth,
           dash: path.style.strokeDasharray, top: gd._fullLayout.yaxis.range[1],
           inside: box.top >= plot.top - 1 && box.bottom <= plot.bottom + 1,
           uids: gd._fullData.map(t => t.uid) };
}"""

# This kernel's line on the chart spans at least `ms`.
SPAN = """ms => { const gd = document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-plot');
  const x = (gd?._fullData ?? []).find(t => t.uid === 'own')?.x ?? [];
  return x.length > 1 && x[x.length - 1] - x[0] >= ms; }"""

# A --jp-* variable's colour as the computed style writes it ("rgb(245, 124, 0)"), as plotly sets a stroke.
COLOUR_OF = """name => { const probe = document.createElement('div');
  probe.style.color = getComputedStyle(document.body).getPropertyValue(name).trim();
  document.body.appendChild(probe);
  const colour = getComputedStyle(probe).color;
  probe.remove();
  return colour; }"""

HOVER_AT = """uid => { const gd = document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-plot');
  const t = gd._fullData.find(t => t.uid === uid);
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
  const box = gd.getBoundingClientRect();
  return { x: box.left + xa._offset + xa.l2p(xa.d2l(t.x[t.x.length - 1])) - 1,
           y: box.top + ya._offset + ya.l2p(t.y[t.y.length - 1]) }; }"""


def hover(page: Page, uid: str) -> list[str]:
    point = page.evaluate(HOVER_AT, uid)
    page.mouse.move(point["x"], point["y"])
    page.wait_for_function(
        "() => document.querySelectorAll('#jupyter-gpumem-panel .jp-GpuMem-plot .hoverlayer text').length > 0"
    )
    return chart(page)["hover"]  # type: ignore[no-any-return]


def screenshots(page: Page, name: str) -> list[Path]:
    """The panel at 250 and 600 px, light and dark, once plotly has drawn at each size; nothing scrolls sideways."""
    panel = page.locator("#jupyter-gpumem-panel")
    # Twenty seconds of samples, so that the lines in the pictures are lines (a sixth of the two minutes shown).
    page.wait_for_function(SPAN, arg=20_000, polling=500, timeout=60_000)
    ARTIFACTS.mkdir(exist_ok=True)
    taken = []
    for dark in (False, True):
        set_theme(page, dark)
        theme = "dark" if dark else "light"
        for width in (250, 600):
            set_sidebar_width(page, width)  # and plotly has drawn at the new size
            got = layout(page)
            for box in got["scrollers"]:
                assert box["scrollWidth"] <= box["clientWidth"], f"{name}, {theme}, {width} px: {box}"
            assert got["legendInside"], f"{name}, {theme}, {width} px: the legend is cut"
            # Every detail line within the panel: a long cgroup path wraps, never runs out of it.
            lines = page.evaluate(
                """() => [...document.querySelectorAll('#jupyter-gpumem-panel .jp-GpuMem-body > div')]
                   .filter(n => !n.hidden && n.getClientRects().length)
                   .map(n => ({ cls: n.className, over: n.scrollWidth - n.clientWidth }))"""
            )
            assert all(line["over"] <= 1 for line in lines), f"{name}, {theme}, {width} px: {lines}"
            path = ARTIFACTS / f"sidebar-{name}-{theme}-{width}.png"
            panel.screenshot(path=path)
            taken.append(path)
    set_theme(page, False)
    return taken


def test_a_kernel_on_a_mig_slice_shows_the_slice_its_profile_and_only_its_memory(page: Page, lab: Lab) -> None:
    no_kernels(lab)
    lab.set_scenario((SCENARIOS / "mig_1g5gb.scenario").read_text())
    cells = [
        "import os\nprint(os.environ.get('CUDA_VISIBLE_DEVICES'))",
        "%load_ext jupyter_gpumem\n%gpumem fraction=0.5",
        "%gpumem show",
    ]
    open_notebook(page, lab, "mig.ipynb", cells, kernel="mig-slice")
    assert run_cell(page, 0).strip() == FIRST_SLICE  # the kernelspec's environment
    run_cell(page, 1)
    item = page.locator("#jp-main-statusbar .jp-GpuMem-status-item")
    # Half of the slice's 4864 MiB, not half of the card's 40 GiB.
    expect(item).to_have_text("GPU 1.5/2.4 GiB")
    title = item.get_attribute("title") or ""
    assert SLICE_LINE in title.split("\n"), title
    open_sidebar(page)
    panel = page.locator("#jupyter-gpumem-panel")
    expect(panel.locator(".jp-GpuMem-headline")).to_have_text("1.5 of 2.4 GiB budget (63%, not in force)")
    limits = panel.locator(".jp-GpuMem-limits")
    expect(limits).to_have_text(f"Hard limit: a MIG partition\n{SLICE_LINE}")
    # The slice is the GPU: its memory, and only the processes on it (this kernel's, not the other user's on gi 9).
    expect(panel.locator(".jp-GpuMem-device")).to_contain_text("1.5 GiB of 4.8 GiB used")
    expect(panel.locator(".jp-GpuMem-processes tbody tr")).to_have_count(1)
    expect(panel.locator(".jp-GpuMem-processes tbody tr.jp-GpuMem-self")).to_have_count(1)
    # No driver limit here: no such line, nor on the chart.
    expect(panel).not_to_contain_text("the NVIDIA driver's limit")
    page.wait_for_function(
        "() => document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-plot')?._fullData?.some(t => t.uid === 'own')"
    )
    assert "driverLimit" not in [t["uid"] for t in chart(page)["traces"]]
    assert "driver limit" not in chart(page)["legend"]
    # The inline view says the same lines (the sidebar's rendering in the cell's output).
    run_cell(page, 2)
    view = page.locator(".jp-GpuMem-inline").first
    expect(view.locator(".jp-GpuMem-limits")).to_have_text(f"Hard limit: a MIG partition\n{SLICE_LINE}")
    expect(view.locator(".jp-GpuMem-headline")).to_have_text("1.5 of 2.4 GiB budget (63%, not in force)")
    taken = screenshots(page, "mig-slice")
    print("screenshots:", *taken, sep="\n  ")


def test_a_driver_limit_on_the_kernels_cgroup_is_a_hard_line_the_status_bars_figure_and_a_line_on_the_chart(
    page: Page, lab: Lab, cgroups: Any
) -> None:
    no_kernels(lab)
    limited = cgroups.make(f"{POD}/{HOSTILE}")
    child = cgroups.make(f"{POD}/{HOSTILE}/alice")
    relative = cgroups.relative(limited)
    text = (SCENARIOS / "driver_limit.scenario").read_text()
    quoted = relative.replace("\\", "\\\\").replace('"', '\\"')
    lab.set_scenario(text + f'limit gpu=0 cgroup="{quoted}" soft=0 hard=6144MiB\n')
    cells = ["import os\nprint(os.getpid())", "%load_ext jupyter_gpumem", "%gpumem show"]
    open_notebook(page, lab, "limit.ipynb", cells)
    pid = int(run_cell(page, 0).strip())
    cgroups.move(pid, child)
    run_cell(page, 1)
    limit_line = f"hard: the NVIDIA driver's limit of 6144 MiB on cgroup {relative}, 1536 MiB counted against it"
    # No budget: this kernel against the driver's limit, as against a budget.
    item = page.locator("#jp-main-statusbar .jp-GpuMem-status-item")
    expect(item).to_have_text("GPU 1.5/6.0 GiB")
    expect(item).to_have_attribute("data-level", "ok")
    title = item.get_attribute("title") or ""
    assert limit_line in title.split("\n"), title
    open_sidebar(page)
    panel = page.locator("#jupyter-gpumem-panel")
    expect(panel.locator(".jp-GpuMem-headline")).to_have_text("1.5 GiB used by this kernel")
    # The cgroup's markup is text: one line, no element made of it.
    expect(panel.locator(".jp-GpuMem-limits")).to_have_text(limit_line)
    assert panel.locator("img").count() == 0 and page.locator("img[src=x]").count() == 0
    # The chart: the limit as a line of its own, in the warning colour, named in the legend and the hover; the
    # scale reaches it (1.5 GiB held, the 6 GiB wall in view).
    drawn = page.wait_for_function(LIMIT_DRAWN, polling=50, timeout=15_000).json_value()
    # (none before the kernel was moved into the cgroup: a gap, not a line at 0)
    assert {y for y in drawn["y"] if y is not None} == {6.0} and drawn["name"] == "driver limit", drawn
    assert 6.0 < drawn["top"] <= 8.0 and drawn["inside"], drawn
    assert drawn["uids"][-1] == "own" and "budget" not in drawn["uids"], drawn
    assert drawn["colour"] == page.evaluate(COLOUR_OF, "--jp-warn-color1"), drawn
    got = chart(page)
    assert got["legend"] == ["this kernel", "others", "driver limit"], got["legend"]
    lines = hover(page, "driverLimit")
    assert "driver limit : 6.00 GiB" in lines and "this kernel : 1.50 GiB" in lines, lines
    page.mouse.move(0, 0)
    expect(panel.locator(".jp-GpuMem-plot .hoverlayer text")).to_have_count(0)
    # The inline view: the same line.
    run_cell(page, 2)
    view = page.locator(".jp-GpuMem-inline").first
    expect(view.locator(".jp-GpuMem-limits")).to_have_text(limit_line)
    assert view.locator("img").count() == 0
    taken = screenshots(page, "driver-limit")
    # A budget planned at the driver's limit: the status bar shows the budget; both lines on the chart, the budget's
    # dashes over the limit.
    assert "planned at 6144 MiB" in run_cell_code(page, "%gpumem fraction=0.5")
    expect(item).to_have_text("GPU 1.5/6.0 GiB")
    expect(panel.locator(".jp-GpuMem-headline")).to_have_text("1.5 of 6.0 GiB budget (25%, not in force)")
    page.wait_for_function(
        """() => { const gd = document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-plot');
                   const uids = (gd?._fullData ?? []).map(t => t.uid);
                   const limit = uids.indexOf('driverLimit');
                   return limit >= 0 && limit < uids.indexOf('budget'); }""",
        timeout=15_000,
    )
    set_sidebar_width(page, 250)
    page.wait_for_function(LIMIT_DRAWN, polling=50, timeout=15_000)
    expect(panel.locator(".jp-GpuMem-legendItem")).to_have_text(["this kernel", "others", "budget", "driver limit"])
    path = ARTIFACTS / "sidebar-driver-limit-budget-light-250.png"
    panel.screenshot(path=path)
    taken.append(path)
    print("screenshots:", *taken, sep="\n  ")
    no_kernels(lab)  # out of the cgroups before they go


def run_cell_code(page: Page, code: str) -> str:
    """Add a cell with ``code`` at the end of the active notebook and run it; its output text."""
    page.evaluate(
        """code => { const panel = window.jupyterapp.shell.currentWidget;
                     const model = panel.content.model;
                     model.sharedModel.insertCell(model.cells.length, { cell_type: 'code', source: code }); }""",
        code,
    )
    count = page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-Cell").count()
    return run_cell(page, count - 1, timeout_ms=15_000)


def test_the_kernelspec_names_the_slice(lab: Lab) -> None:
    spec = api(lab, "kernelspecs")["kernelspecs"]["mig-slice"]["spec"]
    assert spec["env"] == {"CUDA_VISIBLE_DEVICES": FIRST_SLICE}
    assert re.fullmatch(r"MIG-[0-9a-f-]{36}", FIRST_SLICE)
