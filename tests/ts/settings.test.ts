// The Settings editor's words for GPU Memory: format/settings.ts words the schema's titles and descriptions
// (labextension/schema/plugin.json) with the domain's bundle, in the contexts jupyterlab_server asks them in, which
// are the contexts `jlpm i18n:extract` puts them in the catalogue with (jupyter_gpumem/i18n/extract.py).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { translateSchema } from '../../labextension/src/format/settings';
import { nullTrans } from '../../labextension/src/format/trans';
import type { Trans } from '../../labextension/src/format/trans';
import { bundle } from './fixtures';

const SCHEMA = JSON.parse(
  readFileSync(
    join(process.cwd(), 'labextension', 'schema', 'plugin.json'),
    'utf8'
  )
) as ISchema;

/** What of plugin.json the test reads. */
interface ISchema {
  title: string;
  description: string;
  'jupyter.lab.setting-icon': string;
  'jupyter.lab.setting-icon-label': string;
  properties: Record<string, Record<string, unknown>>;
}

test('the schema is worded in Japanese and Chinese by the bundle, and nothing but its words changes', () => {
  for (const [locale, title, interval, history] of [
    ['ja_JP', 'GPU メモリ', 'サンプリング間隔 (秒)', '履歴の期間 (分)'],
    ['zh_CN', 'GPU 显存', '采样间隔（秒）', '历史时间窗口（分钟）']
  ]) {
    const worded = translateSchema(SCHEMA, bundle(locale));
    assert.equal(worded.title, title, locale);
    assert.equal(worded['jupyter.lab.setting-icon-label'], title, locale);
    assert.equal(worded.properties.intervalSeconds.title, interval, locale);
    assert.equal(worded.properties.historyMinutes.title, history, locale);
    assert.notEqual(worded.description, SCHEMA.description, locale);
    assert.deepEqual(
      { ...worded.properties.intervalSeconds, title: 0, description: 0 },
      { ...SCHEMA.properties.intervalSeconds, title: 0, description: 0 }
    );
    assert.equal(worded['jupyter.lab.setting-icon'], 'jupyter-gpumem:gpu');
  }
  assert.deepEqual(translateSchema(SCHEMA, nullTrans), SCHEMA); // English: the schema as it is
});

test('it asks for exactly the strings, in the contexts, that the catalogue holds them in', () => {
  const asked: [string, string][] = [];
  const recording: Trans = {
    ...nullTrans,
    _p: (context: string, message: string) => {
      asked.push([context, message]);
      return message;
    }
  };
  translateSchema(SCHEMA, recording);
  const extracted = JSON.parse(
    execFileSync(
      'python',
      [
        '-c',
        'import json; from jupyter_gpumem.i18n import extract; ' +
          'print(json.dumps([[c, m] for _, m, c in extract.schemas()]))'
      ],
      { encoding: 'utf8' }
    )
  ) as [string, string][];
  assert.deepEqual(asked.sort(), extracted.sort());
  assert.ok(asked.length >= 7);
});
