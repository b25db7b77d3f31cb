/**
 * Every kernel of this server and its GPU memory, from the server extension's `GET /api/gpumem/v1`
 * (which reads NVML and the kernels' reports; nothing here reads NVML again), named from
 * JupyterLab's sessions. Polled with JupyterLab's Poll: backoff on errors, standby while the page
 * is hidden, and quicker while a view shows the list (`demand`).
 */

import { ServerConnection, ServiceManager } from '@jupyterlab/services';
import { Token } from '@lumino/coreutils';
import { IDisposable } from '@lumino/disposable';
import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';

import { readServerBody } from '../wire/api';
import type { ServerBody } from '../wire/types';
import { IKernelRow, ISessionName, kernelRows } from './kernelrows';

const SHOWN_MS = 2000; // a view shows the list: about two of the server's readings
const IN_BACKGROUND_MS = 15000; // only the status bar's tooltip reads it

export class ServerKernels implements IDisposable {
  private _body: ServerBody | null = null;
  private _error: string | null = null;
  private _available = true;
  private _current: string | null = null;
  private _demand = new Set<object>();
  private _changed = new Signal<this, void>(this);
  private readonly _poll: Poll;

  constructor(private readonly _services: ServiceManager.IManager) {
    this._poll = new Poll({
      factory: () => this._read(),
      frequency: { interval: IN_BACKGROUND_MS, backoff: true, max: 60000 },
      standby: 'when-hidden',
      name: 'jupyter-gpumem:server-kernels'
    });
    _services.sessions.runningChanged.connect(this._emit, this);
  }

  /** Every kernel of the server, largest first; empty until the first answer. */
  get rows(): IKernelRow[] {
    if (this._body === null) {
      return [];
    }
    const names = new Map<string, ISessionName>();
    for (const s of this._services.sessions.running()) {
      if (s.kernel) {
        names.set(s.kernel.id, {
          name: s.type === 'notebook' ? basename(s.path) : s.name,
          path: s.path,
          type: s.type
        });
      }
    }
    return kernelRows(this._body, names, this._current);
  }

  /** How many GPUs the server sees (0 before the first answer). */
  get gpuCount(): number {
    return this._body?.gpus.length ?? 0;
  }

  /** Why the last request failed (it is tried again, backing off); null: it did not. */
  get error(): string | null {
    return this._error;
  }

  /** False where the server has no jupyter-gpumem server extension: nothing to show. */
  get available(): boolean {
    return this._available;
  }

  /** Has an answer come. */
  get ready(): boolean {
    return this._body !== null;
  }

  /** The followed notebook's kernel, marked "this kernel". */
  set current(id: string | null) {
    if (id !== this._current) {
      this._current = id;
      this._emit();
    }
  }

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get isDisposed(): boolean {
    return this._poll.isDisposed;
  }

  /** A view shows the list (`wanted`) or no longer does; while one does, the list is polled often. */
  demand(view: object, wanted: boolean): void {
    const before = this._demand.size > 0;
    if (wanted) {
      this._demand.add(view);
    } else {
      this._demand.delete(view);
    }
    const now = this._demand.size > 0;
    if (now !== before && !this._poll.isDisposed) {
      this._poll.frequency = {
        ...this._poll.frequency,
        interval: now ? SHOWN_MS : IN_BACKGROUND_MS
      };
      if (now) {
        void this._poll.refresh();
      }
    }
  }

  /** Read again now (after a shutdown, or when the tooltip is about to show). */
  refresh(): void {
    if (!this._poll.isDisposed) {
      void this._poll.refresh();
    }
  }

  /** Shut the kernel down, as the Running panel does; rejects with the server's reason. */
  async shutDown(id: string): Promise<void> {
    await this._services.kernels.shutdown(id);
    this.refresh();
  }

  dispose(): void {
    if (this._poll.isDisposed) {
      return;
    }
    this._poll.dispose();
    this._services.sessions.runningChanged.disconnect(this._emit, this);
    Signal.clearData(this);
  }

  private async _read(): Promise<void> {
    const settings = this._services.serverSettings;
    const url = settings.baseUrl + 'api/gpumem/v1';
    let response: Response;
    try {
      response = await ServerConnection.makeRequest(url, {}, settings);
    } catch (error) {
      this._fail(String(error));
      throw error; // the Poll backs off
    }
    if (response.status === 404) {
      // No server extension here (a server without jupyter-gpumem): it will not appear before a restart.
      this._available = false;
      this._emit();
      this._poll.dispose();
      return;
    }
    if (!response.ok) {
      this._fail(`${response.status} ${response.statusText}`);
      throw new Error(this._error!);
    }
    const body = readServerBody(await response.json());
    if (body === null) {
      this._fail('not a version 1 answer');
      throw new Error(this._error!);
    }
    this._body = body;
    this._error = null;
    this._emit();
  }

  private _fail(error: string): void {
    this._error = error;
    this._emit();
  }

  private _emit(): void {
    this._changed.emit();
  }
}

function basename(path: string): string {
  return path.split('/').pop() || path;
}

/** Every kernel of this server and its GPU memory (the sidebar's list, the status bar's tooltip). */
export const IServerKernels = new Token<ServerKernels>(
  'jupyter-gpumem:server-kernels',
  "Every kernel of this server and its GPU memory, from the server extension's API."
);
