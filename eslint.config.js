import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import reactHooks from 'eslint-plugin-react-hooks';

const WORDS_IN_I18N = 'Words on screen come from t in web/src/i18n.ts.';

export default tseslint.config(
  { ignores: ['node_modules/', 'data/', 'coverage/', 'web/dist/', 'web/test-output/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', setImmediate: 'readonly', AbortController: 'readonly', TextEncoder: 'readonly', TextDecoder: 'readonly', fetch: 'readonly', structuredClone: 'readonly', performance: 'readonly', queueMicrotask: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'off',
      eqeqeq: ['error', 'always'],
    },
  },
  {
    // The web app runs in browsers: their globals, and the SDK as its only way to the server.
    files: ['web/src/**/*.{ts,tsx}'],
    plugins: { 'react-hooks': reactHooks },
    languageOptions: { globals: { window: 'readonly', document: 'readonly', getComputedStyle: 'readonly', navigator: 'readonly', requestAnimationFrame: 'readonly', cancelAnimationFrame: 'readonly' } },
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ regex: '(^|/)src/(services|platform|gateway|cli)/', message: 'The web app speaks the public API through src/client only.' }] }],
      // The classic hook rules: hooks called unconditionally, and every value an effect reads among its dependencies.
      'react-hooks/rules-of-hooks': 'error',
      'react-hooks/exhaustive-deps': 'warn',
    },
  },
  {
    // Every word a person reads comes from web/src/i18n.ts, so a translation replaces one object.
    files: ['web/src/**/*.tsx'],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: 'JSXText[value=/\\p{L}/u]', message: WORDS_IN_I18N },
        { selector: ':matches(JSXElement, JSXFragment) > JSXExpressionContainer > Literal[value=/\\p{L}/u]', message: WORDS_IN_I18N },
        { selector: ':matches(JSXElement, JSXFragment) > JSXExpressionContainer > TemplateLiteral > TemplateElement[value.raw=/\\p{L}/u]', message: WORDS_IN_I18N },
        {
          selector: 'JSXAttribute[name.name=/^(aria-label|aria-description|aria-placeholder|aria-roledescription|aria-valuetext|title|placeholder|alt|label|hint)$/] > Literal[value=/\\p{L}/u]',
          message: WORDS_IN_I18N,
        },
      ],
    },
  },
  {
    // The web app's service worker: plain JavaScript served as it is, in the worker's scope.
    files: ['web/public/sw.js'],
    languageOptions: { globals: { self: 'readonly', caches: 'readonly', fetch: 'readonly', console: 'readonly', URL: 'readonly' } },
  },
  {
    // The SDK runs in browsers and apps: no server code.
    files: ['src/client/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ regex: '^\\.\\./', message: 'The client SDK imports nothing outside src/client.' }] }],
    },
  },
  {
    // A module raises errors through its own errors.ts, which declares its codes before any is raised.
    files: ['src/services/**/*.ts'],
    ignores: ['src/services/*/errors.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: 'platform/http/errors\\.ts$', importNames: ['AppError'], message: "Import AppError from the module's errors.ts." }] },
      ],
    },
  },
);
