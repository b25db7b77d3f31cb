// The wire formats' schemas (jupyter_gpumem/wire/schemas/) against the fixtures the Python tests run too
// (tests/wire/test_schemas.py): ajv, a complete draft 2020-12 validator, is the reference for all three
// formats; the sidebar's own validator (validate.ts, on the generated schema.ts) must agree with it on
// every protocol and API fixture.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import Ajv2020 from 'ajv/dist/2020';

import { API_SCHEMA, COMM_SCHEMA } from '../../labextension/src/wire/schema';
import { problem } from '../../labextension/src/wire/validate';

const ROOT = process.cwd();
const SCHEMAS = join(ROOT, 'jupyter_gpumem', 'wire', 'schemas');
const FIXTURES = join(ROOT, 'tests', 'fixtures');
const read = (path: string): unknown => JSON.parse(readFileSync(path, 'utf8'));

const ajv = new Ajv2020({
  // A property's sidebar line (docs/protocol.md, "A field's line"): an annotation, which checks nothing.
  keywords: ['x-line'],
  schemas: ['comm', 'report', 'api'].map(name =>
    read(join(SCHEMAS, `${name}.v1.json`))
  ) as object[]
});
const id = (name: string) =>
  `https://github.com/jupyter-gpumem/jupyter-gpumem/raw/main/jupyter_gpumem/wire/schemas/${name}`;

/** Which schema checks a fixture: its folder's, and the server's notice files (notice*.json) theirs. */
function reference(folder: string, name: string) {
  const uri = name.startsWith('notice')
    ? id('report.v1.json#/$defs/notice_file')
    : id(
        { protocol: 'comm', report: 'report', api: 'api' }[folder] + '.v1.json'
      );
  const validate = ajv.getSchema(uri);
  assert.ok(validate, uri);
  return validate;
}

function fixtures(folder: string, malformed: boolean): [string, unknown][] {
  const dir = join(FIXTURES, folder, ...(malformed ? ['malformed'] : []));
  return readdirSync(dir)
    .filter(name => name.endsWith('.json'))
    .sort()
    .map(name => [name, read(join(dir, name))]);
}

for (const file of ['schema.ts', 'types.ts', 'lines.ts']) {
  test(`the generated ${file} is what the generator writes from the schemas now`, () => {
    const generated = execFileSync(process.execPath, [
      join(ROOT, 'labextension', 'scripts', 'schema.mjs'),
      '--print',
      file
    ]).toString();
    assert.equal(
      readFileSync(join(ROOT, 'labextension', 'src', 'wire', file), 'utf8'),
      generated,
      `labextension/src/wire/${file} is out of date: run jlpm build:schema`
    );
  });
}

for (const folder of ['protocol', 'report', 'api']) {
  test(`every valid ${folder} fixture passes the schema, every malformed one is refused`, () => {
    const valid = fixtures(folder, false);
    const malformed = fixtures(folder, true);
    assert.ok(valid.length >= 1 && malformed.length >= 5);
    for (const [name, data] of valid) {
      const validate = reference(folder, name);
      assert.ok(validate(data), `${name}: ${JSON.stringify(validate.errors)}`);
    }
    for (const [name, data] of malformed) {
      assert.equal(reference(folder, name)(data), false, name);
    }
  });
}

for (const [folder, schema, where] of [
  ['protocol', COMM_SCHEMA, 'message'],
  ['api', API_SCHEMA, 'body']
] as const) {
  test(`the sidebar's validator agrees with ajv on every ${folder} fixture, and says where`, () => {
    const check = reference(folder, `${folder}.json`);
    for (const malformed of [false, true]) {
      for (const [name, data] of fixtures(folder, malformed)) {
        const found = problem(schema, structuredClone(data), where);
        assert.equal(found === null, check(data), `${name}: ${found}`);
        assert.ok(found === null || found.startsWith(where), found ?? '');
      }
    }
  });
}

test("a body's sentences as codes (the comm schema's said) are checked as ajv checks them", () => {
  const check = reference('api', 'api.json');
  const body = read(join(FIXTURES, 'api', 'body.json')) as object;
  const agree = (said: unknown) => {
    const data = { ...body, problem_said: said };
    const found = problem(API_SCHEMA, structuredClone(data), 'body');
    assert.equal(
      found === null,
      check(data),
      `${JSON.stringify(said)}: ${found}`
    );
    return found === null;
  };
  assert.equal(agree({ code: 'no_driver', values: {} }), true);
  assert.equal(agree({ code: 7, values: {} }), false);
  assert.equal(agree({ code: 'no_driver', values: 'GPU 0' }), false);
});

test('a keyword the validator does not know is an error, not a pass', () => {
  assert.throws(
    () => problem({ type: 'string', pattern: '^GPU-' }, 'GPU-1', 'uuid'),
    /the schema uses pattern, which validate\.ts does not know/
  );
});
