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
