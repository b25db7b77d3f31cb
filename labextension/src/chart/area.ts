/**
 * The plot area: the room around it for the axis labels, and where a figure's values land in its pixels
 * (its top left at 0,0, as in plotly's plot layer).
 */

import type { Layout } from 'plotly.js';

import { GiB } from '../format/number';

/** Room around the plot for the axis labels, in pixels (the legend adds its own below). */
export const MARGIN = { l: 30, r: 8, t: 20, b: 20 };

/** The plot's width inside a chart this wide, in pixels (at least one). */
export function plotWidth(width: number): number {
  return Math.max(1, width - MARGIN.l - MARGIN.r);
}

/** A figure's plot area in pixels: its size, where its x axis starts, and pixels per unit of each axis. */
export interface IPixels {
  width: number;
  height: number;
  /** The x axis's start, in the axis's time. */
  x0: number;
  /** Pixels per millisecond of the x axis, and per GiB of the y axis. */
  xSize: number;
  ySize: number;
}

/** The plot area of a figure's layout whose y axis reaches `yTop` bytes. */
export function pixels(layout: Partial<Layout>, yTop: number): IPixels {
  const width = plotWidth(layout.width ?? 0);
  const height = Math.max(1, (layout.height ?? 0) - MARGIN.t - MARGIN.b);
  const [a, b] = layout.xaxis!.range as [number, number];
  return {
    width,
    height,
    x0: a,
    xSize: width / Math.max(1, b - a),
    ySize: height / Math.max(1e-9, yTop / GiB)
  };
}
