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

/** A bundle with no translations, as the sidebar gets without a language pack. */
export const trans = { __: strfmt };

/** A pseudo-language: every phrase comes back in ⟦brackets⟧, so a test sees which text went
 * through the bundle and which did not. */
export const bracketed = {
  __: (message: string, ...args: unknown[]) => `⟦${strfmt(message, ...args)}⟧`
};
