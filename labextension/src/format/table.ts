/** The process table's words: its columns, its rows, what it says instead of rows. */

import type { GpuProcess, SampleGpu } from '../wire/types';
import { cpuFigure, formatBytes, mibFigure } from './number';
import { printable } from './printable';
import type { Trans } from './trans';

/** The table's columns, in order, and their titles. */
export type Column = 'pid' | 'name' | 'user' | 'usedBytes' | 'cpuPercent';

export function columnTitle(column: Column, trans: Trans): string {
  switch (column) {
    case 'pid':
      return trans.__('PID');
    case 'name':
      return trans.__('Name');
    case 'user':
      return trans.__('User');
    case 'usedBytes':
      return 'MiB'; // nvidia-smi's unit, in every language
    case 'cpuPercent':
      return trans.__('CPU %');
  }
}

/** What a column's heading means, its tooltip. */
export function columnTooltip(column: Column, trans: Trans): string {
  switch (column) {
    case 'pid':
      return trans.__('Process ID, as nvidia-smi shows it');
    case 'name':
      return trans.__('The executable’s name (never its command line)');
    case 'user':
      return trans.__('The user the process runs as');
    case 'usedBytes':
      return trans.__(
        'GPU memory of the process in MiB, as nvidia-smi counts it'
      );
    case 'cpuPercent':
      return trans.__('CPU use of the process, % of one core');
  }
}

/** The text of one row of the process table, and its tooltips. */
export interface ICells {
  pid: string;
  name: string;
  user: string;
  usedBytes: string;
  cpuPercent: string;
  /** The name cell's tooltip: the whole name, with the PID and user (columns a narrow panel hides). */
  nameTitle: string;
  /** Why the CPU cell shows what it shows, when that needs saying. */
  cpuTitle: string;
  /** The badge on this kernel's row. */
  badge: string;
}

/** A row: MiB as nvidia-smi's process table counts them, CPU% to one decimal; N/A where the
 * driver or the host cannot tell, "…" where the host has not measured the CPU yet. */
export function processCells(p: GpuProcess, trans: Trans): ICells {
  const na = trans.__('N/A');
  const name = p.name === null ? na : printable(p.name);
  const user = p.user === null ? na : printable(p.user);
  const pending = p.cpuPercent === null && p.cpuPending;
  return {
    pid: String(p.pid),
    name,
    user,
    usedBytes: p.usedBytes === null ? na : mibFigure(p.usedBytes),
    cpuPercent:
      p.cpuPercent !== null ? cpuFigure(p.cpuPercent) : pending ? '…' : na,
    nameTitle: trans.__('%1 (PID %2, user %3)', name, p.pid, user),
    cpuTitle: pending
      ? trans.__('CPU not measured yet')
      : p.cpuPercent === null
        ? trans.__('CPU not available: the host cannot see this process')
        : '',
    badge: p.self ? trans.__('this kernel') : ''
  };
}

function processCount(count: number, trans: Trans): string {
  return trans._n('%1 process', '%1 processes', count);
}

/**
 * Other users' processes where privacy shows them as one figure: "other users: 3 processes, 9.2
 * GiB", per user under "names"; null when every process is listed (viewtext.others_note).
 */
export function othersNote(
  gpu: Pick<SampleGpu, 'others'>,
  trans: Trans
): string | null {
  const others = gpu.others;
  if (others === null || others.processes === 0) {
    return null;
  }
  const line = trans.__(
    'other users: %1, %2',
    processCount(others.processes, trans),
    formatBytes(others.usedBytes, trans)
  );
  if (!others.users || others.users.length === 0) {
    return line;
  }
  const each = others.users.map(u =>
    trans.__(
      '%1: %2, %3',
      u.user === null ? trans.__('user unknown') : printable(u.user),
      processCount(u.processes, trans),
      formatBytes(u.usedBytes, trans)
    )
  );
  // The brackets and the separator are words too: Japanese and Chinese write （…；…）.
  return trans._p(
    'other users, each',
    '%1 (%2)',
    line,
    each.join(trans._p('list separator', '; '))
  );
}

/** What the process table says instead of (or before) its rows; null: just the rows. */
export function processNote(
  gpu: Pick<SampleGpu, 'lost' | 'processesKnown'>,
  trans: Trans
): string | null {
  if (gpu.lost) {
    return trans.__('This GPU is lost: no figures until it is reset.');
  }
  if (!gpu.processesKnown) {
    return trans.__('The driver does not list the processes on this GPU.');
  }
  return null;
}
