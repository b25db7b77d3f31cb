/**
 * The sidebar's "Kernels on this server" section: every kernel of the server with its notebook's
 * name, its GPU memory, its budget and how long it has been idle, largest first, the followed
 * kernel marked, each with a Shut down button behind JupyterLab's confirmation dialog. Collapsible
 * (a header with the count). It only renders ServerKernels' rows with format/kernels.ts's words; every
 * name is set as text. Rows are kept per kernel, so a focused button survives an update.
 */

import { Dialog, showDialog } from '@jupyterlab/apputils';
import {
  caretDownIcon,
  caretRightIcon,
  closeIcon
} from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { Frames, element, setLine } from './dom';
import {
  kernelCells,
  kernelsNote,
  kernelsTitle,
  shutDownDialog,
  shutDownFailed
} from '../format/kernels';
import { Trans } from '../format/trans';
import { ServerKernels } from '../model/serverkernels';

let lists = 0; // ids for aria-controls, one per list

interface IRowNodes {
  row: HTMLLIElement;
  name: HTMLElement;
  badge: HTMLElement;
  memory: HTMLElement;
  button: HTMLButtonElement;
  detail: HTMLElement;
  /** The name the dialog shows (the row's latest). */
  label: string;
}

export class KernelList extends Widget {
  private readonly _frames = new Frames(
    () => this.render(),
    () => this.isVisible
  );
  private _expanded = true;
  private readonly _header: HTMLButtonElement;
  private readonly _caret: HTMLElement;
  private readonly _title: HTMLElement;
  private readonly _note: HTMLElement;
  private readonly _list: HTMLUListElement;
  private readonly _rows = new Map<string, IRowNodes>();

  constructor(
    readonly kernels: ServerKernels,
    private readonly _trans: Trans
  ) {
    super();
    this.addClass('jp-GpuMem-kernels');
    const header = (this._header = element(
      'button',
      'jp-GpuMem-kernelsHeader',
      this.node
    ));
    header.type = 'button';
    this._caret = element('span', 'jp-GpuMem-kernelsCaret', header);
    this._title = element('span', 'jp-GpuMem-kernelsTitle', header);
    header.addEventListener('click', () => {
      this._expanded = !this._expanded;
      this._showExpanded();
      this.kernels.demand(this, this._expanded && this.isVisible);
    });
    this._note = element('div', 'jp-GpuMem-kernelsNote', this.node);
    this._list = element('ul', 'jp-GpuMem-kernelList', this.node);
    this._list.id = `jp-GpuMem-kernelList-${lists++}`;
    header.setAttribute('aria-controls', this._list.id);
    this._showExpanded();
    kernels.changed.connect(this.update, this);
  }

  /** Coalesce updates to one render per animation frame, none while hidden. */
  update(): void {
    this._frames.request();
  }

  /** Render now. */
  render(): void {
    const trans = this._trans;
    const kernels = this.kernels;
    this.setHidden(!kernels.available);
    const rows = kernels.rows;
    setLine(this._title, kernelsTitle(rows.length, trans));
    const note = kernels.ready
      ? kernelsNote(rows.length, kernels.error, trans)
      : kernels.error === null
        ? null
        : kernelsNote(0, kernels.error, trans);
    setLine(this._note, this._expanded ? note : null);
    const seen = new Set<string>();
    rows.forEach((row, i) => {
      seen.add(row.id);
      const nodes = this._rows.get(row.id) ?? this._makeRow(row.id);
      const cells = kernelCells(row, kernels.gpuCount, trans);
      nodes.label = cells.name;
      setLine(nodes.name, cells.name);
      if (nodes.name.title !== cells.nameTitle) {
        nodes.name.title = cells.nameTitle;
      }
      setLine(nodes.badge, cells.badge);
      setLine(nodes.memory, { text: cells.memory, level: cells.level });
      setLine(nodes.detail, cells.detail);
      if (nodes.detail.title !== cells.detail) {
        nodes.detail.title = cells.detail;
      }
      if (nodes.button.title !== cells.shutDown) {
        nodes.button.title = cells.shutDown;
        nodes.button.setAttribute('aria-label', cells.shutDown);
      }
      nodes.row.classList.toggle('jp-mod-current', row.current);
      // Moved only when out of place: moving a focused button would drop its focus.
      if (this._list.children[i] !== nodes.row) {
        this._list.insertBefore(nodes.row, this._list.children[i] ?? null);
      }
    });
    for (const [id, nodes] of this._rows) {
      if (!seen.has(id)) {
        nodes.row.remove();
        this._rows.delete(id);
      }
    }
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this.kernels.demand(this, this._expanded);
    this.update();
  }

  protected onAfterHide(msg: Message): void {
    super.onAfterHide(msg);
    this.kernels.demand(this, false);
  }

  protected onBeforeDetach(msg: Message): void {
    this._frames.cancel();
    this.kernels.demand(this, false);
    super.onBeforeDetach(msg);
  }

  private _showExpanded(): void {
    const expanded = this._expanded;
    this._header.setAttribute('aria-expanded', String(expanded));
    this._list.hidden = !expanded;
    this._caret.replaceChildren(
      (expanded ? caretDownIcon : caretRightIcon).element({ tag: 'span' })
    );
    this.update();
  }

  private _makeRow(id: string): IRowNodes {
    const row = element('li', 'jp-GpuMem-kernelRow', this._list);
    row.dataset.kernelId = id;
    const line = element('div', 'jp-GpuMem-kernelLine', row);
    const nodes: IRowNodes = {
      row,
      name: element('span', 'jp-GpuMem-kernelName', line),
      badge: element('span', 'jp-GpuMem-badge', line),
      memory: element('span', 'jp-GpuMem-kernelMemory', line),
      button: element(
        'button',
        'jp-GpuMem-kernelShutDown jp-Button jp-mod-minimal jp-mod-small',
        line
      ),
      detail: element('div', 'jp-GpuMem-kernelDetail', row),
      label: ''
    };
    nodes.button.type = 'button';
    nodes.button.appendChild(closeIcon.element({ tag: 'span' }));
    nodes.button.addEventListener('click', () => void this._shutDown(id));
    this._rows.set(id, nodes);
    return nodes;
  }

  /** JupyterLab's confirmation dialog, then the shutdown; a refusal is said in a dialog too. */
  private async _shutDown(id: string): Promise<void> {
    const trans = this._trans;
    const name = this._rows.get(id)?.label ?? id;
    const words = shutDownDialog(name, trans);
    const result = await showDialog({
      title: words.title,
      body: words.body,
      buttons: [
        Dialog.cancelButton({ label: words.cancel }),
        Dialog.warnButton({ label: words.accept })
      ]
    });
    if (!result.button.accept) {
      return;
    }
    try {
      await this.kernels.shutDown(id);
    } catch (error) {
      await showDialog({
        title: words.title,
        body: shutDownFailed(name, String(error), trans),
        buttons: [Dialog.okButton({ label: words.ok })]
      });
    }
  }
}
