import { defineConfig } from 'vitest/config';

/**
 * The second tier: tests that start processes (the server, the CLI, `pnpm mock`, tsc, curl), drive a real browser,
 * pack and install the client, kill workers and PostgreSQL, or fuzz the whole contract. `pnpm test` runs both tiers;
 * `pnpm test:fast`, for the edit loop, only the first.
 */
const SLOW = [
  // processes
  'packages/server/test/lifecycle.test.ts',
  // the container image, built and run with podman
  'test/deploy/image.test.ts',
  'packages/server/test/first-run.test.ts',
  'packages/server/test/faults.test.ts',
  // the real `platform` process (the other CLI tests drive it in-process, in the first tier)
  'packages/cli/test/process.test.ts',
  'packages/server/test/stopping.test.ts',
  'test/pnpm-voice.test.ts',
  'test/generators.test.ts',
  // Redocly's bundler, once per case
  'test/contract-gate.test.ts',
  'test/smoke.test.ts',
  'packages/server/test/smoke-doubles.test.ts',
  // a real PgBouncer and `pnpm start` behind it
  'packages/server/test/pgbouncer.test.ts',
  // a real Prometheus scraping the metrics
  'packages/server/test/metrics.test.ts',
  'test/exit-code/exit-code.test.ts',
  'test/mock/*.test.ts',
  'test/docs/code-samples.test.ts',
  'test/docs/curl-samples.test.ts',
  // browsers
  'packages/client/test/browser.test.ts',
  'packages/server/test/device-page.test.ts',
  'test/docs/docs.test.ts',
  // the packed client
  'test/client-package/*.test.ts',
  // crashes: killed workers, a restarted PostgreSQL
  'packages/server/test/crash.test.ts',
  'packages/server/test/database-restart.test.ts',
  // every workflow kind walked for hours of test clock against a cloud that never finishes
  'packages/server/test/workflow-bounds.test.ts',
  // the contract fuzzer's generated requests (50 per operation and kind): minutes, not for the edit loop
  'test/fuzz/*.test.ts',
];

/**
 * Server tests run a second time through a real PgBouncer in transaction mode (the `pgbouncer` project, whose
 * pgbouncer-setup.ts starts it when the project has files in the run): their databases' pools go through the pooler with prepared statements off, what keeps a session goes
 * direct, as with DATABASE_URL and DATABASE_DIRECT_URL in production. The files cover requests, a user's journey,
 * workflows end to end, two workers, events and streams with the access listener, tokens, the device flow,
 * invitations, idempotency, rate limits, quotas and webhook deliveries; the others run the same queries on the same
 * paths.
 */
const THROUGH_PGBOUNCER = [
  'packages/server/test/api.test.ts',
  'packages/server/test/workflows.test.ts',
  'packages/server/test/two-workers.test.ts',
  'packages/server/test/stream-access.test.ts',
  'packages/server/test/stream-reauth.test.ts',
  'packages/server/test/access-cache.test.ts',
  'packages/server/test/idempotency-in-flight.test.ts',
  'packages/server/test/rate-limit.test.ts',
  'packages/server/test/quotas.test.ts',
  'packages/server/test/webhooks-delivery.test.ts',
  'packages/server/test/webhooks-claim.test.ts',
  'packages/server/test/journey.test.ts',
  'packages/server/test/events.test.ts',
  'packages/server/test/event-stream.test.ts',
  'packages/server/test/tokens.test.ts',
  'packages/server/test/device-flow.test.ts',
  'packages/server/test/invitations.test.ts',
];

/** After each file, what its in-process test servers logged is scanned for credentials (a found one fails it). */
const LOG_SCAN = 'packages/server/test/support/log-scan.setup.ts';

export default defineConfig({
  test: {
    // A real PostgreSQL for the server tests: DATABASE_URL, or an embedded one started once for the run.
    globalSetup: ['packages/server/test/global-setup.ts'],
    // The type tests (`*.test-d.ts`: expectTypeOf, @ts-expect-error) are checked by `pnpm typecheck`, which
    // `pnpm test` runs before vitest.
    // CI asks for a JSON report too, to print its closing "N passed, N failed" line (both tiers in one report).
    reporters: process.env.VITEST_JSON_REPORT ? ['default', 'json'] : ['default'],
    outputFile: process.env.VITEST_JSON_REPORT ? { json: process.env.VITEST_JSON_REPORT } : undefined,
    // The most files at once of any tier (each tier's own count is below).
    maxWorkers: 4,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      // The first tier's tests mostly wait (on servers, PostgreSQL, clocks), so it runs more files at once than the
      // machine has cores; the second tier's start processes and browsers that compute, so it runs after it with
      // fewer at once (vitest runs a project with a worker count of its own as a group of its own).
      {
        test: { name: 'fast', include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts'], exclude: SLOW, setupFiles: [LOG_SCAN], maxWorkers: 4 },
      },
      { test: { name: 'slow', include: SLOW, setupFiles: [LOG_SCAN], maxWorkers: 3, sequence: { groupOrder: 1 } } },
      {
        test: {
          name: 'pgbouncer',
          include: THROUGH_PGBOUNCER,
          globalSetup: ['packages/server/test/pgbouncer-setup.ts'],
          setupFiles: [LOG_SCAN],
          maxWorkers: 3,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
