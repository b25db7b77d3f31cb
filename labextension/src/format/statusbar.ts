/** The status-bar item's words. */

import type { Sample, SampleGpu } from '../wire/types';
import { againstBudget, formatBytes, level, limitBinds } from './number';
import {
  BudgetGpu,
  breakdown,
  budgetNote,
  deviceLine,
  headline,
  overLine,
  shapeLines
} from './panel';
import { frameworkName } from './words';
import type { ILine, Trans } from './trans';

/**
 * The status-bar item: "GPU 3.1/4.0 GiB" (against the budget, coloured as the headline), "GPU 3.1
 * GiB" without one, "GPU lost" in the error colour. Without a budget, the NVIDIA driver's hard limit on
 * the kernel's cgroup where it binds (below the GPU's memory) stands in for one: "GPU 1.5/6.0 GiB", the
 * figure then what the driver counts against it where it tells (the cgroup's: the user's other kernels
 * under the same limit too), at least this kernel's own: an allocation fails when that count reaches it.
 */
export function statusText(
  gpu: BudgetGpu & Partial<Pick<SampleGpu, 'driverLimit' | 'totalBytes'>>,
  trans: Trans
): ILine {
  if (gpu.lost) {
    return { text: trans.__('GPU lost'), level: 'error' };
  }
  if (gpu.hidden) {
    return { text: trans.__('GPU hidden'), level: 'ok' };
  }
  const hard = gpu.driverLimit?.hardBytes ?? null;
  const driverBinds =
    gpu.budgetBytes === null && limitBinds(hard, gpu.totalBytes ?? null);
  const budgetBytes = driverBinds ? hard : gpu.budgetBytes;
  const counted = driverBinds ? (gpu.driverLimit?.usedBytes ?? null) : null;
  const ownBytes =
    counted === null
      ? gpu.ownBytes
      : Math.max(counted, gpu.ownBytes ?? counted);
  if (budgetBytes === null) {
    return {
      text: trans.__('GPU %1', formatBytes(ownBytes, trans)),
      level: 'ok'
    };
  }
  if (ownBytes === null) {
    return {
      text: trans.__('GPU N/A of %1', formatBytes(budgetBytes, trans)),
      level: 'ok'
    };
  }
  const [own, budget, unit] = againstBudget(ownBytes, budgetBytes);
  return {
    text: trans.__('GPU %1/%2 %3', own, budget, unit),
    level: level(ownBytes, budgetBytes)
  };
}

/** The status-bar item's tooltip: the headline, the split, why it is over, what a shared GPU adds (the
 * MIG slice and its profile, the driver's limit, shared memory), the device, the server's kernels (`server`, kernelsSummary's line) and what a click does. */
export function statusTooltip(
  gpu: SampleGpu,
  sample: Sample,
  trans: Trans,
  server: string | null = null
): string {
  return [
    headline(gpu, sample, trans).text,
    budgetNote(gpu, sample, trans),
    breakdown(gpu, frameworkName(sample, trans), trans),
    overLine(gpu, trans),
    ...(gpu.lost ? [] : shapeLines(gpu, trans)),
    deviceLine(gpu, trans),
    server,
    trans.__('Click to open the GPU Memory panel.')
  ]
    .filter(line => line)
    .join('\n');
}
