/** What the panel says of the stream from the kernel and of the driver when they are not answering. */

import type { State } from '../model/channel';
import type { Sample } from '../wire/types';
import { PROTOCOL } from '../wire/protocol';
import { PACKAGE_VERSION } from '../wire/schema';
import type { Trans } from './trans';
import { word } from './words';

/** What the panel says about the stream when it is not streaming; `detail` as the Channel keeps
 * it (the kernel's language, the error, the seconds without figures). Empty: nothing to say. */
export function channelLine(
  state: State,
  detail: string,
  trans: Trans,
  refused: { protocol: number; packageVersion: string | null } | null = null
): string {
  switch (state) {
    case 'idle':
    case 'streaming':
      return '';
    case 'connecting':
      return trans.__('Connecting to the kernel…');
    case 'restarting':
      return trans.__('Kernel restarted — reconnecting…');
    case 'stalled':
      return trans.__(
        'No figures from the kernel for %1 — reconnecting…',
        `${detail} s`
      );
    case 'missing':
      return trans.__(
        "jupyter-gpumem is not installed in this kernel's environment. Install it there, then restart the kernel:"
      );
    case 'unsupported':
      return trans.__(
        'GPU memory is not supported for this kernel (%1); it needs a Python kernel.',
        detail
      );
    case 'unreachable':
      return trans.__('Could not reach the kernel: %1', detail);
    case 'failed':
      return trans.__(
        'The kernel could not start the GPU memory stream: %1',
        detail
      );
    case 'dead':
      return trans.__('The kernel has died; restart it to see its GPU memory.');
    case 'incompatible':
      return refused ? incompatibleLine(refused, trans) : '';
  }
}

/**
 * A kernel of another major release (protocol.ts's VersionError): "This kernel's jupyter-gpumem 1.0.0 speaks
 * protocol 2; this JupyterLab extension (jupyter-gpumem 0.2.0) reads protocol 1: upgrade jupyter-gpumem where
 * JupyterLab runs, then reload this page." The older side is the one to upgrade.
 */
export function incompatibleLine(
  refused: { protocol: number; packageVersion: string | null },
  trans: Trans
): string {
  const theirs =
    refused.packageVersion === null ? '' : ` ${refused.packageVersion}`;
  return refused.protocol > PROTOCOL
    ? trans.__(
        "This kernel's jupyter-gpumem%1 speaks protocol %2; this JupyterLab extension (jupyter-gpumem %3) reads protocol %4: upgrade jupyter-gpumem where JupyterLab runs, then reload this page.",
        theirs,
        refused.protocol,
        PACKAGE_VERSION,
        PROTOCOL
      )
    : trans.__(
        "This kernel's jupyter-gpumem%1 speaks protocol %2; this JupyterLab extension (jupyter-gpumem %3) reads protocol %4: upgrade jupyter-gpumem in this kernel's environment (%pip install -U jupyter-gpumem), then restart the kernel.",
        theirs,
        refused.protocol,
        PACKAGE_VERSION,
        PROTOCOL
      );
}

/**
 * "The NVIDIA driver has not answered since 10:42:03 (for 12 s); figures are from then." (gpu/reader.py's
 * sentence, the same words): the sample's figures are the last the driver gave. Null while it answers.
 */
export function stalledLine(
  sample: Pick<Sample, 't' | 'stalledSince' | 'gpus'>,
  trans: Trans
): string | null {
  const since = sample.stalledSince;
  if (since === null || since === undefined) {
    return null;
  }
  // The catalogue's words, as the kernel's status and the still picture say it (gpu/reader.stalled_sentence).
  const then =
    sample.gpus.length > 0
      ? 'stalled_figures_from_then'
      : 'stalled_no_figures_yet';
  return word(
    {
      code: 'driver_stalled',
      values: {
        since,
        for_s: Math.max(0, sample.t - since),
        then: { code: then, values: {} }
      }
    },
    trans
  );
}
