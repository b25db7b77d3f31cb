/**
 * A JSON Schema validator for the few keywords the protocol's schema uses (schema.ts, generated from
 * jupyter_gpumem/wire/schemas/comm.v1.json). A compiled validator (ajv, schemasafe) would add 25–60 KB
 * to the inline view's bundle; this adds about 1.5 KB. A keyword it does not know throws at once, so a
 * schema that grows one cannot be half-checked; tests/ts/schema.test.ts runs every fixture through it
 * and through ajv, the reference, and both must agree.
 */

type Schema = { readonly [keyword: string]: unknown };
type Json = Record<string, unknown>;

const KEYWORDS = new Set([
  '$id',
  '$defs',
  '$ref',
  'type',
  'enum',
  'const',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'maxLength',
  'required',
  'properties',
  'additionalProperties',
  'items',
  'anyOf',
  'allOf',
  'if',
  'then',
  'default'
]);

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const TYPES: Record<string, (value: unknown) => boolean> = {
  object: isObject,
  array: Array.isArray,
  string: value => typeof value === 'string',
  boolean: value => typeof value === 'boolean',
  null: value => value === null,
  number: value => typeof value === 'number' && Number.isFinite(value),
  integer: value => Number.isInteger(value)
};

/**
 * What is wrong with `value` under `schema` (a phrase that names where: "sample.gpus[0].used_bytes must be
 * integer or null"), or null when nothing is. A property that is absent gets the schema's `default`, as
 * the schema's versioning rule says: a field a kernel of an older release does not send.
 */
export function problem(
  root: Schema,
  value: unknown,
  where: string,
  schema: Schema = root
): string | null {
  const check = (sub: unknown, v: unknown, at: string) =>
    problem(root, v, at, sub as Schema);
  for (const keyword of Object.keys(schema)) {
    if (!KEYWORDS.has(keyword)) {
      throw new Error(
        `the schema uses ${keyword}, which validate.ts does not know`
      );
    }
  }
  const { $ref, type, minimum, maximum, exclusiveMinimum, maxLength } = schema;
  if (typeof $ref === 'string') {
    const found = check(resolve(root, $ref), value, where);
    if (found !== null) {
      return found;
    }
  }
  if (type !== undefined) {
    const types = ([] as unknown[]).concat(type) as string[];
    if (!types.some(name => TYPES[name](value))) {
      return `${where} must be ${types.join(' or ')}`;
    }
  }
  if (Array.isArray(schema.enum) && !schema.enum.includes(value)) {
    return `${where} must be one of ${schema.enum.map(String).join(', ')}`;
  }
  if ('const' in schema && value !== schema.const) {
    return `${where} must be ${JSON.stringify(schema.const)}`;
  }
  if (typeof value === 'number') {
    if (typeof minimum === 'number' && value < minimum) {
      return `${where} must be at least ${minimum}`;
    }
    if (typeof maximum === 'number' && value > maximum) {
      return `${where} must be at most ${maximum}`;
    }
    if (typeof exclusiveMinimum === 'number' && value <= exclusiveMinimum) {
      return `${where} must be more than ${exclusiveMinimum}`;
    }
  }
  // In characters (code points), as JSON Schema counts them, not UTF-16 units.
  if (
    typeof value === 'string' &&
    typeof maxLength === 'number' &&
    [...value].length > maxLength
  ) {
    return `${where} must be at most ${maxLength} characters`;
  }
  if (isObject(value)) {
    for (const name of (schema.required as string[] | undefined) ?? []) {
      if (!(name in value)) {
        return `${where}.${name} is missing`;
      }
    }
    const properties = (schema.properties ?? {}) as Record<string, Schema>;
    for (const [name, sub] of Object.entries(properties)) {
      if (name in value) {
        const found = check(sub, value[name], `${where}.${name}`);
        if (found !== null) {
          return found;
        }
      } else if ('default' in sub) {
        value[name] = sub.default;
      }
    }
    const others = schema.additionalProperties;
    if (others !== undefined) {
      for (const name of Object.keys(value).filter(n => !(n in properties))) {
        const found =
          others === false
            ? `${where}.${name} is not allowed`
            : check(others, value[name], `${where}.${name}`);
        if (found !== null) {
          return found;
        }
      }
    }
  }
  if (Array.isArray(value) && schema.items !== undefined) {
    for (const [i, item] of value.entries()) {
      const found = check(schema.items, item, `${where}[${i}]`);
      if (found !== null) {
        return found;
      }
    }
  }
  if (Array.isArray(schema.anyOf)) {
    const found = schema.anyOf.map(sub => check(sub, value, where));
    // Every alternative failed: the first one's reason (the protocol's are "this, or null").
    if (!found.includes(null)) {
      return found[0];
    }
  }
  for (const sub of (schema.allOf as Schema[] | undefined) ?? []) {
    const found = check(sub, value, where);
    if (found !== null) {
      return found;
    }
  }
  if (schema.if !== undefined && check(schema.if, value, where) === null) {
    return check(schema.then ?? {}, value, where);
  }
  return null;
}

/** A reference within the schema: `#/$defs/name`. */
function resolve(root: Schema, ref: string): Schema {
  const defs = root.$defs as Record<string, Schema>;
  const name = ref.replace('#/$defs/', '');
  if (!ref.startsWith('#/$defs/') || !(name in defs)) {
    throw new Error(
      `the schema refers to ${ref}, which validate.ts cannot resolve`
    );
  }
  return defs[name];
}
