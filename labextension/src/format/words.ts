/**
 * Codes on the wire, words at the surface (docs/protocol.md, "Codes and words"): a reason, problem or
 * note arrives as a code with its values, and is worded here from a language's catalogue by the rule
 * jupyter_gpumem/words/__init__.py's word() follows. Each template goes through the translation bundle
 * before its values are put in, with the code as its context (`msgctxt`, docs/i18n-plumbing.md): the
 * domain's catalogues translate it as Python's `pgettext(code, template)` does.
 *
 * catalogue/en.json is jupyter_gpumem/words/en.json, copied where tsc and the bundlers take it from
 * (tests/ts/words.test.ts fails when the copy differs); a language is one more catalogue.
 */

import type { Said, Sample } from '../wire/types';
import en from './catalogue/en.json';
import { clock, duration, formatBytes, mibFigure } from './number';
import type { Trans } from './trans';

/** Code -> template: `{name}` is a value, `{name:spec}` a value in a given format. */
export type Catalogue = Readonly<Record<string, string>>;

export const ENGLISH: Catalogue = en;

const PLACEHOLDER = /\{(\w+)(?::(\w+))?\}/g;
const JOINS = new Set(['or', 'and', 'semicolon', 'list']);

/** A value this catalogue cannot word: a code it does not know (a newer sender's, maybe nested), a value
 * its template names and the values leave out, a value of a shape it has no format for. */
class Unworded extends Error {}

function isSaid(value: unknown): value is Said {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    typeof (value as Said).code === 'string'
  );
}

function template(code: string, catalogue: Catalogue, trans: Trans): string {
  if (!Object.prototype.hasOwnProperty.call(catalogue, code)) {
    throw new Unworded(code);
  }
  return trans._p(code, catalogue[code]); // i18n: catalogue
}

/** Python's `{:g}`: six significant digits, trailing zeros dropped, an exponent below 1e-4 and from 1e6. */
function general(value: number): string {
  if (Number.isInteger(value)) {
    return String(value);
  }
  const [mantissa, e] = value.toExponential(5).split('e');
  const exponent = Number(e);
  const trim = (digits: string) =>
    digits.includes('.') ? digits.replace(/\.?0+$/, '') : digits;
  if (exponent < -4 || exponent >= 6) {
    const sign = exponent < 0 ? '-' : '+';
    return `${trim(mantissa)}e${sign}${String(Math.abs(exponent)).padStart(2, '0')}`;
  }
  return trim(value.toFixed(5 - exponent));
}

function format(
  name: string,
  value: unknown,
  spec: string | undefined,
  values: Said['values'],
  catalogue: Catalogue,
  trans: Trans
): string {
  if (isSaid(value)) {
    return worded(value, catalogue, trans);
  }
  if (typeof value === 'string') {
    return value; // data: an error's text, a framework's name, shown as it is
  }
  if (Array.isArray(value)) {
    if (spec === undefined || !JOINS.has(spec)) {
      throw new Unworded(name);
    }
    return value
      .map(v => format(name, v, undefined, values, catalogue, trans))
      .join(template(`join_${spec}`, catalogue, trans));
  }
  if (spec === 'size' && (typeof value === 'number' || value === null)) {
    return formatBytes(value, trans);
  }
  if (typeof value !== 'number') {
    if (value === null && (spec === 'mib' || name.endsWith('_bytes'))) {
      return trans.__('N/A');
    }
    throw new Unworded(name);
  }
  if (spec === 'clock') {
    const now = values.now;
    const minuteAhead = typeof now === 'number' && value - now >= 60;
    return clock(value * 1000, !minuteAhead);
  }
  if (spec === 'mib' || name.endsWith('_bytes')) {
    return `${mibFigure(value)} MiB`;
  }
  if (name.endsWith('_s')) {
    return duration(value);
  }
  return general(value);
}

function worded(said: Said, catalogue: Catalogue, trans: Trans): string {
  const values = said.values ?? {};
  return template(said.code, catalogue, trans).replace(
    PLACEHOLDER,
    (_, name: string, spec: string | undefined) => {
      if (!Object.prototype.hasOwnProperty.call(values, name)) {
        throw new Unworded(name);
      }
      return format(name, values[name], spec, values, catalogue, trans);
    }
  );
}

/** The words of a code and its values as `catalogue` has them; null where it cannot word them (a code or a
 * value it does not know). */
export function word(
  said: Said,
  trans: Trans,
  catalogue: Catalogue = ENGLISH
): string | null {
  try {
    return worded(said, catalogue, trans);
  } catch (error) {
    if (error instanceof Unworded) {
      return null;
    }
    throw error;
  }
}

/** What a surface shows of a sentence field and the code beside it: the code worded, or the sentence
 * where there is no code (an older sender) or one this catalogue cannot word (a newer sender). Either is
 * text from the GPU host: put through printable() before it is shown. */
export function said(
  sentence: string | null,
  code: Said | null | undefined,
  trans: Trans,
  catalogue: Catalogue = ENGLISH
): string | null {
  return (code ? word(code, trans, catalogue) : null) ?? sentence;
}

/** Whose figures these are, in this catalogue's language (the breakdown's and the chart legend's name): several
 * frameworks' names worded from the code beside the sample's `framework` ("TensorFlow と PyTorch"); the plain
 * string where there is none (one name is data; a kernel of 0.2.0 or older sends no code) or this catalogue
 * cannot word it. Null while several are installed and none is imported. Text from the GPU host: put it
 * through printable() before it is shown. */
export function frameworkName(
  sample: Pick<Sample, 'framework' | 'frameworkSaid'>,
  trans: Trans,
  catalogue: Catalogue = ENGLISH
): string | null {
  return said(sample.framework, sample.frameworkSaid, trans, catalogue);
}
