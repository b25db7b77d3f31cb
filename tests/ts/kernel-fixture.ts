// A kernel connection as far as the sidebar's Channel uses it (labextension/src/model/channel.ts): its comm target,
// its status and iopub signals, `info` and `requestExecute`; the test drives the kernel's side by hand.
import { Channel } from '../../labextension/src/model/channel';

type Handler = (sender: unknown, value: unknown) => void;

/** A signal of @lumino/signaling as far as the Channel uses it: connect, disconnect, and emit for the test. */
class FakeSignal {
  private _slots: [Handler, unknown][] = [];

  constructor(private readonly _sender: unknown) {}

  connect(slot: Handler, thisArg?: unknown): boolean {
    this._slots.push([slot, thisArg]);
    return true;
  }

  disconnect(slot: Handler, thisArg?: unknown): boolean {
    this._slots = this._slots.filter(([s, t]) => s !== slot || t !== thisArg);
    return true;
  }

  emit(value: unknown): void {
    for (const [slot, thisArg] of this._slots) {
      slot.call(thisArg, this._sender, value);
    }
  }
}

export class FakeKernel {
  readonly statusChanged = new FakeSignal(this);
  readonly iopubMessage = new FakeSignal(this);
  readonly isDisposed = false;
  readonly info = Promise.resolve({ language_info: { name: 'python' } });
  /** The code of each request to execute, and how to answer each. */
  readonly executed: string[] = [];
  readonly replies: ((content: unknown) => void)[] = [];
  private _attach: ((comm: unknown, msg: unknown) => void) | null = null;

  registerCommTarget(
    _: string,
    callback: (comm: unknown, msg: unknown) => void
  ): void {
    this._attach = callback;
  }

  removeCommTarget(): void {
    this._attach = null;
  }

  requestExecute(content: { code: string }): {
    done: Promise<{ content: unknown }>;
  } {
    this.executed.push(content.code);
    return {
      done: new Promise(resolve =>
        this.replies.push(reply => resolve({ content: reply }))
      )
    };
  }

  /** The kernel process ``session`` opens the stream's comm with ``data`` (a hello). */
  open(comm: unknown, data: unknown, session = 'kernel-1'): void {
    this._attach!(comm, { header: { session }, content: { data } });
  }

  /** A status on iopub from the kernel process ``session``, as JupyterLab delivers it: the status first. */
  status(state: string, session = 'kernel-1'): void {
    this.statusChanged.emit(state);
    this.iopubMessage.emit({
      header: { msg_type: 'status', session },
      content: { execution_state: state }
    });
  }
}

/** A Channel on ``kernel``; `window` (its watchdog's timer) is Node's global for the test's length. */
export function channelOn(
  kernel: FakeKernel,
  language: string | null = null
): { channel: Channel; done: () => void } {
  const globals = globalThis as unknown as { window?: unknown };
  const hadWindow = 'window' in globals;
  globals.window ??= globalThis;
  const channel = new Channel(
    kernel as unknown as ConstructorParameters<typeof Channel>[0],
    { intervalS: 1, historyS: 900 },
    language
  );
  return {
    channel,
    done: () => {
      channel.dispose();
      if (!hadWindow) {
        delete globals.window;
      }
    }
  };
}
