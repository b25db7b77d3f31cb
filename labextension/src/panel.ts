/**
 * The "GPU Memory" sidebar: the followed kernel's memory against its budget on one GPU, as a
 * headline, a time chart and a table of every process on that GPU. It only renders: the Channel
 * owns the data. Everything that comes from the GPU host is set as text, never as HTML.
 */

import { Message } from '@lumino/messaging';
import { ISignal, Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import { Channel, PIP_COMMAND } from './channel';
import { Chart, IColors, themeColors } from './chart';
import { element } from './dom';
import {
  ILine,
  NO_NOTEBOOK,
  breakdown,
  deviceLine,
  gpuOption,
  headline,
  inUseLabel,
  overLine,
  policyLine,
  simulatedBanner
} from './format';
import { chooseGpu, gpuKey } from './history';
import { IGpu } from './protocol';
import { ProcessTable } from './table';

/** Set a node's text (and colour level); an empty or null line hides it. */
function show(node: HTMLElement, line: ILine | string | null): void {
  const { text, level } =
    typeof line === 'string' || line === null
      ? { text: line ?? '', level: null }
      : line;
  node.textContent = text;
  if (level !== null) {
    node.dataset.level = level;
  }
  node.hidden = !text;
}

export class GpuMemPanel extends Widget {
  private _channel: Channel | null = null;
  private _label = '';
  private _gpu: string | null = null;
  private _colors: IColors | null = null;
  private _frame = 0;
  private _shown = new Signal<this, void>(this);
  private readonly _chart: Chart;
  private readonly _table: ProcessTable;
  private readonly _nodes: {
    kernel: HTMLElement;
    banner: HTMLElement;
    status: HTMLElement;
    pip: HTMLElement;
    body: HTMLElement;
    select: HTMLSelectElement;
    device: HTMLElement;
    headline: HTMLElement;
    breakdown: HTMLElement;
    reason: HTMLElement;
    policy: HTMLElement;
  };

  constructor() {
    super();
    this.addClass('jp-GpuMem');
    const root = this.node;
    const div = (name: string, parent: HTMLElement) =>
      element('div', `jp-GpuMem-${name}`, parent);
    const kernel = div('kernel', root);
    const banner = div('banner', root);
    const status = div('status', root);
    const pip = element('code', 'jp-GpuMem-pip', root);
    pip.textContent = PIP_COMMAND;
    const body = div('body', root);
    const select = element('select', 'jp-GpuMem-select', body);
    select.setAttribute('aria-label', 'GPU');
    select.addEventListener('change', () => {
      this._gpu = select.value;
      this.update();
    });
    this._nodes = {
      kernel,
      banner,
      status,
      pip,
      body,
      select,
      device: div('device', body),
      headline: div('headline', body),
      breakdown: div('breakdown', body),
      reason: div('reason', body),
      policy: div('policy', body)
    };
    this._chart = new Chart(div('chart', body));
    this._table = new ProcessTable(body, () => this.update());
  }

  /** Emitted when the panel becomes visible: time to make sure its kernel streams. */
  get shown(): ISignal<this, void> {
    return this._shown;
  }

  get channel(): Channel | null {
    return this._channel;
  }

  /** Show this channel's kernel (null: no notebook). */
  follow(channel: Channel | null, label: string): void {
    if (channel === this._channel && label === this._label) {
      return;
    }
    this._channel?.changed.disconnect(this.update, this);
    this._channel = channel;
    this._label = label;
    channel?.changed.connect(this.update, this);
    this.update();
  }

  /** The theme changed: read the --jp-* colours again. */
  themeChanged(): void {
    this._colors = null;
    this.update();
  }

  /** Coalesce updates to one render per animation frame, and none while hidden. */
  update(): void {
    if (!this.isVisible || this._frame) {
      return;
    }
    this._frame = requestAnimationFrame(() => {
      this._frame = 0;
      void this.render();
    });
  }

  /** Render now; resolves when the chart is drawn. */
  async render(): Promise<void> {
    const n = this._nodes;
    const channel = this._channel;
    n.kernel.textContent = channel ? this._label : NO_NOTEBOOK;
    const latest = channel?.history.latest ?? null;
    const streaming = channel?.state === 'streaming';
    show(n.status, channel && !streaming ? channel.message : null);
    n.pip.hidden = channel?.state !== 'missing';
    show(n.banner, simulatedBanner(latest?.simulated ?? null));
    n.banner.title = latest?.simulated ?? '';
    const hasGpu = latest !== null && !latest.problem && latest.gpus.length > 0;
    n.body.hidden = !hasGpu;
    if (latest === null || !hasGpu) {
      if (latest?.problem && streaming) {
        show(n.status, latest.problem);
      }
      return;
    }
    const gpu = this._selectGpu(latest.gpus);
    n.device.textContent = deviceLine(gpu);
    show(n.headline, headline(gpu, latest));
    show(n.breakdown, breakdown(gpu, latest.framework));
    show(n.reason, overLine(gpu));
    show(n.policy, policyLine(latest));
    this._table.render(gpu);
    const series = channel!.history.series(gpuKey(gpu));
    if (series) {
      this._colors ??= themeColors();
      await this._chart.render(
        series,
        channel!.windowS * 1000,
        this._colors,
        inUseLabel(latest.framework)
      );
    }
  }

  protected onAfterShow(msg: Message): void {
    this._shown.emit();
    this.update();
  }

  protected onResize(msg: Widget.ResizeMessage): void {
    this.update(); // the chart redraws at the new size
  }

  protected onBeforeDetach(msg: Message): void {
    if (this._frame) {
      cancelAnimationFrame(this._frame);
      this._frame = 0;
    }
  }

  dispose(): void {
    this._chart.dispose();
    super.dispose();
  }

  /** The GPU choice: kept while its GPU is there, else chosen at first look (history.ts). */
  private _selectGpu(gpus: IGpu[]): IGpu {
    const select = this._nodes.select;
    const keys = gpus.map(gpuKey);
    this._gpu = chooseGpu(gpus, this._gpu)!; // gpus is not empty
    if (
      select.options.length !== gpus.length ||
      keys.some((k, i) => select.options[i].value !== k)
    ) {
      select.textContent = '';
      gpus.forEach((gpu, i) => {
        const option = element('option', '', select);
        option.value = keys[i];
        option.textContent = gpuOption(gpu);
      });
    }
    select.value = this._gpu;
    select.hidden = gpus.length < 2;
    return gpus[keys.indexOf(this._gpu)];
  }
}
