import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['lib/', 'node_modules/', 'jupyter_gpumem/labextension/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      eqeqeq: 'error',
      curly: ['error', 'all'],
      '@typescript-eslint/no-unused-vars': ['error', { args: 'none' }]
    }
  }
);
