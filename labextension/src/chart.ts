/**
 * The time chart, drawn with plotly.js's basic partial bundle (dist-min), which is loaded the first
 * time a chart is drawn so it never weighs on JupyterLab's start-up.
 */

import { FIELDS, ISeries, decimate } from './history';

/** Plot area left and right of the traces, in pixels (the y axis labels, a margin). */
const MARGIN = { l: 44, r: 8, t: 8, b: 24 };

const GiB = 1024 ** 3;

interface IPlotly {
  react(
    root: HTMLElement,
    data: object[],
    layout: object,
    config: object
  ): Promise<unknown>;
  purge(root: HTMLElement): void;
}

let plotly: Promise<IPlotly> | null = null;

function loadPlotly(): Promise<IPlotly> {
  if (plotly === null) {
    plotly = import('plotly.js-basic-dist-min').then(
      module => ((module as { default?: unknown }).default ?? module) as IPlotly
    );
  }
  return plotly;
}

export interface IColors {
  text: string;
  grid: string;
  background: string;
  own: string;
  framework: string;
  others: string;
  budget: string;
  total: string;
}

/** The current theme's colours, from --jp-* variables (read again on every theme change). */
export function themeColors(): IColors {
  const style = getComputedStyle(document.body);
  const css = (name: string, fallback: string) =>
    style.getPropertyValue(name).trim() || fallback;
  return {
    text: css('--jp-ui-font-color1', '#212121'),
    grid: css('--jp-border-color2', '#e0e0e0'),
    background: css('--jp-layout-color1', '#ffffff'),
    own: css('--jp-brand-color1', '#1976d2'),
    framework: css('--jp-accent-color1', '#388e3c'),
    others: css('--jp-warn-color1', '#f57c00'),
    budget: css('--jp-error-color1', '#d32f2f'),
    total: css('--jp-ui-font-color3', '#9e9e9e')
  };
}

function gib(values: number[]): (number | null)[] {
  return values.map(v => (Number.isNaN(v) ? null : v / GiB));
}

/**
 * What the chart would show, to the pixel: the bucket of the last point, and every value rounded to
 * the height of a pixel. When it has not changed there is nothing to redraw.
 */
export function pixelKey(
  s: ISeries,
  bucketMs: number,
  pixelBytes: number,
  extra: string
): string {
  const parts = [
    extra,
    Math.floor(s.t[s.t.length - 1] / bucketMs),
    s.marks.length,
    s.marks.length ? s.marks[s.marks.length - 1].t : 0
  ];
  for (const field of FIELDS) {
    for (const v of s[field]) {
      parts.push(Number.isNaN(v) ? -1 : Math.round(v / pixelBytes));
    }
  }
  return parts.join(',');
}

export class Chart {
  private _key = ''; // what is drawn, to the pixel ('' : nothing yet)

  constructor(readonly node: HTMLElement) {}

  /**
   * Draw the last `windowMs` of the series, one point per pixel column (peaks kept). Skips the
   * redraw when no pixel would change; resolves with whether it drew. `inUse` names the line of
   * the framework allocator's bytes in use.
   */
  async render(
    full: ISeries,
    windowMs: number,
    colors: IColors,
    inUse: string
  ): Promise<boolean> {
    const Plotly = await loadPlotly();
    const width = Math.max(100, this.node.clientWidth || 300);
    const height = Math.max(120, this.node.clientHeight || 240);
    const bucketMs = windowMs / (width - MARGIN.l - MARGIN.r);
    const s = decimate(full, bucketMs);
    if (s.t.length === 0) {
      return false;
    }
    let top = 0;
    for (const field of FIELDS) {
      for (const v of s[field]) {
        top = v > top ? v : top;
      }
    }
    const pixelBytes = Math.max(1, top / (height - MARGIN.t - MARGIN.b));
    const key = pixelKey(
      s,
      bucketMs,
      pixelBytes,
      [width, height, inUse, colors.text].join()
    );
    if (key === this._key) {
      return false;
    }
    this._key = key;
    const end = (Math.floor(s.t[s.t.length - 1] / bucketMs) + 1) * bucketMs;
    this._draw(Plotly, s, [end - windowMs, end], width, height, colors, inUse);
    return true;
  }

  private _draw(
    Plotly: IPlotly,
    s: ISeries,
    range: number[],
    width: number,
    height: number,
    colors: IColors,
    inUse: string
  ): void {
    const line = (color: string, dash = 'solid', width = 2) => ({
      color,
      dash,
      width
    });
    const trace = (name: string, y: number[], extra: object) => ({
      type: 'scatter',
      mode: 'lines',
      name,
      x: s.t,
      y: gib(y),
      hovertemplate: '%{y:.2f} GiB',
      showlegend: y.some(v => !Number.isNaN(v)), // no legend entry for a line never drawn
      ...extra
    });
    const data = [
      trace('this kernel (nvidia-smi)', s.own, {
        line: line(colors.own),
        fill: 'tozeroy'
      }),
      trace(inUse, s.framework, {
        line: line(colors.framework, 'dot')
      }),
      trace('other processes', s.others, { line: line(colors.others) }),
      trace('budget', s.budget, { line: line(colors.budget, 'dash') }),
      trace('device total', s.total, { line: line(colors.total, 'solid', 1) }),
      {
        type: 'scatter',
        mode: 'markers',
        name: 'over budget',
        x: s.marks.map(m => m.t),
        y: s.marks.map(m => m.ownBytes / GiB),
        text: s.marks.map(m => m.reason),
        hovertemplate: 'over budget: %{text}<extra></extra>',
        marker: { symbol: 'triangle-up', size: 9, color: colors.budget },
        showlegend: s.marks.length > 0
      }
    ];
    const axis = {
      color: colors.text,
      gridcolor: colors.grid,
      zerolinecolor: colors.grid
    };
    const layout = {
      width,
      height,
      margin: MARGIN,
      paper_bgcolor: colors.background,
      plot_bgcolor: colors.background,
      font: { color: colors.text, size: 11 },
      xaxis: { ...axis, type: 'date', range, tickformat: '%H:%M', nticks: 4 },
      yaxis: { ...axis, title: { text: 'GiB' }, rangemode: 'tozero' },
      legend: { orientation: 'h', y: -0.12, font: { size: 10 } },
      hovermode: 'x unified',
      showlegend: true
    };
    void Plotly.react(this.node, data, layout, {
      displayModeBar: false,
      responsive: false
    });
  }

  dispose(): void {
    if (this._key !== '' && plotly !== null) {
      void plotly.then(Plotly => Plotly.purge(this.node));
    }
  }
}
