/**
 * The figures the chart draws, per GPU, over a bounded window; and their decimation for display.
 * Numbers only (NaN where a figure was N/A), so an hour at 1 s stays a few hundred kilobytes.
 */

import type { Cell, Said, Sample, SampleGpu } from '../wire/types';
import chart from './chart.json';

export const FIELDS = [
  'own',
  'framework',
  'others',
  'total',
  'budget',
  'driverLimit'
] as const;
export type Field = (typeof FIELDS)[number];

/** The start of an over-budget episode, marked on the chart with the kernel's reason then. */
export interface IMark {
  t: number;
  ownBytes: number;
  reason: string | null;
  /** The reason's code, worded where the mark is shown. */
  reasonSaid: Said | null;
}

/**
 * An over-budget episode starts when this kernel's memory goes above its budget and ends when it
 * falls below this share of it (or the budget goes): the kernel's own warnings use the same marks
 * (alerts.py), so a figure hovering at the budget makes one mark, not one a second. chart.json is
 * jupyter_gpumem/render/chart.json, copied where tsc and the bundlers take it from (tests/ts/constants.test.ts).
 */
export const OVER_ENDS_BELOW: number = chart.over_ends_below;

export interface ISeries {
  /** Milliseconds since the epoch. */
  t: number[];
  own: number[];
  framework: number[];
  /** Everything else on the device as nvidia-smi counts it: used minus this kernel. */
  others: number[];
  total: number[];
  budget: number[];
  /** The hard limit the NVIDIA driver enforces on the kernel's cgroup (NaN: none, or not known). */
  driverLimit: number[];
  /** Where over-budget episodes started, oldest first: one per episode. */
  marks: IMark[];
  /** The notebook's cells in the window, oldest first (the kernel's, so every GPU's series has them). */
  cells: Cell[];
}

function emptySeries(): ISeries {
  return {
    t: [],
    own: [],
    framework: [],
    others: [],
    total: [],
    budget: [],
    driverLimit: [],
    marks: [],
    cells: []
  };
}

const value = (v: number | null): number => (v === null ? NaN : v);

export function gpuKey(gpu: { uuid: string | null; index: number }): string {
  return gpu.uuid ?? `index ${gpu.index}`;
}

/**
 * The GPU to show (its key): the one already shown while it is still there; else, at first look,
 * the GPU this kernel has a budget on, else the one it uses, else the first. Null: no GPU.
 */
export function chooseGpu(
  gpus: Pick<SampleGpu, 'uuid' | 'index' | 'budgetBytes' | 'ownBytes'>[],
  shown: string | null
): string | null {
  if (shown !== null && gpus.some(g => gpuKey(g) === shown)) {
    return shown;
  }
  const pick =
    gpus.find(g => g.budgetBytes !== null) ??
    gpus.find(g => (g.ownBytes ?? 0) > 0) ??
    gpus[0];
  return pick === undefined ? null : gpuKey(pick);
}

export class History {
  /** The newest sample, with its process tables. */
  latest: Sample | null = null;
  private _series = new Map<string, ISeries>();
  private _over = new Map<string, boolean>(); // per GPU: an over-budget episode is going on

  constructor(private _capacity: number) {}

  get capacity(): number {
    return this._capacity;
  }

  set capacity(capacity: number) {
    this._capacity = Math.max(1, Math.floor(capacity));
    for (const series of this._series.values()) {
      this._trim(series, 0);
    }
  }

  series(key: string): ISeries | undefined {
    return this._series.get(key);
  }

  reset(samples: Sample[]): void {
    this._series.clear();
    this._over.clear();
    this.latest = null;
    for (const sample of samples) {
      this.push(sample);
    }
  }

  push(sample: Sample): void {
    this.latest = sample;
    const t = sample.t * 1000;
    for (const gpu of sample.gpus) {
      const key = gpuKey(gpu);
      let series = this._series.get(key);
      if (!series) {
        series = emptySeries();
        this._series.set(key, series);
      }
      // The last figures a stalled driver gave are not this moment's: a gap in the lines, not a flat stretch.
      const stalled = (sample.stalledSince ?? null) !== null;
      const own = stalled ? null : gpu.ownBytes;
      const used = stalled ? null : gpu.usedBytes;
      const others = used === null ? null : Math.max(0, used - (own ?? 0));
      series.t.push(t);
      series.own.push(value(own));
      series.framework.push(value(stalled ? null : gpu.frameworkBytes));
      series.others.push(value(others));
      series.total.push(value(gpu.totalBytes));
      series.budget.push(value(gpu.budgetBytes));
      series.driverLimit.push(value(gpu.driverLimit?.hardBytes ?? null));
      series.cells = withCells(series.cells, sample.cells);
      // Decided from the figures, not from the reason's text, whose MiB change every sample.
      const budget = gpu.budgetBytes;
      const over = this._over.get(key) ?? false;
      if (!over && own !== null && budget !== null && own > budget) {
        series.marks.push({
          t,
          ownBytes: own,
          reason: gpu.overReason,
          reasonSaid: gpu.overReasonSaid
        });
        this._over.set(key, true);
      } else if (
        over &&
        (budget === null || (own !== null && own < OVER_ENDS_BELOW * budget))
      ) {
        this._over.set(key, false); // N/A for a moment does not end it
      }
      this._trim(series, Math.ceil(this._capacity / 8));
    }
  }

  /** Drop the oldest points beyond capacity; `slack` lets a series overrun a little so the
   * arrays are cut in one go every so often rather than shifted on every sample. */
  private _trim(series: ISeries, slack: number): void {
    const excess = series.t.length - this._capacity;
    if (excess > slack) {
      series.t.splice(0, excess);
      for (const field of FIELDS) {
        series[field].splice(0, excess);
      }
      const first = series.t[0];
      series.marks = series.marks.filter(m => m.t >= first);
      series.cells = series.cells.filter(
        c => (c.endT ?? Infinity) * 1000 >= first
      );
    }
  }
}

/** `cells` with a sample's cells in: a cell seen running is replaced by its later word (ended). */
function withCells(cells: Cell[], news: Cell[]): Cell[] {
  if (news.length === 0) {
    return cells;
  }
  const starts = new Set(news.map(c => c.startT));
  return [...cells.filter(c => !starts.has(c.startT)), ...news];
}

/**
 * What a chart `bucketMs` to a pixel column can show of the series from `from` to `to`: each bucket's
 * lowest and highest value (a memory peak must never be smoothed away, nor a dip between two peaks),
 * as two points at the times of its first and last sample, in the order they came; a bucket of one
 * sample, one point. Buckets are aligned to multiples of `bucketMs`, so a new sample changes only the
 * last bucket's points. A bucket whose values are all NaN stays NaN, so gaps stay gaps. Over-budget
 * marks and cells are kept as they are.
 */
export function decimate(
  series: ISeries,
  bucketMs: number,
  from = -Infinity,
  to = Infinity
): ISeries {
  const out = emptySeries();
  out.marks = series.marks; // few already
  out.cells = series.cells;
  const t = series.t;
  const n = t.length;
  let i = 0;
  while (i < n && t[i] < from) {
    i++;
  }
  while (i < n && t[i] <= to) {
    const key = Math.floor(t[i] / bucketMs);
    let end = i + 1;
    while (end < n && t[end] <= to && Math.floor(t[end] / bucketMs) === key) {
      end++;
    }
    const last = end - 1;
    if (last === i) {
      out.t.push(t[i]);
      for (const field of FIELDS) {
        out[field].push(series[field][i]);
      }
    } else {
      out.t.push(t[i], t[last]);
      for (const field of FIELDS) {
        const [first, second] = extremes(series[field], i, end);
        out[field].push(first, second);
      }
    }
    i = end;
  }
  return out;
}

/** The lowest and highest of `values[from..to)`, in the order they came; NaN (N/A) left out unless
 * all are. */
function extremes(
  values: number[],
  from: number,
  to: number
): [number, number] {
  let lo = NaN;
  let hi = NaN;
  let loAt = -1;
  let hiAt = -1;
  for (let i = from; i < to; i++) {
    const v = values[i];
    if (Number.isNaN(v)) {
      continue;
    }
    if (!(v >= lo)) {
      lo = v; // NaN compares false: the first figure is the lowest so far
      loAt = i;
    }
    if (!(v <= hi)) {
      hi = v;
      hiAt = i;
    }
  }
  return loAt <= hiAt ? [lo, hi] : [hi, lo];
}
