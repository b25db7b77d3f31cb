/**
 * The sidebar's link to one kernel: starts the stream (a silent execute), receives the
 * kernel-opened comm, keeps the history, and reconnects after a restart or a stall.
 */

import { Kernel, KernelMessage } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { History } from './history';
import {
  ISettings,
  TARGET,
  VersionError,
  configureMessage,
  connectCode,
  receive
} from '../wire/protocol';
import type { Notice } from '../wire/types';

export type State =
  | 'idle' // not asked to stream yet
  | 'connecting'
  | 'streaming'
  | 'restarting'
  | 'stalled' // no sample for a while: reconnecting
  | 'missing' // the kernel cannot import jupyter_gpumem
  | 'unsupported' // not a Python kernel
  | 'unreachable' // the request to start the stream failed
  | 'failed' // the kernel answered the request with an error
  | 'incompatible' // the kernel runs a release of another major version (`refused` says which)
  | 'dead';

/** States in which the figures on show are the old kernel's (or an old stream's): views dim them. */
export const STALE: readonly State[] = ['restarting', 'stalled', 'dead'];

/** No sample for this many intervals (and at least STALL_MIN_MS) means the stream is gone. */
const STALL_INTERVALS = 5;
const STALL_MIN_MS = 5000;

export const PIP_COMMAND = '%pip install jupyter-gpumem';

export class Channel implements IDisposable {
  readonly history: History;
  state: State = 'idle';
  /** What format/channel.ts's channelLine needs besides the state: the kernel's language (unsupported),
   * the error (unreachable, failed), the seconds without figures (stalled). */
  detail = '';
  /** The GPU the views show for this kernel (history.ts's gpuKey); null: not chosen yet. */
  gpu: string | null = null;
  private _comm: Kernel.IComm | null = null;
  private _pending = false;
  /** Bumped at each restart: a request to start the stream sent to the kernel before it is forgotten. */
  private _generation = 0;
  /** The session id of the kernel process that opened the stream: every message it sends carries it. */
  private _kernelSession: string | null = null;
  /** The session whose status was taken for a restart: a stream then opened under another one means this kernel's
   * messages do not share one session id, and restarts are no longer told from it (never a reconnecting loop). */
  private _restartedBy: string | null = null;
  private _sessionsTold = true;
  private _lastSampleAt = 0;
  private _watchdog: number;
  private _changed = new Signal<this, void>(this);
  private _noticed = new Signal<this, Notice>(this);
  private _notice: Notice | null = null;
  private _disposed = false;
  /** Incompatible: the protocol and release of the kernel (format/channel.ts's incompatibleLine words them). */
  refused: VersionError | null = null;

  /** `language`: the interface's (JupyterLab's `translator.languageCode`), sent to the kernel with each
   * configure and after each hello, so `%gpumem` words in it; null: the kernel keeps its locale's. */
  constructor(
    readonly kernel: Kernel.IKernelConnection,
    private _settings: ISettings,
    private readonly _language: string | null = null
  ) {
    this.history = new History(this._capacity());
    // On every kernel we might follow: a kernel-opened comm with no registered target is closed
    // by the frontend that receives it, which would cut the stream for the other open tabs.
    kernel.registerCommTarget(TARGET, this._attach);
    kernel.statusChanged.connect(this._onStatus, this);
    kernel.iopubMessage.connect(this._onIopub, this);
    this._watchdog = window.setInterval(() => this._checkStall(), 1000);
  }

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** The server has something new to tell this kernel's user (a sample's notice with a new time). */
  get noticed(): ISignal<this, Notice> {
    return this._noticed;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** Ask the kernel to stream (again). Harmless while a request is already on its way. */
  async start(): Promise<void> {
    if (this._pending || this._disposed) {
      return;
    }
    this._pending = true;
    const generation = this._generation;
    if (this.state !== 'restarting' && this.state !== 'stalled') {
      this._set('connecting');
    }
    try {
      const info = await this.kernel.info;
      if (generation !== this._generation) {
        return; // the kernel restarted meanwhile: the start after the restart asks the new process
      }
      if (info.language_info.name !== 'python') {
        this._set('unsupported', info.language_info.name);
        return;
      }
      const future = this.kernel.requestExecute(
        {
          code: connectCode(this._settings),
          silent: true,
          store_history: false,
          allow_stdin: false,
          stop_on_error: false // never abort the user's queued cells
        },
        true
      );
      const reply = await future.done;
      if (generation === this._generation) {
        this._replied(reply.content);
      }
    } catch (error) {
      if (
        !this._disposed &&
        this.state !== 'restarting' &&
        generation === this._generation
      ) {
        this._set('unreachable', String(error));
      }
    } finally {
      if (generation === this._generation) {
        this._pending = false;
      }
    }
  }

  /** The history window the kernel keeps, in seconds: what the chart spans. */
  get windowS(): number {
    return this._settings.historyS;
  }

  /** New settings: resize the history now, tell the kernel over the comm. */
  configure(settings: ISettings): void {
    this._settings = settings;
    this.history.capacity = this._capacity();
    if (this._comm && !this._comm.isDisposed) {
      // Spread: a JSONObject has an index signature, which a generated interface has not.
      this._comm.send({ ...configureMessage(settings, this._language) });
    }
  }

  /** A message from the kernel (what the comm delivers). */
  receive(data: unknown): void {
    const message = receive(data, this._refuse);
    if (message === null) {
      return;
    }
    this.refused = null;
    this._lastSampleAt = performance.now();
    if (message.type === 'hello') {
      this._settings = {
        intervalS: message.intervalS,
        historyS: message.historyS
      };
      this.history.capacity = Math.ceil(message.historyS / message.intervalS);
      this.history.reset(message.history);
      if (this._language !== null && this._comm && !this._comm.isDisposed) {
        // The kernel's settings as it just said them (nothing changes there), and the interface's language.
        this._comm.send({
          ...configureMessage(this._settings, this._language)
        });
      }
    } else {
      this.history.push(message.sample);
      const notice = message.sample.notice;
      if (
        notice &&
        (notice.t !== this._notice?.t || notice.kind !== this._notice.kind)
      ) {
        this._noticed.emit(notice);
      }
      this._notice = notice;
    }
    this._set('streaming');
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    window.clearInterval(this._watchdog);
    this.kernel.statusChanged.disconnect(this._onStatus, this);
    this.kernel.iopubMessage.disconnect(this._onIopub, this);
    if (!this.kernel.isDisposed) {
      this.kernel.removeCommTarget(TARGET, this._attach);
    }
    Signal.clearData(this);
  }

  private _capacity(): number {
    return Math.ceil(this._settings.historyS / this._settings.intervalS);
  }

  private _attach = (
    comm: Kernel.IComm,
    msg: KernelMessage.ICommOpenMsg
  ): void => {
    this._comm = comm;
    const session = msg.header.session;
    if (this._restartedBy !== null && session !== this._restartedBy) {
      this._sessionsTold = false;
    }
    this._restartedBy = null;
    this._kernelSession = session;
    comm.onMsg = m => this.receive(m.content.data);
    comm.onClose = () => {
      if (this._comm === comm) {
        this._comm = null;
      }
    };
    this.receive(msg.content.data);
  };

  /** A kernel of another major release: its messages are dropped, and the panel says which releases
   * meet and what to upgrade, as it says what to install where jupyter_gpumem is missing. The hello
   * names the kernel's release and the samples after it do not: the sentence that names it stays. */
  private _refuse = (error: VersionError): void => {
    const said = this.refused;
    if (
      said === null ||
      said.protocol !== error.protocol ||
      error.packageVersion !== null
    ) {
      this.refused = error;
    }
    const { protocol, packageVersion } = this.refused!;
    this._set('incompatible', `${protocol} ${packageVersion ?? ''}`);
  };

  private _replied(content: KernelMessage.IExecuteReplyMsg['content']): void {
    if (content.status !== 'error') {
      return; // the comm_open with the hello has arrived (iopub comes before the reply)
    }
    const missing =
      content.ename === 'ModuleNotFoundError' &&
      content.evalue.includes("'jupyter_gpumem'");
    if (missing) {
      this._set('missing');
    } else {
      this._set('failed', `${content.ename}: ${content.evalue}`);
    }
  }

  private _onStatus(kernel: Kernel.IKernelConnection, status: string): void {
    if (status === 'restarting' || status === 'autorestarting') {
      this._restarted();
    } else if (status === 'idle' && this.state === 'restarting') {
      void this.start();
    } else if (status === 'dead') {
      this._set('dead');
    }
  }

  /** A status from another kernel process than the stream's: the kernel restarted where this page did not
   * restart it (another tab, the REST API, `jupyter` on the command line). The new process is up, since it
   * speaks: the stream starts again now, not after the stall watchdog's seconds. */
  private _onIopub(
    kernel: Kernel.IKernelConnection,
    msg: KernelMessage.IIOPubMessage
  ): void {
    if (
      msg.header.msg_type !== 'status' ||
      !this._sessionsTold ||
      this._kernelSession === null ||
      msg.header.session === this._kernelSession ||
      this.state === 'restarting'
    ) {
      return;
    }
    const state = (msg as KernelMessage.IStatusMsg).content.execution_state;
    if (state === 'starting' || state === 'busy' || state === 'idle') {
      this._restarted();
      this._restartedBy = msg.header.session;
      void this.start();
    }
  }

  /** The kernel is restarting or restarted: its stream and any request to start one are the old process's. */
  private _restarted(): void {
    this._comm = null;
    this._kernelSession = null;
    this._restartedBy = null;
    this._generation++;
    this._pending = false;
    this._set('restarting');
  }

  private _checkStall(): void {
    if (this.state !== 'streaming') {
      return;
    }
    const quiet = performance.now() - this._lastSampleAt;
    const limit = Math.max(
      STALL_MIN_MS,
      STALL_INTERVALS * this._settings.intervalS * 1000
    );
    if (quiet > limit) {
      this._set('stalled', String(Math.round(quiet / 1000)));
      void this.start();
    }
  }

  private _set(state: State, detail = ''): void {
    if (
      state === this.state &&
      detail === this.detail &&
      state !== 'streaming'
    ) {
      return;
    }
    this.state = state;
    this.detail = detail;
    this._changed.emit();
  }
}
