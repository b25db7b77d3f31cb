/** The chart's words: its lines' names, its notes and tooltips. */

import type { IMark } from '../model/history';
import { clock, formatBytes } from './number';
import { printable } from './printable';
import type { Trans } from './trans';
import { said } from './words';

/** The chart's names for its lines, the legend's and the hover's. */
export interface IChartLabels {
  own: string;
  framework: string;
  others: string;
  budget: string;
  driverLimit: string;
  total: string;
}

export function chartLabels(
  framework: string | null,
  trans: Trans
): IChartLabels {
  return {
    // A line's name in a legend 250 px wide: its own, shorter words where a language has them.
    own: trans._p('chart', 'this kernel'),
    framework: framework
      ? trans._p('chart', '%1 in use', printable(framework))
      : trans._p('chart', 'framework in use'),
    others: trans._p('chart', 'others'),
    budget: trans._p('chart', 'budget'),
    // The hard limit the NVIDIA driver enforces on the kernel's cgroup.
    driverLimit: trans._p('chart', 'driver limit'),
    total: trans._p('chart', 'device total')
  };
}

/** The chart's name for assistive technology. */
export function chartName(trans: Trans): string {
  return trans.__("This kernel's GPU memory over time, against its budget");
}

/** What the chart shows before it has two samples to draw a line between. */
export function collecting(trans: Trans): string {
  return trans.__('Collecting…');
}

/** The chart's note where the device total lies above its scale: "device total 40.0 GiB ↑". */
export function totalAbove(total: number, trans: Trans): string {
  return trans.__('device total %1 ↑', formatBytes(total, trans));
}

/** The tooltip of an over-budget mark: the kernel's reason then, worded from its code. */
export function markTitle(
  {
    t,
    reason: sentence,
    reasonSaid
  }: Pick<IMark, 't' | 'reason' | 'reasonSaid'>,
  trans: Trans
): string {
  const reason = said(sentence, reasonSaid, trans);
  return reason
    ? trans.__('Over budget from %1: %2', clock(t, true), printable(reason))
    : trans.__('Over budget from %1', clock(t, true));
}

/** A cell's name on the chart: "[12] model.fit(x, y)", "[*] …" while it runs, "(error)" when it raised. */
export function cellTitle(
  cell: { count: number | null; line: string; error: boolean },
  trans: Trans
): string {
  const count = cell.count === null ? '*' : String(cell.count);
  const name = `[${count}] ${printable(cell.line)}`;
  return cell.error ? trans.__('%1 (error)', name) : name;
}

/** The chart's words and its hover's figure (a plotly template on the value in GiB, the unit as
 * nvidia-smi writes it in every language; a gap has no hover), the way back from a zoomed range to the
 * live view. */
export function chartWords(trans: Trans): {
  hoverFigure: string;
  backToLive: string;
  legend: string;
  download: string;
} {
  return {
    hoverFigure: '%{y:.2f} GiB',
    backToLive: trans.__('Back to live'),
    legend: trans.__('Lines on the chart: a click hides or shows one'),
    download: trans.__('Download the chart as a PNG')
  };
}

/** The chart's note while the user looks at a range of their own: "Paused on 14:03:10–14:05:40". */
export function pausedOn(from: number, to: number, trans: Trans): string {
  return trans.__('Paused on %1–%2', clock(from, true), clock(to, true));
}
