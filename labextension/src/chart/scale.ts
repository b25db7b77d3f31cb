/**
 * The y scale and its ticks, in bytes: up to the larger of this kernel's peak and its budget, not the
 * device's total (figure.ts makes that a line when it fits and a note at the top when it does not).
 */

import chart from '../model/chart.json';
import { GiB, MiB, limitBinds } from '../format/number';
import { Field, ISeries } from '../model/history';

/** The largest figure, NaN (N/A) left out; 0 when none is known. */
export function peak(values: number[]): number {
  let top = 0;
  for (const v of values) {
    top = v > top ? v : top; // NaN is never greater
  }
  return top;
}

export interface IScale {
  /** The top of the y axis, in bytes. */
  top: number;
  /** Tick values in bytes, from 0. */
  ticks: number[];
  /** The unit the tick labels are in. */
  unit: 'GiB' | 'MiB';
}

/**
 * The NVIDIA driver's hard limit where it binds (below that moment's device total, or the total not
 * known), NaN elsewhere: what the chart draws and, without a budget, scales to.
 */
export function bindingLimit(
  s: Pick<ISeries, 'driverLimit' | 'total'>
): number[] {
  return s.driverLimit.map((limit, i) => {
    const total = s.total[i];
    return limitBinds(limit, Number.isNaN(total) ? null : total) ? limit : NaN;
  });
}

/**
 * The y scale: up to the larger of this kernel's peak (as nvidia-smi counts it, or its framework's)
 * and its budget, with a little headroom, to a round tick; without a budget in the window, the
 * NVIDIA driver's hard limit where it binds stands in for one (the status bar shows this kernel
 * against it). Only when this kernel holds nothing and has no budget do the other processes set it;
 * never the device total.
 */
export function yScale(s: Pick<ISeries, Field>, maxTicks = 5): IScale {
  const budget = peak(s.budget);
  let top = Math.max(
    peak(s.own),
    peak(s.framework),
    budget > 0 ? budget : peak(bindingLimit(s))
  );
  if (top <= 0) {
    top = peak(s.others);
  }
  top = Math.max(top * chart.headroom, chart.min_top_bytes);
  const unit = top >= GiB ? 'GiB' : 'MiB';
  const size = unit === 'GiB' ? GiB : MiB;
  const raw = top / size / Math.max(1, maxTicks);
  const power = 10 ** Math.floor(Math.log10(raw));
  const step =
    [1, 2, 2.5, 5, 10].map(m => m * power).find(m => m >= raw) ?? 10 * power;
  const count = Math.ceil(top / size / step - 1e-9);
  const ticks = Array.from({ length: count + 1 }, (_, i) => i * step * size);
  return { top: ticks[ticks.length - 1], ticks, unit };
}
