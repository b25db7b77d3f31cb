/**
 * The time chart as a plotly figure: pure data from the history, no DOM, no plotly code (chart.ts
 * draws it), so its content and scales are tested in node. Scales that tell the story: x spans the
 * data (at least MIN_SPAN_MS, at most the history window), y reaches the larger of this kernel's
 * peak and its budget, not the device's total, which is a line when it fits and a note at the top
 * when it does not. Live, the x range steps by whole buckets of about a pixel column, whose lowest
 * and highest figures are drawn, so a sample that moves no pixel leaves the figure's picture as it
 * was (chart.ts then draws nothing). It joins the
 * model's decimation and format's words, which only the widgets' layer may do.
 */

import type { Annotations, Data, Layout } from 'plotly.js';

import {
  cellTitle,
  chartLabels,
  chartWords,
  IChartLabels,
  markTitle,
  totalAbove
} from '../format/chart';
import { GiB, MiB, axisNumber, limitBinds } from '../format/number';
import { Trans } from '../format/trans';
import { Field, ISeries, decimate } from '../model/history';

/** The shortest x range: a 20-second ramp gets a sixth of the width, not a few pixels. */
export const MIN_SPAN_MS = 120_000;

/** Room around the plot for the axis labels, in pixels (the legend adds its own below). */
export const MARGIN = { l: 30, r: 8, t: 20, b: 20 };

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

/** How long the live traces stay as they are, at the most: about a minute, in whole buckets. */
export const SETTLE_MS = 60_000;
/** ...but never more than this many buckets (pixel columns) of blank at the right of the plot. */
const SETTLE_BUCKETS = 6;
/** The traces settle only where a bucket holds at least this many samples (an hour at the stream's
 * 1 s pace, at any width up to ~1000 px); shorter spans, where nearly every sample is a pixel column
 * of its own, draw whole. */
const SETTLE_SAMPLES = 3;

/** The live step: settleMs where the traces settle (splits), else the bucket. */
function liveStep(t: number[], spanMs: number, plotW: number): number {
  const bucket = bucketMs(spanMs, plotW);
  return splits(t, bucket) ? settleMs(bucket) : bucket;
}

/** Whether the newest samples come at least SETTLE_SAMPLES to a bucket. */
function splits(t: number[], bucket: number): boolean {
  const n = t.length;
  return n >= 2 && bucket >= SETTLE_SAMPLES * (t[n - 1] - t[n - 2]);
}

/**
 * The step in which the live range moves and the traces take the buckets completed meanwhile (the
 * newest part is drawn by chart.ts over plotly's plot): whole buckets, about SETTLE_MS, at most
 * SETTLE_BUCKETS of them; so at the stream's 1 s pace plotly replots its traces once in 30 to 60 samples.
 */
export function settleMs(bucket: number): number {
  const buckets = Math.ceil(SETTLE_MS / bucket);
  return bucket * Math.max(1, Math.min(SETTLE_BUCKETS, buckets));
}

/**
 * The live x range: xRange's, its end moved up to the next step boundary (`settleMs` of the
 * buckets of `bucketMs` for that span where the traces settle, else a bucket), so that the range, and every bucket's place on the plot,
 * moves once per settle step, not with every sample: between, a sample moves no point by more than
 * its own bucket's width. The shortest range (MIN_SPAN_MS from the first sample, while the data is
 * shorter) stays as it is.
 */
export function liveRange(
  t: number[],
  windowMs: number,
  plotWidth: number
): [number, number] {
  const [x0, x1] = xRange(t, windowMs);
  const last = t[t.length - 1];
  if (x1 > last) {
    return [x0, x1];
  }
  const step = liveStep(t, x1 - x0, plotWidth);
  const end = Math.ceil(last / step) * step;
  return end - x0 > windowMs ? [end - windowMs, end] : [x0, end];
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
 * The NVIDIA driver's hard limit where it binds (below that moment's device total, or the total not
 * known), NaN elsewhere: what the chart draws and, without a budget, scales to.
 */
export function bindingLimit(
  s: Pick<ISeries, 'driverLimit' | 'total'>
): number[] {
  return s.driverLimit.map((limit, i) => {
    const total = s.total[i];
    return limitBinds(limit, Number.isNaN(total) ? null : total) ? limit : NaN;
  });
}

/**
 * The y scale: up to the larger of this kernel's peak (as nvidia-smi counts it, or its framework's)
 * and its budget, with a little headroom, to a round tick; without a budget in the window, the
 * NVIDIA driver's hard limit where it binds stands in for one (the status bar shows this kernel
 * against it). Only when this kernel holds nothing and has no budget do the other processes set it;
 * never the device total.
 */
export function yScale(s: Pick<ISeries, Field>, maxTicks = 5): IScale {
  const budget = peak(s.budget);
  let top = Math.max(
    peak(s.own),
    peak(s.framework),
    budget > 0 ? budget : peak(bindingLimit(s))
  );
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

/**
 * Plotly's date axis shows epoch milliseconds as UTC. Each time is moved by its own offset from UTC,
 * so hour ticks stay on the hour after a daylight-saving change inside the window.
 */
export function toLocal(t: number): number {
  return t - new Date(t).getTimezoneOffset() * 60_000;
}

/** Back from the axis's time to epoch milliseconds (the offset at that moment). */
export function fromLocal(local: number): number {
  const guess = local + new Date(local).getTimezoneOffset() * 60_000;
  return local + new Date(guess).getTimezoneOffset() * 60_000;
}

/** A range end as plotly reports it after a zoom or pan ("2026-11-24 09:30:12.3456", or a number)
 * to the axis's milliseconds; NaN for anything else. */
export function axisTime(value: unknown): number {
  if (typeof value === 'number') {
    return value;
  }
  const m =
    typeof value === 'string' &&
    /^(\d{4})-(\d\d)-(\d\d)(?:[ T](\d\d):(\d\d)(?::(\d\d(?:\.\d+)?))?)?$/.exec(
      value
    );
  if (!m) {
    return NaN;
  }
  const [, y, mo, d, h = '0', mi = '0', s = '0'] = m;
  return Date.UTC(+y, +mo - 1, +d, +h, +mi) + Math.round(Number(s) * 1000);
}

/** The time axis's tick steps (ms) and the label each calls for. */
const TIME_STEPS: [number, string][] = [
  ...[1, 2, 5, 10, 15, 30].map((s): [number, string] => [s * 1000, '%H:%M:%S']),
  ...[1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720].map(
    (m): [number, string] => [m * 60_000, '%H:%M']
  ),
  ...[1, 2, 7].map((d): [number, string] => [d * 86_400_000, '%b %d'])
];

/** A tick label's width at the axis's 10 px font, a little more than it takes. */
const labelWidth = (format: string): number =>
  format === '%b %d' ? 36 : format.length * 6;

export interface ITimeTicks {
  /** In the axis's time (toLocal): on the round second, minute, hour or local midnight. */
  values: number[];
  format: string;
}

/**
 * The time axis's ticks from `lo` to `hi` (axis time): at least 60 px apart, and none whose label
 * would stick out of the chart's sides while `x0`–`x1` is shown, which plotly would cut in half. Ours,
 * not plotly's, so plotly never measures a label to hide it (a forced layout each: 3–5 ms an update
 * in a notebook's page).
 */
export function timeTicks(
  lo: number,
  hi: number,
  x0: number,
  x1: number,
  plotW: number
): ITimeTicks {
  const span = Math.max(1, x1 - x0);
  const most = Math.max(2, Math.floor(plotW / 60));
  const [step, format] =
    TIME_STEPS.find(([ms]) => span / ms <= most) ??
    TIME_STEPS[TIME_STEPS.length - 1];
  const half = labelWidth(format) / 2;
  const px = (v: number) => ((v - x0) / span) * plotW;
  const values: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi; v += step) {
    const inView = v >= x0 && v <= x1;
    if (
      !inView ||
      (px(v) - half >= -MARGIN.l && px(v) + half <= plotW + MARGIN.r)
    ) {
      values.push(v);
    }
  }
  return { values, format };
}

/** The chart's colours: CSS colours read from the --jp-* variables (chart.ts). */
export interface IColours {
  own: string;
  framework: string;
  others: string;
  budget: string;
  driverLimit: string;
  total: string;
  text: string;
  grid: string;
  background: string;
  font: string;
}

/** What the chart is asked to show. */
export interface IFigureArgs {
  series: ISeries;
  windowMs: number;
  framework: string | null;
  /** The plot's size in pixels. */
  width: number;
  height: number;
  colours: IColours;
  /** The range the user zoomed or panned to (epoch ms), or null: live, the range the data calls for. */
  range: [number, number] | null;
  /** The lines the user hid from the legend (their uids): drawn as plotly's "legendonly". */
  hidden?: ReadonlySet<string>;
}

/** A line as the legend shows it. */
export interface ILegendEntry {
  uid: string;
  name: string;
  colour: string;
  /** The line's width in pixels and its CSS border style (plotly's dash). */
  width: number;
  style: 'solid' | 'dotted' | 'dashed';
  hidden: boolean;
}

/**
 * The figure whole, as plotly draws it into the PNG the mode bar's camera saves: legend, unit (the
 * title) and the total's note (an annotation) included. Live, chart.ts has plotly leave those three
 * out and shows `unit`, `note` and `legend` as HTML beside the plot: plotly would draw them again on
 * every data change (its legend alone ~2 ms an update, an annotation twice).
 */
export interface IFigure {
  data: Data[];
  layout: Partial<Layout>;
  unit: string;
  note: string | null;
  legend: ILegendEntry[];
  /** The x range shown (epoch ms) and the y axis's top (bytes). */
  x0: number;
  x1: number;
  yTop: number;
  /** Live: the time (epoch ms) before which the traces hold every bucket, all complete (a step
   * before the range's end); null while the user's range is shown, or where the traces do not settle
   * (fewer than SETTLE_SAMPLES samples a bucket): the traces hold all. */
  settledMs: number | null;
}

/** The lines, drawn in this order (the own line on top, the budget's dashes over the driver's limit
 * where the budget is planned at it); the legend lists them as LEGEND does. */
const LINES: Field[] = [
  'total',
  'others',
  'driverLimit',
  'budget',
  'framework',
  'own'
];
const LEGEND: Field[] = [
  'own',
  'framework',
  'others',
  'budget',
  'driverLimit',
  'total'
];
const DASH: Record<Field, 'solid' | 'dot' | 'dash'> = {
  own: 'solid',
  framework: 'dot',
  others: 'solid',
  budget: 'dash',
  driverLimit: 'solid',
  total: 'solid'
};
const WIDTH: Record<Field, number> = {
  own: 2,
  framework: 1.5,
  others: 1.5,
  budget: 1.5,
  driverLimit: 2,
  total: 1
};
const BORDER_STYLE = { solid: 'solid', dot: 'dotted', dash: 'dashed' } as const;

/**
 * Text from the kernel for plotly's hover, which reads tags (a reason naming a process called
 * "<b>" stays as written) and never wraps: escaped, and cut into lines of at most `chars` at spaces
 * so that the hover fits in a 250 px panel.
 */
export function hoverText(text: string, chars: number): string {
  const lines: string[] = [];
  for (const word of text.split(' ')) {
    const last = lines.length - 1;
    if (last >= 0 && lines[last].length + 1 + word.length <= chars) {
      lines[last] += ' ' + word;
    } else {
      lines.push(word);
    }
  }
  const escape = (line: string) =>
    line.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  return lines.map(escape).join('<br>');
}

/** A value for plotly: N/A (NaN) becomes null, a gap in the line rather than 0. */
const gib = (v: number): number | null => (Number.isNaN(v) ? null : v / GiB);

/** A hex colour with the given opacity, for the area under this kernel's line; undefined for other
 * colours, whose area plotly fills with the line's colour at half opacity. */
function translucent(colour: string, alpha: number): string | undefined {
  const hex = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(colour.trim());
  if (!hex) {
    return undefined;
  }
  const h = hex[1].length === 3 ? hex[1].replace(/./g, c => c + c) : hex[1];
  const [r, g, b] = [0, 2, 4].map(i => parseInt(h.slice(i, i + 2), 16));
  return `rgba(${r}, ${g}, ${b}, ${alpha})`;
}

/**
 * The figure: one trace per line that has figures (uid = its field, so a legend toggle stays with its
 * line), one marker per over-budget episode in view with its reason on hover, x in local time.
 */
export function figure(args: IFigureArgs, trans: Trans): IFigure {
  const { series: full, colours, width, height } = args;
  const plotW = Math.max(1, width - MARGIN.l - MARGIN.r);
  const [x0, x1] = args.range ?? liveRange(full.t, args.windowMs, plotW);
  // Zoomed, the points cover a span either side as well, so a pan shows data at once.
  const span = x1 - x0;
  const [from, to] = args.range ? [x0 - span, x1 + span] : [x0, Infinity];
  const s = decimate(full, bucketMs(span, plotW), from, to);
  // The y scale is the whole window's, so a zoom on time never rescales memory.
  const scale = yScale(args.range ? full : s);
  const size = scale.unit === 'GiB' ? GiB : MiB;
  const labels: IChartLabels = chartLabels(args.framework, trans);
  const words = chartWords(trans);
  const x = s.t.map(toLocal);
  const totalTop = peak(s.total);
  const totalFits = totalTop > 0 && totalTop <= scale.top;

  const data: Data[] = [];
  const legend: ILegendEntry[] = [];
  for (const field of LINES) {
    // The driver's limit where it binds, and only if some of it is under the top.
    const values = field === 'driverLimit' ? bindingLimit(s) : s[field];
    if (
      (field === 'total' && !totalFits) ||
      (field === 'driverLimit' && !values.some(v => v <= scale.top)) ||
      !values.some(v => !Number.isNaN(v))
    ) {
      continue;
    }
    const width = WIDTH[field];
    const hidden = args.hidden?.has(field) ?? false;
    data.push({
      type: 'scatter',
      mode: 'lines',
      uid: field,
      name: labels[field],
      legendrank: LEGEND.indexOf(field),
      visible: hidden ? 'legendonly' : true,
      x,
      y: values.map(gib),
      line: { color: colours[field], width, dash: DASH[field] },
      fill: field === 'own' ? 'tozeroy' : 'none',
      fillcolor: translucent(colours.own, 0.15),
      hovertemplate: words.hoverFigure
    } as Data);
    legend.push({
      uid: field,
      name: labels[field],
      colour: colours[field],
      width,
      style: BORDER_STYLE[DASH[field]],
      hidden
    });
  }
  legend.sort(
    (a, b) => LEGEND.indexOf(a.uid as Field) - LEGEND.indexOf(b.uid as Field)
  );
  const marks = s.marks.filter(m => m.t >= x0 && m.t <= x1);
  if (marks.length) {
    data.push({
      type: 'scatter',
      mode: 'markers',
      uid: 'marks',
      showlegend: false,
      x: marks.map(m => toLocal(m.t)),
      y: marks.map(m => m.ownBytes / GiB),
      hovertext: marks.map(m =>
        hoverText(markTitle(m, trans), Math.floor(width / 7))
      ),
      hovertemplate: '%{hovertext}<extra></extra>',
      marker: {
        symbol: 'triangle-down',
        size: 10,
        color: colours.budget,
        line: { color: colours.background, width: 1 }
      }
    } as Data);
  }

  // Each cell in view: a band behind the lines (the trace's area, drawn first, so under them; one
  // trace rather than a shape a cell, which plotly would place and draw apart), and the line along its
  // top whose unified hover names the cell.
  const cellTop = (scale.top / GiB) * 0.985;
  const cellX: (number | null)[] = [];
  const cellY: (number | null)[] = [];
  const cellText: (string | null)[] = [];
  for (const cell of s.cells) {
    const start = cell.startT * 1000;
    const end =
      cell.endT === null
        ? (full.t[full.t.length - 1] ?? start)
        : cell.endT * 1000;
    if (end < x0 || start > x1) {
      continue;
    }
    const title = hoverText(cellTitle(cell, trans), Math.floor(width / 7));
    const inside = s.t.filter(v => v > start && v < end);
    for (const v of [start, ...inside, end]) {
      cellX.push(toLocal(v));
      cellY.push(cellTop);
      cellText.push(title);
    }
    cellX.push(null); // a gap between two cells: their areas apart
    cellY.push(null);
    cellText.push(null);
  }
  if (cellX.length) {
    data.unshift({
      type: 'scatter',
      mode: 'lines',
      uid: 'cells',
      showlegend: false,
      x: cellX,
      y: cellY,
      hovertext: cellText,
      hovertemplate: '%{hovertext}<extra></extra>',
      line: { color: colours.grid, width: 3 },
      fill: 'tozeroy',
      fillcolor: translucent(colours.own, 0.06) ?? 'rgba(128, 128, 128, 0.06)'
    } as Data);
  }

  // The unit above the tick labels as plotly's title, the total's note beside it (clear of the mode bar
  // on the right), and the legend under the plot: the saved picture's (live, chart.ts shows them as HTML).
  const textFont = { size: 10, color: colours.text }; // the notes and the tick labels
  const title: Partial<Layout['title']> = {
    text: scale.unit,
    font: textFont,
    xref: 'paper',
    yref: 'paper',
    x: 0,
    y: 1,
    xanchor: 'right',
    yanchor: 'bottom',
    pad: { r: 4, b: 7, t: 0, l: 0 } // clear of the top tick's label, level with the total's note
  };
  const note = totalTop > 0 && !totalFits ? totalAbove(totalTop, trans) : null;
  const annotations: Partial<Annotations>[] = [];
  if (note !== null) {
    annotations.push({
      text: note,
      xref: 'paper',
      yref: 'paper',
      x: 0,
      y: 1,
      xanchor: 'left',
      yanchor: 'bottom',
      yshift: 4,
      showarrow: false,
      font: textFont
    });
  }
  // Zoomed, ticks for the span either side too, which a pan shows before it ends.
  const reach = args.range ? span : 0;
  const ticks = timeTicks(
    toLocal(x0 - reach),
    toLocal(x1 + reach),
    toLocal(x0),
    toLocal(x1),
    plotW
  );
  const layout: Partial<Layout> = {
    width,
    height,
    margin: { ...MARGIN, pad: 0 },
    paper_bgcolor: 'rgba(0,0,0,0)',
    plot_bgcolor: 'rgba(0,0,0,0)',
    font: { family: colours.font, size: 10, color: colours.text },
    // The user's zoom and pan survive every live update (the x range is ours to set only while
    // live: chart.ts follows the user's range from the relayout events).
    uirevision: 'gpumem',
    dragmode: 'zoom',
    hovermode: 'x unified',
    hoverlabel: {
      bgcolor: colours.background,
      bordercolor: colours.grid,
      font: { color: colours.text, size: 11, family: colours.font }
    },
    showlegend: true,
    legend: {
      orientation: 'h',
      x: 0,
      xanchor: 'left',
      y: -0.12,
      yanchor: 'top',
      font: { size: 10, color: colours.text },
      itemwidth: 30,
      tracegroupgap: 0
    },
    xaxis: {
      type: 'date',
      range: [toLocal(x0), toLocal(x1)],
      tickmode: 'array',
      tickvals: ticks.values,
      tickformat: ticks.format,
      ticklabeloverflow: 'allow', // timeTicks left out the labels that would not fit
      tickangle: 0, // ours are 60 px apart: plotly need not measure each label to see if it overlaps
      hoverformat: '%H:%M:%S',
      tickfont: textFont,
      showgrid: false,
      zeroline: false,
      linecolor: colours.grid,
      showline: true,
      fixedrange: false
    },
    yaxis: {
      range: [0, scale.top / GiB],
      fixedrange: true,
      tickmode: 'array',
      tickvals: scale.ticks.map(v => v / GiB),
      ticktext: scale.ticks.map(v => axisNumber(v / size)),
      ticklabeloverflow: 'allow', // in the left margin, which holds the widest
      tickangle: 0,
      tickfont: textFont,
      gridcolor: colours.grid,
      zeroline: false
    },
    title,
    annotations
  };
  return {
    data,
    layout,
    unit: scale.unit,
    note,
    legend,
    x0,
    x1,
    yTop: scale.top,
    settledMs:
      args.range || !splits(full.t, bucketMs(span, plotW))
        ? null
        : settledBefore(full.t[full.t.length - 1], span, plotW)
  };
}

/** The settle boundary a step before the live range's end (liveRange's, after the newest sample
 * `last` or on it), so that the traces take new buckets when the range moves, in the same replot. */
export function settledBefore(
  last: number,
  spanMs: number,
  plotW: number
): number {
  const step = settleMs(bucketMs(spanMs, plotW));
  return Math.ceil(last / step) * step - step;
}

/**
 * What plotly would draw of a figure, as text: each point in whole pixels of the plot (a gap as a
 * gap), and all else it is given (scales, ticks, colours, names, hovers) as it is. Two figures with the
 * same picture look the same to the pixel: chart.ts draws only when the picture changes. A hover
 * then may show a figure up to a pixel's worth older than the headline's.
 */
export function picture(
  fig: IFigure,
  scales: Partial<Layout> = fig.layout
): string {
  const layout = scales;
  const plotW = Math.max(1, (layout.width ?? 0) - MARGIN.l - MARGIN.r);
  const plotH = Math.max(1, (layout.height ?? 0) - MARGIN.t - MARGIN.b);
  const [a, b] = layout.xaxis!.range as [number, number];
  const xSize = plotW / Math.max(1, b - a);
  const ySize = plotH / Math.max(1e-9, fig.yTop / GiB);
  const at = (v: number | null, from: number, size: number) =>
    v === null ? '' : Math.round((v - from) * size);
  const traces = fig.data.map(trace => {
    const { x, y, ...rest } = trace as {
      x: (number | null)[];
      y: (number | null)[];
    };
    // A point on the pixel of the one before it draws nothing more.
    const points: string[] = [];
    x.forEach((v, i) => {
      const point = `${at(v, a, xSize)} ${at(y[i], 0, ySize)}`;
      if (point !== points[points.length - 1]) {
        points.push(point);
      }
    });
    return `${JSON.stringify(rest)}|${points.join()}`;
  });
  return [JSON.stringify(fig.layout), ...traces].join('\n');
}

/** A line's newest part as chart.ts draws it: a plotly trace's points and style, no hover. */
export interface ITail {
  uid: string;
  x: (number | null)[];
  y: (number | null)[];
  line: { color: string; width: number; dash?: string };
  /** The area under it (the line's `tozeroy`), or null. */
  fill: string | null;
  /** The area's opacity (plotly's own fill of a line without a fill colour is half its colour). */
  fillOpacity: number;
}

/** The live figure in two: the settled traces, for plotly's react; each line's newest part, its tail. */
export interface ISplit {
  settled: IFigure;
  tails: ITail[];
}

interface ILine {
  uid: string;
  x: (number | null)[];
  y: (number | null)[];
  mode?: string;
  visible?: boolean | 'legendonly';
  line: { color: string; width: number; dash?: string };
  fill?: string;
  fillcolor?: string;
}

/**
 * Live, the figure split at its `settledMs`: every line (and the cells' band) keeps its points before
 * it, the buckets already complete, which stay as they are until the next settle step; the rest, from
 * the last point kept to the newest, is the line's tail. The marks and the layout stay whole: a change
 * to them redraws all. A hidden line has no tail. Zoomed (no `settledMs`): the figure whole.
 */
export function split(fig: IFigure): ISplit {
  if (fig.settledMs === null) {
    return { settled: fig, tails: [] };
  }
  const cut = toLocal(fig.settledMs);
  const tails: ITail[] = [];
  const data = fig.data.map(trace => {
    const line = trace as ILine;
    if (line.mode !== 'lines') {
      return trace;
    }
    let keep = 0;
    while (keep < line.x.length && (line.x[keep] ?? -Infinity) < cut) {
      keep++;
    }
    if (keep === line.x.length) {
      return trace;
    }
    // From the last point kept (if any) on, so the tail joins the trace.
    const from = Math.max(0, keep - 1);
    if (line.visible !== 'legendonly' && line.x.length - from >= 2) {
      tails.push({
        uid: line.uid,
        x: line.x.slice(from),
        y: line.y.slice(from),
        line: line.line,
        fill:
          line.fill === 'tozeroy' ? (line.fillcolor ?? line.line.color) : null,
        fillOpacity: line.fill === 'tozeroy' && !line.fillcolor ? 0.5 : 1
      });
    }
    return {
      ...trace,
      x: line.x.slice(0, keep),
      y: line.y.slice(0, keep)
    } as Data;
  });
  return { settled: { ...fig, data }, tails };
}

/** The tails' picture, as `picture` sees a figure's: their points in whole pixels of the figure's
 * plot, and their style. */
export function tailPicture(fig: IFigure, tails: ITail[]): string {
  return picture(
    {
      ...fig,
      layout: {},
      data: tails as unknown as Data[],
      x0: fig.x0,
      x1: fig.x1
    },
    fig.layout
  );
}

/** A line's newest part as chart.ts draws it over plotly's plot: SVG paths in the plot area's pixels. */
export interface ITailPath {
  uid: string;
  /** The line, one stretch per run of points (a gap starts a new one). */
  line: string;
  /** The area under it, closed to the x axis, where the line fills; else null. */
  area: string | null;
  stroke: string;
  width: number;
  /** The line's dash as plotly draws it (its Drawing.dashStyle), '' for solid. */
  dasharray: string;
  fill: string | null;
  fillOpacity: number;
}

/** plotly's dash for a line of this width (plotly.js src/components/drawing dashStyle). */
function dashArray(dash: string | undefined, width: number): string {
  const w = Math.max(width, 3);
  return dash === 'dot'
    ? `${w}px,${w}px`
    : dash === 'dash'
      ? `${3 * w}px,${3 * w}px`
      : '';
}

/**
 * The tails as SVG paths in the pixels of the figure's plot area (its top left at 0,0, as in plotly's
 * plot layer, which chart.ts draws them into, above the traces, in the traces' order): for each, the
 * line and, where it fills, the area under it, with the line's colour, width and dash. Coordinates to a
 * tenth of a pixel; a gap (null) starts a new stretch; a tail with no two points in a row draws nothing.
 */
export function tailPaths(fig: IFigure, tails: ITail[]): ITailPath[] {
  const plotW = Math.max(1, (fig.layout.width ?? 0) - MARGIN.l - MARGIN.r);
  const plotH = Math.max(1, (fig.layout.height ?? 0) - MARGIN.t - MARGIN.b);
  const [a, b] = fig.layout.xaxis!.range as [number, number];
  const xSize = plotW / Math.max(1, b - a);
  const ySize = plotH / Math.max(1e-9, fig.yTop / GiB);
  const at = (x: number, y: number) =>
    `${((x - a) * xSize).toFixed(1)},${(plotH - y * ySize).toFixed(1)}`;
  const paths: ITailPath[] = [];
  for (const tail of tails) {
    const runs: [number, number][][] = [[]];
    tail.x.forEach((x, i) => {
      const y = tail.y[i];
      if (x === null || y === null) {
        runs.push([]);
      } else {
        runs[runs.length - 1].push([x, y]);
      }
    });
    const stretches = runs.filter(run => run.length >= 2);
    if (!stretches.length) {
      continue;
    }
    const through = (run: [number, number][]) =>
      run.map(([x, y]) => at(x, y)).join('L');
    const area = (run: [number, number][]) =>
      `M${at(run[0][0], 0)}L${through(run)}L${at(run[run.length - 1][0], 0)}Z`;
    paths.push({
      uid: tail.uid,
      line: stretches.map(run => 'M' + through(run)).join(''),
      area: tail.fill === null ? null : stretches.map(area).join(''),
      stroke: tail.line.color,
      width: tail.line.width,
      dasharray: dashArray(tail.line.dash, tail.line.width),
      fill: tail.fill,
      fillOpacity: tail.fillOpacity
    });
  }
  return paths;
}
