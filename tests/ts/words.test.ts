// Codes on the wire, words at the surface: the sidebar words every reason, problem and note from its code with
// the catalogue Python words them with (jupyter_gpumem/words/en.json), and shows the sentence beside the code
// only where it cannot (an older sender sends no code, a newer one a code this catalogue does not know).
process.env.TZ = 'UTC'; // tests/fixtures/words/every_code.json's clock; this file runs in a process of its own
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { chartLabels, markTitle } from '../../labextension/src/format/chart';
import { MiB } from '../../labextension/src/format/number';
import {
  breakdown,
  budgetNote,
  noticeText,
  overLine,
  ownLine,
  policyLine,
  problemLine,
  viewLines
} from '../../labextension/src/format/panel';
import { nullTrans } from '../../labextension/src/format/trans';
import { ENGLISH, said, word } from '../../labextension/src/format/words';
import { readServerBody } from '../../labextension/src/wire/api';
import { parseMessage } from '../../labextension/src/wire/protocol';
import { COMM_SCHEMA } from '../../labextension/src/wire/schema';
import type {
  Said,
  SampleMessage,
  Notice
} from '../../labextension/src/wire/types';
import { bracketed, bundle, fixture, trans } from './fixtures';

const ROOT = process.cwd();
const WORDS = join(ROOT, 'jupyter_gpumem', 'words');
const COPIES = join(ROOT, 'labextension', 'src', 'format', 'catalogue');

test("the sidebar's catalogues are the package's, byte for byte", () => {
  const languages = readdirSync(WORDS).filter(name => name.endsWith('.json'));
  assert.ok(languages.includes('en.json'));
  for (const name of languages) {
    assert.equal(
      readFileSync(join(COPIES, name), 'utf8'),
      readFileSync(join(WORDS, name), 'utf8'),
      `labextension/src/format/catalogue/${name} differs from jupyter_gpumem/words/${name}: run jlpm build:schema`
    );
  }
});

test('every code the schema knows has words in the catalogue', () => {
  // The codes as jlpm build:schema made them from the catalogue (schema.ts, checked fresh by schema.test.ts).
  const codes: readonly string[] = COMM_SCHEMA.$defs.code.enum;
  assert.ok(codes.length >= 50);
  assert.deepEqual(
    codes.filter(code => !(code in ENGLISH)),
    []
  );
});

/** Every `x_said` (`xSaid`, as the readers give it) with a code beside a sentence `x`, at any depth. */
function saids(
  node: unknown,
  suffix: '_said' | 'Said' = '_said',
  found: [Said, string][] = []
): [Said, string][] {
  if (Array.isArray(node)) {
    node.forEach(item => saids(item, suffix, found));
  } else if (typeof node === 'object' && node !== null) {
    const object = node as Record<string, unknown>;
    for (const [key, value] of Object.entries(object)) {
      const sentence = object[key.slice(0, -suffix.length)];
      if (
        key.endsWith(suffix) &&
        typeof sentence === 'string' &&
        typeof (value as Said | null)?.code === 'string'
      ) {
        found.push([value as Said, sentence]);
      }
      saids(value, suffix, found);
    }
  }
  return found;
}

function jsonFiles(dir: string): string[] {
  return readdirSync(dir).flatMap(name => {
    const path = join(dir, name);
    return statSync(path).isDirectory()
      ? jsonFiles(path)
      : name.endsWith('.json')
        ? [path]
        : [];
  });
}

test('every code in the fixtures words to the sentence Python put beside it', () => {
  const files = ['protocol', 'golden', 'api', 'report', 'releases'].flatMap(
    dir => jsonFiles(join(ROOT, 'tests', 'fixtures', dir))
  );
  const codes = new Set<string>();
  let compared = 0;
  for (const path of files) {
    for (const [code, sentence] of saids(
      JSON.parse(readFileSync(path, 'utf8'))
    )) {
      assert.equal(
        word(code, trans),
        sentence,
        `${path}: ${JSON.stringify(code)}`
      );
      for (const [, nested] of JSON.stringify(code).matchAll(
        /"code":"(\w+)"/g
      )) {
        codes.add(nested);
      }
      compared += 1;
    }
  }
  assert.ok(compared >= 100, `only ${compared} codes in the fixtures`);
  assert.ok(codes.size >= 15, `only ${codes.size} different codes`);
});

const jsonIn = (...dirs: string[]) => {
  const dir = join(ROOT, 'tests', 'fixtures', ...dirs);
  return readdirSync(dir)
    .filter(name => name.endsWith('.json') && name !== 'configure.json')
    .sort()
    .map(name => join(dir, name));
};
const read = (path: string): Record<string, unknown> =>
  JSON.parse(readFileSync(path, 'utf8'));

test('every code in the fixtures, read as the sidebar reads it, words to the sentence Python put beside it', () => {
  const messages: [string, unknown][] = [
    ...[...jsonIn('protocol'), ...jsonIn('releases', '0.2.0', 'protocol')].map(
      (path): [string, unknown] => [path, parseMessage(read(path))]
    ),
    ...jsonIn('golden').map((path): [string, unknown] => [
      path,
      parseMessage(read(path).sample)
    ]),
    ...[...jsonIn('api'), ...jsonIn('releases', '0.2.0', 'api')].map(
      (path): [string, unknown] => [path, readServerBody(read(path))]
    )
  ];
  let compared = 0;
  for (const [path, message] of messages) {
    assert.notEqual(message, null, `${path} is not read`);
    for (const [code, sentence] of saids(message, 'Said')) {
      assert.equal(
        word(code, trans),
        sentence,
        `${path}: ${JSON.stringify(code)}`
      );
      compared += 1;
    }
  }
  assert.ok(compared >= 90, `only ${compared} codes in the fixtures`);
});

test('every code of the catalogue, sent by a kernel or a server, words as Python words it', () => {
  const { cases } = read(
    join(ROOT, 'tests', 'fixtures', 'words', 'every_code.json')
  ) as { cases: { said: Said; words: string }[] };
  const sample = read(
    join(ROOT, 'tests', 'fixtures', 'protocol', 'sample.json')
  );
  const body = read(join(ROOT, 'tests', 'fixtures', 'api', 'body.json'));
  for (const { said: code, words } of cases) {
    const message = parseMessage({
      ...sample,
      sample: {
        ...(sample.sample as object),
        problem: words,
        problem_said: code
      }
    }) as SampleMessage;
    assert.equal(
      word(message.sample.problemSaid as Said, trans),
      words,
      `the comm: ${JSON.stringify(code)}`
    );
    const served = readServerBody({
      ...body,
      problem: words,
      problem_said: code
    });
    assert.equal(
      word(served?.problemSaid as Said, trans),
      words,
      `the server's API: ${JSON.stringify(code)}`
    );
  }
});

test('every code of the catalogue words as Python words it: ties, sizes, times of day, lists, data', () => {
  const { cases } = JSON.parse(
    readFileSync(
      join(ROOT, 'tests', 'fixtures', 'words', 'every_code.json'),
      'utf8'
    )
  ) as { cases: { said: Said; words: string }[] };
  const worded = new Set(cases.map(c => c.said.code));
  assert.deepEqual(
    Object.keys(ENGLISH).filter(
      code => !code.startsWith('join_') && !worded.has(code)
    ),
    [],
    'tests/fixtures/words/every_code.json is stale: run TZ=UTC python tests/fixtures/words/every_code.py'
  );
  for (const { said: code, words } of cases) {
    assert.equal(word(code, trans), words, JSON.stringify(code));
  }
});

test('numbers are worded by the surface: bytes in MiB, sizes, durations, times of day', () => {
  assert.equal(
    word(
      {
        code: 'over_outside_beyond_aside',
        values: {
          outside_bytes: 504 * MiB,
          framework: 'TensorFlow',
          more_bytes: 104 * MiB,
          aside_bytes: 400 * MiB
        }
      },
      trans
    ),
    "CUDA context + cuDNN/cuBLAS: 504 MiB outside TensorFlow's limit, 104 MiB more than the 400 MiB set aside"
  );
  const since = new Date(2025, 10, 21, 9, 5, 7).getTime() / 1000;
  assert.equal(
    word(
      {
        code: 'idle_warning_shutdown',
        values: {
          held_bytes: 2.25 * 1024 * MiB,
          idle_s: 1800,
          shutdown_at: since,
          now: since - 600,
          then_s: 7500
        }
      },
      trans
    ),
    'This kernel has held 2.3 GiB of GPU memory while idle for 30 min; it will be shut down at 09:05 (after 2 h 5 min idle) unless it runs something. Save your work; restart it when you need the GPU again.'
  );
  assert.equal(
    word(
      {
        code: 'not_answering_since',
        values: { since, error: 'timeout' }
      },
      trans
    ),
    'not answering since 09:05:07 (timeout)'
  );
  // Any other number as Python's {:g} writes a float: 6 significant digits, an exponent from 1e6 and below 1e-4.
  for (const [seconds, words] of [
    [2.5, '2.5'],
    [0.1 + 0.2, '0.3'],
    [1e-5, '1e-05'],
    [1234567.5, '1.23457e+06'],
    [30, '30']
  ] as const) {
    assert.equal(
      word({ code: 'no_answer_within', values: { seconds } }, trans),
      `no answer within ${words} s`
    );
  }
  assert.equal(
    word(
      {
        code: 'over_outside',
        values: { outside_bytes: null, framework: 'JAX' }
      },
      trans
    ),
    "CUDA context + cuDNN/cuBLAS: N/A outside JAX's limit"
  );
});

test('a list is joined as its placeholder says, each item worded in its place', () => {
  const module = (name: string) => ({
    code: 'import_statement',
    values: { module: name }
  });
  assert.equal(
    word(
      {
        code: 'policy_applies_on_import',
        values: { imports: [module('tensorflow'), module('torch')] }
      },
      trans
    ),
    'applies when "import tensorflow" or "import torch" completes'
  );
});

test('a template goes through the translation bundle before its values are put in', () => {
  assert.equal(
    word(
      {
        code: 'framework_takes',
        values: {
          framework: 'JAX',
          takes: { code: 'takes_jax', values: {} }
        }
      },
      bracketed
    ),
    // Each template with its code as its context (msgctxt), as Python's pgettext(code, template).
    '⟦framework_takes|JAX ⟦takes_jax|takes 75% of the memory of every GPU it can see when it starts (and keeps it)⟧⟧'
  );
});

test('a value of hostile text stays text: no markup, no placeholder, no replacement pattern is read in it', () => {
  for (const error of [
    '<img src=x onerror=alert(1)>',
    '{error_type} {error:size}',
    "$& $' $1 $<name>",
    '&lt;b&gt;'
  ]) {
    assert.equal(
      word({ code: 'nvml_not_listing', values: { error } }, trans),
      `NVML could not list the GPUs (${error}). The kernel works as usual.`
    );
  }
  // What would forge a line or read backwards is escaped where the sentence is shown, as the sentence was.
  const line = policyLine(
    {
      policy: 'fraction=0.5',
      policyState: 'in_force',
      policyNote: 'x',
      policyNoteSaid: {
        code: 'policy_in_force',
        values: { frameworks: 'Tensor\u202eFlow\n' }
      }
    },
    trans
  );
  assert.equal(
    line?.text,
    'Policy: fraction=0.5 — in force in Tensor\\u202eFlow\\n'
  );
});

test("the kernel's and the server's words are escaped on every surface: the mark's hover, the notice, the problem", () => {
  const hostile = 'Py\u202eTorch\n[forged line]';
  const escaped = 'Py\\u202eTorch\\n[forged line]';
  const wire = fixture('sample.json') as { sample: Record<string, unknown> };
  const message = parseMessage({
    ...wire,
    sample: {
      ...wire.sample,
      problem: 'an older sentence',
      problem_said: { code: 'nvml_not_listing', values: { error: hostile } },
      notice: {
        kind: 'idle_warning',
        text: `a newer server's notice about ${hostile}`,
        text_said: { code: 'a_newer_code', values: {} },
        t: 0,
        shutdown_at: null
      }
    }
  }) as SampleMessage;
  const { sample } = message;
  assert.equal(
    problemLine(sample, trans),
    `NVML could not list the GPUs (${escaped}). The kernel works as usual.`
  );
  assert.equal(
    noticeText(sample.notice, trans),
    `a newer server's notice about ${escaped}`
  );
  const mark = markTitle(
    {
      t: 0,
      reason: 'x',
      reasonSaid: {
        code: 'over_outside',
        values: { outside_bytes: 300 * MiB, framework: hostile }
      }
    },
    trans
  );
  assert.ok(
    mark.endsWith(
      `: CUDA context + cuDNN/cuBLAS: 300 MiB outside ${escaped}'s limit`
    ),
    mark
  );
  assert.equal(chartLabels(hostile, trans).framework, `${escaped} in use`);
  const split = String(breakdown(sample.gpus[1], hostile, trans));
  assert.ok(split.startsWith(`${escaped} `), split);
});

test('a code this catalogue cannot word falls back to the sentence beside it', () => {
  const cases: Said[] = [
    { code: 'a_newer_code', values: {} },
    {
      code: 'over_not_in_force',
      values: { why: { code: 'a_newer_reason', values: {} } }
    },
    { code: 'nvml_not_listing', values: {} }, // a value the template names is missing
    { code: 'policy_in_force', values: { frameworks: ['JAX', 'PyTorch'] } }, // a list, no join named
    { code: 'toString', values: {} } // not the catalogue's own, though every object has one
  ];
  for (const code of cases) {
    assert.equal(word(code, trans), null, JSON.stringify(code));
    assert.equal(said('the sentence', code, trans), 'the sentence');
  }
  assert.equal(said('an older sender', null, trans), 'an older sender');
  assert.equal(said(null, null, trans), null);
});

const OWN: Said = { code: 'own_not_listed', values: {} };
const OWN_WORDS =
  "NVML lists the processes of this kernel's PID namespace, and not this kernel";

test('each surface shows the code worded, not the sentence beside it', () => {
  const stale = 'a sentence the code replaces';
  const over: Said = {
    code: 'over_outside',
    values: { outside_bytes: 300 * MiB, framework: 'PyTorch' }
  };
  const overWords =
    "CUDA context + cuDNN/cuBLAS: 300 MiB outside PyTorch's limit";
  assert.equal(
    ownLine(
      {
        lost: false,
        hidden: false,
        ownSource: 'unknown',
        ownReason: stale,
        ownReasonSaid: OWN
      },
      trans
    )?.text,
    `Unknown: ${OWN_WORDS}`
  );
  assert.equal(
    overLine({ hidden: false, overReason: stale, overReasonSaid: over }, trans),
    `Over budget: ${overWords}`
  );
  assert.equal(
    markTitle({ t: 0, reason: stale, reasonSaid: over }, trans).endsWith(
      `: ${overWords}`
    ),
    true
  );
  assert.equal(
    budgetNote(
      { lost: false, hidden: false, budgetBytes: null },
      {
        takes: stale,
        takesSaid: {
          code: 'framework_takes',
          values: {
            framework: 'PyTorch',
            takes: { code: 'takes_pytorch', values: {} }
          }
        }
      },
      trans
    ),
    'No budget set — PyTorch takes what its tensors need on every GPU it uses, without a cap, and keeps what they free cached'
  );
  assert.equal(
    problemLine(
      { problem: stale, problemSaid: { code: 'no_driver', values: {} } },
      trans
    ),
    ENGLISH.no_driver
  );
  const notice: Notice = {
    kind: 'idle_warning',
    text: stale,
    textSaid: {
      code: 'idle_shutdown',
      values: { held_bytes: 512 * MiB, idle_s: 45 }
    },
    t: 0,
    shutdownAt: null
  };
  assert.equal(
    noticeText(notice, trans),
    'This kernel is being shut down: it has held 512 MiB of GPU memory while idle for 45 s. Restart it when you need the GPU again.'
  );
  assert.equal(noticeText(null, trans), null);
});

test("the limit's note is worded from its code, and an older kernel's sentence is shown as it came", () => {
  const message = parseMessage(fixture('sample.json')) as SampleMessage;
  const sample = {
    ...message.sample,
    limitNote: 'an older kernel',
    limitNoteSaid: null
  };
  const gpu = sample.gpus[0];
  assert.match(String(viewLines(sample, gpu, trans).limits), /an older kernel/);
  const worded = {
    ...sample,
    limitNoteSaid: {
      code: 'mps_limit_without_server',
      values: { variable: 'CUDA_MPS_PINNED_DEVICE_MEM_LIMIT', pipe: '/tmp/x' }
    }
  };
  assert.match(
    String(viewLines(worded, gpu, trans).limits),
    /CUDA_MPS_PINNED_DEVICE_MEM_LIMIT is set, but no MPS server is in use here \(no control pipe in \/tmp\/x\), so it limits nothing\.$/
  );
});

test('several frameworks arrive as a code of their own: worded in the language, and an older sidebar shows the English sentence', () => {
  const inForce: Said = {
    code: 'policy_in_force',
    values: {
      frameworks: {
        code: 'frameworks_and',
        values: { names: ['TensorFlow', 'PyTorch'], last: 'JAX' }
      }
    }
  };
  const sentence = 'in force in TensorFlow, PyTorch and JAX'; // what a kernel of this release sends beside it
  assert.equal(said(sentence, inForce, nullTrans), sentence);
  assert.equal(
    said(sentence, inForce, bundle('ja_JP')),
    'TensorFlow、PyTorch と JAX で適用中'
  );
  assert.equal(
    said(sentence, inForce, bundle('zh_CN')),
    '已在 TensorFlow、PyTorch 和 JAX 中生效'
  );
  // A sidebar of 0.2.0 has neither the code nor the join: it cannot word the value, so it shows the sentence.
  const older = Object.fromEntries(
    Object.entries(ENGLISH).filter(
      ([code]) =>
        !['frameworks_and', 'frameworks_or', 'join_list'].includes(code)
    )
  );
  assert.equal(word(inForce, nullTrans, older), null);
  assert.equal(said(sentence, inForce, bundle('ja_JP'), older), sentence);
});
