// PostgreSQL restarted while workflows run: the workers ride out the outage, and every workflow finishes
// after it, none twice (one release per install, one server per machine, one notification per outcome), and no
// connection's 'error' event goes unheard (vitest fails the run on an uncaught "Connection terminated").
// The test starts an embedded PostgreSQL of its own, so it can stop and start it without touching the
// machine's.
import { sql } from 'kysely';
import { afterAll, expect, it } from 'vitest';
import { systemClock } from '../src/clock.ts';
import { loadConfig } from '../src/config.ts';
import { type Connection, openDatabase } from '../src/db/connect.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { createUser, seedSampleResources } from '../src/db/seed.ts';
import { rowOnlyStarter } from '../src/engine/engine.ts';
import { newId } from '../src/ids.ts';
import { createRuntime } from '../src/runtime.ts';
import { scratchPostgres } from './global-setup.ts';
import { serverLogger } from './support/server-logs.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const step of cleanup.reverse()) await step().catch(() => {});
});

/** Reads through the outage: a query that fails while PostgreSQL is down is tried again. */
async function settledCount(connection: Connection): Promise<number> {
  for (;;) {
    try {
      const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM workflows WHERE status IN ('pending', 'running')`.execute(connection.db);
      return rows[0]!.n;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

// The timeout leaves room for the wait below, so a stall fails with its own message rather than vitest's.
it('finishes every workflow after a restart, none twice', { timeout: 60_000 }, async () => {
  const postgres = await scratchPostgres('restart');
  cleanup.push(() => postgres.remove());
  const connection = openDatabase(postgres.url);
  cleanup.push(() => connection.close());
  const db = connection.db;
  await migrateToLatest(db);

  const config = loadConfig({ SIM_BOOT_SECONDS: '1', SIM_RELEASE_SECONDS: '1', WORKFLOW_ORPHAN_SECONDS: '1', PROVIDER_RATE_LIMIT: '1000' });
  const runtime = createRuntime({ db, connectionString: postgres.url, clock: systemClock, logger: serverLogger(), config, tickMs: 50 });
  await runtime.engine.run({ work: true });
  cleanup.push(() => runtime.engine.stop());

  const user = await createUser(db, systemClock, 'restart@test.example', 'pro');
  const sample = await seedSampleResources(db, systemClock, user, 'restart');
  await db.insertInto('quota_overrides').values({ user_id: user.userId, workspace_id: null, metric: 'compute/provisioning', limit: 10 }).execute();
  const now = systemClock.now();
  const starter = rowOnlyStarter(systemClock);
  const installs: string[] = [];
  const machines: string[] = [];
  await db.transaction().execute(async (trx) => {
    for (let i = 0; i < 6; i++) {
      const id = newId('ins');
      installs.push(id);
      const workflowId = await starter.start(trx, 'createInstall', id);
      await trx
        .insertInto('installs')
        .values({
          id,
          workspace_id: user.workspaceId,
          product_id: sample.productId,
          region_id: 'fsn1',
          cluster_id: null,
          status: 'pending',
          workflow_id: workflowId,
          overrides: '[]',
          status_message: null,
          created_at: now,
          updated_at: now,
        })
        .execute();
    }
    for (let i = 0; i < 4; i++) {
      const providerId = `compute://${newId('mch')}`;
      machines.push(providerId);
      await trx
        .insertInto('machines')
        .values({
          provider_id: providerId,
          cluster_id: sample.clusterId,
          compute_config_id: sample.configId,
          node_name: `restart-extra-${i}`,
          status: 'provisioning',
          byom: false,
          server_type: 'cx22',
          cpu: 2,
          memory_bytes: 4 * 1024 ** 3,
          created_at: now,
        })
        .execute();
      await starter.start(trx, 'requestMachine', providerId);
    }
  });

  // Once the work is under way (a workflow past its first step, others still unfinished), take the database
  // away mid-flight and bring it back.
  for (;;) {
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM workflows WHERE step <> 'start'`.execute(db);
    if (rows[0]!.n > 0) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  expect(await settledCount(connection)).toBeGreaterThan(0);
  await postgres.stop();
  await new Promise((resolve) => setTimeout(resolve, 1500));
  await postgres.start();

  const deadline = Date.now() + 40_000;
  while ((await settledCount(connection)) > 0) {
    if (Date.now() > deadline) throw new Error('workflows did not finish after the restart');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const failed = await db.selectFrom('workflows').select(['kind', 'error']).where('status', '=', 'failed').execute();
  expect(failed).toEqual([]);
  const statuses = await db.selectFrom('installs').select('status').where('id', 'in', installs).execute();
  expect(statuses.map((s) => s.status)).toEqual(installs.map(() => 'running'));
  const { rows: releases } = await sql<{ namespace: string; n: number }>`
    SELECT namespace, count(*)::int AS n FROM simulated_cloud.releases GROUP BY namespace`.execute(db);
  expect(releases.filter((r) => installs.includes(r.namespace)).map((r) => r.n)).toEqual(installs.map(() => 1));
  const { rows: servers } = await sql<{ machine: string; n: number }>`
    SELECT labels->>'machine' AS machine, count(*)::int AS n FROM simulated_cloud.servers WHERE deleted_at IS NULL GROUP BY 1`.execute(db);
  expect(servers.filter((s) => machines.includes(s.machine)).map((s) => s.n)).toEqual(machines.map(() => 1));
  const ready = await db.selectFrom('machines').select('status').where('provider_id', 'in', machines).execute();
  expect(ready.map((m) => m.status)).toEqual(machines.map(() => 'ready'));
  const notifications = await db.selectFrom('notifications').select(['resource_id']).where('type', '=', 'install.running').execute();
  expect(notifications.map((n) => n.resource_id).sort()).toEqual([...installs].sort());
});
