/**
 * The time chart as a plotly figure: pure data from the history, no DOM, no plotly code (widgets/chart.ts
 * draws it), so its content and scales are tested in node. Scales that tell the story (range.ts, scale.ts):
 * x spans the data, y reaches the larger of this kernel's peak and its budget, not the device's total,
 * which is a line when it fits and a note at the top when it does not. It joins the model's decimation
 * and format's words, which only the chart's layer and those above it may do.
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
import { GiB, MiB, axisNumber } from '../format/number';
import { Trans } from '../format/trans';
import chart from '../model/chart.json';
import { Field, ISeries, decimate } from '../model/history';
import { MARGIN, plotWidth } from './area';
import { bucketMs, liveRange, settledBefore, splits } from './range';
import { bindingLimit, peak, yScale } from './scale';
import { timeTicks, toLocal } from './time';

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
/** Each line's dash and width (chart.json: the kernel's plotly figure draws its lines alike). */
const STYLE = chart.lines as Record<
  Field,
  { dash: 'solid' | 'dot' | 'dash'; width: number }
>;
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
  const plotW = plotWidth(width);
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
    const { dash, width } = STYLE[field];
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
      line: { color: colours[field], width, dash },
      fill: field === 'own' ? 'tozeroy' : 'none',
      fillcolor: translucent(colours.own, 0.15),
      hovertemplate: words.hoverFigure
    } as Data);
    legend.push({
      uid: field,
      name: labels[field],
      colour: colours[field],
      width,
      style: BORDER_STYLE[dash],
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
  const cellTop = (scale.top / GiB) * chart.cells.top;
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
      fillcolor:
        translucent(colours.own, chart.cells.opacity) ??
        `rgba(128, 128, 128, ${chart.cells.opacity})`
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
