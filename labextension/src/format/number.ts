/**
 * Every number the text shows, and the thresholds of its colours: bytes in binary units as nvidia-smi
 * counts them, shares of a budget, durations, clock times, axis labels. docs/numbers.md is the rule;
 * jupyter_gpumem/units.py implements the same one, and tests/render/test_number_format.py feeds both
 * thousands of generated readings and compares their words.
 *
 * Every figure rounds half up on its exact value: bytes and shares in BigInt arithmetic, never through a
 * binary double (a double's 2.25 GiB or 157/200 is exactly half way, and 20 × bytes passes 2^53 at 400 TiB).
 */

import type { Level, Trans } from './trans';

export const MiB = 1024 ** 2;
export const GiB = 1024 ** 3;

const MIB = BigInt(MiB);
const GIB = BigInt(GiB);

/** The warning colour from 9/10 of the budget (units.WARN_TENTHS). */
const WARN_TENTHS = 9;

/** numerator / denominator to the nearest whole number, a half up (units.nearest); denominator > 0. */
function nearest(numerator: bigint, denominator: bigint): bigint {
  const twice = 2n * numerator + denominator;
  const quotient = twice / (2n * denominator); // BigInt division truncates toward zero: floor it
  return twice % (2n * denominator) < 0n ? quotient - 1n : quotient;
}

/** A figure in whole bytes: Math.round is half up on the double's exact value (units.round_half_up). */
function whole(value: number): bigint {
  return BigInt(Math.round(value));
}

/** "2.3" from 23n: one decimal without a double in between. */
function tenthsText(tenths: bigint): string {
  const size = tenths < 0n ? -tenths : tenths;
  return `${tenths < 0n ? '-' : ''}${size / 10n}.${size % 10n}`;
}

/** "3.1 GiB" from 1 GiB up, "512 MiB" below (the unit chosen on the exact bytes); null: "N/A" (the
 * driver cannot tell), never 0. The unit is nvidia-smi's in every language: not a phrase to translate. */
export function formatBytes(value: number | null, trans: Trans): string {
  if (value === null) {
    return trans.__('N/A');
  }
  const size = whole(value);
  if (size >= GIB) {
    return `${tenthsText(nearest(10n * size, GIB))} GiB`;
  }
  return `${nearest(size, MIB)} MiB`;
}

/** Own and budget in the budget's unit: ["3.1", "4.0", "GiB"] or ["177", "512", "MiB"]. */
export function againstBudget(
  own: number,
  budget: number
): [string, string, string] {
  if (budget >= GiB) {
    return [
      tenthsText(nearest(10n * whole(own), GIB)),
      tenthsText(nearest(10n * whole(budget), GIB)),
      'GiB'
    ];
  }
  return [
    String(nearest(whole(own), MIB)),
    String(nearest(whole(budget), MIB)),
    'MiB'
  ];
}

/** "79%": own against budget, a share the headline shows (157 of 200 MiB is 78.5%: 79%); "∞"
 * against a zero budget. */
export function budgetShare(own: number, budget: number): string {
  const bytes = whole(budget);
  return bytes > 0n ? `${nearest(100n * whole(own), bytes)}%` : '∞';
}

/** The process table's memory column: whole MiB, as nvidia-smi's process table counts them. */
export function mibFigure(bytes: number): string {
  return String(nearest(whole(bytes), MIB));
}

/** The process table's CPU column: % of one core to one decimal; toFixed is half up on the double's
 * exact value (units.format_tenth). */
export function cpuFigure(percent: number): string {
  return percent.toFixed(1);
}

/** The colour against a budget, decided on the bytes, never on the rounded words: warning from 90%
 * of the budget, error above it (a budget of 0: above it at once). 10 × own and 9 × budget are exact
 * doubles for whole bytes up to 10^15, a petabyte. */
export function level(own: number, budget: number): Level {
  return own > budget || budget <= 0
    ? 'error'
    : 10 * own >= WARN_TENTHS * budget
      ? 'warn'
      : 'ok';
}

/** Whether the NVIDIA driver's hard limit binds: it lies below the GPU's memory, or that is not known
 * (null, NaN). A limit at or above the memory holds nothing back: the status bar and the chart leave it. */
export function limitBinds(
  limit: number | null,
  total: number | null
): limit is number {
  return (
    limit !== null &&
    !Number.isNaN(limit) &&
    !(total !== null && total <= limit)
  );
}

const pad = (n: number) => String(n).padStart(2, '0');

/** "14:03" or "14:03:27", the browser's local time (ticks and hover): the second `ms` falls in, its
 * fraction dropped (units.format_clock). */
export function clock(ms: number, seconds: boolean): string {
  const d = new Date(ms);
  const hm = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
  return seconds ? `${hm}:${pad(d.getSeconds())}` : hm;
}

/** A y-axis label: "2", "0.5" (the unit is written once, above the axis); two decimals at most, a
 * half up (toFixed), trailing zeros dropped. The chart's own, no Python twin: plotly draws the still
 * picture's axis. */
export function axisNumber(value: number): string {
  return Number.isInteger(value) ? String(value) : String(+value.toFixed(2));
}

/** "45 s", "30 min", "2 h 5 min": an idle time as people say it, whole seconds or minutes a half up;
 * the unit chosen on the rounded figure, so 59.5 s reads "1 min" (units.format_duration). The units
 * stay as written in every language (docs/glossary.md): figures a test compares across languages. */
export function duration(seconds: number): string {
  if (Math.round(seconds) < 60) {
    return `${Math.round(seconds)} s`;
  }
  const minutes = Math.round(seconds / 60);
  if (minutes < 120) {
    return `${minutes} min`;
  }
  const hours = Math.floor(minutes / 60);
  return minutes % 60 ? `${hours} h ${minutes % 60} min` : `${hours} h`;
}
