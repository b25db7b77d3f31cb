// The protocol fixtures shared with the Python tests (tests/fixtures/protocol/).
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

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
