/**
 * What every surface's text is made of. Every phrase goes through the translation bundle of the
 * `jupyter_gpumem` domain, as JupyterLab's own extensions do, with literal arguments the extractor reads
 * (labextension/scripts/i18n-extract.mjs, docs/i18n-plumbing.md): `trans.__(msgid, ...)`, `trans._n(singular,
 * plural, n, ...)` for every count (`%1` is n), `trans._p(context, msgid)` where one English word needs two
 * translations. A figure and its unit are not words: "3.1 GiB", "45 s" as nvidia-smi and docs/numbers.md write
 * them, put into a phrase through a placeholder. The text is built from a parsed sample, pure, so
 * the Node tests read it. What the kernel decided (why it is over, what a framework takes, where the
 * policy stands) comes as a code with its values, worded from the catalogue (words.ts).
 */

import type { TranslationBundle } from '@jupyterlab/translation';

/** The part of a translation bundle the text needs. */
export type Trans = Pick<TranslationBundle, '__' | '_n' | '_p'>;

export type Level = 'ok' | 'warn' | 'error';

/** A line of the sidebar and the colour it is shown in. */
export interface ILine {
  text: string;
  level: Level;
}

/** JupyterLab's Gettext.strfmt: %1 … %n filled in, `%%` a percent sign. */
export function strfmt(message: string, ...args: unknown[]): string {
  return message
    .replace(/%%/g, '%% ')
    .replace(/%(\d+)/g, (_, n) => String(args[Number(n) - 1]))
    .replace(/%% /g, '%');
}

/** JupyterLab's nullTranslator: the text as it is (English), n as `_n`'s %1. */
export const nullTrans: Trans = {
  __: strfmt,
  _n: (singular: string, plural: string, n: number, ...args: unknown[]) =>
    strfmt(n === 1 ? singular : plural, n, ...args),
  _p: (_context: string, message: string, ...args: unknown[]) =>
    strfmt(message, ...args)
};

/** The plural rules a catalogue's header may name, as gettext writes them (spaces left out). Read from this
 * table, not evaluated as JupyterLab's Gettext does (`new Function`), which a page's Content-Security-Policy
 * may forbid (VS Code's webviews); a catalogue with another rule words its plurals in English. */
const PLURAL_RULES: Record<string, (n: number) => number> = {
  'nplurals=1;plural=0;': () => 0,
  'nplurals=2;plural=(n!=1);': n => Number(n !== 1),
  'nplurals=2;plural=(n>1);': n => Number(n > 1)
};

/** A bundle of the `jupyter_gpumem` domain from its catalogue as JupyterLab serves it (`data`: the jed-like JSON of
 * jupyter_gpumem/locale/<ll_CC>/LC_MESSAGES/jupyter_gpumem.json, docs/i18n-plumbing.md), for the inline view where
 * the page has no JupyterLab translator; it words as JupyterLab's Gettext would with that catalogue. A message the
 * catalogue lacks, or holds in another shape, is English; `data` that is not a catalogue of this domain gives null. */
export function catalogueTrans(data: unknown): Trans | null {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    return null;
  }
  const messages = data as Record<string, unknown>;
  const header = messages[''] as Record<string, unknown> | undefined;
  if (header?.domain !== 'jupyter_gpumem') {
    return null;
  }
  const rule =
    typeof header.plural_forms === 'string'
      ? PLURAL_RULES[header.plural_forms.replace(/\s/g, '')]
      : undefined;
  /** The translations of `key` in the shape Gettext accepts (one for a message; two or more for a plural, one-form
   * languages padding theirs with ""); else null. */
  const forms = (key: string, plural: boolean): unknown[] | null => {
    const found = Object.prototype.hasOwnProperty.call(messages, key)
      ? messages[key]
      : null;
    return Array.isArray(found) &&
      (plural ? found.length > 1 : found.length === 1)
      ? found
      : null;
  };
  const pick = (found: unknown, english: string): string =>
    typeof found === 'string' && found !== '' ? found : english;
  return {
    __: (message: string, ...args: unknown[]) =>
      strfmt(pick(forms(message, false)?.[0], message), ...args),
    _n: (singular: string, plural: string, n: number, ...args: unknown[]) => {
      const english = n === 1 ? singular : plural;
      const found = rule ? forms(singular, true)?.[rule(n)] : undefined;
      return strfmt(pick(found, english), n, ...args);
    },
    _p: (context: string, message: string, ...args: unknown[]) =>
      strfmt(
        pick(forms(`${context}\u0004${message}`, false)?.[0], message),
        ...args
      )
  };
}
