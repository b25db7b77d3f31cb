/**
 * The "GPU Memory" side panel, built as the core panels are (a SidePanel: an uppercase title, a
 * toolbar with the GPU choice, settings and reconnect): the followed kernel's memory against its
 * budget on one GPU, as a headline, a time chart and a table of every process on that GPU. It only
 * wires: the text comes from format/, the table from table.ts, the chart from chart.ts, the
 * figures from the Channel. Everything that comes from the GPU host is set as text, never as HTML.
 */

import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import {
  SidePanel,
  Toolbar,
  ToolbarButton,
  caretDownEmptyIcon,
  refreshIcon,
  settingsIcon
} from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { Panel, Widget } from '@lumino/widgets';

import { PIP_COMMAND, STALE } from '../model/channel';
import { Frames, element, setLine } from './dom';
import { KernelFollower } from '../model/follower';
import { channelLine } from '../format/channel';
import {
  noNotebook,
  notebookLabel,
  panelTitle,
  problemLine,
  uiText
} from '../format/panel';
import { chooseGpu, gpuKey } from '../model/history';
import { KernelList } from './kernellist';
import type { SampleGpu } from '../wire/types';
import { ServerKernels } from '../model/serverkernels';
import { MemoryView, chooseIn } from './view';

export interface IPanelOptions {
  translator: ITranslator;
  /** Opens the settings editor at this extension's settings. */
  openSettings: () => void;
  /** Every kernel of the server (the section below the followed kernel's); null: none shown. */
  serverKernels?: ServerKernels | null;
}

export class GpuMemPanel extends SidePanel {
  private readonly _frames = new Frames(
    () => this.render(),
    () => this.isVisible
  );
  private readonly _text: TranslationBundle; // this extension's domain (SidePanel's _trans is JupyterLab's)
  private readonly _view: MemoryView;
  private readonly _select: HTMLSelectElement;
  private readonly _selectItem: Widget;
  private readonly _nodes: {
    kernel: HTMLElement;
    status: HTMLElement;
    pip: HTMLElement;
  };

  constructor(
    readonly kernels: KernelFollower,
    options: IPanelOptions
  ) {
    super({ content: new Panel(), translator: options.translator });
    const trans = (this._text = options.translator.load('jupyter_gpumem'));
    const text = uiText(trans);
    this.addClass('jp-GpuMem');

    const title = new Widget({ node: document.createElement('h2') });
    title.node.textContent = panelTitle(trans);
    title.addClass('jp-text-truncated');
    this.header.addWidget(title);

    // The GPU choice, as JupyterLab's HTMLSelect draws it (a styled <select> and its caret).
    this._selectItem = new Widget();
    this._selectItem.addClass('jp-GpuMem-gpuChoice');
    const wrap = element(
      'div',
      'jp-HTMLSelect jp-DefaultStyle',
      this._selectItem.node
    );
    const select = (this._select = element('select', '', wrap));
    select.setAttribute('aria-label', text.chooseGpu);
    select.title = text.chooseGpu;
    select.addEventListener('change', () => {
      const channel = this.kernels.current;
      if (channel) {
        channel.gpu = select.value;
      }
      this.update();
    });
    wrap.appendChild(
      caretDownEmptyIcon.element({
        tag: 'span',
        stylesheet: 'select',
        right: '4px',
        top: '4px'
      })
    );
    this.toolbar.addItem('gpu', this._selectItem);
    this.toolbar.addItem('spacer', Toolbar.createSpacerItem());
    this.toolbar.addItem(
      'settings',
      new ToolbarButton({
        icon: settingsIcon,
        tooltip: text.settings,
        onClick: options.openSettings
      })
    );
    this.toolbar.addItem(
      'reconnect',
      new ToolbarButton({
        icon: refreshIcon,
        tooltip: text.reconnect,
        onClick: () => void this.kernels.current?.start()
      })
    );

    const view = new Widget();
    view.addClass('jp-GpuMem-content');
    this.content.addWidget(view);
    const root = view.node;
    const kernel = element('div', 'jp-GpuMem-kernel', root);
    this._view = new MemoryView(root, trans, () => this.update());
    const status = element('div', 'jp-GpuMem-status', this._view.top);
    const pip = element('code', 'jp-GpuMem-pip', this._view.top);
    pip.textContent = PIP_COMMAND;
    this._nodes = { kernel, status, pip };
    kernels.changed.connect(() => this.update(), this);
    if (options.serverKernels) {
      this.content.addWidget(new KernelList(options.serverKernels, trans));
    }
  }

  /** Coalesce updates to one render per animation frame, and none while hidden. */
  update(): void {
    this._frames.request();
  }

  /** Render now. */
  render(): void {
    const n = this._nodes;
    const trans = this._text;
    const channel = this.kernels.current;
    const notebook = this.kernels.notebook;
    setLine(
      n.kernel,
      notebook
        ? notebookLabel(notebook.path, notebook.kernel, trans)
        : noNotebook(trans)
    );
    if (n.kernel.title !== n.kernel.textContent) {
      n.kernel.title = n.kernel.textContent ?? '';
    }
    const latest = channel?.history.latest ?? null;
    const streaming = channel?.state === 'streaming';
    const stale = channel !== null && STALE.includes(channel.state);
    setLine(
      n.status,
      channel
        ? channelLine(channel.state, channel.detail, trans, channel.refused)
        : null
    );
    n.pip.hidden = channel?.state !== 'missing';
    this._view.renderTop(latest);
    const hasGpu = latest !== null && !latest.problem && latest.gpus.length > 0;
    this._view.body.hidden = !hasGpu;
    if (latest === null || !hasGpu) {
      this._selectItem.hide();
      if (latest?.problem && streaming) {
        setLine(n.status, problemLine(latest, trans));
      }
      return;
    }
    const gpu = this._selectGpu(latest.gpus);
    this._view.render(
      latest,
      gpu,
      channel!.history.series(gpuKey(gpu)),
      channel!.windowS * 1000,
      stale
    );
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this.kernels.demand(this, true);
    this.update();
  }

  protected onAfterHide(msg: Message): void {
    super.onAfterHide(msg);
    this.kernels.demand(this, false);
  }

  protected onBeforeDetach(msg: Message): void {
    this._frames.cancel();
    super.onBeforeDetach(msg);
  }

  dispose(): void {
    this._view.dispose();
    super.dispose();
  }

  /** The GPU choice: the channel's while its GPU is there, else chosen at first look (history.ts). */
  private _selectGpu(gpus: SampleGpu[]): SampleGpu {
    const channel = this.kernels.current!;
    const select = this._select;
    channel.gpu = chooseGpu(gpus, channel.gpu)!; // gpus is not empty
    chooseIn(select, gpus, channel.gpu, this._text);
    const shown = gpus.find(g => gpuKey(g) === channel.gpu)!;
    select.dataset.lost = String(shown.lost);
    this._selectItem.setHidden(gpus.length < 2);
    return shown;
  }
}
