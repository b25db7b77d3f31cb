/**
 * Every number the text shows, and the thresholds of its colours: bytes in binary units as nvidia-smi
 * counts them, shares of a budget, durations, clock times, axis labels.
 */

import type { Level, Trans } from './trans';

export const MiB = 1024 ** 2;
export const GiB = 1024 ** 3;

/** "3.1 GiB", "512 MiB"; null: "N/A" (the driver cannot tell), never 0. */
export function formatBytes(value: number | null, trans: Trans): string {
  if (value === null) {
    return trans.__('N/A');
  }
  if (value >= GiB) {
    return trans.__('%1 GiB', (value / GiB).toFixed(1));
  }
  return trans.__('%1 MiB', Math.round(value / MiB));
}

/** At or above this share of the budget the headline turns to the warning colour. */
export const WARN_AT = 0.9;

/** Own and budget in the budget's unit: ["3.1", "4.0", "GiB"] or ["177", "512", "MiB"]. */
export function againstBudget(
  own: number,
  budget: number
): [string, string, string] {
  const unit = budget >= GiB ? GiB : MiB;
  const digits = unit === GiB ? 1 : 0;
  return [
    (own / unit).toFixed(digits),
    (budget / unit).toFixed(digits),
    unit === GiB ? 'GiB' : 'MiB'
  ];
}

/** "78%": own against budget, a share the headline shows; "∞" against a zero budget. */
export function budgetShare(own: number, budget: number, trans: Trans): string {
  return budget > 0 ? trans.__('%1%', Math.round((own / budget) * 100)) : '∞';
}

/** The process table's memory column: whole MiB, as nvidia-smi's process table counts them. */
export function mibFigure(bytes: number): string {
  return String(Math.round(bytes / MiB));
}

/** The process table's CPU column: % of one core to one decimal. */
export function cpuFigure(percent: number): string {
  return percent.toFixed(1);
}

/** Warning from 90% of the budget, error above it. */
export function level(own: number, budget: number): Level {
  const share = budget > 0 ? own / budget : Infinity;
  return share > 1 ? 'error' : share >= WARN_AT ? 'warn' : 'ok';
}

const pad = (n: number) => String(n).padStart(2, '0');

/** "14:03" or "14:03:27", the browser's local time (ticks and hover). */
export function clock(ms: number, seconds: boolean): string {
  const d = new Date(ms);
  const hm = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
  return seconds ? `${hm}:${pad(d.getSeconds())}` : hm;
}

/** A y-axis label: "2", "0.5" (the unit is written once, above the axis). */
export function axisNumber(value: number): string {
  return Number.isInteger(value) ? String(value) : String(+value.toFixed(2));
}

/** "45 s", "30 min", "2 h 5 min": an idle time as people say it (units.format_duration). */
export function duration(seconds: number, trans: Trans): string {
  if (seconds < 60) {
    return trans.__('%1 s', Math.round(seconds));
  }
  const minutes = Math.round(seconds / 60);
  if (minutes < 120) {
    return trans.__('%1 min', minutes);
  }
  const hours = Math.floor(minutes / 60);
  return minutes % 60
    ? trans.__('%1 h %2 min', hours, minutes % 60)
    : trans.__('%1 h', hours);
}
