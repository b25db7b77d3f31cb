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
import {
  breakdown,
  formatBytes,
  formatMiB,
  formatPercent,
  headline
} from './format';
import { gpuKey } from './history';
import { IGpu, IProcess } from './protocol';

type SortKey = 'pid' | 'name' | 'user' | 'usedBytes' | 'cpuPercent';

const COLUMNS: [SortKey, string][] = [
  ['pid', 'PID'],
  ['name', 'Name'],
  ['user', 'User'],
  ['usedBytes', 'GPU mem'],
  ['cpuPercent', 'CPU']
];

function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  parent: HTMLElement
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  parent.appendChild(node);
  return node;
}

/** Sorted copy; unknown values (N/A) always last. */
export function sortProcesses(
  processes: IProcess[],
  key: SortKey,
  descending: boolean
): IProcess[] {
  return [...processes].sort((a, b) => {
    const x = a[key];
    const y = b[key];
    if (x === null || y === null) {
      return x === y ? a.pid - b.pid : x === null ? 1 : -1;
    }
    const order =
      typeof x === 'string'
        ? x.localeCompare(String(y))
        : Number(x) - Number(y);
    return (descending ? -order : order) || a.pid - b.pid;
  });
}

export class GpuMemPanel extends Widget {
  private _channel: Channel | null = null;
  private _label = '';
  private _gpu: string | null = null;
  private _sortKey: SortKey = 'usedBytes';
  private _descending = true;
  private _colors: IColors | null = null;
  private _frame = 0;
  private _shown = new Signal<this, void>(this);
  private readonly _chart: Chart;
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
    head: HTMLTableRowElement;
    rows: HTMLTableSectionElement;
  };

  constructor() {
    super();
    this.addClass('jp-GpuMem');
    const root = this.node;
    const kernel = element('div', 'jp-GpuMem-kernel', root);
    const banner = element('div', 'jp-GpuMem-banner', root);
    const status = element('div', 'jp-GpuMem-status', root);
    const pip = element('code', 'jp-GpuMem-pip', root);
    pip.textContent = PIP_COMMAND;
    const body = element('div', 'jp-GpuMem-body', root);
    const select = element('select', 'jp-GpuMem-select', body);
    select.setAttribute('aria-label', 'GPU');
    select.addEventListener('change', () => {
      this._gpu = select.value;
      this.update();
    });
    const device = element('div', 'jp-GpuMem-device', body);
    const headlineNode = element('div', 'jp-GpuMem-headline', body);
    const breakdownNode = element('div', 'jp-GpuMem-breakdown', body);
    const reason = element('div', 'jp-GpuMem-reason', body);
    const policy = element('div', 'jp-GpuMem-policy', body);
    this._chart = new Chart(element('div', 'jp-GpuMem-chart', body));
    const table = element('table', 'jp-GpuMem-processes', body);
    const head = element('tr', '', element('thead', '', table));
    for (const [key, label] of COLUMNS) {
      const th = element('th', '', head);
      th.textContent = label;
      th.dataset.key = key;
      th.tabIndex = 0;
      const sort = () => this._sortBy(key);
      th.addEventListener('click', sort);
      th.addEventListener('keydown', e => {
        if (e.key === 'Enter' || e.key === ' ') {
          sort();
        }
      });
    }
    const rows = element('tbody', '', table);
    this._nodes = {
      kernel,
      banner,
      status,
      pip,
      body,
      select,
      device,
      headline: headlineNode,
      breakdown: breakdownNode,
      reason,
      policy,
      head,
      rows
    };
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
    n.kernel.textContent = channel
      ? this._label
      : 'Open a notebook to see its kernel’s GPU memory.';
    const latest = channel?.history.latest ?? null;
    const streaming = channel?.state === 'streaming';
    n.status.textContent = channel && !streaming ? channel.message : '';
    n.status.hidden = !n.status.textContent;
    n.pip.hidden = channel?.state !== 'missing';
    const scenario = latest?.simulated ?? '';
    n.banner.textContent = scenario
      ? `SIMULATED GPU — stand-in NVML (${scenario.split('/').pop()})`
      : '';
    n.banner.title = scenario;
    n.banner.hidden = !n.banner.textContent;
    const hasGpu = latest !== null && !latest.problem && latest.gpus.length > 0;
    n.body.hidden = !hasGpu;
    if (latest === null || !hasGpu) {
      if (latest?.problem && streaming) {
        n.status.textContent = latest.problem;
        n.status.hidden = false;
      }
      return;
    }
    const gpu = this._selectGpu(latest.gpus);
    const framework = latest.framework;
    n.device.textContent = gpu.lost
      ? `GPU ${gpu.index} ${gpu.name ?? ''}: lost (fell off the bus; it needs a reset)`
      : `GPU ${gpu.index} · ${gpu.name ?? 'unknown'} · ${formatBytes(gpu.usedBytes)} of ${formatBytes(gpu.totalBytes)} used`;
    const head = gpu.hidden
      ? {
          text: `Hidden from this kernel by its policy (${latest.policy ?? 'gpus='})`,
          level: 'ok'
        }
      : headline(gpu.ownBytes, gpu.budgetBytes, framework);
    n.headline.textContent = head.text;
    n.headline.dataset.level = head.level;
    n.breakdown.textContent = gpu.hidden
      ? ''
      : (breakdown(gpu, framework) ?? '');
    n.breakdown.hidden = !n.breakdown.textContent;
    n.reason.textContent =
      gpu.overReason && !gpu.hidden ? `Over budget: ${gpu.overReason}` : '';
    n.reason.hidden = !n.reason.textContent;
    n.policy.textContent = latest.policy
      ? `Policy: ${latest.policy} — ${framework} ${latest.frameworkStarted ? 'running' : 'not started yet'}`
      : '';
    this._renderRows(gpu);
    const series = channel!.history.series(gpuKey(gpu));
    if (series) {
      this._colors ??= themeColors();
      await this._chart.render(
        series,
        channel!.windowS * 1000,
        this._colors,
        framework ?? 'Framework'
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

  private _selectGpu(gpus: IGpu[]): IGpu {
    const select = this._nodes.select;
    const keys = gpus.map(gpuKey);
    if (this._gpu === null || !keys.includes(this._gpu)) {
      // First look: the GPU this kernel has a budget on, else the one it uses, else GPU 0.
      const pick =
        gpus.find(g => g.budgetBytes !== null) ??
        gpus.find(g => (g.ownBytes ?? 0) > 0) ??
        gpus[0];
      this._gpu = gpuKey(pick);
    }
    if (
      select.options.length !== gpus.length ||
      keys.some((k, i) => select.options[i].value !== k)
    ) {
      select.textContent = '';
      gpus.forEach((gpu, i) => {
        const option = document.createElement('option');
        option.value = keys[i];
        option.textContent = `GPU ${gpu.index}: ${gpu.name ?? 'unknown'}`;
        select.appendChild(option);
      });
    }
    select.value = this._gpu;
    select.hidden = gpus.length < 2;
    return gpus[keys.indexOf(this._gpu)];
  }

  private _sortBy(key: SortKey): void {
    this._descending =
      key === this._sortKey
        ? !this._descending
        : key !== 'name' && key !== 'user';
    this._sortKey = key;
    this.update();
  }

  private _renderRows(gpu: IGpu): void {
    const { rows, head } = this._nodes;
    for (const th of Array.from(head.children) as HTMLElement[]) {
      th.setAttribute(
        'aria-sort',
        th.dataset.key === this._sortKey
          ? this._descending
            ? 'descending'
            : 'ascending'
          : 'none'
      );
    }
    rows.textContent = '';
    const note = (text: string) => {
      const cell = element('td', 'jp-GpuMem-note', element('tr', '', rows));
      cell.colSpan = COLUMNS.length;
      cell.textContent = text;
    };
    if (gpu.lost) {
      note('This GPU is lost: no figures until it is reset.');
      return;
    }
    if (!gpu.processesKnown) {
      note('The driver does not list the processes on this GPU.');
    }
    for (const p of sortProcesses(
      gpu.processes ?? [],
      this._sortKey,
      this._descending
    )) {
      const row = element('tr', p.self ? 'jp-GpuMem-self' : '', rows);
      const cells = [
        String(p.pid),
        (p.name ?? '?') + (p.self ? ' (this kernel)' : ''),
        p.user ?? '',
        formatMiB(p.usedBytes),
        formatPercent(p.cpuPercent)
      ];
      for (const text of cells) {
        element('td', '', row).textContent = text;
      }
    }
  }
}
