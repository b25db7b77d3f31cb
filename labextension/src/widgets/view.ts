/**
 * What the sidebar and the inline view (`%gpumem show`) both show of one kernel on one GPU: the
 * simulated-GPU banner, the server's notice, the headline against the budget and its details, the
 * time chart and the process table. One rendering for both, so they can never say different things.
 * Pure DOM: the panel (panel.ts) puts it in a SidePanel, the inline view (inline.ts) in a cell's
 * output. Everything from the GPU host is set as text, never as HTML.
 */

import { Chart } from './chart';
import { element, setLine } from './dom';
import { stalledLine } from '../format/channel';
import {
  gpuOption,
  noticeText,
  simulatedBanner,
  ViewLine,
  viewLines
} from '../format/panel';
import { printable } from '../format/printable';
import { Trans } from '../format/trans';
import { frameworkName } from '../format/words';
import { ISeries, gpuKey } from '../model/history';
import type { Sample, SampleGpu } from '../wire/types';
import { ProcessTable } from './table';

/** The GPU choice's options, one per GPU (value its key, text its label), replaced only when they
 * changed; then the one shown selected. */
export function chooseIn(
  select: HTMLSelectElement,
  gpus: SampleGpu[],
  shown: string,
  trans: Trans
): void {
  const keys = gpus.map(gpuKey);
  const labels = gpus.map(gpu => gpuOption(gpu, trans));
  if (
    select.options.length !== gpus.length ||
    keys.some(
      (k, i) =>
        select.options[i].value !== k || select.options[i].text !== labels[i]
    )
  ) {
    select.textContent = '';
    gpus.forEach((gpu, i) => {
      const option = element('option', '', select);
      option.value = keys[i];
      option.textContent = labels[i];
      option.dataset.lost = String(gpu.lost);
    });
  }
  if (select.value !== shown) {
    select.value = shown;
  }
}

export class MemoryView {
  /** Above the figures, for what concerns the kernel rather than a GPU (the panel's stream state). */
  readonly top: HTMLElement;
  /** The figures of one GPU: hidden until there are some. */
  readonly body: HTMLElement;
  private readonly _banner: HTMLElement;
  private readonly _notice: HTMLElement;
  private readonly _stalled: HTMLElement;
  private readonly _lines: Record<ViewLine, HTMLElement>;
  private readonly _chartBox: HTMLElement;
  private readonly _chart: Chart;
  private readonly _table: ProcessTable;
  private readonly _trans: Trans;

  /** `sorted`: the user picked another order in the table (time to render again). */
  constructor(root: HTMLElement, trans: Trans, sorted: () => void) {
    this._trans = trans;
    const div = (name: string, parent: HTMLElement) =>
      element('div', `jp-GpuMem-${name}`, parent);
    this._banner = div('banner', root);
    this._notice = div('notice', root);
    this._stalled = div('stalled', root);
    this._stalled.setAttribute('role', 'status');
    this.top = div('top', root);
    const body = (this.body = div('body', root));
    this._lines = {
      headline: div('headline', body),
      own: div('own', body),
      note: div('budgetNote', body),
      breakdown: div('breakdown', body),
      reason: div('reason', body),
      policy: div('policy', body),
      limits: div('limits', body),
      device: div('device', body)
    };
    this._chartBox = div('chartBox', body);
    this._chart = new Chart(
      div('chart', this._chartBox),
      this._chartBox,
      trans
    );
    this._table = new ProcessTable(body, trans, sorted);
  }

  /** The banner, the notice and a driver that has not answered: whatever the figures (none yet, a problem, a
   * kernel restarting). */
  renderTop(latest: Sample | null): void {
    setLine(
      this._banner,
      simulatedBanner(latest?.simulated ?? null, this._trans)
    );
    this._banner.title = printable(latest?.simulated ?? '');
    setLine(this._notice, noticeText(latest?.notice ?? null, this._trans));
    const stalled = latest ? stalledLine(latest, this._trans) : null;
    setLine(this._stalled, stalled);
    this.body.classList.toggle('jp-mod-stalled', stalled !== null);
  }

  /** One GPU's figures from the latest sample; `series` its history; `stale`: the figures on show are
   * an old kernel's (dimmed, no row marked as this kernel's). */
  render(
    latest: Sample,
    gpu: SampleGpu,
    series: ISeries | undefined,
    windowMs: number,
    stale: boolean
  ): void {
    const trans = this._trans;
    const n = this._lines;
    this._chartBox.hidden = gpu.lost; // no figures to draw: no chart, no legend
    // The chart first: plotly reads the layout before it draws, which is then not yet made stale by
    // the lines and the table (one layout for all of them after the chart, not two).
    if (!gpu.lost) {
      this._chart.render(series, windowMs, frameworkName(latest, trans));
    }
    this.body.classList.toggle('jp-mod-stale', stale);
    const lines = viewLines(latest, gpu, trans);
    for (const name of Object.keys(n) as ViewLine[]) {
      setLine(n[name], lines[name]);
    }
    this._table.render(gpu, stale);
  }

  dispose(): void {
    this._chart.dispose();
  }
}
