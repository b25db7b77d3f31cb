/** The status-bar item's words. */

import type { Sample, SampleGpu } from '../wire/types';
import { againstBudget, formatBytes, level } from './number';
import {
  BudgetGpu,
  breakdown,
  budgetNote,
  deviceLine,
  headline,
  overLine
} from './panel';
import { frameworkName } from './words';
import type { ILine, Trans } from './trans';

/**
 * The status-bar item: "GPU 3.1/4.0 GiB" (against the budget, coloured as the headline), "GPU 3.1
 * GiB" without one, "GPU lost" in the error colour.
 */
export function statusText(gpu: BudgetGpu, trans: Trans): ILine {
  if (gpu.lost) {
    return { text: trans.__('GPU lost'), level: 'error' };
  }
  if (gpu.hidden) {
    return { text: trans.__('GPU hidden'), level: 'ok' };
  }
  const { ownBytes, budgetBytes } = gpu;
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

/** The status-bar item's tooltip: the headline, the split, why it is over, the device, the server's
 * kernels (`server`, kernelsSummary's line) and what a click does. */
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
    deviceLine(gpu, trans),
    server,
    trans.__('Click to open the GPU Memory panel.')
  ]
    .filter(line => line)
    .join('\n');
}
