/**
 * The table of every process on one GPU: sortable by any column (a click, or Enter or Space on its
 * heading), this kernel's row marked with a badge. Every cell is set as text. Rows are 24 px and
 * never wrap: a long name is cut with an ellipsis (its tooltip has all of it), and a narrow panel
 * drops whole columns, the user first, then the PID (container queries in base.css).
 */

import { element } from './dom';
import {
  Column,
  columnTitle,
  columnTooltip,
  ICells,
  othersNote,
  processCells,
  processNote
} from '../format/table';
import { Trans } from '../format/trans';
import type { GpuProcess, SampleGpu } from '../wire/types';

export type SortKey = Column;

export interface ISort {
  key: SortKey;
  descending: boolean;
}

export const COLUMNS: SortKey[] = [
  'pid',
  'name',
  'user',
  'usedBytes',
  'cpuPercent'
];

/** Right-aligned, with tabular digits. */
export const NUMERIC: SortKey[] = ['pid', 'usedBytes', 'cpuPercent'];

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
  processes: GpuProcess[],
  key: SortKey,
  descending: boolean
): GpuProcess[] {
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

interface IRow {
  tr: HTMLTableRowElement;
  cells: Record<SortKey, HTMLTableCellElement>;
  name: HTMLElement;
  badge: HTMLElement;
}

function setText(node: HTMLElement, value: string): void {
  if (node.textContent !== value) {
    node.textContent = value;
  }
}

function setTitle(node: HTMLElement, value: string): void {
  if (node.title !== value) {
    node.title = value;
  }
}

export class ProcessTable {
  private _sort = FIRST_SORT;
  private readonly _note: HTMLElement;
  private readonly _others: HTMLElement;
  private readonly _table: HTMLTableElement;
  private readonly _head: HTMLTableRowElement;
  private readonly _body: HTMLTableSectionElement;
  private readonly _rows: IRow[] = [];

  /** `sorted` is called when the user picks another order (time to render again). */
  constructor(
    parent: HTMLElement,
    private readonly _trans: Trans,
    sorted: () => void
  ) {
    const box = element('div', 'jp-GpuMem-tableBox', parent);
    this._note = element('div', 'jp-GpuMem-note', box);
    this._table = element('table', 'jp-GpuMem-processes', box);
    this._head = element('tr', '', element('thead', '', this._table));
    this._others = element('div', 'jp-GpuMem-others', box);
    for (const key of COLUMNS) {
      const th = element('th', this._cellClass(key), this._head);
      th.textContent = columnTitle(key, _trans);
      th.title = columnTooltip(key, _trans);
      th.dataset.key = key;
      th.tabIndex = 0;
      const sort = () => {
        this._sort = nextSort(this._sort, key);
        sorted();
      };
      th.addEventListener('click', sort);
      th.addEventListener('keydown', e => {
        if (e.key === 'Enter' || e.key === ' ') {
          e.preventDefault(); // Space would scroll the panel
          sort();
        }
      });
    }
    this._body = element('tbody', '', this._table);
  }

  /** The processes of this GPU; `stale` (the kernel is restarting): no row is marked as this
   * kernel's, since the PID marked is the old kernel's. */
  render(gpu: SampleGpu, stale: boolean): void {
    const { key, descending } = this._sort;
    for (const th of Array.from(this._head.children) as HTMLElement[]) {
      const sort =
        th.dataset.key !== key
          ? 'none'
          : descending
            ? 'descending'
            : 'ascending';
      if (th.getAttribute('aria-sort') !== sort) {
        th.setAttribute('aria-sort', sort);
      }
    }
    const note = processNote(gpu, this._trans);
    setText(this._note, note ?? '');
    this._note.hidden = note === null;
    const processes = gpu.lost
      ? [] // no figures, no rows
      : sortProcesses(gpu.processes ?? [], key, descending);
    this._table.hidden = gpu.lost || !gpu.processesKnown;
    const others = gpu.lost ? null : othersNote(gpu, this._trans);
    setText(this._others, others ?? '');
    this._others.hidden = others === null;
    while (this._rows.length > processes.length) {
      this._rows.pop()!.tr.remove();
    }
    processes.forEach((p, i) => {
      const row = this._rows[i] ?? this._addRow();
      // In a container the kernel may know its process only as matched (own_pid), not by its PID.
      const mine = p.self || (gpu.ownPid !== null && p.pid === gpu.ownPid);
      this._fill(
        row,
        processCells({ ...p, self: mine }, this._trans),
        mine && !stale
      );
    });
  }

  private _cellClass(key: SortKey): string {
    const numeric = NUMERIC.includes(key) ? ' jp-mod-numeric' : '';
    return `jp-GpuMem-col-${key}${numeric}`;
  }

  private _addRow(): IRow {
    const tr = element('tr', '', this._body);
    const cells = {} as Record<SortKey, HTMLTableCellElement>;
    for (const key of COLUMNS) {
      cells[key] = element('td', this._cellClass(key), tr);
    }
    const box = element('div', 'jp-GpuMem-nameBox', cells.name);
    const row = {
      tr,
      cells,
      name: element('span', 'jp-GpuMem-name', box),
      badge: element('span', 'jp-GpuMem-badge', box)
    };
    this._rows.push(row);
    return row;
  }

  private _fill(row: IRow, cells: ICells, self: boolean): void {
    for (const key of COLUMNS) {
      if (key !== 'name') {
        setText(row.cells[key], cells[key]);
      }
    }
    setText(row.name, cells.name);
    setTitle(row.cells.name, cells.nameTitle);
    setTitle(row.cells.cpuPercent, cells.cpuTitle);
    setText(row.badge, self ? cells.badge : '');
    row.badge.hidden = !self;
    if (row.tr.classList.contains('jp-GpuMem-self') !== self) {
      row.tr.classList.toggle('jp-GpuMem-self', self);
    }
  }
}
