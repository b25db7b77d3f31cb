/**
 * The table of every process on one GPU: sortable by any column (a click, or Enter or Space on
 * its heading), this kernel's row marked. Every cell is set as text.
 */

import { element } from './dom';
import { processCells, processNote } from './format';
import { IGpu, IProcess } from './protocol';

export type SortKey = 'pid' | 'name' | 'user' | 'usedBytes' | 'cpuPercent';

export interface ISort {
  key: SortKey;
  descending: boolean;
}

export const COLUMNS: [SortKey, string][] = [
  ['pid', 'PID'],
  ['name', 'Name'],
  ['user', 'User'],
  ['usedBytes', 'GPU mem'],
  ['cpuPercent', 'CPU']
];

/** Largest memory first, as nvidia-smi users look for it. */
export const FIRST_SORT: ISort = { key: 'usedBytes', descending: true };

/** The order after choosing a column: the same column flips; another starts largest first
 * (names: A to Z). */
export function nextSort(sort: ISort, key: SortKey): ISort {
  return {
    key,
    descending:
      key === sort.key ? !sort.descending : key !== 'name' && key !== 'user'
  };
}

/** Sorted copy; unknown values (N/A) always last. */
export function sortProcesses(
  processes: IProcess[],
  key: SortKey,
  descending: boolean
): IProcess[] {
  return [...processes].sort((a, b) => {
    const x = a[key];
    const y = b[key];
    if (x === null || y === null) {
      return x === y ? a.pid - b.pid : x === null ? 1 : -1;
    }
    const order =
      typeof x === 'string'
        ? x.localeCompare(String(y))
        : Number(x) - Number(y);
    return (descending ? -order : order) || a.pid - b.pid;
  });
}

export class ProcessTable {
  private _sort = FIRST_SORT;
  private readonly _head: HTMLTableRowElement;
  private readonly _rows: HTMLTableSectionElement;

  /** `sorted` is called when the user picks another order (time to render again). */
  constructor(parent: HTMLElement, sorted: () => void) {
    const table = element('table', 'jp-GpuMem-processes', parent);
    this._head = element('tr', '', element('thead', '', table));
    for (const [key, label] of COLUMNS) {
      const th = element('th', '', this._head);
      th.textContent = label;
      th.dataset.key = key;
      th.tabIndex = 0;
      const sort = () => {
        this._sort = nextSort(this._sort, key);
        sorted();
      };
      th.addEventListener('click', sort);
      th.addEventListener('keydown', e => {
        if (e.key === 'Enter' || e.key === ' ') {
          sort();
        }
      });
    }
    this._rows = element('tbody', '', table);
  }

  render(gpu: IGpu): void {
    const { key, descending } = this._sort;
    for (const th of Array.from(this._head.children) as HTMLElement[]) {
      th.setAttribute(
        'aria-sort',
        th.dataset.key !== key
          ? 'none'
          : descending
            ? 'descending'
            : 'ascending'
      );
    }
    const rows = this._rows;
    rows.textContent = '';
    const note = processNote(gpu);
    if (note !== null) {
      const cell = element('td', 'jp-GpuMem-note', element('tr', '', rows));
      cell.colSpan = COLUMNS.length;
      cell.textContent = note;
    }
    if (gpu.lost) {
      return; // no figures, no rows
    }
    for (const p of sortProcesses(gpu.processes ?? [], key, descending)) {
      const row = element('tr', p.self ? 'jp-GpuMem-self' : '', rows);
      for (const text of processCells(p)) {
        element('td', '', row).textContent = text;
      }
    }
  }
}
