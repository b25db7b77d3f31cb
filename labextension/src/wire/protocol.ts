/**
 * The comm protocol between a kernel and the sidebar, version 1 (docs/protocol.md).
 *
 * Kernel to sidebar: `hello` (the comm_open data: settings and the history to replay), then one
 * `sample` per interval. Sidebar to kernel: `configure`. The reference is the schema,
 * jupyter_gpumem/wire/schemas/comm.v1.json: a message is checked against it (schema.ts, validate.ts)
 * and anything it does not admit is dropped with one console warning. Its fields arrive in camelCase (a
 * Said's values keep the catalogue's placeholder names: camelize.ts), with the schema's defaults for those
 * an older kernel leaves out (the types of types.ts, generated so); the fields of a newer kernel that this
 * release does not know are left alone. A kernel of another protocol (another major release) is refused
 * with one sentence naming both releases and what to upgrade (`VersionError`, docs/protocol.md,
 * "Versioning and releases mixing"). Pure: no JupyterLab imports, so the unit tests run it in Node
 * against tests/fixtures/protocol/ and tests/fixtures/releases/.
 */

import { camelize } from './camelize';
import { COMM_SCHEMA, PACKAGE_VERSION } from './schema';
import type { Configure, Hello, Sample, SampleMessage } from './types';
import { problem } from './validate';

export const PROTOCOL = 1;
export const TARGET = 'jupyter_gpumem';

/** The sampling interval and history window until the settings say otherwise. The settings
 * schema (labextension/schema/plugin.json) repeats them as its defaults; a unit test keeps the
 * two equal. */
export const DEFAULT_INTERVAL_S = 1;
export const DEFAULT_HISTORY_S = 900;

/** What a kernel sends the sidebar. */
export type KernelMessage = Hello | SampleMessage;

export class ProtocolError extends Error {}

/** A package version as a kernel says it, before it goes into a sentence: PEP 440's characters, bounded. */
const RELEASE = /^[0-9A-Za-z][0-9A-Za-z.+!_-]{0,39}$/;

/**
 * A message of another protocol than this extension's: its kernel runs a release of another major
 * version; format/channel.ts's incompatibleLine is the one sentence the sidebar shows (both releases, what to
 * upgrade). `packageVersion`: the kernel's release where the message says it (a hello does; a sample does not).
 */
export class VersionError extends ProtocolError {
  constructor(
    readonly protocol: number,
    readonly packageVersion: string | null
  ) {
    // For the console; the sidebar words it (format/channel.ts's incompatibleLine).
    super(
      `message.protocol is ${protocol} (jupyter-gpumem ${packageVersion ?? 'release not named'}); ` +
        `this extension (jupyter-gpumem ${PACKAGE_VERSION}) reads protocol ${PROTOCOL}`
    );
  }
}

/** The VersionError for a message of another protocol (an integer that is not ours); null otherwise. */
function otherProtocol(data: unknown): VersionError | null {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    return null;
  }
  const { protocol, package_version: release } = data as Record<
    string,
    unknown
  >;
  if (!Number.isInteger(protocol) || protocol === PROTOCOL) {
    return null;
  }
  const named =
    typeof release === 'string' && RELEASE.test(release) ? release : null;
  return new VersionError(protocol as number, named);
}

/** Throws ProtocolError (what is wrong) unless `value` is a sample the schema admits. */
export function parseSample(value: unknown, where = 'sample'): Sample {
  const found = problem(COMM_SCHEMA, value, where, COMM_SCHEMA.$defs.sample);
  if (found !== null) {
    throw new ProtocolError(found);
  }
  return camelize(value) as Sample;
}

/** Throws ProtocolError (what is wrong) for anything but a protocol 1 message from a kernel: a
 * VersionError for a message of another protocol. */
export function parseMessage(data: unknown): KernelMessage {
  const other = otherProtocol(data);
  if (other !== null) {
    throw other;
  }
  const found = problem(COMM_SCHEMA, data, 'message');
  if (found !== null) {
    throw new ProtocolError(found);
  }
  const message = camelize(data) as KernelMessage | { type: 'configure' };
  if (message.type === 'configure') {
    throw new ProtocolError(
      'message.type is configure, which goes to a kernel'
    );
  }
  return message;
}

/** parseMessage, or null after one console warning: a bad message never breaks the sidebar. A
 * message of another protocol is also handed to `refused`, whose sentence the sidebar shows. */
export function receive(
  data: unknown,
  refused?: (error: VersionError) => void
): KernelMessage | null {
  try {
    return parseMessage(data);
  } catch (error) {
    if (error instanceof ProtocolError) {
      console.warn(
        `jupyter-gpumem: dropped a message from the kernel: ${error.message}`
      );
      if (error instanceof VersionError) {
        refused?.(error);
      }
      return null;
    }
    throw error;
  }
}

export interface ISettings {
  intervalS: number;
  historyS: number;
}

export const DEFAULT_SETTINGS: ISettings = {
  intervalS: DEFAULT_INTERVAL_S,
  historyS: DEFAULT_HISTORY_S
};

/**
 * The settings from the registry's composite values (schema/plugin.json: `intervalSeconds`,
 * `historyMinutes`); a value that is missing or not a number gets its default.
 */
export function readSettings(
  composite: Readonly<Record<string, unknown>> | null
): ISettings {
  const get = (key: string, fallback: number) => {
    const value = composite?.[key];
    return typeof value === 'number' ? value : fallback;
  };
  return {
    intervalS: get('intervalSeconds', DEFAULT_INTERVAL_S),
    historyS: get('historyMinutes', DEFAULT_HISTORY_S / 60) * 60
  };
}

/** The settings, and the interface's language (a BCP 47 tag, JupyterLab's `translator.languageCode`)
 * where there is one: the kernel words `%gpumem`'s output in it. A kernel before 0.2.0 reads past it. */
export function configureMessage(
  settings: ISettings,
  language: string | null = null
): Configure {
  const message: Configure = {
    protocol: PROTOCOL,
    type: 'configure',
    interval_s: settings.intervalS,
    history_s: settings.historyS
  };
  if (language !== null) {
    message.language = language;
  }
  return message;
}

/** The code the sidebar runs (silently) to start streaming from a kernel. */
export function connectCode(settings: ISettings): string {
  return (
    "__import__('jupyter_gpumem')._connect_sidebar(" +
    `interval_s=${settings.intervalS}, history_s=${settings.historyS})`
  );
}
