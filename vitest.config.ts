import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    // A real PostgreSQL for the server tests: DATABASE_URL, or an embedded one started for the run.
    globalSetup: ['packages/server/test/global-setup.ts'],
    // Type tests (expectTypeOf, @ts-expect-error) run with the suite.
    typecheck: { enabled: true, include: ['**/*.test-d.ts'], tsconfig: './tsconfig.json' },
    // CI asks for a JSON report too, to print its closing "N passed, N failed" line.
    reporters: process.env.VITEST_JSON_REPORT ? ['default', 'json'] : ['default'],
    outputFile: process.env.VITEST_JSON_REPORT ? { json: process.env.VITEST_JSON_REPORT } : undefined,
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
