// Writes three files of labextension/src/wire/ from the wire formats' JSON Schemas (jupyter_gpumem/wire/schemas/):
//
// - schema.ts: the comm protocol's schema (comm.v1.json) and the server's API's (api.v1.json, with the shapes
//   it refers to in comm.v1.json and report.v1.json copied in), without their documentation: protocol.ts and
//   api.ts check every message and body against them (validate.ts). And this release's version (package.json),
//   which the sidebar names when it refuses a kernel of another protocol.
// - types.ts: the TypeScript types of those shapes, by json-schema-to-typescript, each named after its schema's
//   `title`. They are the values the readers give, not the JSON on the wire: protocol.ts and api.ts camelCase
//   every key but a Said's values, the catalogue's placeholder names (camelize.ts), and fill in every absent
//   property that has a `default` (validate.ts). So the types
//   are generated from the schemas transformed alike: property names in camelCase, every property with a
//   `default` required, and that default admitted by its type (`processes`: null where the kernel leaves it
//   out). Configure is the one shape the sidebar writes rather than reads: it keeps the wire's names. Fields a
//   reader does not know are not in the types (no index signatures): the reader ignores them; an object whose
//   properties the schema leaves open (a Said's values) is any object.
// - lines.ts: the GPU's lines the schema declares (`x-line` on a SampleGpu property), as data the sidebar words.
//
// Run by `jlpm build:schema`; `--print schema.ts` (or types.ts, lines.ts) writes one to stdout instead, which
// tests/ts/schema.test.ts compares with the committed file.
import {
  copyFileSync,
  readFileSync,
  readdirSync,
  writeFileSync
} from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compile } from 'json-schema-to-typescript';
import * as prettier from 'prettier';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SCHEMAS = join(ROOT, 'jupyter_gpumem', 'wire', 'schemas');
const WIRE = join(ROOT, 'labextension', 'src', 'wire');
const PACKAGE = join(ROOT, 'package.json');
// Words for people: the browser needs none of them (they would add 14 KB to the inline view's bundle). A
// property's line (`x-line`, the sidebar's words for it) is written to lines.ts instead, the validator's keywords
// being the schema's.
const LINE = 'x-line';
const DOCUMENTATION = new Set(['$schema', 'title', 'description', LINE]);
// The shapes the sidebar writes (by their key in $defs): sent as they are, not camelCased.
const WRITTEN = new Set(['configure']);

const CATALOGUE = join(ROOT, 'jupyter_gpumem', 'words', 'en.json');
// comm.v1.json's shared GPU fields: definitions of fields that the GPU shapes refer to, not a shape.
const FIELDS = 'gpu_fields';

const read = name => JSON.parse(readFileSync(join(SCHEMAS, name), 'utf8'));

/**
 * A schema file as both outputs are made from it (tests/wire/test_generated.py makes it alike for Python): each
 * reference to a shared GPU field replaced by the field's definition (its own references made to its file), the
 * site's words and default first, and the definition of the shared fields gone; the codes ($defs/code) the
 * catalogue's keys but its joins (jupyter_gpumem/words/en.json, the one list of them).
 */
function schema(name) {
  const inline = node => {
    if (Array.isArray(node)) {
      return node.map(inline);
    }
    if (!isObject(node)) {
      return node;
    }
    const [target, pointer = ''] = (node.$ref ?? '').split('#/$defs/');
    if (pointer.startsWith(`${FIELDS}/$defs/`)) {
      const there = target || name;
      const field = read(there).$defs[FIELDS].$defs[pointer.split('/').pop()];
      return {
        ...inline(there === name ? field : elsewhere(field, there)),
        ...omit(node, ['$ref'])
      };
    }
    return Object.fromEntries(
      Object.entries(node).map(([key, value]) => [key, inline(value)])
    );
  };
  const out = inline(read(name));
  const defs = omit(out.$defs ?? {}, [FIELDS]);
  if ('code' in defs) {
    const codes = Object.keys(JSON.parse(readFileSync(CATALOGUE, 'utf8')));
    defs.code = {
      ...omit(defs.code, ['type']),
      enum: codes.filter(code => !code.startsWith('join_'))
    };
  }
  return { ...out, $defs: defs };
}
const isObject = node =>
  node !== null && typeof node === 'object' && !Array.isArray(node);

/** `node` with each `$ref` to another file replaced by `external(file, name)` (a `#/$defs/name` there). */
function resolveExternal(node, external) {
  if (Array.isArray(node)) {
    return node.map(item => resolveExternal(item, external));
  }
  if (!isObject(node)) {
    return node;
  }
  if (typeof node.$ref === 'string' && !node.$ref.startsWith('#')) {
    const [file, pointer] = node.$ref.split('#/$defs/');
    return { ...external(file, pointer), ...omit(node, ['$ref']) };
  }
  return Object.fromEntries(
    Object.entries(node).map(([key, value]) => [
      key,
      resolveExternal(value, external)
    ])
  );
}

const pick = (node, keys) =>
  Object.fromEntries(
    Object.entries(node).filter(([key]) => keys.includes(key))
  );
const omit = (node, keys) =>
  Object.fromEntries(
    Object.entries(node).filter(([key]) => !keys.includes(key))
  );

/** `node` of `file`, its references within that file made references to it from another. */
function elsewhere(node, file) {
  if (Array.isArray(node)) {
    return node.map(item => elsewhere(item, file));
  }
  if (!isObject(node)) {
    return node;
  }
  return Object.fromEntries(
    Object.entries(node).map(([key, value]) => [
      key,
      key === '$ref' && value.startsWith('#')
        ? file + value
        : elsewhere(value, file)
    ])
  );
}

/** The API's schema whole, for the validator: the shapes it refers to in other files copied into its $defs. */
function bundled(root) {
  const copies = {};
  const copy = (file, name) => {
    if (!(name in copies)) {
      copies[name] = { file };
      copies[name] = {
        file,
        def: resolveExternal(elsewhere(schema(file).$defs[name], file), copy)
      };
    } else if (copies[name].file !== file) {
      throw new Error(`two files' shapes are named ${name}`);
    }
    return { $ref: `#/$defs/${name}` };
  };
  const out = resolveExternal(root, copy);
  const defs = { ...out.$defs };
  for (const [name, { file, def }] of Object.entries(copies)) {
    if (name in defs) {
      throw new Error(`${file}#/$defs/${name} would replace the API's own`);
    }
    defs[name] = def;
  }
  return { ...out, $defs: defs };
}

/** `names`: the node's keys are names (of properties, of definitions), not keywords. */
function strip(node, names = false) {
  if (Array.isArray(node)) {
    return node.map(item => strip(item));
  }
  if (isObject(node)) {
    return Object.fromEntries(
      Object.entries(node)
        .filter(([key]) => names || !DOCUMENTATION.has(key))
        .map(([key, value]) => [
          key,
          strip(value, !names && (key === 'properties' || key === '$defs'))
        ])
    );
  }
  return node;
}

const camel = name => name.replace(/_([a-z])/g, (_, c) => c.toUpperCase());

function admitsNull(node) {
  return (
    [].concat(node.type ?? []).includes('null') ||
    (node.enum ?? []).includes(null) ||
    (node.anyOf ?? []).some(sub => sub.type === 'null')
  );
}

/** A property whose default is null admits null: the reader may give it. `root`: where its `$ref` points. */
function withDefault(node, root) {
  const target =
    typeof node.$ref === 'string' && node.$ref.startsWith('#/$defs/')
      ? root.$defs[node.$ref.slice('#/$defs/'.length)]
      : {};
  if (node.default !== null || admitsNull(node) || admitsNull(target)) {
    return node;
  }
  if (node.type !== undefined) {
    return { ...node, type: [].concat(node.type, 'null') };
  }
  return {
    ...omit(node, ['$ref']),
    anyOf: [{ $ref: node.$ref }, { type: 'null' }]
  };
}

/**
 * A reference with words or a default of its own, to a definition with a title, as that type by name: the
 * compiler would otherwise declare a copy of it (LimitKind1) for the words.
 */
function named(node, root) {
  const name =
    typeof node.$ref === 'string' && node.$ref.startsWith('#/$defs/')
      ? root.$defs[node.$ref.slice('#/$defs/'.length)].title
      : undefined;
  return name === undefined || Object.keys(node).length === 1
    ? node
    : { tsType: name, ...omit(node, ['$ref']) };
}

/** The schema as the readers give its values (the header says how); `written`: keep the wire's names. */
function asRead(node, written = false, root = node) {
  if (Array.isArray(node)) {
    return node.map(item => asRead(item, written, root));
  }
  if (!isObject(node)) {
    return node;
  }
  // An object the schema leaves open (no properties named) is any object: additionalProperties false below
  // is for the shapes it names.
  const open =
    node.type === 'object' &&
    !('properties' in node) &&
    !('additionalProperties' in node);
  const out = open ? { additionalProperties: true } : {};
  for (const [key, value] of Object.entries(node)) {
    if (key === '$defs') {
      out.$defs = Object.fromEntries(
        Object.entries(value).map(([name, def]) => [
          name,
          asRead(def, WRITTEN.has(name), root)
        ])
      );
    } else if (key === 'properties') {
      const name = written ? n => n : camel;
      out.properties = Object.fromEntries(
        Object.entries(value).map(([prop, sub]) => [
          name(prop),
          asRead(named(withDefault(sub, root), root), written, root)
        ])
      );
      out.required = [
        ...new Set([
          ...(node.required ?? []),
          ...Object.keys(value).filter(prop => 'default' in value[prop])
        ])
      ].map(name);
    } else if (key !== 'required' && key !== '$id' && key !== '$schema') {
      out[key] = asRead(value, written, root);
    }
  }
  return out;
}

const OPTIONS = {
  bannerComment: '',
  additionalProperties: false,
  unreachableDefinitions: true,
  strictIndexSignatures: true,
  unknownAny: true,
  format: false
};

/** Every node of `node` that has a title, by its title. */
function titled(node, found = {}) {
  if (Array.isArray(node)) {
    node.forEach(item => titled(item, found));
  } else if (isObject(node)) {
    if (typeof node.title === 'string') {
      found[node.title] = node;
    }
    Object.values(node).forEach(value => titled(value, found));
  }
  return found;
}

/** `node` with each shape `declared` already has (by title, the same shape) named, not declared again. */
function reuse(node, declared) {
  if (Array.isArray(node)) {
    return node.map(item => reuse(item, declared));
  }
  if (!isObject(node)) {
    return node;
  }
  const known = declared[node.title];
  if (known !== undefined) {
    // A default is the property's, not its shape's.
    const shape = shape => JSON.stringify(strip(omit(shape, ['default'])));
    if (shape(known) !== shape(node)) {
      throw new Error(`two shapes are titled ${node.title}`);
    }
    return { tsType: node.title, ...pick(node, ['description', 'default']) };
  }
  return Object.fromEntries(
    Object.entries(node).map(([key, value]) => [key, reuse(value, declared)])
  );
}

/** The types of one schema, but for the shapes `declared` holds (by title); the shapes of other files in. */
async function types(root, declared = {}) {
  const whole = resolveExternal(root, (file, name) => schema(file).$defs[name]);
  const code = await compile(
    asRead(reuse(whole, declared)),
    root.title,
    OPTIONS
  );
  // json-schema-to-typescript tells where each definition came from, naming no file (it has none).
  return code.replace(
    /\n \* *\n \* This interface was referenced by [^\n]*\n \* via the `definition` "[^"]*"\./g,
    ''
  );
}

async function format(code, target) {
  const options = await prettier.resolveConfig(target);
  return prettier.format(code, { ...options, parser: 'typescript' });
}

async function schemaTs() {
  const { version } = JSON.parse(readFileSync(PACKAGE, 'utf8'));
  return format(
    '// Generated by `jlpm build:schema` (labextension/scripts/schema.mjs) from jupyter_gpumem/wire/schemas/\n' +
      '// comm.v1.json and api.v1.json, the reference, its codes from jupyter_gpumem/words/en.json, and\n' +
      '// package.json: edit those, not this.\n' +
      '/** This release of jupyter-gpumem (package.json), named where a kernel of another protocol is refused. */\n' +
      `export const PACKAGE_VERSION = ${JSON.stringify(version)};\n` +
      `export const COMM_SCHEMA = ${JSON.stringify(strip(schema('comm.v1.json')))} as const;\n` +
      `export const API_SCHEMA = ${JSON.stringify(strip(bundled(schema('api.v1.json'))))} as const;\n`,
    join(WIRE, 'schema.ts')
  );
}

async function typesTs() {
  const comm = schema('comm.v1.json');
  // The API's shapes that are the comm's (UserShare, PolicyState…) take the comm's types.
  const declared = titled(comm);
  const [commTypes, apiTypes] = [
    await types(comm),
    await types(schema('api.v1.json'), declared)
  ];
  return format(
    '// Generated from jupyter_gpumem/wire/schemas/comm.v1.json and api.v1.json (the codes from\n' +
      '// jupyter_gpumem/words/en.json) by `jlpm build:schema` (labextension/scripts/schema.mjs,\n' +
      '// json-schema-to-typescript): do not edit; edit the schemas.\n' +
      '// The values as protocol.ts and api.ts give them: camelCase, defaults filled in (the script says how).\n\n' +
      commTypes +
      '\n' +
      apiTypes,
    join(WIRE, 'types.ts')
  );
}

/**
 * SampleGpu's declared lines (`x-line` on one of its properties: {words, format}), in the schema's order: each
 * surface words the ones whose field is not null (format/panel.ts; render/viewtext.py from the Python twin that
 * tests/wire/test_generated.py writes). The field as the reader gives it (camelCase); a line anywhere else is
 * refused, as no surface would show it.
 */
function declaredLines() {
  const comm = read('comm.v1.json');
  const lines = Object.entries(comm.$defs.gpu.properties)
    .filter(([, node]) => LINE in node)
    .map(([field, node]) => ({
      field: camel(field),
      words: node[LINE].words,
      format: node[LINE].format
    }));
  const stray = [];
  const walk = (node, at) => {
    if (Array.isArray(node)) {
      node.forEach((item, i) => walk(item, `${at}/${i}`));
    } else if (isObject(node)) {
      for (const [key, value] of Object.entries(node)) {
        if (key === LINE && !/^\/\$defs\/gpu\/properties\/\w+$/.test(at)) {
          stray.push(`${at}/${key}`);
        }
        walk(value, `${at}/${key}`);
      }
    }
  };
  walk(comm, '');
  if (stray.length > 0) {
    throw new Error(
      `comm.v1.json: a line is declared on a SampleGpu property only, not at ${stray.join(', ')}`
    );
  }
  return lines;
}

async function linesTs() {
  return format(
    "// Generated by `jlpm build:schema` (labextension/scripts/schema.mjs) from the `x-line` of SampleGpu's\n" +
      '// properties in jupyter_gpumem/wire/schemas/comm.v1.json: edit that, not this.\n' +
      "import type { SampleGpu } from './types';\n\n" +
      '/**\n' +
      " * The GPU's lines its schema declares (docs/protocol.md, \"A field's line\"), in the order shown: a field's\n" +
      ' * figure, where it is not null, formatted as `format` says in place of `%1` in its words (a message of the\n' +
      ' * catalogue). format/panel.ts words them; render/viewtext.py words the same lines.\n' +
      ' */\n' +
      `export const GPU_LINES = ${JSON.stringify(declaredLines())} as const satisfies readonly {\n` +
      '  readonly field: keyof SampleGpu;\n' +
      '  readonly words: string;\n' +
      '  readonly format: string;\n' +
      '}[];\n\n' +
      'export type GpuLine = (typeof GPU_LINES)[number];\n',
    join(WIRE, 'lines.ts')
  );
}

const FILES = {
  'schema.ts': schemaTs,
  'types.ts': typesTs,
  'lines.ts': linesTs
};
const print = process.argv.indexOf('--print');
if (print >= 0) {
  process.stdout.write(await FILES[process.argv[print + 1]]());
} else {
  for (const [name, generate] of Object.entries(FILES)) {
    writeFileSync(join(WIRE, name), await generate());
  }
  // The catalogues of words (jupyter_gpumem/words/, the one source): the sidebar bundles copies, since tsc
  // neither copies nor rewrites a JSON import from outside labextension/src; tests/ts/words.test.ts holds them
  // equal.
  const words = join(ROOT, 'jupyter_gpumem', 'words');
  for (const name of readdirSync(words).filter(n => n.endsWith('.json'))) {
    copyFileSync(
      join(words, name),
      join(ROOT, 'labextension', 'src', 'format', 'catalogue', name)
    );
  }
  // The chart's thresholds and constants (jupyter_gpumem/render/chart.json), alike: tests/ts/constants.test.ts.
  copyFileSync(
    join(ROOT, 'jupyter_gpumem', 'render', 'chart.json'),
    join(ROOT, 'labextension', 'src', 'model', 'chart.json')
  );
}
