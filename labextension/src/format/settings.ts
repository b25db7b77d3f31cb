/**
 * The Settings editor's words for GPU Memory (labextension/schema/plugin.json) in the interface's language.
 *
 * jupyterlab_server translates a schema's titles and descriptions only from language packs, never from a package's
 * own catalogue (docs/i18n-plumbing.md, "Settings schema strings"), so the schema comes to the page in English.
 * These are the strings it would translate, in the context it would ask each in
 * (translation_utils.DEFAULT_SCHEMA_SELECTORS, the same table as jupyter_gpumem/i18n/extract.py SCHEMA_SELECTORS,
 * which puts them in the catalogue): the kernels plugin's settings-registry `fetch` transform (index.ts) words them
 * with our bundle.
 */

import type { Trans } from './trans';

type Json = { [key: string]: unknown };

const SELECTORS: [RegExp, string][] = [
  [/^\/properties\/.*\/title$/, 'settings'],
  [/^\/properties\/.*\/description$/, 'settings'],
  [/^\/definitions\/.*\/properties\/.*\/title$/, 'settings'],
  [/^\/definitions\/.*\/properties\/.*\/description$/, 'settings'],
  [/^\/title$/, 'schema'],
  [/^\/description$/, 'schema'],
  [/^\/jupyter\.lab\.setting-icon-label$/, 'settings'],
  [/^\/jupyter\.lab\.menus\/.*\/label$/, 'menu'],
  [/^\/jupyter\.lab\.toolbars\/.*\/label$/, 'toolbar']
];

function walk(value: Json, prefix: string, trans: Trans): Json {
  const out: Json = {};
  for (const [key, item] of Object.entries(value)) {
    const path = `${prefix}/${key}`;
    if (typeof item === 'string') {
      const context = SELECTORS.find(([pattern]) => pattern.test(path))?.[1];
      const schemaText = item;
      out[key] = context === undefined ? item : trans._p(context, schemaText); // i18n: schema
    } else if (Array.isArray(item)) {
      out[key] = item.map((element, i) =>
        element !== null && typeof element === 'object'
          ? walk(element as Json, `${path}[${i}]`, trans)
          : element
      );
    } else if (item !== null && typeof item === 'object') {
      out[key] = walk(item as Json, path, trans);
    } else {
      out[key] = item;
    }
  }
  return out;
}

/** A copy of a settings schema with the strings jupyterlab_server would translate worded by `trans`, in the contexts
 * it asks them in; every other value as it was. */
export function translateSchema<T extends object>(schema: T, trans: Trans): T {
  return walk(schema as Json, '', trans) as T;
}
