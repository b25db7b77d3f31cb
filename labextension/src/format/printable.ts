/** Text from the GPU host made safe to show on one line. */

/** Control characters (C0, DEL, C1), invisible formatting (bidi overrides, isolates and marks, zero
 * widths, the BOM), lone surrogates and the line and paragraph separators: a string from the GPU host
 * holding one could forge a line or read backwards on screen. The same set as render/text.py's
 * printable() (tests/fixtures/golden/ pins that both escape it alike). */
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/gu;
const NAMED: Record<string, string> = { '\t': '\\t', '\n': '\\n', '\r': '\\r' };

function escape(c: string): string {
  const code = c.codePointAt(0) ?? 0;
  const hex = code.toString(16);
  return (
    NAMED[c] ??
    (code <= 0xff
      ? `\\x${hex.padStart(2, '0')}`
      : code <= 0xffff
        ? `\\u${hex.padStart(4, '0')}`
        : `\\U${hex.padStart(8, '0')}`)
  );
}

/** A string from the GPU host (a process name, a user, a GPU name, the kernel's sentences about
 * them) with those characters written as escapes ("\\u202e"): a row stays one line and reads in
 * its own order. Everything else, non-ASCII included, stays as it is. */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, escape);
}
