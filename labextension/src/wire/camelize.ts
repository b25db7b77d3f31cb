/** snake_case keys, as the kernel and the server send them, to the camelCase of the types (types.ts). A Said's
 * values keep their names, nested Saids included: they are the placeholders of the catalogue's templates
 * (jupyter_gpumem/words/en.json), which format/words.ts looks them up by. */
export function camelize(value: unknown): unknown {
  if (Array.isArray(value)) {
    return value.map(camelize);
  }
  if (typeof value === 'object' && value !== null) {
    const said = typeof (value as { code?: unknown }).code === 'string';
    return Object.fromEntries(
      Object.entries(value).map(([key, v]) => [
        key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()),
        said && key === 'values' ? v : camelize(v)
      ])
    );
  }
  return value;
}
