// ESLint: typescript-eslint's strict type-checked rules over the TypeScript sources and tests.
// Formatting is Prettier's (npm run format); ESLint does not judge layout.
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  {ignores: ['dist/', 'node_modules/', 'bench/results/']},
  js.configs.recommended,
  {
    files: ['**/*.ts'],
    extends: [...tseslint.configs.strictTypeChecked],
    languageOptions: {parserOptions: {project: './tsconfig.test.json', tsconfigRootDir: import.meta.dirname}},
    rules: {
      // Numbers, booleans and nullable values in messages are deliberate and readable.
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        {allowNumber: true, allowBoolean: true, allowNullish: true},
      ],
      // Callbacks written as `() => run()` read as "do this"; braces would add nothing.
      '@typescript-eslint/no-confusing-void-expression': ['error', {ignoreArrowShorthand: true}],
      // With noUncheckedIndexedAccess every row access is `T | undefined`; `!` marks the rows a
      // statement guarantees (INSERT … RETURNING one row, an aggregate), checked on the line it is used.
      '@typescript-eslint/no-non-null-assertion': 'off',
      // `_name` marks a parameter a callback signature requires and this implementation ignores.
      '@typescript-eslint/no-unused-vars': [
        'error',
        {argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_'},
      ],
      // A function longer than a screen hides its steps: split it where the pieces have names.
      'max-lines-per-function': ['warn', {max: 80, skipBlankLines: true, skipComments: true, IIFEs: true}],
    },
  },
  {
    // Tests read rows back with knex, which types them `any`, and check them with expect(): the
    // assertion is the type check, so the no-unsafe family would only ask for casts.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      // `afterAll(() => db?.drop())`: teardown must survive a beforeAll that failed before assigning.
      '@typescript-eslint/no-unnecessary-condition': 'off',
      // A describe() block is a chapter of the test plan, not a function to split.
      'max-lines-per-function': 'off',
    },
  },
  {
    // A fixture migration is Airflow's DDL for one release, table by table, in Airflow's order.
    files: ['migrations/**/*.ts'],
    rules: {'max-lines-per-function': 'off'},
  },
  {
    files: ['bin/*.js', 'eslint.config.js'],
    languageOptions: {globals: {process: 'readonly', setTimeout: 'readonly'}},
  },
  {
    // Maintenance scripts run by hand with plain Node (their headers say when).
    files: ['scripts/*.mjs', 'scripts/executable/*.mjs'],
    languageOptions: {globals: {process: 'readonly', console: 'readonly', URL: 'readonly', Buffer: 'readonly'}},
  },
  {
    // The single executable's launcher: a CommonJS script, Node.js's injected main.
    files: ['scripts/executable/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: {process: 'readonly', require: 'readonly', Buffer: 'readonly', globalThis: 'readonly'},
    },
  },
)
