/**
 * Which kernel the views show: one Channel per kernel connection of every open notebook (each
 * registers the comm target, so a comm the kernel opens is never refused), and the current
 * notebook's. A view that needs figures says so (`demand`); while one does, the current kernel
 * streams. The sidebar and the status-bar item both follow this, so they always agree.
 */

import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel } from '@jupyterlab/services';
import { Token } from '@lumino/coreutils';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { Channel } from './channel';
import { ISettings } from '../wire/protocol';
import type { Notice } from '../wire/types';

/** A notice from the server about one followed kernel. */
export interface INoticed {
  notice: Notice;
  kernel: Kernel.IKernelConnection;
}

/** The current notebook, as the views name it. */
export interface INotebookInfo {
  path: string;
  /** The kernel's display name; null: the notebook has no kernel. */
  kernel: string | null;
}

export class KernelFollower implements IDisposable {
  private _channels = new Map<Kernel.IKernelConnection, Channel>();
  private _current: Channel | null = null;
  private _notebook: INotebookInfo | null = null;
  private _demand = new Set<object>();
  private _changed = new Signal<this, void>(this);
  private _noticed = new Signal<this, INoticed>(this);
  private _disposed = false;

  /** `language`: the interface's, told to every kernel it follows (Channel). */
  constructor(
    private readonly _tracker: INotebookTracker,
    private _settings: ISettings,
    private readonly _language: string | null = null
  ) {
    _tracker.forEach(notebook => this._watch(notebook));
    _tracker.widgetAdded.connect((_, notebook) => this._watch(notebook));
    _tracker.currentChanged.connect(this._follow, this);
    this._follow();
  }

  /** The current notebook's kernel; null: no notebook, or no kernel. */
  get current(): Channel | null {
    return this._current;
  }

  /** The current notebook; null: none open. */
  get notebook(): INotebookInfo | null {
    return this._notebook;
  }

  /** Another kernel to show, or new figures or state from the current one. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** The server told the user of one of the followed kernels something (Channel.noticed). */
  get noticed(): ISignal<this, INoticed> {
    return this._noticed;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** A view needs figures (`wanted`) or no longer does; while any does, the current kernel streams. */
  demand(view: object, wanted: boolean): void {
    if (wanted) {
      this._demand.add(view);
      this._startCurrent();
    } else {
      this._demand.delete(view);
    }
  }

  /** New settings: every channel resizes its history and tells its kernel. */
  configure(settings: ISettings): void {
    this._settings = settings;
    this._channels.forEach(channel => channel.configure(settings));
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._channels.forEach(channel => channel.dispose());
    this._channels.clear();
    Signal.clearData(this);
  }

  private _channelFor(kernel: Kernel.IKernelConnection): Channel {
    let channel = this._channels.get(kernel);
    if (!channel) {
      channel = new Channel(kernel, this._settings, this._language);
      channel.noticed.connect((_, notice) =>
        this._noticed.emit({ notice, kernel })
      );
      this._channels.set(kernel, channel);
      kernel.disposed.connect(() => {
        this._channels.get(kernel)?.dispose();
        this._channels.delete(kernel);
        this._follow();
      });
    }
    return channel;
  }

  private _watch(notebook: NotebookPanel): void {
    const session = notebook.sessionContext;
    session.kernelChanged.connect((_, change) => {
      if (change.newValue) {
        this._channelFor(change.newValue);
      }
      if (this._tracker.currentWidget === notebook) {
        this._follow();
      }
    });
    const kernel = session.session?.kernel;
    if (kernel) {
      this._channelFor(kernel);
    }
  }

  private _follow(): void {
    const notebook = this._tracker.currentWidget;
    const kernel = notebook?.sessionContext.session?.kernel ?? null;
    const channel =
      kernel && !kernel.isDisposed ? this._channelFor(kernel) : null;
    const info = notebook
      ? {
          path: notebook.context.path,
          kernel: kernel ? notebook.sessionContext.kernelDisplayName : null
        }
      : null;
    const same =
      channel === this._current &&
      info?.path === this._notebook?.path &&
      info?.kernel === this._notebook?.kernel;
    if (!same) {
      this._current?.changed.disconnect(this._relay, this);
      this._current = channel;
      this._notebook = info;
      channel?.changed.connect(this._relay, this);
      this._changed.emit();
    }
    this._startCurrent();
  }

  private _relay(): void {
    this._changed.emit();
  }

  private _startCurrent(): void {
    const channel = this._current;
    if (this._demand.size > 0 && channel && channel.state === 'idle') {
      void channel.start();
    }
  }
}

/** The followed kernels, for the sidebar and the status-bar item (and other extensions). */
export const IKernelFollower = new Token<KernelFollower>(
  'jupyter-gpumem:kernels',
  "The active notebook's kernel and its GPU memory stream."
);
