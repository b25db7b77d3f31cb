/**
 * The time chart, drawn with plotly.js's basic partial bundle (dist-min), which is loaded the first
 * time a chart is drawn so it never weighs on JupyterLab's start-up.
 */

import { ISeries, decimate } from './history';

/** Points per trace on screen: an hour at 1 s is bucketed down to this. */
export const MAX_POINTS = 300;

const GiB = 1024 ** 3;

export interface IPlotly {
  react(
    root: HTMLElement,
    data: object[],
    layout: object,
    config: object
  ): Promise<unknown>;
  purge(root: HTMLElement): void;
  Plots: { resize(root: HTMLElement): Promise<unknown> | void };
}

let plotly: Promise<IPlotly> | null = null;

export function loadPlotly(): Promise<IPlotly> {
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

export class Chart {
  private _drawn = false;

  constructor(readonly node: HTMLElement) {}

  /** Draw (or redraw) the series; resolves once drawn. */
  async render(
    series: ISeries,
    colors: IColors,
    framework: string
  ): Promise<void> {
    const Plotly = await loadPlotly();
    this.draw(Plotly, series, colors, framework);
  }

  draw(
    Plotly: IPlotly,
    full: ISeries,
    colors: IColors,
    framework: string
  ): void {
    const s = decimate(full, MAX_POINTS);
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
      trace(`${framework} in use`, s.framework, {
        line: line(colors.framework, 'dot')
      }),
      trace('other processes', s.others, { line: line(colors.others) }),
      trace('budget', s.budget, { line: line(colors.budget, 'dash') }),
      trace('device total', s.total, { line: line(colors.total, 'solid', 1) })
    ];
    const axis = {
      color: colors.text,
      gridcolor: colors.grid,
      zerolinecolor: colors.grid
    };
    const layout = {
      autosize: true,
      height: this.node.clientHeight || 240,
      width: this.node.clientWidth || undefined,
      margin: { l: 44, r: 8, t: 8, b: 24 },
      paper_bgcolor: colors.background,
      plot_bgcolor: colors.background,
      font: { color: colors.text, size: 11 },
      xaxis: { ...axis, type: 'date', tickformat: '%H:%M:%S', nticks: 4 },
      yaxis: { ...axis, title: { text: 'GiB' }, rangemode: 'tozero' },
      legend: { orientation: 'h', y: -0.12, font: { size: 10 } },
      hovermode: 'x unified',
      showlegend: true,
      uirevision: 'keep' // keep the user's zoom across updates
    };
    void Plotly.react(this.node, data, layout, {
      displayModeBar: false,
      responsive: false
    });
    this._drawn = true;
  }

  resize(): void {
    if (this._drawn && plotly !== null) {
      void plotly.then(Plotly => Plotly.Plots.resize(this.node));
    }
  }

  dispose(): void {
    if (this._drawn && plotly !== null) {
      void plotly.then(Plotly => Plotly.purge(this.node));
    }
  }
}
