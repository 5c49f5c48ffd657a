// Two workers on one database (two engines, each with its own pg-boss worker and connection pools, as two
// processes would have): the provisioning limit and the provider rate limit hold across both, because their
// state lives in PostgreSQL.
import { createPlatformClient } from '@platform/client';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { providerRateLimit } from '../src/providers/rate-limit.ts';
import { createRuntime } from '../src/runtime.ts';
import { createTestDatabase, newUser, serverLogger, startTestServer, TestClock, type TestDatabase, type TestServer } from './support.ts';

const RATE = 10;
let database: TestDatabase;
let server: TestServer;
let runtimes: ReturnType<typeof createRuntime>[] = [];
const clock = new TestClock();
/** Every provider call of both workers: the moment the shared limiter reserved for it, and when it began. */
const calls: { slot: number; began: number }[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  const config = loadConfig({ PROVIDER_RATE_LIMIT: String(RATE), SIM_BOOT_SECONDS: '20', SIM_CONTROL_PLANE_SECONDS: '0' });
  runtimes = [0, 1].map(() => {
    // Each worker has its own limiter object, as a process would; they share only the database.
    const shared = providerRateLimit(database.db, RATE);
    const rateLimit = {
      async take(key: string) {
        const slot = await shared.take(key);
        calls.push({ slot, began: Date.now() });
        return slot;
      },
      defer: (key: string, untilMs: number) => shared.defer(key, untilMs),
    };
    return createRuntime({
      db: database.db,
      connectionString: database.url,
      clock,
      logger: serverLogger(),
      config,
      simulation: { followPollMs: 20 },
      tickMs: 20,
      orphanAfterSeconds: 1,
      rateLimit,
    });
  });
  for (const runtime of runtimes) await runtime.engine.run({ work: true });
  server = await startTestServer(database.db, clock, {}, { workflows: runtimes[0]!.engine, provider: runtimes[0]!.provider, driver: runtimes[0]!.driver });
});

afterAll(async () => {
  await server?.close();
  await Promise.all(runtimes.map((r) => r.engine.stop()));
  await database?.drop();
});

it('keep a free cluster at one provision at a time, and provider calls under the shared rate', async () => {
  const user = await newUser(database.db, clock, 'free');
  const api = createPlatformClient({ baseUrl: server.baseUrl, token: user.token, retry: false });
  const cluster = await api.POST('/v1/clusters', { body: { name: 'shared', region_id: 'fsn1' } });
  const credential = await api.POST('/v1/compute/cloud_credentials', {
    body: { name: 'own', provider: 'hcloud', secret: 'hcloud-token-0123456789abcdef0123456789abcdef' },
  });
  const config = await api.POST('/v1/compute/configs', {
    body: {
      name: 'byom',
      provider: 'hcloud',
      provider_config: { provider: 'hcloud', region: 'fsn1', image: 'ubuntu-24.04', machine_type_filter: 'cx2*' },
      cloud_credential_id: credential.id,
    },
  });
  const deadline = Date.now() + 20_000;
  while ((await api.GET('/v1/clusters/{clusterId}', { params: { path: { clusterId: cluster.id } } })).kaas.status !== 'RUNNING') {
    if (Date.now() > deadline) throw new Error('cluster did not run');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  for (let i = 0; i < 6; i++) await api.POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: config.id } });
  const machines = () => api.GET('/v1/compute/machines', { params: { query: { cluster_id: cluster.id } } });
  for (;;) {
    const list = await machines();
    expect(list.filter((m) => m.status === 'provisioning').length).toBeLessThanOrEqual(1);
    if (list.every((m) => m.status === 'ready')) break;
    if (Date.now() > deadline) throw new Error(`machines did not become ready: ${JSON.stringify(list.map((m) => m.status))}`);
    clock.advance(5);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  // The limiter reserved one moment per call, RATE a second at most across both workers, and no call began
  // before its moment. (A call may begin late, by a database round trip or a busy event loop; that only
  // spaces calls out further.)
  const { rows: recorded } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM simulated_cloud.calls`.execute(database.db);
  expect(calls.length).toBe(recorded[0]!.n);
  expect(calls.length).toBeGreaterThan(RATE);
  const slots = calls.map((c) => c.slot).sort((a, b) => a - b);
  for (let i = 0; i + RATE < slots.length; i++) expect(slots[i + RATE]! - slots[i]!).toBeGreaterThanOrEqual(1000);
  // The database runs on this machine, so its clock is ours (a timer may fire a millisecond early).
  for (const call of calls) expect(call.began).toBeGreaterThanOrEqual(call.slot - 2);
});
