"""The chart with an hour of history, live: plotly's traces hold the settled buckets and each line's newest
part is the chart's own SVG path in plotly's plot layer (chart.ts, chart/tails.ts's `tailPaths`). Checked against
plotly's own drawing on the page: the paths start where plotly's lines end and end at the newest sample on
plotly's axes; a sample moves them without a replot; the pointer over the plot puts the whole figure back in
plotly's traces. Screenshots at 250 and 600 px, light and dark, go to tests/artifacts/."""

from __future__ import annotations

import time

import pytest
from hour import BUDGET_MIB, hello, message, sample
from labserver import ARTIFACTS, SCENARIOS, Lab, open_notebook, open_sidebar, set_sidebar_width, set_theme
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

PANEL = "[...window.jupyterapp.shell.widgets('right')].find(w => w.id === 'jupyter-gpumem-panel')"

# Each line's end and start on the page, in client pixels: plotly's trace (its path's last point) and
# ours (the tail's first and last point), and where the newest sample sits on plotly's own axes.
ENDS = """newest => {
  const gd = document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-plot');
  const at = (path, length) => {
    const p = path.getPointAtLength(length).matrixTransform(path.getScreenCTM());
    return [p.x, p.y];
  };
  const traces = {};
  gd._fullData.forEach((trace, i) => {
    const path = gd.querySelectorAll('.scatterlayer .trace')[i]?.querySelector('path.js-line');
    if (path && trace.mode === 'lines') traces[trace.uid] = at(path, path.getTotalLength());
  });
  const tails = {};
  for (const p of gd.querySelectorAll('.jp-GpuMem-tails path[fill="none"]')) {
    tails[p.dataset.uid] = { first: at(p, 0), last: at(p, p.getTotalLength()) };
  }
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, box = gd.getBoundingClientRect();
  const local = newest.t - new Date(newest.t).getTimezoneOffset() * 60000;
  return { traces, tails,
           newest: [box.left + xa._offset + xa.l2p(local), box.top + ya._offset + ya.l2p(newest.own)] };
}"""


def feed(page: Page, samples: list[dict[str, object]]) -> None:
    page.evaluate(
        f"""messages => {{ const panel = {PANEL};
              for (const m of messages) {{ panel.kernels.current.receive(m); panel.render(); }} }}""",
        samples,
    )


def test_an_hours_newest_part_is_drawn_where_plotlys_lines_end_and_moves_without_a_replot(page: Page, lab: Lab) -> None:
    lab.set_scenario((SCENARIOS / "sidebar.scenario").read_text())
    open_notebook(page, lab, "tails.ipynb", ["1 + 1"])
    open_sidebar(page)
    expect(page.locator("#jupyter-gpumem-panel .jp-GpuMem-plot .scatterlayer")).to_have_count(1)
    # The kernel's sampler stopped, and the channel's stall watchdog (its private timer): the page sees only the
    # samples given here. With the watchdog on, 5 s without a sample (a loaded machine between two looks) reconnects
    # the channel, which starts the sampler again and replaces the hour given here with the kernel's own samples.
    page.evaluate(
        """() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.requestExecute(
             { code: "from jupyter_gpumem.kernel.runtime import runtime; runtime().stream.sampler.stop()",
               silent: true }).done"""
    )
    page.evaluate(
        f"""() => {{ const watchdog = {PANEL}.kernels.current._watchdog;
              if (typeof watchdog !== 'number') throw new Error('the channel has no _watchdog timer to stop');
              window.clearInterval(watchdog); }}"""
    )
    page.mouse.move(0, 0)  # the pointer away from the plot: the split, live figure
    # Ten seconds into a minute: the twenty samples below cross no settle step (a minute, whole buckets),
    # where the traces would take the new buckets in a replot.
    now = time.time() // 60 * 60 - 7200 + 10
    history = hello(3600, now)
    t = now + 3600
    # A training run: 64 MiB a second, up to 64 MiB under the budget (no over-budget mark).
    feed(page, [history] + [message(sample(t + i, BUDGET_MIB - 64 * (8 - i))) for i in range(8)])
    ARTIFACTS.mkdir(exist_ok=True)
    for dark in (False, True):
        set_theme(page, dark)
        theme = "dark" if dark else "light"
        for width in (250, 600):
            where = f"{theme}, {width} px"
            set_sidebar_width(page, width)
            t += 1
            own_mib = BUDGET_MIB - 64 + int(t) % 5
            feed(page, [message(sample(t, own_mib))])
            page.wait_for_function(
                """() => { const gd = document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-plot');
                           return gd._fullLayout?.width === gd.parentNode.clientWidth
                             && gd.querySelector('.jp-GpuMem-tails path') !== null; }""",
                timeout=30_000,  # an hour's relayout at the new width, on a loaded 2-core machine
            )
            got = page.evaluate(ENDS, {"t": t * 1000, "own": own_mib / 1024})
            own = got["tails"]["own"]
            # Ours starts where plotly's line ends, and ends at the newest sample on plotly's axes.
            assert {"own", "framework", "others", "budget"} <= set(got["tails"]), (where, got["tails"])
            for uid, tail in got["tails"].items():
                end = got["traces"][uid]
                assert abs(tail["first"][0] - end[0]) <= 1 and abs(tail["first"][1] - end[1]) <= 1, (where, uid, got)
            assert abs(own["last"][0] - got["newest"][0]) <= 1, (where, own, got["newest"])
            assert abs(own["last"][1] - got["newest"][1]) <= 1, (where, own, got["newest"])
            page.locator("#jupyter-gpumem-panel .jp-GpuMem-chart").screenshot(
                path=ARTIFACTS / f"chart-hour-{theme}-{width}.png"
            )

    # The next sample, one pixel or more up: the paths move, plotly does not draw.
    counts = page.evaluate(
        """() => { const gd = document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-plot');
                   window.gpumemCounts = { draws: 0, tails: 0 };
                   gd.on('plotly_afterplot', () => window.gpumemCounts.draws++);
                   new MutationObserver(() => window.gpumemCounts.tails++)
                     .observe(gd.querySelector('.jp-GpuMem-tails'), { subtree: true, attributes: true });
                   return gd.dataset.yTop; }"""
    )
    t += 1
    feed(page, [message(sample(t, BUDGET_MIB - 2048))])
    page.wait_for_function("() => window.gpumemCounts.tails > 0")
    page.wait_for_timeout(300)
    assert page.evaluate("() => window.gpumemCounts.draws") == 0
    assert page.evaluate("() => document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-plot').dataset.yTop") == counts

    # The pointer over the plot: the whole figure in plotly's traces (for the hover), no paths of ours.
    plot = page.locator("#jupyter-gpumem-panel .jp-GpuMem-plot .nsewdrag")
    plot.hover()
    expect(page.locator("#jupyter-gpumem-panel .jp-GpuMem-tails path")).to_have_count(0)
    newest = page.evaluate(
        """t => { const gd = document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-plot');
                  const own = gd._fullData.find(d => d.uid === 'own');
                  return own.x[own.x.length - 1] === t - new Date(t).getTimezoneOffset() * 60000; }""",
        t * 1000,
    )
    assert newest, "the hover's traces lack the newest sample"
    page.mouse.move(0, 0)
    expect(page.locator("#jupyter-gpumem-panel .jp-GpuMem-tails path").first).to_be_attached()
