/**
 * The x range and its buckets: x spans the data (at least MIN_SPAN_MS, at most the history window). Live,
 * the range steps by whole buckets of about a pixel column, so a sample that moves no pixel leaves the
 * figure's picture as it was (chart.ts then draws nothing), and the traces settle a step at a time.
 */

import chart from '../model/chart.json';

/** The shortest x range: a 20-second ramp gets a sixth of the width, not a few pixels. */
export const MIN_SPAN_MS: number = chart.min_span_s * 1000;

/**
 * The x range: from the first sample to the last, at least MIN_SPAN_MS from the first (the chart
 * fills from the left while it collects), at most the window (then it slides).
 */
export function xRange(t: number[], windowMs: number): [number, number] {
  const first = t[0];
  const last = t[t.length - 1];
  if (last - first > windowMs) {
    return [last - windowMs, last];
  }
  return [first, Math.max(last, first + Math.min(MIN_SPAN_MS, windowMs))];
}

/** One point per pixel column at most, from a short ladder of bucket sizes so that the buckets
 * (aligned to multiples of their size) stay put while the x range grows. */
export function bucketMs(spanMs: number, plotWidth: number): number {
  const wanted = spanMs / Math.max(1, plotWidth);
  for (const s of chart.buckets_s) {
    if (s * 1000 >= wanted) {
      return s * 1000;
    }
  }
  return Math.ceil(wanted / 3_600_000) * 3_600_000;
}

/** How long the live traces stay as they are, at the most: about a minute, in whole buckets. */
export const SETTLE_MS = 60_000;
/** ...but never more than this many buckets (pixel columns) of blank at the right of the plot. */
const SETTLE_BUCKETS = 6;
/** The traces settle only where a bucket holds at least this many samples (an hour at the stream's
 * 1 s pace, at any width up to ~1000 px); shorter spans, where nearly every sample is a pixel column
 * of its own, draw whole. */
const SETTLE_SAMPLES = 3;

/** The live step: settleMs where the traces settle (splits), else the bucket. */
function liveStep(t: number[], spanMs: number, plotW: number): number {
  const bucket = bucketMs(spanMs, plotW);
  return splits(t, bucket) ? settleMs(bucket) : bucket;
}

/** Whether the newest samples come at least SETTLE_SAMPLES to a bucket. */
export function splits(t: number[], bucket: number): boolean {
  const n = t.length;
  return n >= 2 && bucket >= SETTLE_SAMPLES * (t[n - 1] - t[n - 2]);
}

/**
 * The step in which the live range moves and the traces take the buckets completed meanwhile (the
 * newest part is drawn by chart.ts over plotly's plot): whole buckets, about SETTLE_MS, at most
 * SETTLE_BUCKETS of them; so at the stream's 1 s pace plotly replots its traces once in 30 to 60 samples.
 */
export function settleMs(bucket: number): number {
  const buckets = Math.ceil(SETTLE_MS / bucket);
  return bucket * Math.max(1, Math.min(SETTLE_BUCKETS, buckets));
}

/**
 * The live x range: xRange's, its end moved up to the next step boundary (`settleMs` of the
 * buckets of `bucketMs` for that span where the traces settle, else a bucket), so that the range, and every bucket's place on the plot,
 * moves once per settle step, not with every sample: between, a sample moves no point by more than
 * its own bucket's width. The shortest range (MIN_SPAN_MS from the first sample, while the data is
 * shorter) stays as it is.
 */
export function liveRange(
  t: number[],
  windowMs: number,
  plotWidth: number
): [number, number] {
  const [x0, x1] = xRange(t, windowMs);
  const last = t[t.length - 1];
  if (x1 > last) {
    return [x0, x1];
  }
  const step = liveStep(t, x1 - x0, plotWidth);
  const end = Math.ceil(last / step) * step;
  return end - x0 > windowMs ? [end - windowMs, end] : [x0, end];
}

/** The settle boundary a step before the live range's end (liveRange's, after the newest sample
 * `last` or on it), so that the traces take new buckets when the range moves, in the same replot. */
export function settledBefore(
  last: number,
  spanMs: number,
  plotW: number
): number {
  const step = settleMs(bucketMs(spanMs, plotW));
  return Math.ceil(last / step) * step - step;
}
