/**
 * The inline live view (`%gpumem show`): an anywidget module, found by the view's loader (loader.ts)
 * in this package's labextension, else at the server extension's static route (static/inline.js,
 * plotly in a chunk beside it), else sent by the kernel (static/inline.bundle.js, one file), so that it
 * runs in any frontend that shows ipywidgets: JupyterLab, Notebook 7, VS Code.
 *
 * It shows what the sidebar shows, with the sidebar's own code (view.ts: headline, chart, table):
 * the kernel sends the comm protocol's messages (docs/protocol.md) over the widget's comm, a
 * `sample` per interval from its sampler thread and a `hello` (settings and history) when this
 * module asks for it with `replay`; `stop` asks the kernel to close the view. Every message is
 * checked as the sidebar checks it (protocol.ts `receive`).
 *
 * Its words: from the labextension, the lab's bundle of the `jupyter_gpumem` domain (the interface's language).
 * Anywhere else (the server's route, the kernel: VS Code, Colab, Notebook 7 without the labextension) there is
 * no lab translator, so the module asks the kernel, once per model, for the catalogue of the kernel's language
 * (`catalogue`, answered by jupyter_gpumem/kernel/widget.py): a message, not a widget trait, so that no
 * notebook saved with its widget state holds a copy of it. The view shows in English until the answer comes,
 * then again in those words; English stays where the kernel words in English, has no catalogue, or never
 * answers (a saved notebook opened without its kernel).
 */

import { setLine } from './dom';
import { clock } from '../format/number';
import { problemLine } from '../format/panel';
import {
  History,
  ISeries,
  chooseGpu,
  decimate,
  gpuKey
} from '../model/history';
import { readSeries } from '../model/saved';
import {
  DEFAULT_HISTORY_S,
  DEFAULT_INTERVAL_S,
  receive
} from '../wire/protocol';
import { Trans, catalogueTrans, nullTrans } from '../format/trans';
import type { Sample } from '../wire/types';
import type { ISource } from './loader';
import { MemoryView, chooseIn } from './view';

/** The part of an anywidget model this view uses. */
interface IModel {
  on(event: 'msg:custom', callback: (content: unknown) => void): void;
  send(content: Record<string, unknown>): void;
  get(name: string): unknown;
  set(name: string, value: unknown): void;
}

/** The widget state's own key for the saved picture: set in the browser only, never sent to the kernel, so
 * that a notebook saved with its widget state (JupyterLab's "Save Widget State Automatically") and opened
 * again without the view's kernel still shows its last picture: the last sample as it came, and the chart's
 * series on its GPU decimated to SAVED_POINTS buckets (about 15 KB in all). */
const WINDOW = '_window';
const SAVED_POINTS = 100;
/** How often the saved picture is brought up to date (ms): a save finds it at most this old. */
const SAVE_EVERY_MS = 5000;

interface ISaved {
  /** The last sample message as the kernel sent it, read back by `receive`. */
  message: unknown;
  intervalS: number;
  historyS: number;
  gpu: string;
  series: ISeries;
}

/** One model's figures, shared by every output that shows it (a view displayed twice); it lives as long as
 * the model (a WeakMap entry). */
class Stream {
  intervalS = DEFAULT_INTERVAL_S;
  historyS = DEFAULT_HISTORY_S;
  readonly history = new History(
    Math.ceil(DEFAULT_HISTORY_S / DEFAULT_INTERVAL_S)
  );
  gpu: string | null = null;
  /** The notebook's saved picture, shown until the kernel speaks (a view opened again without it). */
  saved: { latest: Sample; series: ISeries } | null = null;
  /** Whether the kernel has spoken to this model since the page loaded. */
  live = false;
  /** Samples that came before the kernel answered `replay` (it answers once its cell is done): they go
   * after the history it replays. Null once it has. */
  private _early: Sample[] | null = [];
  /** The words of the kernel's catalogue, once it sent one (only asked for where the page has no lab
   * translator); null before, and where the kernel words in English or its answer is no catalogue. */
  trans: Trans | null = null;
  private _listeners = new Set<() => void>();
  private _worded = new Set<() => void>();
  private _savedAt = -Infinity;

  /** `askWords`: the page has no lab translator; the kernel's catalogue is asked for before the history, so
   * that the view is worded again before it has figures to draw. */
  constructor(
    private readonly _model: IModel,
    askWords: boolean
  ) {
    _model.on('msg:custom', this._receive);
    this._restore(_model.get(WINDOW));
    if (askWords) {
      _model.send({ type: 'catalogue' });
    }
    _model.send({ type: 'replay' });
  }

  /** `callback` once the kernel's catalogue came (`trans` set). */
  onWords(callback: () => void): () => void {
    this._worded.add(callback);
    return () => this._worded.delete(callback);
  }

  listen(callback: () => void): () => void {
    this._listeners.add(callback);
    return () => this._listeners.delete(callback);
  }

  stop(): void {
    this._model.send({ type: 'stop' });
  }

  /** Bring the saved picture up to date, at most every SAVE_EVERY_MS; `message`: the last sample's. */
  save(message: unknown): void {
    const now = performance.now();
    const series =
      this.gpu === null ? undefined : this.history.series(this.gpu);
    if (now - this._savedAt < SAVE_EVERY_MS || !series || !series.t.length) {
      return;
    }
    this._savedAt = now;
    const last = series.t[series.t.length - 1];
    const from = last - this.historyS * 1000;
    const saved: ISaved = {
      message,
      intervalS: this.intervalS,
      historyS: this.historyS,
      gpu: this.gpu!,
      series: decimate(series, (this.historyS * 1000) / SAVED_POINTS, from)
    };
    // NaN is not JSON: N/A figures are saved as null and read back as NaN.
    this._model.set(WINDOW, JSON.parse(JSON.stringify(saved)));
  }

  private _restore(value: unknown): void {
    const saved = value as Partial<ISaved> | undefined;
    const message = saved ? receive(saved.message) : null;
    const series = readSeries(saved?.series);
    if (!saved || message?.type !== 'sample' || !series) {
      return;
    }
    this.intervalS = Number(saved.intervalS) || DEFAULT_INTERVAL_S;
    this.historyS = Number(saved.historyS) || DEFAULT_HISTORY_S;
    this.gpu = typeof saved.gpu === 'string' ? saved.gpu : null;
    this.saved = { latest: message.sample, series };
  }

  private _receive = (content: unknown): void => {
    // Not a protocol message: the kernel's catalogue, for this module alone (no receive, no warning).
    if ((content as { type?: unknown } | null)?.type === 'catalogue') {
      this.trans = catalogueTrans((content as { data?: unknown }).data);
      if (this.trans) {
        this._worded.forEach(callback => callback());
      }
      return;
    }
    const message = receive(content);
    if (message === null) {
      return;
    }
    this.live = true;
    this.saved = null;
    if (message.type === 'hello') {
      const early = this._early ?? [];
      this._early = null;
      this.intervalS = message.intervalS;
      this.historyS = message.historyS;
      this.history.capacity = Math.ceil(message.historyS / message.intervalS);
      this.history.reset(message.history);
      const last = message.history[message.history.length - 1]?.t ?? -Infinity;
      early.filter(s => s.t > last).forEach(s => this.history.push(s));
    } else {
      this._early?.push(message.sample);
      this.history.push(message.sample);
      this.save(content);
    }
    this._listeners.forEach(callback => callback());
  };
}

const streams = new WeakMap<IModel, Stream>();

function streamOf(model: IModel, askWords: boolean): Stream {
  let stream = streams.get(model);
  if (!stream) {
    stream = new Stream(model, askWords);
    streams.set(model, stream);
  }
  return stream;
}

/** What the module cost the notebook's connection, where it came from the kernel. */
function sourceLine(source: ISource | undefined, trans: Trans): string | null {
  return source?.how === 'kernel'
    ? trans.__(
        'view code from the kernel: %1 a page (no jupyter-gpumem server extension here)',
        `${(source.bytes / 1e6).toFixed(1)} MB`
      )
    : null;
}

function render({
  model,
  el,
  source,
  trans
}: {
  model: IModel;
  el: HTMLElement;
  source?: ISource;
  /** The lab's bundle of the `jupyter_gpumem` domain, where the labextension gave the module. */
  trans?: Trans;
}): () => void {
  if (trans) {
    return mount(streamOf(model, false), el, source, trans);
  }
  const stream = streamOf(model, true);
  let unmount = mount(stream, el, source, stream.trans ?? nullTrans);
  const unlisten = stream.onWords(() => {
    unmount();
    unmount = mount(stream, el, source, stream.trans!);
  });
  return () => {
    unlisten();
    unmount();
  };
}

/** The view in `el`, worded by `trans`; the function returned takes it out again. */
function mount(
  stream: Stream,
  el: HTMLElement,
  source: ISource | undefined,
  trans: Trans
): () => void {
  const root = document.createElement('div');
  root.className = 'jp-GpuMem jp-GpuMem-inline';
  el.appendChild(root);
  const content = document.createElement('div');
  content.className = 'jp-GpuMem-content';
  root.appendChild(content);
  let frame = 0;
  // Scrolled out of view (or in a collapsed output), the view does nothing: the samples wait in the stream's
  // history and the view draws once when it shows again.
  let onScreen = true;
  let stale = false;
  const schedule = () => {
    stale = !onScreen;
    if (!frame && onScreen) {
      frame = requestAnimationFrame(() => {
        frame = 0;
        draw();
      });
    }
  };
  const seen = new IntersectionObserver(entries => {
    onScreen = entries[entries.length - 1].isIntersecting;
    if (onScreen && stale) {
      schedule();
    }
  });
  seen.observe(root);
  const view = new MemoryView(content, trans, schedule);
  const status = document.createElement('div');
  status.className = 'jp-GpuMem-status';
  view.top.appendChild(status);
  const footer = document.createElement('div');
  footer.className = 'jp-GpuMem-footer';
  content.appendChild(footer);
  const select = document.createElement('select');
  select.className = 'jp-GpuMem-inlineChoice';
  select.setAttribute('aria-label', trans.__('GPU to show'));
  select.addEventListener('change', () => {
    stream.gpu = select.value;
    schedule();
  });
  footer.appendChild(select);
  const stop = document.createElement('button');
  stop.className = 'jp-GpuMem-stop';
  stop.textContent = trans.__('Stop');
  stop.title = trans.__('Stop updating and keep this picture in the output');
  stop.addEventListener('click', () => {
    stop.disabled = true;
    stream.stop();
  });
  footer.appendChild(stop);
  const live = document.createElement('span');
  live.className = 'jp-GpuMem-live';
  footer.appendChild(live);
  const cost = sourceLine(source, trans);
  if (cost) {
    const note = document.createElement('div');
    note.className = 'jp-GpuMem-source';
    note.textContent = cost;
    content.appendChild(note);
  }

  function draw(): void {
    const start = performance.now();
    paint();
    // benchmarks/inline_view.py times each update as benchmarks/sidebar.py times the panel's: the
    // rendering and a forced style and layout (paint excluded). Nothing happens without its flag.
    if ((globalThis as { jupyterGpumemTiming?: boolean }).jupyterGpumemTiming) {
      root.getBoundingClientRect();
      performance.measure('jupyter-gpumem:inline', { start });
    }
  }

  function paint(): void {
    const saved = stream.saved; // the notebook's saved picture, until the kernel speaks
    const latest: Sample | null = saved?.latest ?? stream.history.latest;
    view.renderTop(latest);
    const gpus = latest && !latest.problem ? latest.gpus : [];
    view.body.hidden = gpus.length === 0;
    setLine(
      status,
      latest === null
        ? trans.__('Collecting…')
        : latest.problem
          ? problemLine(latest, trans)
          : gpus.length === 0 && (latest.stalledSince ?? null) === null
            ? trans.__('The NVIDIA driver is loaded but reports no GPUs.')
            : null
    );
    select.hidden = gpus.length < 2 || saved !== null;
    if (latest !== null && gpus.length > 0) {
      const key = saved ? stream.gpu : chooseGpu(gpus, stream.gpu);
      stream.gpu = key;
      chooseIn(select, gpus, key ?? '', trans);
      const gpu = gpus.find(g => gpuKey(g) === stream.gpu);
      view.body.hidden = !gpu;
      if (gpu) {
        const series = saved?.series ?? stream.history.series(gpuKey(gpu));
        view.render(latest, gpu, series, stream.historyS * 1000, false);
      }
    }
    // After the chart, as view.ts orders its lines: plotly reads the layout first, not yet stale.
    setLine(
      live,
      latest === null
        ? null
        : stream.live
          ? trans.__(
              'live · %1 · every %2',
              clock(latest.t * 1000, true),
              `${stream.intervalS} s`
            )
          : trans.__(
              'saved at %1 · not live: its kernel is not running this view',
              clock(latest.t * 1000, true)
            )
    );
    stop.hidden = !stream.live;
  }

  const unlisten = stream.listen(schedule);
  draw();
  return () => {
    unlisten();
    seen.disconnect();
    if (frame) {
      cancelAnimationFrame(frame);
    }
    view.dispose();
    root.remove();
  };
}

export default { render };
