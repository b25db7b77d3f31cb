"""What the browser tests measure in the page: contrast from the computed styles, and the panel's
layout (scrolling, row heights, alignment). Each is a JavaScript function for ``page.evaluate``."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page

# Any CSS colour (rgb(), color(srgb …) from color-mix, named) as [r, g, b, alpha] through a canvas;
# the background an element's text is drawn on (its ancestors' backgrounds, composited); WCAG 2
# contrast of the text colour (composited on that background) against it.
_COLOUR = """
const rgba = css => {
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = 1;
  const ctx = canvas.getContext('2d', { willReadFrequently: true });
  ctx.clearRect(0, 0, 1, 1);
  ctx.fillStyle = css;
  ctx.fillRect(0, 0, 1, 1);
  const d = ctx.getImageData(0, 0, 1, 1).data;
  return [d[0], d[1], d[2], d[3] / 255];
};
const over = (top, bottom) => [0, 1, 2].map(i => top[i] * top[3] + bottom[i] * (1 - top[3])).concat(1);
const background = node => {
  const layers = [];
  for (let n = node; n; n = n.parentElement) {
    const c = rgba(getComputedStyle(n).backgroundColor);
    if (c[3] > 0) { layers.push(c); if (c[3] === 1) break; }
  }
  return layers.reverse().reduce((below, layer) => over(layer, below), [255, 255, 255, 1]);
};
const luminance = c => {
  const [r, g, b] = c.slice(0, 3).map(v => v / 255).map(v => v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
};
const contrast = node => {
  const bg = background(node);
  const fg = over(rgba(getComputedStyle(node).color), bg);
  const [hi, lo] = [luminance(fg), luminance(bg)].sort((a, b) => b - a);
  return (hi + 0.05) / (lo + 0.05);
};
const sameColour = (a, b) => rgba(a).every((v, i) => Math.abs(v - rgba(b)[i]) < 2);
"""

# plotly's drawing of one line of the chart (`gd`: the plot), found by its trace's uid; null before plotly has
# drawn the plot at all (no `_fullData`: its chunk still loading, which took seconds in a fresh clone's run under load).
_TRACE = """
const traceOf = (gd, uid) => {
  const i = (gd?._fullData ?? []).findIndex(t => t.uid === uid);
  return i < 0 ? null : gd.querySelectorAll('.scatterlayer .trace')[i];
};
const ownLine = gd => traceOf(gd, 'own')?.querySelector('.js-line') ?? null;
"""

# What a chart (the plotly plot under `root`) shows: the x range it was given (epoch ms) and plotly's own
# (its axis's time, ms), the y top, the lines and their points, the legend (HTML, under the plot: which lines the
# user hid), the unit and the total's note (HTML, over it), the hover, the paused note.
CHART = f"""root => {{ {_TRACE}
  const gd = document.querySelector(root + ' .jp-GpuMem-plot');
  const axis = r => Date.parse(String(r).replace(' ', 'T') + 'Z');
  const size = gd._fullLayout?._size;
  const paused = document.querySelector(root + ' .jp-GpuMem-paused');
  return {{
    plotly: gd.classList.contains('js-plotly-plot') && !!gd.querySelector('svg.main-svg'),
    x0: Number(gd.dataset.x0), x1: Number(gd.dataset.x1), yTop: Number(gd.dataset.yTop),
    range: (gd._fullLayout?.xaxis.range ?? []).map(axis),
    yRange: gd._fullLayout?.yaxis.range,
    plot: size && {{ left: size.l, top: size.t, width: size.w, height: size.h }},
    traces: (gd._fullData ?? []).map(t => ({{ uid: t.uid, name: t.name, visible: t.visible,
      x: Array.from(t.x ?? []), hovertext: t.hovertext }})),
    own: (b => b && {{ width: b.width, height: b.height }})(traceOf(gd, 'own')?.querySelector('.js-line').getBBox()),
    legend: [...document.querySelectorAll(root + ' .jp-GpuMem-legendItem')].map(n => n.textContent),
    hidden: [...document.querySelectorAll(root + ' .jp-GpuMem-legendItem[aria-pressed=false]')]
      .map(n => n.textContent),
    note: [...document.querySelectorAll(root + ' .jp-GpuMem-totalNote')].find(n => !n.hidden)?.textContent ?? null,
    unit: document.querySelector(root + ' .jp-GpuMem-unit')?.textContent ?? null,
    plotlyLegend: !!gd.querySelector('.legend'),
    ticks: [...gd.querySelectorAll('.xtick text')].map(n => n.textContent),
    hover: [...gd.querySelectorAll('.hoverlayer text')].map(n => n.textContent),
    paused: paused && !paused.hidden ? paused.textContent : null,
  }};
}}"""

CONTRAST = f"""selector => {{ {_COLOUR}
  const node = document.querySelector(selector);
  return node ? contrast(node) : null;
}}"""

# The panel at its current width and theme: everything the look tests assert, in one go; null while plotly is
# between its data and its drawing (the own line in `_fullData`, its <path> not yet drawn), for a wait to retry.
LAYOUT = f"""() => {{ {_COLOUR} {_TRACE}
  const panel = document.getElementById('jupyter-gpumem-panel');
  const q = s => panel.querySelector(s);
  const own = ownLine(q('.jp-GpuMem-plot'));
  if (!own) return null;
  const all = s => [...panel.querySelectorAll(s)];
  const shown = n => n.getClientRects().length > 0;
  const body = getComputedStyle(document.body);
  const v = name => body.getPropertyValue(name).trim();
  const scrollers = ['.jp-SidePanel-content', '.jp-GpuMem-content', '.jp-GpuMem-tableBox',
                     '.jp-SidePanel-toolbar']
    .map(s => [s, q(s)]).concat([['panel', panel]])
    .map(([s, n]) => ({{ s, scrollWidth: n.scrollWidth, clientWidth: n.clientWidth }}));
  const rows = all('.jp-GpuMem-processes tbody tr');
  const columns = [...q('.jp-GpuMem-processes thead tr').children].filter(shown).map(th => th.dataset.key);
  const numeric = [];
  for (const td of all('.jp-GpuMem-processes td.jp-mod-numeric').filter(shown)) {{
    const range = document.createRange();
    range.selectNodeContents(td);
    const text = range.getBoundingClientRect();
    const cell = td.getBoundingClientRect();
    const style = getComputedStyle(td);
    numeric.push({{ align: style.textAlign, gap: cell.right - parseFloat(style.paddingRight) - text.right,
                   digits: style.fontVariantNumeric }});
  }}
  const names = all('.jp-GpuMem-processes tbody tr').map(tr => {{
    const span = tr.querySelector('.jp-GpuMem-name');
    return {{ text: span.textContent, cut: span.scrollWidth > span.clientWidth,
             overflow: getComputedStyle(span).textOverflow, space: getComputedStyle(span).whiteSpace,
             title: tr.querySelector('.jp-GpuMem-col-name').title,
             user: tr.querySelector('.jp-GpuMem-col-user').textContent,
             weight: getComputedStyle(span).fontWeight }};
  }});
  const badges = all('.jp-GpuMem-processes .jp-GpuMem-badge').filter(shown); // the kernel list has its own
  const th = q('.jp-GpuMem-processes th');
  const headline = q('.jp-GpuMem-headline');
  const chart = q('.jp-GpuMem-chart').getBoundingClientRect();
  const legendNode = q('.jp-GpuMem-legend');
  const legend = legendNode.getBoundingClientRect();
  const box = q('.jp-GpuMem-chartBox').getBoundingClientRect();
  const toolbar = q('.jp-SidePanel-toolbar');
  return {{
    width: panel.getBoundingClientRect().width,
    scrollers,
    rowHeights: rows.map(r => r.getBoundingClientRect().height),
    columns,
    numeric,
    names,
    badges: badges.map(b => ({{ text: b.textContent, weight: getComputedStyle(b).fontWeight,
                               self: b.closest('tr').classList.contains('jp-GpuMem-self') }})),
    header: {{ weight: getComputedStyle(th).fontWeight,
              mainColour: sameColour(getComputedStyle(th).color, v('--jp-ui-font-color1')) }},
    headline: {{ size: getComputedStyle(headline).fontSize, weight: getComputedStyle(headline).fontWeight,
                level: headline.dataset.level, contrast: contrast(headline) }},
    details: ['.jp-GpuMem-device', '.jp-GpuMem-breakdown']
      .map(s => sameColour(getComputedStyle(q(s)).color, v('--jp-ui-font-color2'))),
    legendInside: legend.left >= box.left && legend.right <= box.right + 1 && legend.top >= chart.bottom
                  && legend.bottom <= box.bottom + 1 && legendNode.scrollWidth <= legendNode.clientWidth,
    ownColour: sameColour(own.style.stroke, v('--jp-brand-color1')),
    toolbarHeight: toolbar.getBoundingClientRect().height,
    uiFontSize: v('--jp-ui-font-size1'),
  }};
}}"""


def layout(page: Page) -> dict[str, Any]:
    """The panel's layout once plotly has drawn what its data says: a redraw in progress is waited out, never slept."""
    return page.wait_for_function(LAYOUT, polling=50, timeout=10_000).json_value()  # type: ignore[no-any-return]


def chart(page: Page, root: str = "#jupyter-gpumem-panel") -> dict[str, Any]:
    return page.evaluate(CHART, root)  # type: ignore[no-any-return]


def contrast(page: Page, selector: str) -> float:
    value = page.evaluate(CONTRAST, selector)
    assert value is not None, f"nothing matches {selector}"
    return float(value)
