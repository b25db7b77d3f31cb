/** The sidebar's words about one GPU (the inline view shows the same lines: viewLines). */

import { GPU_LINES, type GpuLine } from '../wire/lines';
import type { Notice, OverheadSource, Sample, SampleGpu } from '../wire/types';
import { againstBudget, budgetShare, formatBytes, level } from './number';
import { printable } from './printable';
import type { ILine, Trans } from './trans';
import { frameworkName, said, word } from './words';

/** The panel's title (the header shows it in capitals, as the core panels do). */
export function panelTitle(trans: Trans): string {
  return trans.__('GPU Memory');
}

/** The kernel line when no notebook is open. */
export function noNotebook(trans: Trans): string {
  return trans.__('Open a notebook to see its kernel’s GPU memory.');
}

/** "analysis.ipynb — Python 3 (ipykernel)"; a null kernel name: the notebook has no kernel. */
export function notebookLabel(
  path: string,
  kernel: string | null,
  trans: Trans
): string {
  return trans.__('%1 — %2', path, kernel ?? trans.__('no kernel'));
}

/** The banner over a stand-in NVML: its scenario file by name (the full path is the tooltip). */
export function simulatedBanner(scenario: string | null, trans: Trans): string {
  return scenario
    ? trans.__(
        'SIMULATED GPU — stand-in NVML (%1)',
        printable(scenario.split('/').pop() ?? scenario)
      )
    : '';
}

/** "GPU 0: NVIDIA A100-SXM4-40GB", an entry of the GPU choice; "GPU 1: lost". */
export function gpuOption(
  gpu: Pick<SampleGpu, 'index' | 'name' | 'lost'>,
  trans: Trans
): string {
  if (gpu.lost) {
    return trans.__('GPU %1: lost', gpu.index);
  }
  return trans.__(
    'GPU %1: %2',
    gpu.index,
    gpu.name === null ? trans.__('unknown') : printable(gpu.name)
  );
}

/** "GPU 0 · NVIDIA A100-SXM4-40GB · 16.1 GiB of 40.0 GiB used", the whole device. */
export function deviceLine(
  gpu: Pick<SampleGpu, 'index' | 'name' | 'lost' | 'usedBytes' | 'totalBytes'>,
  trans: Trans
): string {
  if (gpu.lost) {
    return gpu.name === null
      ? trans.__('GPU %1: lost (fell off the bus; it needs a reset)', gpu.index)
      : trans.__(
          'GPU %1 %2: lost (fell off the bus; it needs a reset)',
          gpu.index,
          printable(gpu.name)
        );
  }
  return trans.__(
    'GPU %1 · %2 · %3 of %4 used',
    gpu.index,
    gpu.name === null ? trans.__('unknown') : printable(gpu.name),
    formatBytes(gpu.usedBytes, trans),
    formatBytes(gpu.totalBytes, trans)
  );
}

export type BudgetGpu = Pick<
  SampleGpu,
  'index' | 'lost' | 'hidden' | 'ownBytes' | 'budgetBytes' | 'inForce'
>;

/**
 * "3.1 of 4.0 GiB budget (78%)": this kernel's memory against its budget on this GPU. Warning
 * colour from 90%, error colour above the budget. A budget the framework does not hold (yet) says
 * so. Without a budget, this kernel's memory (budgetNote says what the framework takes).
 */
export function headline(
  gpu: BudgetGpu,
  sample: Pick<Sample, 'policy'>,
  trans: Trans
): ILine {
  const { ownBytes, budgetBytes } = gpu;
  if (gpu.lost) {
    return { text: trans.__('GPU %1 is lost: N/A', gpu.index), level: 'error' };
  }
  if (gpu.hidden) {
    const policy = sample.policy ?? '';
    // No gpus= of its own: the GPUs it started with (a hub's spawner's) leave this one out.
    return {
      text: policy.includes('gpus=')
        ? trans.__(
            'Hidden from this kernel by its policy (%1)',
            printable(policy)
          )
        : trans.__(
            "Not this kernel's: it started without this GPU (CUDA_VISIBLE_DEVICES)"
          ),
      level: 'ok'
    };
  }
  if (budgetBytes === null) {
    return {
      text:
        ownBytes === null
          ? trans.__('N/A used by this kernel (the driver cannot tell)')
          : trans.__('%1 used by this kernel', formatBytes(ownBytes, trans)),
      level: 'ok'
    };
  }
  const unheld = gpu.inForce ? [] : [trans.__('not in force')];
  if (ownBytes === null) {
    const why = [
      ...unheld,
      trans.__("the driver cannot tell this kernel's memory")
    ];
    return {
      text: trans.__(
        'N/A of %1 budget (%2)',
        formatBytes(budgetBytes, trans),
        why.reduce((all, one) => trans.__('%1; %2', all, one))
      ),
      level: 'ok'
    };
  }
  const [own, budget, unit] = againstBudget(ownBytes, budgetBytes);
  const share = budgetShare(ownBytes, budgetBytes);
  return {
    text: trans.__(
      '%1 of %2 %3 budget (%4)',
      own,
      budget,
      unit,
      [share, ...unheld].reduce((all, one) => trans.__('%1, %2', all, one))
    ),
    level: level(ownBytes, budgetBytes)
  };
}

/** What the kernel says instead of figures ("No NVIDIA driver found …"), worded from its code. */
export function problemLine(
  sample: Pick<Sample, 'problem' | 'problemSaid'>,
  trans: Trans
): string | null {
  const problem = said(sample.problem, sample.problemSaid, trans);
  return problem && printable(problem);
}

/** The Jupyter server's notice to this kernel's user (an idle warning), worded from its code: what the
 * view, the toast and the status bar's tooltip show. */
export function noticeText(notice: Notice | null, trans: Trans): string | null {
  const text = notice && said(notice.text, notice.textSaid, trans);
  return text && printable(text);
}

/** Without a budget: "No budget set — TensorFlow takes nearly all the memory …" (the kernel's
 * phrase, `takes`). Null where there is a budget, or nothing to say (lost, hidden). */
export function budgetNote(
  gpu: Pick<SampleGpu, 'lost' | 'hidden' | 'budgetBytes'>,
  sample: Pick<Sample, 'takes' | 'takesSaid'>,
  trans: Trans
): string | null {
  if (gpu.lost || gpu.hidden || gpu.budgetBytes !== null) {
    return null;
  }
  return trans.__(
    'No budget set — %1',
    printable(
      said(sample.takes, sample.takesSaid, trans) ??
        trans.__('a framework takes its default amount when it starts')
    )
  );
}

/**
 * "Policy: fraction=0.5 — applies when "import tensorflow" completes": the policy and the
 * kernel's note on it, in the warning colour when the kernel says it is in force on no GPU.
 * Null without a policy.
 */
export function policyLine(
  sample: Pick<
    Sample,
    'policy' | 'policyState' | 'policyNote' | 'policyNoteSaid'
  >,
  trans: Trans
): ILine | null {
  if (sample.policy === null) {
    return null;
  }
  const note = said(sample.policyNote, sample.policyNoteSaid, trans);
  return {
    text: note
      ? trans.__('Policy: %1 — %2', printable(sample.policy), printable(note))
      : trans.__('Policy: %1', printable(sample.policy)),
    level: sample.policyState === 'not_in_force' ? 'warn' : 'ok'
  };
}

/**
 * How this kernel's figure is known, under the headline: "Exact: NVML lists this kernel's PID",
 * "Matched: PID 812345 appeared when PyTorch started …", "Estimated: …", "Unknown: …" — the
 * kernel's own words after its label. Null from a kernel that does not say, or on a lost GPU.
 */
export function ownLine(
  gpu: Pick<
    SampleGpu,
    'lost' | 'hidden' | 'ownSource' | 'ownReason' | 'ownReasonSaid'
  >,
  trans: Trans
): ILine | null {
  if (gpu.lost || gpu.hidden || gpu.ownSource === null) {
    return null;
  }
  const labels = {
    exact: trans.__('Exact'),
    matched: trans.__('Matched'),
    estimated: trans.__('Estimated'),
    unknown: trans.__('Unknown')
  };
  const label = labels[gpu.ownSource];
  const reason = said(gpu.ownReason, gpu.ownReasonSaid, trans);
  return {
    text: reason ? trans.__('%1: %2', label, printable(reason)) : label,
    level: gpu.ownSource === 'unknown' ? 'warn' : 'ok'
  };
}

export type ShapeGpu = Pick<
  SampleGpu,
  'slice' | 'driverLimit' | 'memoryShared'
>;

/**
 * What a shared GPU adds, each worded from its code (viewtext.py's shape_lines says the same): the MIG
 * slice this kernel runs on ("this kernel's MIG slice: 1g.5gb, 4864 MiB"), the GPU memory limit the NVIDIA
 * driver enforces on its cgroup ("hard: the NVIDIA driver's limit of 6144 MiB on cgroup /hub, 1536 MiB
 * counted against it"), memory shared with the CPU. None from a kernel that does not send them (older).
 * The cgroup and the profile are text from the GPU host: the lines go through printable().
 */
export function shapeLines(gpu: Partial<ShapeGpu>, trans: Trans): string[] {
  const lines: (string | null)[] = [];
  const slice = gpu.slice ?? null;
  if (slice !== null) {
    lines.push(
      word(
        {
          code: 'mig_slice',
          values: {
            profile: slice.profile || '?',
            total_bytes: slice.totalBytes
          }
        },
        trans
      )
    );
  }
  const limit = gpu.driverLimit ?? null;
  if (limit !== null) {
    lines.push(
      word(
        {
          code: 'driver_limit',
          values: {
            limit_bytes: limit.hardBytes,
            cgroup: limit.cgroup,
            used_bytes: limit.usedBytes
          }
        },
        trans
      )
    );
  }
  if (gpu.memoryShared) {
    lines.push(word({ code: 'memory_shared', values: {} }, trans));
  }
  return lines.filter((line): line is string => !!line).map(printable);
}

/**
 * What holds this kernel on the GPU: "Hard limit: MIG partition, 19.5 GiB", "Hard limit: MPS,
 * 6.0 GiB for this process", "Cooperative limit (%gpumem)"; what a shared GPU adds (shapeLines); then
 * the lines the schema declares (declaredLines), such as the memory the driver lists under no process.
 */
export function limitLines(
  gpu: Pick<
    SampleGpu,
    'lost' | 'limitKind' | 'budgetBytes' | GpuLine['field']
  > &
    Partial<ShapeGpu>,
  trans: Trans
): string[] {
  if (gpu.lost) {
    return [];
  }
  const lines: string[] = [];
  if (gpu.limitKind === 'mig') {
    lines.push(trans.__('Hard limit: a MIG partition'));
  } else if (gpu.limitKind === 'mps') {
    lines.push(trans.__('Hard limit: MPS, per process'));
  } else if (gpu.limitKind === 'cooperative' && gpu.budgetBytes !== null) {
    lines.push(
      trans.__('Cooperative limit (%gpumem): code that bypasses it is not held')
    );
  }
  lines.push(...shapeLines(gpu, trans), ...declaredLines(gpu, trans));
  return lines;
}

/** How a declared line's figure is worded, by the name its `x-line` gives (viewtext.py LINE_FORMATS): tsc
 * refuses a format the schema declares and this does not word. */
const LINE_FORMATS: Record<
  GpuLine['format'],
  (value: number, trans: Trans) => string
> = {
  gib_or_mib: formatBytes
};

/**
 * Each line the schema declares on a SampleGpu field (`x-line`, generated into wire/lines.ts) whose figure is
 * known, in the schema's order: its words in the language in use, the figure in place of %1 (viewtext.py
 * declared_lines). Its words are a message of the catalogue that `jlpm i18n:extract` takes from the schema.
 */
export function declaredLines(
  gpu: Pick<SampleGpu, GpuLine['field']>,
  trans: Trans
): string[] {
  return GPU_LINES.flatMap((line: GpuLine) => {
    const value: number | null = gpu[line.field];
    return value === null
      ? []
      : [trans.__(line.words, LINE_FORMATS[line.format](value, trans))];
  });
}

/** "Over budget: <the kernel's reason>", or null when it is not over (or the GPU is hidden). */
export function overLine(
  gpu: Pick<SampleGpu, 'hidden' | 'overReason' | 'overReasonSaid'>,
  trans: Trans
): string | null {
  const reason = said(gpu.overReason, gpu.overReasonSaid, trans);
  return reason && !gpu.hidden
    ? trans.__('Over budget: %1', printable(reason))
    : null;
}

/** The lines the sidebar and the inline view show of one GPU under the banner, in view.ts's order. */
export type ViewLine =
  | 'headline'
  | 'own'
  | 'note'
  | 'breakdown'
  | 'reason'
  | 'policy'
  | 'limits'
  | 'device';

/** Each line's text (and colour); null hides it. viewtext.py says the same for the inline view's
 * still picture: tests/fixtures/golden/ holds the words both must show. */
export function viewLines(
  sample: Sample,
  gpu: SampleGpu,
  trans: Trans
): Record<ViewLine, ILine | string | null> {
  const limits = [
    ...limitLines(gpu, trans),
    printable(said(sample.limitNote, sample.limitNoteSaid, trans) ?? '')
  ];
  return {
    headline: headline(gpu, sample, trans),
    own: ownLine(gpu, trans),
    note: budgetNote(gpu, sample, trans),
    breakdown: breakdown(gpu, frameworkName(sample, trans), trans),
    reason: overLine(gpu, trans),
    policy: policyLine(sample, trans),
    limits: limits.filter(line => line).join('\n') || null,
    device: deviceLine(gpu, trans)
  };
}

function sourceWords(
  source: NonNullable<OverheadSource>,
  trans: Trans
): string {
  switch (source) {
    case 'estimated':
      return trans.__('estimated');
    case 'remembered':
      return trans.__('measured by an earlier kernel');
    case 'measured':
      return trans.__('measured');
  }
}

/**
 * How the budget splits: "TensorFlow pool 3.6 GiB + 504 MiB outside it (measured) = 4.1 GiB" once
 * the framework reports its pool, else "TensorFlow limit 3.6 GiB + 400 MiB set aside for CUDA and
 * libraries (estimated)"; "Allocator …" when the framework is not known yet. `framework` as
 * frameworkName() words it. Null when there is no budget to split (or the GPU is hidden or lost).
 */
export function breakdown(
  gpu: SampleGpu,
  framework: string | null,
  trans: Trans
): string | null {
  if (
    gpu.hidden ||
    gpu.lost ||
    gpu.budgetBytes === null ||
    gpu.poolBytes === null ||
    gpu.overheadBytes === null ||
    gpu.overheadSource === null
  ) {
    return null;
  }
  const source = sourceWords(gpu.overheadSource, trans);
  // Null while several are installed and none is imported yet.
  const who = framework === null ? trans.__('Allocator') : printable(framework);
  if (gpu.poolKnown && gpu.ownBytes !== null) {
    const outside = Math.max(0, gpu.ownBytes - gpu.poolBytes);
    return trans.__(
      '%1 pool %2 + %3 outside it (%4) = %5',
      who,
      formatBytes(gpu.poolBytes, trans),
      formatBytes(outside, trans),
      source,
      formatBytes(gpu.ownBytes, trans)
    );
  }
  return trans.__(
    '%1 limit %2 + %3 set aside for CUDA and libraries (%4)',
    who,
    formatBytes(gpu.poolBytes, trans),
    formatBytes(gpu.overheadBytes, trans),
    source
  );
}

/** The panel's toolbar and the command. */
export function uiText(trans: Trans) {
  return {
    chooseGpu: trans.__('GPU to show'),
    settings: trans.__('GPU Memory settings'),
    reconnect: trans.__(
      'Reconnect to the kernel (restart the GPU memory stream)'
    ),
    command: trans.__('Show GPU Memory'),
    commandCaption: trans.__(
      "This kernel's GPU memory against its budget, live"
    ),
    category: trans.__('GPU Memory'),
    processes: trans.__('Processes on this GPU')
  };
}
