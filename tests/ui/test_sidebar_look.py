"""The GPU Memory panel as a core panel: at the default sidebar width (250 px) and at 600 px, in the
light and dark themes; a lost GPU; the chart's scales and marks over a training ramp. Screenshots of
each go to tests/artifacts/."""

from __future__ import annotations

import re
import time

import pytest
from checks import chart, contrast, layout
from labserver import ARTIFACTS, Lab, open_notebook, open_sidebar, run_cell, set_sidebar_width, set_theme
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

MiB = 1024**2
GiB = 1024**3
A100 = 'gpu name="NVIDIA A100-SXM4-40GB" uuid=GPU-5e5e5e5e-0000-4000-8000-000000000001 total=40960MiB cc=8.0'
T4 = 'gpu name="NVIDIA T4" uuid=GPU-5e5e5e5e-0000-4000-8000-000000000002 total=15360MiB cc=7.5 mig=unsupported'

# Twelve processes on GPU 0: this kernel at 93% of a 20 GiB budget, a long name, spaces in a name, a
# process the driver cannot name, the hostile name; the T4 for the GPU choice.
OTHERS = [
    (41337, 12000, "python3.11-train-resnet50-imagenet"),
    (41338, 1024, "<img src=x onerror=alert(1)>"),
    (41339, 900, "my  training job"),
    (4194301, 800, None),  # no process can have this PID here: nothing names it
    *[(31341 + i, 100 + 50 * i, "python3") for i in range(7)],
]


def twelve(own_mib: int, lost_t4: bool = False) -> str:
    procs = "".join(
        f"proc gpu=0 pid={pid} used={mib}MiB" + ("" if name is None else f' name="{name}"') + "\n"
        for pid, mib, name in OTHERS
    )
    used = own_mib + sum(mib for _, mib, _ in OTHERS)
    return (
        "driver version=550.54.15 cuda=12040\n"
        f"{A100} used={used}MiB util=71\n"
        f"{T4} used=5600MiB util=12" + (" lost=1" if lost_t4 else "") + "\n"
        f"proc gpu=0 pid=self used={own_mib}MiB name=python\n"
        + procs
        + "proc gpu=1 pid=31399 used=5500MiB name=python3\n"
    )


def start(page: Page, lab: Lab, name: str, scenario: str) -> None:
    lab.set_scenario(scenario)
    open_notebook(page, lab, name, ["%load_ext jupyter_gpumem\n%gpumem fraction=0.5 framework=tensorflow"])
    assert "recorded" in run_cell(page, 0)
    open_sidebar(page)


def test_at_250_and_600_px_in_light_and_dark_nothing_scrolls_sideways_wraps_or_fails_contrast(
    page: Page, lab: Lab
) -> None:
    start(page, lab, "look.ipynb", twelve(18944))
    panel = page.locator("#jupyter-gpumem-panel")
    headline = panel.locator(".jp-GpuMem-headline")
    expect(headline).to_have_text("18.5 of 20.0 GiB budget (93%, not in force)")
    expect(panel.locator(".jp-GpuMem-processes tbody tr")).to_have_count(12)
    ARTIFACTS.mkdir(exist_ok=True)
    for dark in (False, True):
        set_theme(page, dark)
        theme = "dark" if dark else "light"
        for width in (250, 600):
            where = f"{theme}, {width} px"
            set_sidebar_width(page, width)  # and plotly has drawn at the new size
            got = layout(page)
            assert got["width"] == width
            for box in got["scrollers"]:  # no horizontal scrollbar anywhere
                assert box["scrollWidth"] <= box["clientWidth"], f"{where}: {box}"
            assert got["toolbarHeight"] <= 33, f"{where}: the toolbar wrapped"
            # One 24 px line per row: nothing wrapped, the badge row included.
            assert got["rowHeights"] == [24] * 12, f"{where}: {got['rowHeights']}"
            # A narrow panel drops the user, then the PID; the CPU stays.
            expected = ["name", "usedBytes", "cpuPercent"] if width == 250 else list(COLUMNS)
            assert got["columns"] == expected, where
            for cell in got["numeric"]:
                assert cell["align"] == "right" and abs(cell["gap"]) <= 1, f"{where}: {cell}"
                assert "tabular-nums" in cell["digits"], where
            names = {n["text"]: n for n in got["names"]}
            long = names["python3.11-train-resnet50-imagenet"]
            assert long["overflow"] == "ellipsis" and long["title"].startswith(long["text"])
            if width == 250:
                assert long["cut"], f"{where}: the long name should be cut with an ellipsis"
            assert "my  training job" in names and names["my  training job"]["space"] == "pre"
            assert names["N/A"]["user"] == "N/A"  # a process the driver cannot name
            assert all(n["weight"] == "400" for n in got["names"]), where  # only the badge is bold
            assert [(b["text"], b["weight"], b["self"]) for b in got["badges"]] == [("this kernel", "600", True)]
            assert got["header"] == {"weight": "600", "mainColour": True}, where
            assert got["headline"]["size"] == got["uiFontSize"] and got["headline"]["weight"] == "600"
            assert got["headline"]["level"] == "warn"
            assert got["headline"]["contrast"] >= 4.5, f"{where}: warning text {got['headline']['contrast']:.2f}:1"
            assert got["details"] == [True, True], f"{where}: details not in the secondary colour"
            assert got["legendInside"], f"{where}: the chart's legend is cut or not under the plot"
            assert contrast(page, "#jupyter-gpumem-panel .jp-GpuMem-legendItem") >= 4.5, f"{where}: the legend"
            assert got["ownColour"], f"{where}: this kernel's line is not in the theme's brand colour"
            assert contrast(page, ".jp-GpuMem-status-item") >= 4.5, f"{where}: the status bar's warning"
            panel.screenshot(path=ARTIFACTS / f"sidebar-{theme}-{width}.png")
            # Focusing a heading never scrolls the headline away.
            panel.locator("th[data-key='cpuPercent']").focus()
            assert (
                page.evaluate("() => document.querySelector('#jupyter-gpumem-panel .jp-SidePanel-content').scrollLeft")
                == 0
            )
            panel.locator("th[data-key='cpuPercent']").blur()
            # Rows have a hover state, the theme's second layout colour.
            row = panel.locator(".jp-GpuMem-processes tbody tr").nth(3)
            row.hover()
            assert page.evaluate(
                """() => { const row = document.querySelectorAll('#jupyter-gpumem-panel tbody tr')[3];
                   const probe = document.createElement('div');
                   probe.style.background = 'var(--jp-layout-color2)';
                   document.body.appendChild(probe);
                   const same = getComputedStyle(row).backgroundColor === getComputedStyle(probe).backgroundColor;
                   probe.remove();
                   return same; }"""
            ), f"{where}: no hover state"
            page.mouse.move(0, 0)

        # Over the budget: the error colours pass AA too.
        lab.set_scenario(twelve(21504))
        expect(headline).to_have_attribute("data-level", "error")
        expect(panel.locator(".jp-GpuMem-reason")).to_be_visible()
        for selector in (".jp-GpuMem-headline", ".jp-GpuMem-reason", ".jp-GpuMem-status-item"):
            assert contrast(page, f"{selector}") >= 4.5, f"{theme}: {selector}"
        lab.set_scenario(twelve(18944))
        expect(headline).to_have_attribute("data-level", "warn")
    set_theme(page, False)


COLUMNS = ("pid", "name", "user", "usedBytes", "cpuPercent")


def test_a_lost_gpu_reads_as_lost_not_as_an_empty_gpu(page: Page, lab: Lab) -> None:
    start(page, lab, "lost.ipynb", twelve(3174, lost_t4=True))
    panel = page.locator("#jupyter-gpumem-panel")
    choice = panel.locator(".jp-SidePanel-toolbar select")
    expect(choice.locator("option")).to_have_text(["GPU 0: NVIDIA A100-SXM4-40GB", "GPU 1: lost"])
    choice.select_option(label="GPU 1: lost")
    headline = panel.locator(".jp-GpuMem-headline")
    expect(headline).to_have_text("GPU 1 is lost: N/A")
    expect(headline).to_have_attribute("data-level", "error")
    expect(panel.locator(".jp-GpuMem-note")).to_have_text("This GPU is lost: no figures until it is reset.")
    expect(panel.locator(".jp-GpuMem-device")).to_contain_text("lost (fell off the bus; it needs a reset)")
    for hidden in (".jp-GpuMem-chart", ".jp-GpuMem-processes", ".jp-GpuMem-budgetNote"):
        expect(panel.locator(hidden)).to_be_hidden()
    expect(panel).not_to_contain_text("0 MiB used by this kernel")
    expect(panel).not_to_contain_text("no budget set")
    # The status bar follows the GPU on show.
    expect(page.locator(".jp-GpuMem-status-item")).to_have_text("GPU lost")
    expect(page.locator(".jp-GpuMem-status-item")).to_have_attribute("data-level", "error")
    for dark in (False, True):
        set_theme(page, dark)
        set_sidebar_width(page, 250)
        assert contrast(page, ".jp-GpuMem-headline") >= 4.5
        panel.screenshot(path=ARTIFACTS / f"sidebar-lost-gpu-{'dark' if dark else 'light'}-250.png")
    set_theme(page, False)


NOTICE = (
    "from jupyter_gpumem.kernel.publish import kernel_report_path\n"
    "from jupyter_gpumem.gpu.files import replace_json\n"
    "import time\n"
    "report = kernel_report_path()\n"
    "replace_json(report.with_name(report.stem + '.notice.json'), {'protocol': 1, 'type': 'notice', 't': time.time(),"
    " 'kind': 'idle_warning', 'text': 'This kernel has held 18.5 GiB of GPU memory while idle for 30 min; it will be"
    " shut down at 14:35 (after 60 min idle) unless it runs something.', 'shutdown_at': time.time() + 1800})"
)


def test_under_a_hub_other_users_are_one_line_and_the_servers_notice_comes_first(page: Page, lab: Lab) -> None:
    lab.set_scenario(twelve(18944))
    open_notebook(page, lab, "shared.ipynb", ["%load_ext jupyter_gpumem", NOTICE], kernel="shared")
    run_cell(page, 0)
    open_sidebar(page)
    panel = page.locator("#jupyter-gpumem-panel")
    # This kernel's row alone; the eleven others, whom the host cannot name, as one line.
    expect(panel.locator(".jp-GpuMem-processes tbody tr")).to_have_count(1)
    others = panel.locator(".jp-GpuMem-others")
    expect(others).to_have_text(re.compile(r"^other users: 11 processes, 16\.\d GiB \(user unknown: 11 processes"))
    expect(panel).not_to_contain_text("onerror")
    run_cell(page, 1)
    notice = panel.locator(".jp-GpuMem-notice")
    expect(notice).to_contain_text("This kernel has held 18.5 GiB of GPU memory while idle for 30 min")
    toast = page.locator(".Toastify__toast", has_text="shared.ipynb: This kernel has held 18.5 GiB")
    expect(toast).to_have_count(1)
    status = page.locator(".jp-GpuMem-status-item")
    expect(status).to_have_attribute("data-level", "warn")
    assert (status.get_attribute("title") or "").startswith("This kernel has held 18.5 GiB")
    page.wait_for_timeout(2500)  # more samples with the same notice: still one toast
    expect(toast).to_have_count(1)
    for dark in (False, True):
        set_theme(page, dark)
        theme = "dark" if dark else "light"
        for width in (250, 600):
            set_sidebar_width(page, width)
            for box in layout(page)["scrollers"]:
                assert box["scrollWidth"] <= box["clientWidth"], f"{theme}, {width} px: {box}"
            assert contrast(page, ".jp-GpuMem-notice") >= 4.5, f"{theme}: the notice"
            assert contrast(page, ".jp-GpuMem-others") >= 4.5, f"{theme}: other users"
            panel.screenshot(path=ARTIFACTS / f"sidebar-hub-{theme}-{width}.png")
    set_theme(page, False)


def hover_newest(page: Page, uid: str = "own") -> list[str]:
    """Move the mouse over the newest point of a line; what plotly's hover then says."""
    point = page.evaluate(
        """uid => { const gd = document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-plot');
                    const t = gd._fullData.find(t => t.uid === uid);
                    const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
                    const box = gd.getBoundingClientRect();
                    return { x: box.left + xa._offset + xa.l2p(xa.d2l(t.x[t.x.length - 1])) - 1,
                             y: box.top + ya._offset + ya._length / 2 }; }""",
        uid,
    )
    page.mouse.move(point["x"], point["y"])
    page.wait_for_function(
        "() => document.querySelectorAll('#jupyter-gpumem-panel .jp-GpuMem-plot .hoverlayer text').length > 0"
    )
    return chart(page)["hover"]  # type: ignore[no-any-return]


def test_a_20_second_ramp_through_the_budget_fills_the_chart_and_makes_one_mark(page: Page, lab: Lab) -> None:
    start(page, lab, "ramp.ipynb", twelve(3072))
    set_sidebar_width(page, 250)
    panel = page.locator("#jupyter-gpumem-panel")
    expect(panel.locator(".jp-GpuMem-headline")).to_have_text("3.0 of 20.0 GiB budget (15%, not in force)")
    # 3 → 23 GiB in 20 s, over the 20 GiB budget from 21 GiB on. Every reason the kernel gives on
    # the way is kept, in order (its text may change with its MiB figures).
    page.evaluate(
        """() => { const node = document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-reason');
                   window.gpumemReasons = [];
                   new MutationObserver(() => { const r = window.gpumemReasons;
                     if (!node.hidden && r[r.length - 1] !== node.textContent) r.push(node.textContent); })
                   .observe(node, { childList: true, characterData: true, subtree: true, attributes: true }); }"""
    )
    for second in range(21):
        lab.set_scenario(twelve((3 + second) * 1024))
        time.sleep(1)
    expect(panel.locator(".jp-GpuMem-headline")).to_have_text("23.0 of 20.0 GiB budget (115%, not in force)")
    time.sleep(3)  # and it stays over for a while
    got = chart(page)
    assert got["plotly"], "the chart is not a plotly plot"
    # X: the data's span (about half a minute here), shown over the shortest range, two minutes; plotly
    # shows the range it was given.
    assert got["x1"] - got["x0"] == 120_000
    assert got["range"][1] - got["range"][0] == 120_000, got["range"]
    # Y: up to this kernel's peak (23 GiB) with a little room, not the device's 40 GiB.
    assert 23 * GiB <= got["yTop"] <= 1.3 * 23 * GiB
    assert got["yRange"] == [0, got["yTop"] / GiB]
    assert got["note"] == "device total 40.0 GiB ↑" and got["unit"] == "GiB", got
    # The unit sits over the tick labels, left of the plot; the total's note from the plot's left edge.
    unit, note, area = page.evaluate(
        """() => { const gd = document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-plot');
                   const box = n => n.getBoundingClientRect(), g = box(gd);
                   const text = n => { const r = document.createRange(); r.selectNodeContents(n); return r; };
                   const [u, t, p] = [text(document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-unit')),
                                      text(document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-totalNote')),
                                      gd.querySelector('.nsewdrag')].map(box);
                   return [u, t, p].map(b => ({ left: b.left - g.left, right: b.right - g.left,
                                                top: b.top - g.top, bottom: b.bottom - g.top })); }"""
    )
    assert unit["left"] >= 0 and unit["right"] <= area["left"] and unit["bottom"] <= area["top"], (unit, area)
    assert note["left"] >= area["left"] - 1 and note["bottom"] <= area["top"], (note, area)
    # The 20 s ramp takes a sixth of the width (not 4 px) and most of the height (not 5%).
    own, plot = got["own"], got["plot"]
    assert own["width"] >= plot["width"] * 20 / 120 - 2, (own, plot)
    assert own["height"] >= plot["height"] * 0.6, (own, plot)
    marks = [t for t in got["traces"] if t["uid"] == "marks"]
    assert len(marks) == 1 and len(marks[0]["x"]) == 1, marks  # one episode, one mark
    reasons = page.evaluate("() => window.gpumemReasons")
    first = reasons[0].removeprefix("Over budget: ")  # the mark keeps the reason its episode began with
    reason = marks[0]["hovertext"][0].replace("<br>", " ")  # cut into lines that fit the hover
    assert re.fullmatch(rf"Over budget from \d\d:\d\d:\d\d: {re.escape(first)}", reason), marks
    print(f"reasons the kernel gave during the ramp: {reasons}")
    assert got["legend"] == ["this kernel", "others", "budget"] and not got["plotlyLegend"], got
    # The hover, at the newest point: the time to the second, this kernel's figure and the budget.
    hover = hover_newest(page)
    assert re.fullmatch(r"\d\d:\d\d:\d\d", hover[0]), hover
    assert "this kernel : 23.00 GiB" in hover and "budget : 20.00 GiB" in hover, hover
    panel.screenshot(path=ARTIFACTS / "sidebar-ramp-250.png")
    page.mouse.move(0, 0)
    expect(panel.locator(".jp-GpuMem-plot .hoverlayer text")).to_have_count(0)


# Where a time (the axis's ms) is on the page, in pixels from the left.
PIXEL = """t => { const gd = document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-plot');
                const xa = gd._fullLayout.xaxis;
                return gd.getBoundingClientRect().left + xa._offset + xa.l2p(t); }"""


def newest(page: Page) -> float:
    """The time of this kernel's newest point on the chart (the axis's ms)."""
    return float(next(t for t in chart(page)["traces"] if t["uid"] == "own")["x"][-1])


def test_a_drag_zooms_on_time_the_range_stays_through_live_updates_a_pan_moves_it_and_a_double_click_follows_live(
    page: Page, lab: Lab
) -> None:
    start(page, lab, "zoom.ipynb", twelve(3072))
    panel = page.locator("#jupyter-gpumem-panel")
    for second in range(8):
        lab.set_scenario(twelve((3 + second) * 1024))
        time.sleep(1)
    plot = panel.locator(".jp-GpuMem-plot")
    for dark in (False, True):
        set_theme(page, dark)
        theme = "dark" if dark else "light"
        for width in (250, 600):
            where = f"{theme}, {width} px"
            set_sidebar_width(page, width)
            live = chart(page)
            assert live["paused"] is None and live["x1"] - live["x0"] >= 120_000, where
            # A drag over the middle of the data, 20% to 80% of the way from its first point to its newest.
            own = next(t for t in live["traces"] if t["uid"] == "own")["x"]
            first, last = own[0], own[-1]
            exact = [page.evaluate(PIXEL, first + share * (last - first)) for share in (0.2, 0.8)]
            # The mouse moves by whole pixels (chromium drops the fraction): at 250 px a pixel is ~0.6 s of the two
            # minutes shown, a tenth of the few seconds dragged over here. So the drag is to whole pixels, and the
            # span it should give is 60% of the data scaled by the pixels actually dragged.
            a, b = round(exact[0]), round(exact[1])
            dragged = 0.6 * (last - first) * (b - a) / (exact[1] - exact[0])
            box, area = plot.bounding_box(), live["plot"]
            assert box is not None
            y = box["y"] + area["top"] + area["height"] / 2
            page.mouse.move(a, y)
            page.mouse.down()
            page.mouse.move(b, y, steps=6)
            page.mouse.up()
            expect(panel.locator(".jp-GpuMem-paused")).to_be_visible()
            zoomed = chart(page)
            span = zoomed["x1"] - zoomed["x0"]
            assert span < live["x1"] - live["x0"], where
            assert abs(span - dragged) < 0.05 * span, (where, span, dragged)
            assert abs(zoomed["range"][1] - zoomed["range"][0] - span) < 2, where  # plotly shows that range
            assert re.fullmatch(r"Paused on \d\d:\d\d:\d\d–\d\d:\d\d:\d\dBack to live", zoomed["paused"]), zoomed
            # Three live updates later (one a second) the range is still the user's. Zoomed, the chart holds only
            # the points around the user's range, so the newest samples need not show in its traces: wait by time.
            page.wait_for_timeout(3_500)
            later = chart(page)
            assert (later["x0"], later["x1"], later["range"]) == (zoomed["x0"], zoomed["x1"], zoomed["range"]), where
            panel.screenshot(path=ARTIFACTS / f"sidebar-zoomed-{theme}-{width}.png")
            assert zoomed["ticks"] and all(re.fullmatch(r"\d\d:\d\d(:\d\d)?", t) for t in zoomed["ticks"]), zoomed
            # The mode bar's pan: a drag a quarter of the plot's width to the right shows earlier times over the same
            # span, still paused, with the time ticks of the range it shows.
            plot.hover()
            panel.locator(".jp-GpuMem-plot .modebar-btn[data-title='Pan']").click()
            middle = box["x"] + area["left"] + area["width"] / 2
            page.mouse.move(middle, y)
            page.mouse.down()
            page.mouse.move(middle + area["width"] / 4, y, steps=6)
            page.mouse.up()
            page.wait_for_function(
                "x0 => Number(document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-plot').dataset.x0) < x0",
                arg=zoomed["x0"],
            )
            panned = chart(page)
            assert abs((zoomed["x0"] - panned["x0"]) - span / 4) < 0.05 * span, (where, zoomed, panned)
            assert abs((panned["x1"] - panned["x0"]) - span) < 2, where
            assert panned["paused"] is not None and panned["paused"] != zoomed["paused"], where
            assert panned["ticks"] and all(re.fullmatch(r"\d\d:\d\d(:\d\d)?", t) for t in panned["ticks"]), panned
            panel.screenshot(path=ARTIFACTS / f"sidebar-panned-{theme}-{width}.png")
            panel.locator(".jp-GpuMem-plot .modebar-btn[data-title='Zoom']").click()
            # A double-click follows live again: the range the data calls for, up to the newest sample.
            page.mouse.dblclick(box["x"] + area["left"] + area["width"] / 2, y)
            expect(panel.locator(".jp-GpuMem-paused")).to_be_hidden()
            again = chart(page)
            assert again["x1"] - again["x0"] >= 120_000 and again["x0"] == live["x0"], (where, again)
            page.mouse.move(0, 0)
    # A click on "others" in the legend hides that line, and it stays hidden through live updates.
    set_theme(page, False)
    legend = panel.locator(".jp-GpuMem-legendItem")
    legend.filter(has_text="others").click()
    expect(legend.filter(has_text="others")).to_have_attribute("aria-pressed", "false")
    hidden = lambda: next(t for t in chart(page)["traces"] if t["uid"] == "others")["visible"]  # noqa: E731
    assert hidden() == "legendonly"
    last = newest(page)
    page.wait_for_function(
        """last => { const own = document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-plot')._fullData
                       .find(t => t.uid === 'own'); return own.x[own.x.length - 1] >= last + 2000; }""",
        arg=last,
    )
    assert hidden() == "legendonly"
    panel.screenshot(path=ARTIFACTS / "sidebar-others-hidden-250.png")
    # The legend's items are buttons: from the keyboard too.
    legend.filter(has_text="budget").press("Enter")
    expect(legend.filter(has_text="budget")).to_have_attribute("aria-pressed", "false")
    legend.filter(has_text="budget").press("Space")
    expect(legend.filter(has_text="budget")).to_have_attribute("aria-pressed", "true")
    # A double-click shows that line alone; another shows them all again, as plotly's legend does.
    visible = (
        "() => document.querySelector('#jupyter-gpumem-panel .jp-GpuMem-plot')._fullData.map(t => [t.uid, t.visible])"
    )
    legend.filter(has_text="this kernel").dblclick()
    expect(legend.filter(has_text="budget")).to_have_attribute("aria-pressed", "false")
    lines = dict(page.evaluate(visible))
    assert [lines[uid] for uid in ("own", "others", "budget")] == [True, "legendonly", "legendonly"], lines
    assert lines.get("cells", True) is True  # what the legend does not list stays
    assert chart(page)["hidden"] == ["others", "budget"]
    legend.filter(has_text="this kernel").dblclick()
    expect(legend.filter(has_text="budget")).to_have_attribute("aria-pressed", "true")
    assert set(dict(page.evaluate(visible)).values()) == {True} and chart(page)["hidden"] == []
    legend.filter(has_text="others").click()
    # The mode bar shows while the pointer is over the chart; its camera saves the picture as a PNG.
    modebar = panel.locator(".jp-GpuMem-plot .modebar")
    opacity = "() => getComputedStyle(document.querySelector('#jupyter-gpumem-panel .modebar-group')).opacity"
    page.mouse.move(0, 0)
    page.wait_for_function(opacity + " === '0'")
    plot.hover()
    page.wait_for_function(opacity + " === '1'")
    with page.expect_download() as download:
        modebar.locator(".modebar-btn[data-title='Download the chart as a PNG']").click()
    png = download.value.path().read_bytes()
    (ARTIFACTS / "sidebar-download-250.png").write_bytes(png)
    assert download.value.suggested_filename == "gpu-memory.png"
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    # At twice the size on screen, with room under the plot for its legend (plotly draws it there).
    size = [int.from_bytes(png[at : at + 4], "big") for at in (16, 20)]
    shown = page.evaluate(
        """() => { const q = s => document.querySelector('#jupyter-gpumem-panel ' + s);
                   return [q('.jp-GpuMem-chart').clientWidth, q('.jp-GpuMem-chart').clientHeight,
                           q('.jp-GpuMem-legend').offsetHeight]; }"""
    )
    assert size == [2 * shown[0], 2 * (shown[1] + shown[2] + 8)], (size, shown)
