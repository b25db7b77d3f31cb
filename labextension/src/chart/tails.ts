/**
 * Live, each line's newest part, its tail, which chart.ts draws as SVG over plotly's plot: the figure
 * split at its settle step, the tails' picture, and their paths in the plot area's pixels.
 */

import type { Data } from 'plotly.js';

import { pixels } from './area';
import { IFigure } from './figure';
import { picture } from './picture';
import { toLocal } from './time';

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
  const { height: plotH, x0: a, xSize, ySize } = pixels(fig.layout, fig.yTop);
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
