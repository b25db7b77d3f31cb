// The chart's tests' series and arguments: a kernel's history a sample a second, in a zone with daylight saving.
import type {
  IColours,
  IFigureArgs
} from '../../labextension/src/chart/figure';
import type { ISeries } from '../../labextension/src/model/history';

// Set before any date is made (node reads TZ when it changes).
process.env.TZ = 'Europe/Berlin';

export const MiB = 1024 ** 2;
export const GiB = 1024 ** 3;
export const T0 = new Date(2025, 10, 21, 10, 0, 0).getTime();
export const seconds = (n: number, from = 0): number[] =>
  Array.from({ length: n }, (_, i) => T0 + (from + i) * 1000);

export const COLOURS: IColours = {
  own: '#1976d2',
  framework: '#f57c00',
  others: '#9e9e9e',
  budget: '#d32f2f',
  driverLimit: '#f57c00',
  total: '#616161',
  text: '#616161',
  grid: '#e0e0e0',
  background: '#ffffff',
  font: 'sans-serif'
};

/** `n` samples a second: this kernel as `own(i)` bytes, a 4 GiB budget, 1 GiB of others, 40 GiB total. */
export function history(n: number, own: (i: number) => number): ISeries {
  const t = seconds(n);
  return {
    t,
    own: t.map((_, i) => own(i)),
    framework: t.map(() => NaN),
    others: t.map(() => GiB),
    total: t.map(() => 40 * GiB),
    budget: t.map(() => 4 * GiB),
    driverLimit: t.map(() => NaN),
    marks: [],
    cells: []
  };
}

/** One more sample a second after the newest: the same figures, this kernel's `mib` MiB up. */
export function grow(s: ISeries, mib: number): void {
  s.t.push(s.t[s.t.length - 1] + 1000);
  for (const f of ['own', 'framework', 'others', 'total', 'budget'] as const) {
    s[f].push(s[f][s[f].length - 1]);
  }
  s.own[s.own.length - 1] += mib * MiB;
}

/** The sidebar's chart at 250 x 180 px over an hour's window, live. */
export const args = (
  series: ISeries,
  more: Partial<IFigureArgs> = {}
): IFigureArgs => ({
  series,
  windowMs: 3_600_000,
  framework: null,
  width: 250,
  height: 180,
  colours: COLOURS,
  range: null,
  ...more
});
