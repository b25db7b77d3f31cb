// The protocol fixtures shared with the Python tests (tests/fixtures/protocol/).
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export const PROTOCOL_FIXTURES = join(
  process.cwd(),
  'tests',
  'fixtures',
  'protocol'
);

export function fixture(name: string): unknown {
  return JSON.parse(readFileSync(join(PROTOCOL_FIXTURES, name), 'utf8'));
}

export function malformed(): [string, unknown][] {
  const dir = join(PROTOCOL_FIXTURES, 'malformed');
  return readdirSync(dir)
    .filter(name => name.endsWith('.json'))
    .sort()
    .map(name => [name, JSON.parse(readFileSync(join(dir, name), 'utf8'))]);
}
