/**
 * What plotly would draw of a figure, as text, so that chart.ts draws only when the picture changes.
 */

import type { Layout } from 'plotly.js';

import { pixels } from './area';
import { IFigure } from './figure';

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
  const { x0: a, xSize, ySize } = pixels(scales, fig.yTop);
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
