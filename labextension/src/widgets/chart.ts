/**
 * The time chart, drawn by plotly.js (its basic partial bundle, loaded as its own chunk the first
 * time a chart shows, so JupyterLab's start does not carry it). chart/ says what is drawn; this
 * file keeps it live: the size, the theme's colours, the user's zoom or pan, which pauses the chart
 * on that range until a double-click or "Back to live", and the lines they hid. The legend, the unit
 * and the total's note are HTML around the plot, set only when they change (plotly would draw them
 * again every update); the PNG the mode bar's camera saves has them all, drawn by plotly. Plotly
 * draws only when the picture changes (chart/picture.ts): any new data is a whole replot in
 * plotly (its react, restyle and extendTraces alike), so the samples that move no pixel cost none.
 * Live, the traces hold only the completed buckets up to the last settle step (chart/tails.ts's `split`,
 * about every minute: a replot then, or when the scales, the marks or the style change) and each
 * line's newest part, a few pixel columns at the plot's right, is an SVG path of ours in plotly's plot
 * layer (chart/tails.ts's `tailPaths`), above the traces and clipped and panned with them. plotly has no
 * cheaper way to draw them: its layout shapes, moved with a relayout, cost ~1.8 ms and a style pass of
 * the page at each sample (measured in the sidebar benchmark's CPU profile); a path's `d` set, a few
 * microseconds. While the pointer is over the plot, every change is a react of the whole figure and
 * the paths are gone, so a hover finds the newest figure in plotly's traces.
 */

import type {
  Config,
  Layout,
  PlotRelayoutEvent,
  PlotlyHTMLElement
} from 'plotly.js';

import { element, setLine } from './dom';
import { chartName, chartWords, collecting, pausedOn } from '../format/chart';
import { Trans } from '../format/trans';
import { MARGIN } from '../chart/area';
import { IColours, IFigure, ILegendEntry, figure } from '../chart/figure';
import { picture } from '../chart/picture';
import { ITailPath, split, tailPaths, tailPicture } from '../chart/tails';
import { axisTime, fromLocal } from '../chart/time';
import { ISeries } from '../model/history';

type Plotly = typeof import('plotly.js');

const SVG = 'http://www.w3.org/2000/svg';

let plotly: Promise<Plotly> | null = null;

/** plotly.js, loaded once for every chart on the page. */
function loadPlotly(): Promise<Plotly> {
  plotly ??= import('plotly.js-basic-dist-min').then(module => module.default);
  return plotly;
}

/** The --jp-* variable each colour comes from. */
const COLOUR_VARIABLES: Record<keyof IColours, string> = {
  own: '--jp-brand-color1',
  framework: '--jp-accent-color1',
  others: '--jp-ui-font-color3',
  budget: '--jp-error-color1',
  driverLimit: '--jp-warn-color1',
  total: '--jp-ui-font-color2',
  text: '--jp-ui-font-color2',
  grid: '--jp-border-color2',
  background: '--jp-layout-color1',
  font: '--jp-ui-font-family'
};

function readColours(node: HTMLElement): IColours {
  const style = getComputedStyle(node);
  const colours = {} as IColours;
  for (const [key, variable] of Object.entries(COLOUR_VARIABLES)) {
    colours[key as keyof IColours] = style.getPropertyValue(variable).trim();
  }
  return colours;
}

/** What plotly leaves out of the live plot: chart.ts shows these as HTML. */
const LIVE: Partial<Layout> = {
  showlegend: false,
  title: { text: '' },
  annotations: []
};

interface IArgs {
  series: ISeries | undefined;
  windowMs: number;
  framework: string | null;
}

export class Chart {
  /** The plotly plot; its data-x0, data-x1 (ms) and data-y-top (bytes) say the scales it was given. */
  readonly plot: HTMLElement;
  private readonly _placeholder: HTMLElement;
  private readonly _paused: HTMLElement;
  private readonly _pausedText: HTMLElement;
  private readonly _unit: HTMLElement;
  private readonly _note: HTMLElement;
  private readonly _legend: HTMLElement;
  /** What the legend shows now, as text: redrawn only when it changes. */
  private _legendShown = '';
  /** The lines the user hid from the legend (uids); they stay hidden through live updates. */
  private readonly _hidden = new Set<string>();
  /** The figure last shown: the picture the camera saves. */
  private _fig: IFigure | null = null;
  /** What plotly drew last (chart/picture.ts); '' when plotly may show anything else. */
  private _picture = '';
  /** The newest parts' picture (chart/tails.ts's `tailPicture`) and the SVG group that draws them. */
  private _tailPicture = '';
  private readonly _tails = document.createElementNS(SVG, 'g');
  /** The pointer is over the plot: the whole figure in the traces, for the hover. */
  private _pointerIn = false;
  private _plotly: Plotly | null = null;
  private _colours: IColours | null = null;
  private _width = 0;
  private _height = 0;
  private _args: IArgs | null = null;
  private _series: ISeries | undefined;
  /** The range the user zoomed or panned to, in epoch ms; null while live. */
  private _range: [number, number] | null = null;
  /** A drag is going on: a live update now would cut it short. */
  private _dragging = false;
  private _drawn = false;
  /** Some of it is in the viewport (a view in a notebook scrolled away is not): only then is it drawn. */
  private _onScreen = true;
  private readonly _resize: ResizeObserver;
  private readonly _seen: IntersectionObserver;
  private readonly _theme: MutationObserver;

  /** `node` holds the plot; `box` (around it) the note shown while paused. */
  constructor(
    readonly node: HTMLElement,
    box: HTMLElement,
    private readonly _trans: Trans
  ) {
    node.setAttribute('role', 'figure');
    node.setAttribute('aria-label', chartName(_trans));
    this._tails.setAttribute('class', 'jp-GpuMem-tails');
    this._tails.setAttribute('pointer-events', 'none');
    this.plot = document.createElement('div');
    this.plot.className = 'jp-GpuMem-plot';
    node.appendChild(this.plot);
    this._placeholder = document.createElement('div');
    this._placeholder.className = 'jp-GpuMem-collecting';
    node.appendChild(this._placeholder);
    // The unit over the y axis's labels, the total's note from the plot's left edge, in the top margin.
    const head = element('div', 'jp-GpuMem-chartHead', node);
    head.style.height = `${MARGIN.t}px`;
    this._unit = element('span', 'jp-GpuMem-unit', head);
    this._unit.style.width = `${MARGIN.l}px`;
    this._note = element('span', 'jp-GpuMem-totalNote', head);
    this._legend = element('div', 'jp-GpuMem-legend', box);
    this._legend.setAttribute('role', 'group');
    this._legend.setAttribute('aria-label', chartWords(_trans).legend);
    this._legend.style.paddingLeft = `${MARGIN.l}px`;
    this._legend.addEventListener('click', this._toggle);
    this._legend.addEventListener('dblclick', this._isolate);
    this._paused = document.createElement('div');
    this._paused.className = 'jp-GpuMem-paused';
    this._paused.hidden = true;
    this._pausedText = document.createElement('span');
    const live = document.createElement('button');
    live.className = 'jp-GpuMem-backToLive';
    live.textContent = chartWords(_trans).backToLive;
    live.addEventListener('click', () => this._follow(null));
    this._paused.append(this._pausedText, live);
    box.appendChild(this._paused);
    // Plotly starts its drags on mousedown; capture sees them before it does.
    node.addEventListener('mousedown', this._dragStart, true);
    this.plot.addEventListener('mouseenter', this._pointer);
    this.plot.addEventListener('mouseleave', this._pointer);
    // The size is read when it changes, never in the update path (no forced layout per sample).
    this._resize = new ResizeObserver(entries => {
      const { width, height } = entries[entries.length - 1].contentRect;
      if (width !== this._width || height !== this._height) {
        this._width = width;
        this._height = height;
        this._draw();
      }
    });
    this._resize.observe(node);
    this._seen = new IntersectionObserver(entries => {
      const onScreen = entries[entries.length - 1].isIntersecting;
      if (onScreen !== this._onScreen) {
        this._onScreen = onScreen;
        this._draw(); // back in view: the samples that came meanwhile
      }
    });
    this._seen.observe(node);
    // A theme change sets these on the body once its styles are in: the colours are read again.
    this._theme = new MutationObserver(() => {
      this._colours = null;
      this._draw();
    });
    this._theme.observe(document.body, {
      attributes: true,
      attributeFilter: ['data-jp-theme-name', 'data-jp-theme-light']
    });
  }

  /**
   * Draw the series over the x range its data calls for (at most `windowMs`), or over the user's
   * range while paused. `framework` names the framework allocator's line. Undefined or fewer than
   * two samples: "Collecting…".
   */
  render(
    series: ISeries | undefined,
    windowMs: number,
    framework: string | null
  ): void {
    if (series !== this._series) {
      this._series = series; // another kernel or GPU: its own live view
      this._range = null;
    }
    this._args = { series, windowMs, framework };
    this._draw();
  }

  dispose(): void {
    this._resize.disconnect();
    this._seen.disconnect();
    this._theme.disconnect();
    window.removeEventListener('mouseup', this._dragEnd, true);
    this._plotly?.purge(this.plot);
  }

  private _draw(): void {
    const args = this._args;
    if (!args || this._dragging) {
      return;
    }
    const { series } = args;
    const ready = series !== undefined && series.t.length >= 2;
    if (this._placeholder.textContent !== collecting(this._trans)) {
      this._placeholder.textContent = collecting(this._trans);
    }
    this._placeholder.hidden = ready && this._drawn;
    this.plot.style.visibility = ready ? '' : 'hidden';
    this._paused.hidden = !ready || this._range === null;
    // Hidden, collapsed (no size) or scrolled away: no chart work at all until it shows again.
    if (!ready || !this._onScreen || this._width <= 0 || this._height <= 0) {
      return;
    }
    if (!this._plotly) {
      void loadPlotly().then(module => {
        this._plotly = module;
        this._draw();
      });
      return;
    }
    this._colours ??= readColours(this.node);
    const fig = figure(
      {
        series,
        windowMs: args.windowMs,
        framework: args.framework,
        width: this._width,
        height: this._height,
        colours: this._colours,
        range: this._range,
        hidden: this._hidden
      },
      this._trans
    );
    this._show(fig);
  }

  private _show(fig: IFigure): void {
    this._fig = fig;
    // Zoomed, or the pointer over the plot: the figure whole. Else the settled traces and the tails.
    const { settled, tails } = this._pointerIn
      ? { settled: { ...fig, settledMs: null }, tails: [] }
      : split(fig);
    const shown = `${settled.settledMs === null}\n${picture(settled)}`;
    const tail = tailPicture(settled, tails);
    if (shown !== this._picture) {
      this._picture = shown;
      this._react(settled);
    }
    if (tail !== this._tailPicture) {
      this._tailPicture = tail;
      this._drawTails(tailPaths(settled, tails));
    } // else not a pixel would change: plotly and the tails are left as they are
    setLine(this._unit, fig.unit);
    setLine(this._note, fig.note);
    this._showLegend(fig.legend);
  }

  /** The tails drawn into plotly's plot layer, after the traces; the paths kept, their attributes set. */
  private _drawTails(paths: ITailPath[]): void {
    const group = this._tails;
    this._placeTails();
    const wanted = paths.flatMap(path =>
      path.area === null ? [path.line] : [path.area, path.line]
    ).length;
    while (group.childNodes.length > wanted) {
      group.lastChild!.remove();
    }
    while (group.childNodes.length < wanted) {
      group.appendChild(document.createElementNS(SVG, 'path'));
    }
    let i = 0;
    for (const path of paths) {
      if (path.area !== null) {
        setAttributes(group.childNodes[i++] as SVGPathElement, {
          'data-uid': path.uid,
          d: path.area,
          fill: path.fill ?? 'none',
          'fill-opacity': String(path.fillOpacity),
          stroke: 'none'
        });
      }
      setAttributes(group.childNodes[i++] as SVGPathElement, {
        'data-uid': path.uid,
        d: path.line,
        fill: 'none',
        stroke: path.stroke,
        'stroke-width': String(path.width),
        'stroke-dasharray': path.dasharray || 'none',
        'stroke-linejoin': 'round'
      });
    }
  }

  /** The tails' group last in plotly's plot layer (its `g.xy` under `g.overplot`: the plot area's
   * origin, its clip, and a pan's shift): again after a react that made plotly's layers anew. */
  private _placeTails(): void {
    const layer = this.plot.querySelector('.overplot > .xy');
    if (layer && layer.lastChild !== this._tails) {
      layer.appendChild(this._tails);
    }
  }

  private _react(fig: IFigure): void {
    const plot = this.plot;
    plot.dataset.x0 = String(fig.x0);
    plot.dataset.x1 = String(fig.x1);
    plot.dataset.yTop = String(fig.yTop);
    if (this._range) {
      this._pausedText.textContent = pausedOn(fig.x0, fig.x1, this._trans);
    }
    // The config once: given again, plotly copies and compares it on every update (~1 ms).
    const config = this._drawn ? undefined : this._config();
    void this._plotly!.react(
      plot,
      fig.data,
      { ...fig.layout, ...LIVE },
      config
    );
    this._placeTails();
    if (!this._drawn) {
      this._drawn = true;
      this._placeholder.hidden = true;
      const gd = plot as PlotlyHTMLElement;
      gd.on('plotly_relayout', this._onRelayout);
      gd.on('plotly_doubleclick', () => this._follow(null));
    }
  }

  /** Only what a user needs of the mode bar (shown on hover): zoom, pan and the picture as a PNG. */
  private _config(): Partial<Config> {
    const camera = {
      name: 'download',
      title: chartWords(this._trans).download,
      icon: this._plotly!.Icons.camera,
      click: this._download
    };
    return {
      displaylogo: false,
      displayModeBar: 'hover',
      doubleClick: false, // ours: back to live, not plotly's reset to the first range it was given
      // Plotly's 300 ms between the first press and the second release is shorter than the desktops' own (400 to
      // 500 ms), and a redraw of a live update between the two clicks on a busy machine made it two clicks.
      doubleClickDelay: 500,
      showTips: false, // the paused note says how to get back
      modeBarButtons: [[camera, 'zoom2d', 'pan2d']]
    };
  }

  /** The figure as drawn, with its legend, unit and note, as a PNG at twice the size on screen. */
  private _download = (): void => {
    const fig = this._fig;
    if (!fig) {
      return;
    }
    const width = this._width;
    const height = this._height + this._legend.offsetHeight + 8;
    const layout = {
      ...fig.layout,
      height,
      paper_bgcolor: this._colours?.background ?? 'white'
    };
    // plotly's options for toImage, `scale` included (its typings leave that out).
    const options = {
      format: 'png' as const,
      filename: 'gpu-memory',
      width,
      height,
      scale: 2
    };
    void this._plotly!.downloadImage(
      { data: fig.data, layout, config: {} },
      options
    );
  };

  /** The legend's items, made again only when the lines change (an item clicked twice stays the same
   * element, so its double-click is seen); whether each is shown, every time. */
  private _showLegend(entries: ILegendEntry[]): void {
    const lines = JSON.stringify(entries.map(({ hidden, ...line }) => line));
    if (lines !== this._legendShown) {
      this._legendShown = lines;
      this._legend.textContent = '';
      for (const entry of entries) {
        const item = element('button', 'jp-GpuMem-legendItem', this._legend);
        item.type = 'button';
        item.dataset.uid = entry.uid;
        const swatch = element('span', 'jp-GpuMem-swatch', item);
        swatch.style.borderTop = `${entry.width}px ${entry.style} ${entry.colour}`;
        item.append(entry.name);
      }
    }
    entries.forEach((entry, i) => {
      const pressed = String(!entry.hidden);
      const item = this._legend.children[i];
      if (item.getAttribute('aria-pressed') !== pressed) {
        item.setAttribute('aria-pressed', pressed);
      }
    });
  }

  /** A click on a line's name in the legend hides it, or shows it again. */
  private _toggle = (event: MouseEvent): void => {
    const uid = legendUid(event);
    if (uid) {
      if (!this._hidden.delete(uid)) {
        this._hidden.add(uid);
      }
      this._draw();
    }
  };

  /** A double-click (after its two clicks, which cancel out): that line alone, or, if it was alone,
   * all of them again, as plotly's legend does. */
  private _isolate = (event: MouseEvent): void => {
    const uid = legendUid(event);
    if (!uid) {
      return;
    }
    const uids = this._fig?.legend.map(entry => entry.uid) ?? [];
    const alone = uids.every(u => (u === uid) !== this._hidden.has(u));
    this._hidden.clear();
    if (!alone) {
      uids.filter(u => u !== uid).forEach(u => this._hidden.add(u));
    }
    this._draw();
  };

  /** A zoom or pan by the user: follow their range; plotly's own reset: back to live. */
  private _onRelayout = (event: PlotRelayoutEvent): void => {
    const whole = (event as { 'xaxis.range'?: unknown[] })['xaxis.range'];
    if (
      !whole &&
      !('xaxis.range[0]' in event) &&
      !('xaxis.autorange' in event)
    ) {
      return; // nothing about the range
    }
    this._picture = ''; // plotly drew a range of its own
    const range = whole ?? [event['xaxis.range[0]'], event['xaxis.range[1]']];
    const [a, b] = range.map(axisTime).map(fromLocal);
    if (event['xaxis.autorange']) {
      this._follow(null);
    } else if (a < b) {
      this._follow([a, b]);
    }
  };

  private _follow(range: [number, number] | null): void {
    this._range = range;
    this._draw();
  }

  /** The pointer over the plot or gone: the whole figure drawn for the hover, or split again. */
  private _pointer = (event: MouseEvent): void => {
    this._pointerIn = event.type === 'mouseenter';
    this._draw();
  };

  private _dragStart = (): void => {
    this._dragging = true;
    window.addEventListener('mouseup', this._dragEnd, true);
  };

  private _dragEnd = (): void => {
    window.removeEventListener('mouseup', this._dragEnd, true);
    this._dragging = false;
    // After plotly's own mouseup, which reports the zoom: then the update held back meanwhile.
    setTimeout(() => this._draw());
  };
}

/** Each attribute set where it differs (an unchanged one is left, so the page has less to restyle). */
function setAttributes(
  node: Element,
  attributes: Record<string, string>
): void {
  for (const [name, value] of Object.entries(attributes)) {
    if (node.getAttribute(name) !== value) {
      node.setAttribute(name, value);
    }
  }
}

/** The line a legend event is about (its item's uid), if any. */
function legendUid(event: MouseEvent): string | undefined {
  const target = event.target as HTMLElement;
  return target.closest<HTMLElement>('.jp-GpuMem-legendItem')?.dataset.uid;
}
