/**
 * What every surface's text is made of. Every phrase goes through the translation bundle
 * (`trans.__`, as JupyterLab's own extensions do); the text is built from a parsed sample, pure, so
 * the Node tests read it. What the kernel decided (why it is over, what a framework takes, where the
 * policy stands) comes as a code with its values, worded from the catalogue (words.ts).
 */

import type { TranslationBundle } from '@jupyterlab/translation';

/** The part of a translation bundle the text needs. */
export type Trans = Pick<TranslationBundle, '__'>;

export type Level = 'ok' | 'warn' | 'error';

/** A line of the sidebar and the colour it is shown in. */
export interface ILine {
  text: string;
  level: Level;
}
