/** snake_case keys, as the kernel and the server send them, to the camelCase of the types (types.ts). */
export function camelize(value: unknown): unknown {
  if (Array.isArray(value)) {
    return value.map(camelize);
  }
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([key, v]) => [
        key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()),
        camelize(v)
      ])
    );
  }
  return value;
}
