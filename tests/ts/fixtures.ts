// The protocol fixtures shared with the Python tests (tests/fixtures/protocol/), and the bundles of translations.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';

import type { Trans } from '../../labextension/src/format/trans';

export const PROTOCOL_FIXTURES = join(
  process.cwd(),
  'tests',
  'fixtures',
  'protocol'
);

export function fixture(name: string): unknown {
  return JSON.parse(readFileSync(join(PROTOCOL_FIXTURES, name), 'utf8'));
}

export function malformed(): [string, unknown][] {
  const dir = join(PROTOCOL_FIXTURES, 'malformed');
  return readdirSync(dir)
    .filter(name => name.endsWith('.json'))
    .sort()
    .map(name => [name, JSON.parse(readFileSync(join(dir, name), 'utf8'))]);
}

/** What JupyterLab's nullTranslator does (Gettext.strfmt): %1 … %n filled in, the text as it is. */
export function strfmt(message: string, ...args: unknown[]): string {
  return message
    .replace(/%%/g, '%% ')
    .replace(/%(\d+)/g, (_, n) => String(args[Number(n) - 1]))
    .replace(/%% /g, '%');
}

/** A bundle with no translations, as the sidebar gets without a language pack: `_n`'s %1 is n, as in
 * JupyterLab's Gettext, and a context changes nothing. */
export const trans = {
  __: strfmt,
  _n: (singular: string, plural: string, n: number, ...args: unknown[]) =>
    strfmt(n === 1 ? singular : plural, n, ...args),
  _p: (_context: string, message: string, ...args: unknown[]) =>
    strfmt(message, ...args)
};

/** What the pseudo-language below was asked, by kind: `_p`'s contexts, `_n`'s counts. */
export const asked: { contexts: string[]; counts: number[] } = {
  contexts: [],
  counts: []
};

/** A pseudo-language: every phrase comes back in ⟦brackets⟧ (a plural in ⟦n|…⟧, a phrase in a context
 * in ⟦context|…⟧), so a test sees which text went through the bundle, and how, and which did not. */
export const bracketed = {
  __: (message: string, ...args: unknown[]) => `⟦${strfmt(message, ...args)}⟧`,
  _n: (singular: string, plural: string, n: number, ...args: unknown[]) => {
    asked.counts.push(n);
    return `⟦n|${strfmt(n === 1 ? singular : plural, n, ...args)}⟧`;
  },
  _p: (context: string, message: string, ...args: unknown[]) => {
    asked.contexts.push(context);
    return `⟦${context}|${strfmt(message, ...args)}⟧`;
  }
};

/** The languages, one folder each under jupyter_gpumem/locale/ ("ja_JP", "zh_CN"): read as i18n/build.py's
 * languages() reads them, never listed by hand. */
export function languages(): string[] {
  const dir = join(process.cwd(), 'jupyter_gpumem', 'locale');
  return readdirSync(dir)
    .filter(
      name => statSync(join(dir, name)).isDirectory() && !/^[._]/.test(name)
    )
    .sort();
}

/** The built catalogue JupyterLab serves for `locale` ("ja_JP"): jupyter_gpumem/locale/<locale>/LC_MESSAGES/
 * jupyter_gpumem.json, rebuilt from its .po first when missing or older (`jlpm build:i18n`), as tests/conftest.py
 * does for the Python side. */
export function catalogue(locale: string): Record<string, unknown> {
  const dir = join(process.cwd(), 'jupyter_gpumem', 'locale', locale);
  const json = join(dir, 'LC_MESSAGES', 'jupyter_gpumem.json');
  const po = join(dir, 'LC_MESSAGES', 'jupyter_gpumem.po');
  if (!existsSync(json) || statSync(json).mtimeMs < statSync(po).mtimeMs) {
    execFileSync('python', [join('jupyter_gpumem', 'i18n', 'build.py')], {
      stdio: 'inherit'
    });
  }
  return JSON.parse(readFileSync(json, 'utf8'));
}

/** JupyterLab's own Gettext class, run from @jupyterlab/translation's lib/gettext.js as installed: that package
 * is ES modules with extensionless imports, which only a bundler resolves, so its two imports (DEFAULT_LANGUAGE_CODE
 * from tokens.js, normalizeDomain from utils.js, read from their files too) are handed in, and `document`
 * (read for a default locale, never used: a locale is always given) is a page without a `lang`. */
function jupyterLabGettext(): new (
  options: Record<string, unknown>
) => Trans & {
  loadJSON(data: unknown, domain: string): void;
} {
  const lib = join(
    dirname(require.resolve('@jupyterlab/translation/package.json')),
    'lib'
  );
  const read = (name: string) => readFileSync(join(lib, name), 'utf8');
  const code = read('tokens.js').match(
    /export const DEFAULT_LANGUAGE_CODE = '([^']+)';/
  );
  const utils = read('utils.js');
  const source = read('gettext.js');
  const imports = source.match(/^import .*$/gm) ?? [];
  assert.deepEqual(
    imports,
    [
      "import { DEFAULT_LANGUAGE_CODE } from './tokens';",
      "import { normalizeDomain } from './utils';"
    ],
    'gettext.js imports what this loader hands in'
  );
  assert.ok(code && /^export function normalizeDomain\(/m.test(utils));
  assert.ok(/^export \{ Gettext \};$/m.test(source));
  const normalizeDomain = new Function(
    utils.replace(/^export /m, '') + '\nreturn normalizeDomain;'
  )();
  const page = { documentElement: { getAttribute: () => null } };
  return new Function(
    'document',
    'DEFAULT_LANGUAGE_CODE',
    'normalizeDomain',
    source
      .replace(/^import .*$/gm, '')
      .replace(/^export \{ Gettext \};$/m, 'return Gettext;')
  )(page, code![1], normalizeDomain);
}

/** The bundle the sidebar gets in JupyterLab set to `locale` ("ja_JP"): what TranslationManager.load does with the
 * domain's JSON (manager.js: a Gettext of the domain and locale, the header's plural_forms as pluralForms). */
export function bundle(locale: string, domain = 'jupyter_gpumem'): Trans {
  return bundleOf(catalogue(locale), locale, domain);
}

/** The same for any catalogue `data` in that JSON shape. */
export function bundleOf(
  data: Record<string, unknown>,
  locale: string,
  domain = 'jupyter_gpumem'
): Trans {
  const metadata = data[''] as Record<string, unknown>;
  const Gettext = jupyterLabGettext();
  const gettext = new Gettext({ domain, locale, stringsPrefix: '' });
  gettext.loadJSON(
    { ...data, '': { ...metadata, pluralForms: metadata.plural_forms } },
    domain
  );
  return gettext;
}
