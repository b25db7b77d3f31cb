// The inline view's words where the page has no JupyterLab translator (VS Code, Colab, Notebook 7 without the
// labextension): the kernel sends the catalogue JupyterLab would serve, and the view words from it as JupyterLab's
// own Gettext does with it; anything that is not such a catalogue words in English, without an error.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import {
  catalogueTrans,
  nullTrans,
  pluralRule
} from '../../labextension/src/format/trans';
import { bundle, bundleOf, catalogue, languages } from './fixtures';

for (const locale of languages()) {
  test(`every message of the ${locale} catalogue is worded as JupyterLab's Gettext words it`, () => {
    const data = catalogue(locale);
    const ours = catalogueTrans(data)!;
    const lab = bundle(locale);
    assert.ok(ours);
    let translated = 0;
    const args = ['A', 'B', 'C', 'D', 'E'];
    for (const [key, value] of Object.entries(data)) {
      if (key === '') {
        continue;
      }
      const [context, message] = key.includes('\u0004')
        ? key.split('\u0004')
        : [null, key];
      const plural = `${message} (plural)`;
      const word = (trans: typeof ours, n: number) =>
        context !== null
          ? trans._p(context, message, ...args)
          : (value as unknown[]).length > 1
            ? trans._n(message, plural, n, ...args)
            : trans.__(message, ...args);
      for (const n of [1, 3]) {
        assert.equal(word(ours, n), word(lab, n), key);
      }
      translated += Number(word(ours, 3) !== word(nullTrans, 3));
    }
    assert.ok(
      translated > 100,
      'the catalogue is translated: the test compares words, not English with English'
    );
    // What the catalogue lacks is English, as in JupyterLab.
    assert.equal(ours.__('not a message %1', 7), 'not a message 7');
    assert.equal(ours._n('%1 cat', '%1 cats', 2), '2 cats');
    assert.equal(ours._p('no such context', 'Stop'), 'Stop');
  });
}

test("the inline view's own words come out of the Japanese catalogue", () => {
  const ja = catalogueTrans(catalogue('ja_JP'))!;
  const lab = bundle('ja_JP');
  assert.equal(ja.__('Stop'), lab.__('Stop'));
  assert.notEqual(ja.__('Stop'), 'Stop');
  const processes = ja._n('%1 process', '%1 processes', 3);
  assert.equal(processes, lab._n('%1 process', '%1 processes', 3));
  assert.ok(processes.includes('3') && processes !== '3 processes');
});

test('anything that is not a catalogue of this domain is no bundle, and a bad entry is English', () => {
  const header = {
    domain: 'jupyter_gpumem',
    language: 'ja-JP',
    plural_forms: 'nplurals=1; plural=0;'
  };
  for (const bad of [
    null,
    undefined,
    'ja_JP',
    42,
    [],
    ['Stop'],
    {},
    { Stop: ['停止'] }, // no header
    { '': 'jupyter_gpumem', Stop: ['停止'] },
    { '': { ...header, domain: 'jupyterlab' }, Stop: ['停止'] }
  ]) {
    assert.equal(catalogueTrans(bad), null, JSON.stringify(bad));
  }
  const odd = catalogueTrans({
    '': header,
    Stop: '停止', // not a list
    'Collecting…': [''], // empty: untranslated
    'GPU to show': [7],
    '%1 process': ['%1 個のプロセス'], // a plural with one form: Gettext ignores it
    Live: ['ライブ', 'extra'] // a message with two forms: Gettext ignores it
  })!;
  for (const message of ['Stop', 'Collecting…', 'GPU to show', 'Live']) {
    assert.equal(odd.__(message), nullTrans.__(message));
  }
  assert.equal(odd._n('%1 process', '%1 processes', 3), '3 processes');
  assert.equal(odd.__('constructor'), 'constructor'); // an Object property is no translation
  // A rule of three forms, read from the header as any other: Polish.
  const polish = catalogueTrans({
    '': {
      ...header,
      plural_forms:
        'nplurals=3; plural=(n==1 ? 0 : n%10>=2 && n%10<=4 && (n%100<10 || n%100>=20) ? 1 : 2);'
    },
    Stop: ['Zatrzymaj'],
    '%1 process': ['%1 proces', '%1 procesy', '%1 procesów']
  })!;
  assert.equal(polish.__('Stop'), 'Zatrzymaj');
  assert.deepEqual(
    [1, 2, 5, 22, 25].map(n => polish._n('%1 process', '%1 processes', n)),
    ['1 proces', '2 procesy', '5 procesów', '22 procesy', '25 procesów']
  );
});

// Every plural rule gettext writes for a language CLDR knows (babel's, tests/fixtures/plural_rules.json): a new
// language's catalogue words its plurals with no change here.
const PLURAL_RULES: string[] = JSON.parse(
  readFileSync(
    join(process.cwd(), 'tests', 'fixtures', 'plural_rules.json'),
    'utf8'
  )
);

test("every language's plural rule picks the form JupyterLab's Gettext picks", () => {
  assert.ok(PLURAL_RULES.length > 20);
  const counts = [...Array(1200).keys(), 1e4, 100001, 1e5, 1e6, 2e6 + 21];
  for (const rule of PLURAL_RULES) {
    const nplurals = Number(/nplurals\s*=\s*(\d+)/.exec(rule)![1]);
    const forms = [...Array(Math.max(nplurals, 2)).keys()].map(
      i => `form ${i} %1`
    );
    const data = {
      '': { domain: 'jupyter_gpumem', language: 'xx', plural_forms: rule },
      '%1 cat': forms
    };
    const ours = catalogueTrans(data)!;
    const lab = bundleOf(data, 'xx');
    assert.ok(pluralRule(rule), rule);
    for (const n of counts) {
      assert.equal(
        ours._n('%1 cat', '%1 cats', n),
        lab._n('%1 cat', '%1 cats', n),
        `${rule} n=${n}`
      );
    }
  }
});

test("a plural rule that is not gettext's reads English, never an error", () => {
  for (const bad of [
    '',
    'nplurals=2;',
    'nplurals=2; plural=(n != 1',
    'plural=n ? : 1;',
    'plural=alert(1);',
    // Long enough to overflow the stack when evaluated, one closure per operator (a hostile catalogue).
    `plural=${Array(50_000).fill('n').join('+')};`,
    `plural=${'('.repeat(50_000)}n${')'.repeat(50_000)};`
  ]) {
    assert.equal(pluralRule(bad), undefined, bad);
    const odd = catalogueTrans({
      '': { domain: 'jupyter_gpumem', plural_forms: bad },
      '%1 cat': ['form 0 %1', 'form 1 %1']
    })!;
    assert.equal(odd._n('%1 cat', '%1 cats', 2), '2 cats');
  }
});
