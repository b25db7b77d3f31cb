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

type Rule = (n: number) => number;

// The longest rule babel writes (Arabic's, six forms) is about 60 tokens.
const MOST_TOKENS = 200;

/** The plural rule a catalogue's header names (`Plural-Forms`, from babel's CLDR data: "nplurals=3;
 * plural=(n%10==1 && n%100!=11 ? 0 : ...);"), read by a parser of gettext's C expressions rather than evaluated as
 * JupyterLab's Gettext does (`new Function`), which a page's Content-Security-Policy may forbid (VS Code's
 * webviews). Any rule gettext writes reads, so a new language needs nothing here; one that does not parse gives
 * undefined, and its plurals read English. */
export function pluralRule(pluralForms: string): Rule | undefined {
  const expression = /\bplural\s*=\s*([^;]*)/.exec(pluralForms)?.[1] ?? '';
  const tokens =
    expression.match(/\d+|n|&&|\|\||[=!<>]=|[-+*/%<>!?:()]|\S/g) ?? [];
  if (tokens.length > MOST_TOKENS) {
    return undefined; // no language's rule is this long: each token is a closure deep, evaluated per count
  }
  let at = 0;
  const take = (token: string): boolean =>
    tokens[at] === token ? (at++, true) : false;
  // C's binary operators, loosest first.
  const binary = [
    ['||'],
    ['&&'],
    ['==', '!='],
    ['<', '>', '<=', '>='],
    ['+', '-'],
    ['*', '/', '%']
  ];
  const apply = (op: string, a: number, b: number): number =>
    ({
      '||': Number(a !== 0 || b !== 0),
      '&&': Number(a !== 0 && b !== 0),
      '==': Number(a === b),
      '!=': Number(a !== b),
      '<': Number(a < b),
      '>': Number(a > b),
      '<=': Number(a <= b),
      '>=': Number(a >= b),
      '+': a + b,
      '-': a - b,
      '*': a * b,
      '/': Math.trunc(a / b),
      '%': a % b
    })[op] as number;
  const level = (depth: number): Rule => {
    if (depth === binary.length) {
      return unary();
    }
    let left = level(depth + 1);
    while (binary[depth].includes(tokens[at])) {
      const op = tokens[at++];
      const [l, r] = [left, level(depth + 1)];
      left = n => apply(op, l(n), r(n));
    }
    return left;
  };
  const unary = (): Rule => {
    if (take('!')) {
      const operand = unary();
      return n => Number(operand(n) === 0);
    }
    if (take('(')) {
      const inner = ternary();
      return take(')') ? inner : fail();
    }
    const token = tokens[at++] ?? '';
    if (token === 'n') {
      return n => n;
    }
    return /^\d+$/.test(token) ? () => Number(token) : fail();
  };
  const ternary = (): Rule => {
    const test = level(0);
    if (!take('?')) {
      return test;
    }
    const yes = ternary();
    const no = take(':') ? ternary() : fail();
    return n => (test(n) !== 0 ? yes(n) : no(n));
  };
  const fail = (): never => {
    throw new SyntaxError(pluralForms);
  };
  try {
    const rule = ternary();
    return at === tokens.length && tokens.length > 0 ? rule : undefined;
  } catch {
    return undefined;
  }
}

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
      ? pluralRule(header.plural_forms)
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
