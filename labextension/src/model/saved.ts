/**
 * The inline view's saved picture, read back from a notebook's widget state (inline.ts keeps it there): a
 * notebook anyone may have edited, so nothing in it is trusted as it is.
 */

import { FIELDS, ISeries } from './history';

/** A saved series read back from the notebook (which anyone may have edited): arrays of numbers of one
 * length (null: N/A), marks and cells as the chart reads them; else null. */
export function readSeries(value: unknown): ISeries | null {
  const series = value as Record<string, unknown> | undefined;
  if (!series || !Array.isArray(series.t)) {
    return null;
  }
  const n = series.t.length;
  const numbers = (v: unknown): number[] | null =>
    Array.isArray(v) &&
    v.length === n &&
    v.every(x => x === null || typeof x === 'number')
      ? v.map(x => (x === null ? NaN : (x as number)))
      : null;
  const out: Partial<ISeries> = { t: numbers(series.t) ?? undefined };
  for (const field of FIELDS) {
    out[field] = numbers(series[field]) ?? undefined;
  }
  // A picture saved before the driver's limit was drawn: none then.
  if (!('driverLimit' in series)) {
    out.driverLimit = Array.from({ length: n }, () => NaN);
  }
  const marks = Array.isArray(series.marks) ? series.marks : [];
  out.marks = marks
    .filter(m => typeof m?.t === 'number' && typeof m?.ownBytes === 'number')
    .map(m => ({
      t: m.t,
      ownBytes: m.ownBytes,
      reason: typeof m.reason === 'string' ? m.reason : null,
      reasonSaid: null
    }));
  out.cells = []; // the notebook's own code: not kept in the saved picture
  return [out.t, ...FIELDS.map(f => out[f])].every(Boolean)
    ? (out as ISeries)
    : null;
}
