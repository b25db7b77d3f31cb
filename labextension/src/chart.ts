/**
 * The time chart: this kernel's memory against its budget, drawn as SVG paths whose colours are
 * --jp-* variables (styles), so a theme change needs no redraw. Scales that tell the story: x spans
 * the data (at least MIN_SPAN_MS, at most the history window), y reaches the larger of this
 * kernel's peak and its budget, not the device's total, which is a labelled line when it fits and a
 * note at the top when it does not. One point per pixel column (peaks kept); an update touches only
 * the attributes that changed, so a redraw every second costs well under a millisecond of script.
 */

import {
  IChartLabels,
  Trans,
  axisNumber,
  chartLabels,
  chartName,
  clock,
  collecting,
  hoverFigure,
  markTitle,
  totalAbove
} from './format';
import { Field, ISeries, decimate } from './history';

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;
const SVG = 'http://www.w3.org/2000/svg';

/** The shortest x range: a 20-second ramp gets a sixth of the width, not a few pixels. */
export const MIN_SPAN_MS = 120_000;

/** Room around the plot for the axis labels, in pixels. */
export const MARGIN = { l: 30, r: 6, t: 16, b: 16 };

/** The y scale's headroom above the highest figure it has to show. */
const HEADROOM = 1.08;

/**
 * The x range: from the first sample to the last, at least MIN_SPAN_MS from the first (the chart
 * fills from the left while it collects), at most the window (then it slides).
 */
export function xRange(t: number[], windowMs: number): [number, number] {
  const first = t[0];
  const last = t[t.length - 1];
  if (last - first > windowMs) {
    return [last - windowMs, last];
  }
  return [first, Math.max(last, first + Math.min(MIN_SPAN_MS, windowMs))];
}

const BUCKETS_S = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600];

/** One point per pixel column at most, from a short ladder of bucket sizes so that the buckets
 * (aligned to multiples of their size) stay put while the x range grows. */
export function bucketMs(spanMs: number, plotWidth: number): number {
  const wanted = spanMs / Math.max(1, plotWidth);
  for (const s of BUCKETS_S) {
    if (s * 1000 >= wanted) {
      return s * 1000;
    }
  }
  return Math.ceil(wanted / 3_600_000) * 3_600_000;
}

function peak(values: number[]): number {
  let top = 0;
  for (const v of values) {
    top = v > top ? v : top; // NaN is never greater
  }
  return top;
}

export interface IScale {
  /** The top of the y axis, in bytes. */
  top: number;
  /** Tick values in bytes, from 0. */
  ticks: number[];
  /** The unit the tick labels are in. */
  unit: 'GiB' | 'MiB';
}

/**
 * The y scale: up to the larger of this kernel's peak (as nvidia-smi counts it, or its framework's)
 * and its budget, with a little headroom, to a round tick. Only when this kernel holds nothing
 * and has no budget do the other processes set it; never the device total.
 */
export function yScale(s: Pick<ISeries, Field>, maxTicks = 5): IScale {
  let top = Math.max(peak(s.own), peak(s.framework), peak(s.budget));
  if (top <= 0) {
    top = peak(s.others);
  }
  top = Math.max(top * HEADROOM, 256 * MiB);
  const unit = top >= GiB ? 'GiB' : 'MiB';
  const size = unit === 'GiB' ? GiB : MiB;
  const raw = top / size / Math.max(1, maxTicks);
  const power = 10 ** Math.floor(Math.log10(raw));
  const step =
    [1, 2, 2.5, 5, 10].map(m => m * power).find(m => m >= raw) ?? 10 * power;
  const count = Math.ceil(top / size / step - 1e-9);
  const ticks = Array.from({ length: count + 1 }, (_, i) => i * step * size);
  return { top: ticks[ticks.length - 1], ticks, unit };
}

const TICKS_S = [
  1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
  43200, 86400
];

/** Time ticks at round multiples of a step that leaves room for each label; with seconds when
 * the step is under a minute. */
export function timeTicks(
  x0: number,
  x1: number,
  plotWidth: number,
  labelPx = 56
): { ticks: number[]; seconds: boolean } {
  const most = Math.max(1, Math.floor(plotWidth / labelPx));
  const span = x1 - x0;
  const stepS =
    TICKS_S.find(s => span / (s * 1000) <= most) ?? TICKS_S[TICKS_S.length - 1];
  const step = stepS * 1000;
  // Round in local time (a time zone is a whole number of minutes off UTC).
  const offset = new Date(x0).getTimezoneOffset() * 60_000;
  const ticks = [];
  for (
    let t = Math.ceil((x0 - offset) / step) * step + offset;
    t <= x1;
    t += step
  ) {
    ticks.push(t);
  }
  return { ticks, seconds: stepS < 60 };
}

/** A coordinate to a tenth of a pixel, as text (cheaper than toFixed, called thousands of times). */
const px = (v: number): string => String(Math.round(v * 10) / 10);

/** An SVG path through the points, broken where a value is NaN (N/A stays a gap). */
export function linePath(
  t: number[],
  values: number[],
  x: (t: number) => number,
  y: (v: number) => number
): string {
  let d = '';
  let pen = false;
  for (let i = 0; i < t.length; i++) {
    const v = values[i];
    if (Number.isNaN(v)) {
      pen = false;
      continue;
    }
    d += `${pen ? 'L' : 'M'}${px(x(t[i]))} ${px(y(v))}`;
    pen = true;
  }
  return d;
}

/** The same, closed down to `base` under each run of points: the area under this kernel's line. */
export function areaPath(
  t: number[],
  values: number[],
  x: (t: number) => number,
  y: (v: number) => number,
  base: number
): string {
  let d = '';
  let start = -1;
  const close = (end: number) => {
    if (start >= 0) {
      d += `L${px(x(t[end]))} ${base}L${px(x(t[start]))} ${base}Z`;
    }
    start = -1;
  };
  for (let i = 0; i < t.length; i++) {
    if (Number.isNaN(values[i])) {
      close(i - 1);
      continue;
    }
    d += `${start < 0 ? 'M' : 'L'}${px(x(t[i]))} ${px(y(values[i]))}`;
    if (start < 0) {
      start = i;
    }
  }
  close(t.length - 1);
  return d;
}

/** The index of the point nearest to time `at` (t sorted, not empty). */
export function nearest(t: number[], at: number): number {
  let lo = 0;
  let hi = t.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (t[mid] < at) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo > 0 && at - t[lo - 1] < t[lo] - at ? lo - 1 : lo;
}

let clipIds = 0;

function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  className: string,
  parent: Element
): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG, tag);
  if (className) {
    node.setAttribute('class', className);
  }
  parent.appendChild(node);
  return node;
}

/** Set an attribute only when it changes: an unchanged chart costs no style or layout work. */
function set(node: Element, name: string, value: string): void {
  if (node.getAttribute(name) !== value) {
    node.setAttribute(name, value);
  }
}

function text(node: Node, value: string): void {
  if (node.textContent !== value) {
    node.textContent = value;
  }
}

type Line = 'own' | 'framework' | 'others' | 'budget' | 'total';
const LINES: Line[] = ['total', 'others', 'budget', 'framework', 'own'];

/** The lines drawn, in the legend's order. */
const LEGEND: Line[] = ['own', 'framework', 'others', 'budget', 'total'];

export class Chart {
  /** What the test of the chart's scales reads: the x range (ms) and the y top (bytes). */
  readonly plot: SVGSVGElement;
  private readonly _area: SVGPathElement;
  private readonly _lines: Record<Line, SVGPathElement>;
  private readonly _grid: SVGGElement;
  private readonly _labels: SVGGElement;
  private readonly _marks: SVGGElement;
  private readonly _unit: SVGTextElement;
  private readonly _total: SVGTextElement;
  private readonly _cursor: SVGLineElement;
  private readonly _clip: SVGRectElement;
  private readonly _placeholder: HTMLElement;
  private readonly _hover: HTMLElement;
  private readonly _legend: HTMLElement;
  private _legendKey = '';
  private _width = 0;
  private _height = 0;
  private _resize: ResizeObserver;
  private _last: {
    s: ISeries;
    x: (t: number) => number;
    labels: IChartLabels;
  } | null = null;
  private _args: [ISeries | undefined, number, string | null] | null = null;

  constructor(
    readonly node: HTMLElement,
    legend: HTMLElement,
    private readonly _trans: Trans
  ) {
    this._legend = legend;
    const plot = (this.plot = svg('svg', 'jp-GpuMem-plot', node));
    plot.setAttribute('role', 'img');
    plot.setAttribute('aria-label', chartName(_trans));
    const clipId = `jp-GpuMem-clip-${++clipIds}`;
    this._clip = svg('rect', '', svg('clipPath', '', plot));
    this._clip.parentElement!.setAttribute('id', clipId);
    this._grid = svg('g', 'jp-GpuMem-grid', plot);
    this._labels = svg('g', 'jp-GpuMem-axis', plot);
    this._unit = svg('text', 'jp-GpuMem-unit', plot);
    const traces = svg('g', '', plot);
    traces.setAttribute('clip-path', `url(#${clipId})`);
    this._area = svg('path', 'jp-GpuMem-area', traces);
    this._lines = {} as Record<Line, SVGPathElement>;
    for (const line of LINES) {
      this._lines[line] = svg('path', `jp-GpuMem-line jp-mod-${line}`, traces);
    }
    this._total = svg('text', 'jp-GpuMem-totalLabel', plot);
    this._marks = svg('g', 'jp-GpuMem-marks', plot);
    this._cursor = svg('line', 'jp-GpuMem-cursor', plot);
    this._placeholder = document.createElement('div');
    this._placeholder.className = 'jp-GpuMem-collecting';
    node.appendChild(this._placeholder);
    this._hover = document.createElement('div');
    this._hover.className = 'jp-GpuMem-hover';
    this._hover.hidden = true;
    node.appendChild(this._hover);
    plot.addEventListener('pointermove', this._onPointer);
    plot.addEventListener('pointerleave', this._hideHover);
    // The size is read when it changes, never in the update path (no forced layout per sample).
    this._resize = new ResizeObserver(entries => {
      const box = entries[entries.length - 1].contentRect;
      if (box.width !== this._width || box.height !== this._height) {
        this._width = box.width;
        this._height = box.height;
        if (this._args) {
          this.render(...this._args);
        }
      }
    });
    this._resize.observe(node);
  }

  /**
   * Draw the series over the x range its data calls for (at most `windowMs`). `framework` names the
   * framework allocator's line. Undefined or fewer than two samples: "Collecting…".
   */
  render(
    full: ISeries | undefined,
    windowMs: number,
    framework: string | null
  ): void {
    this._args = [full, windowMs, framework];
    const width = this._width;
    const height = this._height;
    const ready = full !== undefined && full.t.length >= 2 && width > 0;
    this.plot.style.visibility = ready ? '' : 'hidden';
    this._legend.style.visibility = ready ? '' : 'hidden';
    this._placeholder.hidden = ready;
    text(this._placeholder, collecting(this._trans));
    if (!ready) {
      this._last = null;
      this._hideHover();
      return;
    }
    const plotW = Math.max(1, width - MARGIN.l - MARGIN.r);
    const plotH = Math.max(1, height - MARGIN.t - MARGIN.b);
    const [x0, x1] = xRange(full.t, windowMs);
    const s = decimate(full, bucketMs(x1 - x0, plotW), x0);
    const scale = yScale(s);
    const x = (t: number) => MARGIN.l + ((t - x0) / (x1 - x0)) * plotW;
    const y = (v: number) => MARGIN.t + plotH - (v / scale.top) * plotH;
    const base = MARGIN.t + plotH;
    const labels = chartLabels(framework, this._trans);

    set(this.plot, 'width', String(width));
    set(this.plot, 'height', String(height));
    set(this.plot, 'viewBox', `0 0 ${width} ${height}`);
    this.plot.dataset.x0 = String(x0);
    this.plot.dataset.x1 = String(x1);
    this.plot.dataset.yTop = String(scale.top);
    set(this._clip, 'x', String(MARGIN.l));
    set(this._clip, 'y', String(MARGIN.t - 1));
    set(this._clip, 'width', String(plotW));
    set(this._clip, 'height', String(plotH + 1));
    this._axes(scale, x0, x1, plotW, base, y);

    const totalTop = peak(s.total);
    const totalFits = totalTop > 0 && totalTop <= scale.top;
    set(this._area, 'd', areaPath(s.t, s.own, x, y, base));
    for (const line of LINES) {
      const shown = line !== 'total' || totalFits;
      set(this._lines[line], 'd', shown ? linePath(s.t, s[line], x, y) : '');
    }
    if (totalTop > 0) {
      text(
        this._total,
        totalFits ? labels.total : totalAbove(totalTop, this._trans)
      );
      set(this._total, 'x', String(width - MARGIN.r));
      set(
        this._total,
        'y',
        String(totalFits ? Math.max(MARGIN.t + 9, y(totalTop) - 3) : 10)
      );
    } else {
      text(this._total, '');
    }
    this._drawMarks(s, x, y, x0, x1);
    this._drawLegend(s, labels, totalFits);
    this._last = { s, x, labels };
  }

  dispose(): void {
    this._resize.disconnect();
  }

  private _axes(
    scale: IScale,
    x0: number,
    x1: number,
    plotW: number,
    base: number,
    y: (v: number) => number
  ): void {
    const size = scale.unit === 'GiB' ? GiB : MiB;
    const { ticks, seconds } = timeTicks(x0, x1, plotW);
    const xs = ticks.map(t => MARGIN.l + ((t - x0) / (x1 - x0)) * plotW);
    const grid = this._pool(this._grid, 'line', scale.ticks.length);
    const labels = this._pool(
      this._labels,
      'text',
      scale.ticks.length + ticks.length
    );
    scale.ticks.forEach((v, i) => {
      const at = y(v).toFixed(1);
      set(grid[i], 'x1', String(MARGIN.l));
      set(grid[i], 'x2', String(MARGIN.l + plotW));
      set(grid[i], 'y1', at);
      set(grid[i], 'y2', at);
      const label = labels[i];
      set(label, 'x', String(MARGIN.l - 4));
      set(label, 'y', String(+at + 3.5));
      set(label, 'text-anchor', 'end');
      text(label, axisNumber(v / size));
    });
    // The first and last labels stay inside the chart; a label that would touch the one before
    // it is left out.
    const half = seconds ? 22 : 14; // half a label's width at 10 px
    let free = 0;
    ticks.forEach((t, i) => {
      const label = labels[scale.ticks.length + i];
      const [anchor, left] =
        xs[i] - half < 0
          ? ['start', xs[i]]
          : xs[i] + half > this._width
            ? ['end', xs[i] - 2 * half]
            : ['middle', xs[i] - half];
      const fits = left >= free;
      free = fits ? left + 2 * half + 6 : free;
      set(label, 'x', xs[i].toFixed(1));
      set(label, 'y', String(base + 12));
      set(label, 'text-anchor', anchor);
      text(label, fits ? clock(t, seconds) : '');
    });
    set(this._unit, 'x', '2');
    set(this._unit, 'y', '9');
    text(this._unit, scale.unit);
  }

  /** Exactly `count` children of this kind under `parent`, reused from the last draw. */
  private _pool<K extends 'line' | 'text' | 'path'>(
    parent: SVGGElement,
    tag: K,
    count: number
  ): SVGElementTagNameMap[K][] {
    while (parent.childElementCount < count) {
      svg(tag, '', parent);
    }
    while (parent.childElementCount > count) {
      parent.lastElementChild!.remove();
    }
    return Array.from(parent.children) as SVGElementTagNameMap[K][];
  }

  private _drawMarks(
    s: ISeries,
    x: (t: number) => number,
    y: (v: number) => number,
    x0: number,
    x1: number
  ): void {
    const marks = s.marks.filter(m => m.t >= x0 && m.t <= x1);
    const nodes = this._pool(this._marks, 'path', marks.length);
    marks.forEach((m, i) => {
      const mx = x(m.t);
      const py = Math.max(MARGIN.t + 2, y(m.ownBytes)) - 3;
      set(
        nodes[i],
        'd',
        `M${px(mx)} ${px(py - 7)}l4.5 7h-9z` // a triangle on the point
      );
      set(nodes[i], 'class', 'jp-GpuMem-mark');
      let title = nodes[i].firstElementChild;
      if (!title) {
        title = svg('title', '', nodes[i]);
      }
      text(title, markTitle(m.t, m.reason, this._trans));
    });
  }

  private _drawLegend(
    s: ISeries,
    labels: IChartLabels,
    totalFits: boolean
  ): void {
    const shown = LEGEND.filter(
      line =>
        (line !== 'total' || totalFits) && s[line].some(v => !Number.isNaN(v))
    );
    const key = shown.map(line => `${line}:${labels[line]}`).join('|');
    if (key === this._legendKey) {
      return;
    }
    this._legendKey = key;
    this._legend.textContent = '';
    for (const line of shown) {
      const item = document.createElement('span');
      item.className = 'jp-GpuMem-legendItem';
      item.title = labels[line];
      const swatch = document.createElement('span');
      swatch.className = `jp-GpuMem-swatch jp-mod-${line}`;
      const label = document.createElement('span');
      label.className = 'jp-GpuMem-legendLabel';
      label.textContent = labels[line];
      item.append(swatch, label);
      this._legend.appendChild(item);
    }
  }

  private _onPointer = (event: PointerEvent): void => {
    const last = this._last;
    if (!last) {
      return;
    }
    const box = this.plot.getBoundingClientRect();
    const px = event.clientX - box.left;
    const { s, x, labels } = last;
    const [x0, x1] = [
      Number(this.plot.dataset.x0),
      Number(this.plot.dataset.x1)
    ];
    const plotW = this._width - MARGIN.l - MARGIN.r;
    const at = x0 + ((px - MARGIN.l) / plotW) * (x1 - x0);
    const i = nearest(s.t, at);
    const cx = x(s.t[i]).toFixed(1);
    set(this._cursor, 'x1', cx);
    set(this._cursor, 'x2', cx);
    set(this._cursor, 'y1', String(MARGIN.t));
    set(this._cursor, 'y2', String(this._height - MARGIN.b));
    this._cursor.style.visibility = 'visible';
    const rows: [string, string][] = [];
    for (const line of LEGEND) {
      const v = s[line][i];
      if (!Number.isNaN(v) || line === 'own') {
        rows.push([labels[line], hoverFigure(v, this._trans)]);
      }
    }
    const hover = this._hover;
    hover.textContent = '';
    const time = document.createElement('div');
    time.className = 'jp-GpuMem-hoverTime';
    time.textContent = clock(s.t[i], true);
    hover.appendChild(time);
    for (const [name, value] of rows) {
      const row = document.createElement('div');
      row.className = 'jp-GpuMem-hoverRow';
      const a = document.createElement('span');
      a.textContent = name;
      const b = document.createElement('span');
      b.textContent = value;
      row.append(a, b);
      hover.appendChild(row);
    }
    for (const m of s.marks) {
      if (Math.abs(x(m.t) - x(s.t[i])) < 4) {
        const note = document.createElement('div');
        note.className = 'jp-GpuMem-hoverMark';
        note.textContent = markTitle(m.t, m.reason, this._trans);
        hover.appendChild(note);
      }
    }
    hover.hidden = false;
    // Beside the cursor, on the side with more room.
    const left = +cx > this._width / 2;
    hover.style.left = left ? '' : `${+cx + 8}px`;
    hover.style.right = left ? `${this._width - +cx + 8}px` : '';
  };

  private _hideHover = (): void => {
    this._hover.hidden = true;
    this._cursor.style.visibility = 'hidden';
  };
}
