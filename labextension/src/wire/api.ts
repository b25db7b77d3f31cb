/**
 * The server extension's `GET /api/gpumem/v1` body (docs/server.md), as the sidebar's kernel list reads it:
 * checked against its schema (schema.ts's API_SCHEMA, generated from jupyter_gpumem/wire/schemas/api.v1.json;
 * validate.ts) with the defaults of what an older server leaves out, and given camelCased.
 */

import { camelize } from './camelize';
import { API_SCHEMA } from './schema';
import type { ServerBody } from './types';
import { problem } from './validate';

/** The body, or null when the schema does not admit it (a server of another version, say). */
export function readServerBody(body: unknown): ServerBody | null {
  return problem(API_SCHEMA, body, 'body') === null
    ? (camelize(body) as ServerBody)
    : null;
}
