import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// The layers of labextension/src, lowest first: wire (the protocol and its schema), model (state, no DOM),
// format (words and numbers, pure), chart (the chart's figure, scales and tails, pure: no DOM), widgets (DOM
// and Lumino), then index.ts (the plugins). A layer imports only those below it, format takes only the
// model's types, and nothing imports the plugins.
const PLUGINS = { regex: '(^\\.\\.|labextension/src)(/index)?$' };
const layer = (...patterns) => ({
  '@typescript-eslint/no-restricted-imports': [
    'error',
    {
      patterns: [PLUGINS, ...patterns].map(p => ({
        message: 'eslint.config.mjs: a layer imports only the layers below it',
        ...p
      }))
    }
  ]
});

export default tseslint.config(
  {
    ignores: ['lib/', 'node_modules/', 'jupyter_gpumem/labextension/', 'build/']
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      eqeqeq: 'error',
      curly: ['error', 'all'],
      '@typescript-eslint/no-unused-vars': ['error', { args: 'none' }]
    }
  },
  {
    files: ['labextension/src/wire/**'],
    rules: layer({ regex: '^\\.\\./' })
  },
  {
    files: ['labextension/src/model/**'],
    rules: layer({ regex: '^\\.\\./(format|chart|widgets)/' })
  },
  {
    files: ['labextension/src/format/**'],
    rules: layer(
      { regex: '^\\.\\./(chart|widgets)/' },
      { regex: '^\\.\\./model/', allowTypeImports: true }
    )
  },
  {
    files: ['labextension/src/chart/**'],
    rules: {
      ...layer({ regex: '^\\.\\./widgets/' }),
      // Pure, tested in node: the page is widgets/chart.ts's.
      'no-restricted-globals': ['error', 'window', 'document', 'navigator']
    }
  },
  { files: ['labextension/src/widgets/**', 'tests/ts/**'], rules: layer() }
);
