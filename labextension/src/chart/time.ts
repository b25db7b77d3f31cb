/**
 * The time axis: epoch milliseconds to the axis's local time and back, a zoomed range read back from
 * plotly, and the axis's ticks, which are ours so that plotly measures no label.
 */

import { MARGIN } from './area';

/**
 * Plotly's date axis shows epoch milliseconds as UTC. Each time is moved by its own offset from UTC,
 * so hour ticks stay on the hour after a daylight-saving change inside the window.
 */
export function toLocal(t: number): number {
  return t - new Date(t).getTimezoneOffset() * 60_000;
}

/** Back from the axis's time to epoch milliseconds (the offset at that moment). */
export function fromLocal(local: number): number {
  const guess = local + new Date(local).getTimezoneOffset() * 60_000;
  return local + new Date(guess).getTimezoneOffset() * 60_000;
}

/** A range end as plotly reports it after a zoom or pan ("2026-11-24 09:30:12.3456", or a number)
 * to the axis's milliseconds; NaN for anything else. */
export function axisTime(value: unknown): number {
  if (typeof value === 'number') {
    return value;
  }
  const m =
    typeof value === 'string' &&
    /^(\d{4})-(\d\d)-(\d\d)(?:[ T](\d\d):(\d\d)(?::(\d\d(?:\.\d+)?))?)?$/.exec(
      value
    );
  if (!m) {
    return NaN;
  }
  const [, y, mo, d, h = '0', mi = '0', s = '0'] = m;
  return Date.UTC(+y, +mo - 1, +d, +h, +mi) + Math.round(Number(s) * 1000);
}

/** The time axis's tick steps (ms) and the label each calls for. */
const TIME_STEPS: [number, string][] = [
  ...[1, 2, 5, 10, 15, 30].map((s): [number, string] => [s * 1000, '%H:%M:%S']),
  ...[1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720].map(
    (m): [number, string] => [m * 60_000, '%H:%M']
  ),
  ...[1, 2, 7].map((d): [number, string] => [d * 86_400_000, '%b %d'])
];

/** A tick label's width at the axis's 10 px font, a little more than it takes. */
const labelWidth = (format: string): number =>
  format === '%b %d' ? 36 : format.length * 6;

export interface ITimeTicks {
  /** In the axis's time (toLocal): on the round second, minute, hour or local midnight. */
  values: number[];
  format: string;
}

/**
 * The time axis's ticks from `lo` to `hi` (axis time): at least 60 px apart, and none whose label
 * would stick out of the chart's sides while `x0`–`x1` is shown, which plotly would cut in half. Ours,
 * not plotly's, so plotly never measures a label to hide it (a forced layout each: 3–5 ms an update
 * in a notebook's page).
 */
export function timeTicks(
  lo: number,
  hi: number,
  x0: number,
  x1: number,
  plotW: number
): ITimeTicks {
  const span = Math.max(1, x1 - x0);
  const most = Math.max(2, Math.floor(plotW / 60));
  const [step, format] =
    TIME_STEPS.find(([ms]) => span / ms <= most) ??
    TIME_STEPS[TIME_STEPS.length - 1];
  const half = labelWidth(format) / 2;
  const px = (v: number) => ((v - x0) / span) * plotW;
  const values: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi; v += step) {
    const inView = v >= x0 && v <= x1;
    if (
      !inView ||
      (px(v) - half >= -MARGIN.l && px(v) + half <= plotW + MARGIN.r)
    ) {
      values.push(v);
    }
  }
  return { values, format };
}
