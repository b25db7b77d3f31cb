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

CONTRAST = f"""selector => {{ {_COLOUR}
  const node = document.querySelector(selector);
  return node ? contrast(node) : null;
}}"""

# The panel at its current width and theme: everything the look tests assert, in one go.
LAYOUT = f"""() => {{ {_COLOUR}
  const panel = document.getElementById('jupyter-gpumem-panel');
  const q = s => panel.querySelector(s);
  const all = s => [...panel.querySelectorAll(s)];
  const shown = n => n.getClientRects().length > 0;
  const body = getComputedStyle(document.body);
  const v = name => body.getPropertyValue(name).trim();
  const scrollers = ['.jp-SidePanel-content', '.jp-GpuMem-content', '.jp-GpuMem-tableBox',
                     '.jp-SidePanel-toolbar', '.jp-GpuMem-legend']
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
  const badges = all('.jp-GpuMem-badge').filter(shown);
  const th = q('.jp-GpuMem-processes th');
  const headline = q('.jp-GpuMem-headline');
  const legendItems = all('.jp-GpuMem-legendItem');
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
    legend: {{ height: q('.jp-GpuMem-legend').getBoundingClientRect().height,
              tops: legendItems.map(i => Math.round(i.getBoundingClientRect().top)) }},
    toolbarHeight: toolbar.getBoundingClientRect().height,
    uiFontSize: v('--jp-ui-font-size1'),
  }};
}}"""


def layout(page: Page) -> dict[str, Any]:
    return page.evaluate(LAYOUT)  # type: ignore[no-any-return]


def contrast(page: Page, selector: str) -> float:
    value = page.evaluate(CONTRAST, selector)
    assert value is not None, f"nothing matches {selector}"
    return float(value)
