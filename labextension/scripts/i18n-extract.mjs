// The sidebar's messages for the catalogue (docs/i18n-plumbing.md): every `<bundle>.__('…')`,
// `._n('…', '…', n)`, `._p('context', '…')` and `._np('context', '…', '…', n)` in labextension/src, parsed
// by the TypeScript compiler (babel's JavaScript extractor misses calls nested in other calls' arguments).
// A message must be a string literal, so the catalogue can hold it: any other argument is an error, except
// the call that translates a catalogue code's template (format/words.ts), whose messages come from
// jupyter_gpumem/words/en.json instead, the one that translates a settings schema's strings
// (format/settings.ts), whose messages come from labextension/schema/*.json, and the one that words a GPU
// line the wire schema declares (format/panel.ts), whose messages come from its `x-line`s.
//
//   node labextension/scripts/i18n-extract.mjs OUT.json [SOURCE_DIR]
//
// writes [{file, line, msgid, msgid_plural?, msgctxt?}] found under SOURCE_DIR (labextension/src), or lists
// the calls it cannot take and exits 1.
//
// `jlpm i18n:extract` runs it, then `python -m jupyter_gpumem.i18n.extract OUT.json`, which writes the .pot
// and updates the .po files.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../..'
);
// Argument roles of each call, in order; a count is not a message.
const CALLS = {
  __: ['msgid'],
  _n: ['msgid', 'msgid_plural'],
  _p: ['msgctxt', 'msgid'],
  _np: ['msgctxt', 'msgid', 'msgid_plural']
};
// Calls whose messages the catalogue takes from elsewhere, by file: a code's template (format/words.ts, from
// jupyter_gpumem/words/en.json) and a settings schema's string (format/settings.ts, from labextension/schema/*.json).
const FROM_ELSEWHERE = {
  'labextension/src/format/words.ts': /^catalogue\[\w+\]$/,
  'labextension/src/format/settings.ts': /^schemaText$/,
  // A GPU line the wire schema declares (x-line, jupyter_gpumem/wire/schemas/comm.v1.json).
  'labextension/src/format/panel.ts': /^line\.words$/
};

function files(dir) {
  return readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .flatMap(entry => {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        return files(full);
      }
      return entry.name.endsWith('.ts') ? [full] : [];
    });
}

/** The text of a string literal, or of literals joined with `+`; undefined for anything else. */
function literal(node) {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
    return node.text;
  }
  if (ts.isParenthesizedExpression(node)) {
    return literal(node.expression);
  }
  if (
    ts.isBinaryExpression(node) &&
    node.operatorToken.kind === ts.SyntaxKind.PlusToken
  ) {
    const left = literal(node.left);
    const right = literal(node.right);
    return left === undefined || right === undefined ? undefined : left + right;
  }
  return undefined;
}

export function extract(source = path.join(root, 'labextension', 'src')) {
  const messages = [];
  const errors = [];
  for (const file of files(source)) {
    const relative = path.relative(root, file).split(path.sep).join('/');
    const parsed = ts.createSourceFile(
      file,
      readFileSync(file, 'utf8'),
      ts.ScriptTarget.Latest,
      true
    );
    const visit = node => {
      if (
        ts.isCallExpression(node) &&
        ts.isPropertyAccessExpression(node.expression) &&
        Object.hasOwn(CALLS, node.expression.name.text)
      ) {
        const name = node.expression.name.text;
        const roles = CALLS[name];
        const line =
          parsed.getLineAndCharacterOfPosition(node.getStart(parsed)).line + 1;
        const message = { file: relative, line };
        const wrong = [];
        roles.forEach((role, i) => {
          const argument = node.arguments[i];
          const text = argument === undefined ? undefined : literal(argument);
          if (text === undefined) {
            wrong.push(argument ? argument.getText(parsed) : `(no ${role})`);
          } else {
            message[role] = text;
          }
        });
        const elsewhere = FROM_ELSEWHERE[relative];
        const codeCall =
          elsewhere !== undefined &&
          node.arguments.some(a => elsewhere.test(a.getText(parsed)));
        if (wrong.length === 0) {
          messages.push(message);
        } else if (!codeCall) {
          errors.push(
            `${relative}:${line}: ${name}(…) needs string literals, not ${wrong.join(', ')}`
          );
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(parsed);
  }
  return { messages, errors };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = process.argv[2];
  if (!out) {
    console.error(
      'usage: node labextension/scripts/i18n-extract.mjs OUT.json [SOURCE_DIR]'
    );
    process.exit(2);
  }
  const source = path.resolve(
    process.argv[3] ?? path.join(root, 'labextension', 'src')
  );
  const { messages, errors } = extract(source);
  for (const error of errors) {
    console.error(`i18n-extract: ${error}`);
  }
  if (errors.length > 0) {
    process.exit(1);
  }
  mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
  writeFileSync(out, JSON.stringify(messages, null, 1) + '\n');
  console.error(`i18n-extract: ${messages.length} calls in ${source}`);
}
