// The TypeScript half of tests/render/test_number_format.py: one process for the whole test run, which reads
// a batch of generated readings as one JSON line on stdin and answers one JSON line, the words format/ gives
// each. It serves only when started with --serve, so `node --test` loading it runs nothing.
import { createInterface } from 'node:readline';

import { stalledLine } from '../../labextension/src/format/channel';
import {
  budgetShare,
  clock,
  duration,
  formatBytes
} from '../../labextension/src/format/number';
import { viewLines } from '../../labextension/src/format/panel';
import { statusText } from '../../labextension/src/format/statusbar';
import {
  othersNote,
  processCells,
  processNote
} from '../../labextension/src/format/table';
import { parseSample } from '../../labextension/src/wire/protocol';
import { trans } from './fixtures';

type Process = Parameters<typeof processCells>[0];

/** One reading; its one key says which surface shows it (the Python side sends the same keys). */
interface ICase {
  bytes?: number | null;
  share?: [number, number];
  seconds?: number;
  t?: number;
  sample?: unknown;
}

function cells(p: Process) {
  const c = processCells(p, trans);
  return {
    pid: c.pid,
    name: c.name,
    user: c.user,
    used: c.usedBytes,
    cpu: c.cpuPercent
  };
}

function words(c: ICase): unknown {
  if (c.bytes !== undefined) {
    return formatBytes(c.bytes, trans);
  }
  if (c.share !== undefined) {
    return budgetShare(c.share[0], c.share[1]);
  }
  if (c.seconds !== undefined) {
    return duration(c.seconds);
  }
  if (c.t !== undefined) {
    return clock(c.t * 1000, true);
  }
  const sample = parseSample(c.sample);
  return {
    stalled: stalledLine(sample, trans),
    gpus: sample.gpus.map(gpu => ({
      ...viewLines(sample, gpu, trans),
      processNote: processNote(gpu, trans),
      othersNote: gpu.lost ? null : othersNote(gpu, trans),
      processes: (gpu.processes ?? []).map(cells),
      status: statusText(gpu, trans)
    }))
  };
}

if (process.argv.includes('--serve')) {
  const lines = createInterface({ input: process.stdin });
  lines.on('line', line => {
    const cases: ICase[] = JSON.parse(line);
    const answers = cases.map(c => {
      try {
        return words(c);
      } catch (error) {
        return { error: String(error) }; // the Python side shows it with the case
      }
    });
    process.stdout.write(JSON.stringify(answers) + '\n');
  });
}
