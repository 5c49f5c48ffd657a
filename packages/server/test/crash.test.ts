// Crash safety: a worker process is killed with SIGKILL at every step boundary of the install and resume
// workflows, and a new one started each time. The workflows complete, and the simulated cloud holds exactly
// one release per source and one server per machine: every re-run adopted what the killed run had made; and each
// transition has exactly one event (written in the transaction of the change, so no kill splits them).
// Real processes (`main.ts --role worker`) on real time; the simulated cloud is fast (1 s boots).
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../src/clock.ts';
import { seedSampleResources } from '../src/db/seed.ts';
import { rowOnlyStarter } from '../src/engine/engine.ts';
import { newId } from '../src/ids.ts';
import { createTestDatabase, newUser, type TestDatabase } from './support.ts';

const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
let database: TestDatabase;
const workers = new Set<ChildProcess>();

function startWorker(): ChildProcess {
  const child = spawn(process.execPath, [main, '--role', 'worker'], {
    env: {
      ...process.env,
      DATABASE_URL: database.url,
      LOG_LEVEL: 'silent',
      WORKFLOW_ORPHAN_SECONDS: '1',
      WORKFLOW_STEP_DELAY_MS: '250',
      SIM_BOOT_SECONDS: '1',
      SIM_RELEASE_SECONDS: '1',
      SIM_SNAPSHOT_SECONDS: '1',
      SIM_CONTROL_PLANE_SECONDS: '1',
    },
    stdio: 'ignore',
  });
  workers.add(child);
  child.once('exit', () => workers.delete(child));
  return child;
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

const workflow = (id: string) => database.db.selectFrom('workflows').select(['step', 'status', 'error']).where('id', '=', id).executeTakeFirstOrThrow();

/** Runs a workflow to its end, killing the worker each time the workflow moves to another step. */
async function runKillingAtEachStep(workflowId: string): Promise<string[]> {
  const seen: string[] = [];
  let worker = startWorker();
  const deadline = Date.now() + 60_000;
  let last = (await workflow(workflowId)).step;
  seen.push(last);
  for (;;) {
    const current = await workflow(workflowId);
    if (current.status === 'succeeded' || current.status === 'failed') break;
    if (current.step !== last) {
      last = current.step;
      seen.push(last);
      await kill(worker);
      worker = startWorker();
    }
    if (Date.now() > deadline) throw new Error(`workflow ${workflowId} did not finish; at ${JSON.stringify(current)}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await kill(worker);
  return seen;
}

const eventsOf = async (objectId: string) =>
  (await database.db.selectFrom('events').select('type').where('object_id', '=', objectId).orderBy('created_at').orderBy('id').execute()).map((e) => e.type);

beforeAll(async () => {
  database = await createTestDatabase();
});

afterAll(async () => {
  await Promise.all([...workers].map(kill));
  await database?.drop();
});

// Each kill starts a new worker process (a second or two on a busy machine), a dozen times per test: the time
// budget is the suite's default of 30 s times three.
describe('a worker killed with SIGKILL at each step boundary', { timeout: 90_000 }, () => {
  it('still completes the install, with exactly one release per source', async () => {
    const user = await newUser(database.db, systemClock, 'pro');
    const sample = await seedSampleResources(database.db, systemClock, user, 'crash-apps');
    const installId = newId('ins');
    const now = systemClock.now();
    const workflowId = await database.db.transaction().execute(async (trx) => {
      const id = await rowOnlyStarter(systemClock).start(trx, 'createInstall', installId);
      await trx
        .insertInto('installs')
        .values({
          id: installId,
          workspace_id: user.workspaceId,
          product_id: sample.productId,
          region_id: 'fsn1',
          cluster_id: null,
          status: 'pending',
          workflow_id: id,
          overrides: '[]',
          status_message: null,
          created_at: now,
          updated_at: now,
        })
        .execute();
      return id;
    });
    const steps = await runKillingAtEachStep(workflowId);
    expect(steps).toEqual(['start', 'release', 'await', 'running']);
    expect(await workflow(workflowId)).toMatchObject({ status: 'succeeded' });
    const install = await database.db.selectFrom('installs').select(['status', 'status_message']).where('id', '=', installId).executeTakeFirstOrThrow();
    expect(install).toEqual({ status: 'running', status_message: null });
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM simulated_cloud.releases WHERE namespace = ${installId}`.execute(database.db);
    expect(rows[0]!.n).toBe(1);
    const notifications = await database.db.selectFrom('notifications').select('type').where('resource_id', '=', installId).execute();
    expect(notifications.map((n) => n.type)).toEqual(['install.running']);
    expect(await eventsOf(installId)).toEqual(['install.running']);
  });

  it('still completes a suspend and a resume, with exactly one server and no snapshot left', async () => {
    const user = await newUser(database.db, systemClock, 'pro');
    const sample = await seedSampleResources(database.db, systemClock, user, 'crash-compute');
    const machine = sample.providerId;
    // The seeded machine has no server in the simulated cloud yet: provision one first (also under kills).
    await database.db.updateTable('machines').set({ status: 'provisioning' }).where('provider_id', '=', machine).execute();
    const provisionId = await database.db.transaction().execute((trx) => rowOnlyStarter(systemClock).start(trx, 'requestMachine', machine));
    expect(await runKillingAtEachStep(provisionId)).toEqual(['start', 'create', 'boot', 'ready']);

    const suspensionId = newId('sus');
    const suspendId = await database.db.transaction().execute(async (trx) => {
      await trx.updateTable('machines').set({ status: 'suspending' }).where('provider_id', '=', machine).execute();
      await trx
        .insertInto('suspensions')
        .values({
          id: suspensionId,
          workspace_id: user.workspaceId,
          cluster_id: sample.clusterId,
          provider_id: machine,
          node_name: 'crash-compute-worker-1',
          reason: 'manual',
          status: 'suspending',
          snapshot_id: null,
          created_at: systemClock.now(),
          expires_at: null,
        })
        .execute();
      return rowOnlyStarter(systemClock).start(trx, 'suspendMachine', suspensionId);
    });
    expect(await runKillingAtEachStep(suspendId)).toEqual(['start', 'snapshot', 'await_snapshot', 'delete_server']);

    const { snapshot_id: snapshotId } = await database.db
      .selectFrom('suspensions')
      .select('snapshot_id')
      .where('id', '=', suspensionId)
      .executeTakeFirstOrThrow();
    const resumeId = await database.db.transaction().execute(async (trx) => {
      await trx.updateTable('suspensions').set({ status: 'resuming' }).where('id', '=', suspensionId).execute();
      return rowOnlyStarter(systemClock).start(trx, 'resumeSuspension', suspensionId);
    });
    expect(await runKillingAtEachStep(resumeId)).toEqual(['start', 'boot', 'delete_snapshot']);

    const suspension = await database.db.selectFrom('suspensions').select(['status', 'snapshot_id']).where('id', '=', suspensionId).executeTakeFirstOrThrow();
    // Resumed, its snapshot deleted: `snapshot_id` is null (the contract).
    expect(suspension).toEqual({ status: 'resumed', snapshot_id: null });
    const after = await database.db
      .selectFrom('machines')
      .select(['status', 'node_name', 'server_id'])
      .where('provider_id', '=', machine)
      .executeTakeFirstOrThrow();
    expect(after).toMatchObject({ status: 'ready', node_name: 'crash-compute-worker-1' });
    const { rows: servers } = await sql<{ id: string; image: string }>`
      SELECT id, image FROM simulated_cloud.servers WHERE labels->>'machine' = ${machine} AND deleted_at IS NULL`.execute(database.db);
    expect(servers).toEqual([{ id: after.server_id, image: snapshotId }]);
    const { rows: snapshots } = await sql`SELECT 1 FROM simulated_cloud.snapshots WHERE deleted_at IS NULL`.execute(database.db);
    expect(snapshots).toHaveLength(0);
    expect(await eventsOf(suspensionId)).toEqual(['suspension.suspended', 'suspension.resumed']);
    // Provisioned, then resumed: ready twice, each told once.
    expect(await eventsOf(machine)).toEqual(['machine.ready', 'machine.ready']);
  });
});
