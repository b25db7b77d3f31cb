/**
 * The status-bar item: "GPU 3.1/4.0 GiB", the active notebook's kernel against its budget, in the
 * headline's colours, the split in its tooltip; a click opens the panel. Hidden where there is
 * nothing to show: no notebook, a kernel without jupyter-gpumem, a non-Python kernel, no GPU.
 */

import { TranslationBundle } from '@jupyterlab/translation';
import { ISignal, Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import { STALE } from '../model/channel';
import { KernelFollower } from '../model/follower';
import { stalledLine } from '../format/channel';
import { kernelsSummary } from '../format/kernels';
import { noticeText } from '../format/panel';
import { statusText, statusTooltip } from '../format/statusbar';
import { chooseGpu, gpuKey } from '../model/history';
import { ServerKernels } from '../model/serverkernels';

export class GpuMemStatus extends Widget {
  private _frame = 0;
  private _active = false;
  private _activeChanged = new Signal<this, void>(this);

  constructor(
    readonly kernels: KernelFollower,
    private readonly _trans: TranslationBundle,
    open: () => void,
    private readonly _server: ServerKernels | null = null
  ) {
    super();
    this.addClass('jp-StatusBar-TextItem');
    this.addClass('jp-GpuMem-status-item');
    this.node.setAttribute('role', 'button');
    this.node.tabIndex = 0;
    this.node.addEventListener('click', open);
    this.node.addEventListener('keydown', event => {
      if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        open();
      }
    });
    kernels.changed.connect(this._schedule, this);
    _server?.changed.connect(this._schedule, this);
    // The server's kernels are read seldom in the background: read them again as the tooltip comes.
    this.node.addEventListener('mouseenter', () => _server?.refresh());
    kernels.demand(this, true); // the item shows figures without the panel open
    this.render();
  }

  /** Whether the status bar shows the item (JupyterLab's IStatusBar.IItem.isActive). */
  get isActive(): boolean {
    return this._active;
  }

  get activeStateChanged(): ISignal<this, void> {
    return this._activeChanged;
  }

  /** Render now; also what the benchmark times. */
  render(): void {
    const channel = this.kernels.current;
    const latest = channel?.history.latest ?? null;
    const live =
      channel !== null &&
      (channel.state === 'streaming' || STALE.includes(channel.state));
    const gpus = latest?.problem ? [] : (latest?.gpus ?? []);
    const key = live ? chooseGpu(gpus, channel.gpu) : null;
    const gpu = key === null ? null : gpus.find(g => gpuKey(g) === key)!;
    this._setActive(gpu !== null);
    if (gpu === null || latest === null) {
      return;
    }
    const stale = STALE.includes(channel!.state);
    const { text, level } = statusText(gpu, this._trans);
    const node = this.node;
    if (node.textContent !== text) {
      node.textContent = text;
    }
    const stalled = stalledLine(latest, this._trans);
    const shown =
      stale || stalled !== null ? 'stale' : latest.notice ? 'warn' : level;
    if (node.dataset.level !== shown) {
      node.dataset.level = shown;
    }
    const server = this._server;
    const tooltip = statusTooltip(
      gpu,
      latest,
      this._trans,
      server?.ready ? kernelsSummary(server.rows, this._trans) : null
    );
    const title = [noticeText(latest.notice, this._trans), stalled, tooltip]
      .filter(line => line)
      .join('\n\n');
    if (node.title !== title) {
      node.title = title;
    }
  }

  dispose(): void {
    if (this._frame) {
      cancelAnimationFrame(this._frame);
    }
    this.kernels.demand(this, false);
    super.dispose();
  }

  private _schedule(): void {
    if (!this._frame) {
      this._frame = requestAnimationFrame(() => {
        this._frame = 0;
        this.render();
      });
    }
  }

  private _setActive(active: boolean): void {
    if (active !== this._active) {
      this._active = active;
      this._activeChanged.emit();
    }
  }
}
