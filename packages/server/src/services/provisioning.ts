// Machine provisioning under the plan's limits, coordinated in PostgreSQL across every process:
//   - at most `compute/provisioning` machines of a cluster are `provisioning` at once (Free 1, Pro 3, or an
//     override); the others wait `queued`, and the slot goes to the oldest queued machine when one is freed;
//   - after consecutive failed provisions the cluster waits 30 s, 60 s, 120 s, 240 s, then 300 s at most
//     before the next attempt; a success resets it, and so does a change of what the provider is asked for
//     (a plan change or a new override, or another server type or image among the machines waiting for a
//     slot), which the backoff row records as `offering`.
import type { Schema } from '@platform/api-types';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/schema.ts';
import { limitOf, provisioningUsage } from './quotas.ts';

export const BACKOFF_SECONDS = [30, 60, 120, 240, 300] as const;

export interface ClusterRef {
  id: string;
  workspace_id: string;
  status: string;
}

/**
 * What the provider is asked for on the cluster: the owner's plan and provisioning limit, and the server types
 * and images of the machines waiting for or holding a slot (their compute configs' choice).
 */
export async function offeringOf(db: Kysely<Database>, cluster: Omit<ClusterRef, 'status'>): Promise<{ ownerId: string; limit: number; offering: string }> {
  const owner = await db
    .selectFrom('workspaces')
    .innerJoin('users', 'users.id', 'workspaces.owner_id')
    .select(['users.id', 'users.plan'])
    .where('workspaces.id', '=', cluster.workspace_id)
    .executeTakeFirstOrThrow();
  const limit = await limitOf(db, owner.id, cluster.workspace_id, 'compute/provisioning');
  const requested = await db
    .selectFrom('machines')
    .innerJoin('compute_configs', 'compute_configs.id', 'machines.compute_config_id')
    .select(sql<string>`machines.server_type || '@' || (compute_configs.provider_config->>'image')`.as('kind'))
    .distinct()
    .where('machines.cluster_id', '=', cluster.id)
    .where('machines.status', 'in', ['queued', 'provisioning'])
    .orderBy('kind')
    .execute();
  return { ownerId: owner.id, limit, offering: [`${owner.plan}:${limit}`, ...requested.map((row) => row.kind)].join(' ') };
}

/** The cluster's backoff now: until when provisions wait, or null. A changed offering voids it. */
export async function backoffOf(db: Kysely<Database>, clusterId: string, offering: string, now: number): Promise<{ until: number; failures: number } | null> {
  const row = await db.selectFrom('provisioning_backoff').selectAll().where('cluster_id', '=', clusterId).executeTakeFirst();
  if (!row || row.offering !== offering || row.backoff_until <= now) return null;
  return { until: row.backoff_until, failures: row.failures };
}

/** Serialises slot decisions of one cluster across processes, for the rest of the transaction. */
export async function lockCluster(trx: Kysely<Database>, clusterId: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`provisioning:${clusterId}`}, 0))`.execute(trx);
}

/**
 * In a transaction holding `lockCluster`: whether one more machine of the cluster may start provisioning
 * now (the cluster runs, is not backing off, and has a free slot).
 */
export async function slotAvailable(trx: Kysely<Database>, cluster: ClusterRef, now: number): Promise<boolean> {
  if (cluster.status !== 'RUNNING') return false;
  const { limit, offering } = await offeringOf(trx, cluster);
  if (await backoffOf(trx, cluster.id, offering, now)) return false;
  const { count } = await trx
    .selectFrom('machines')
    .select(sql<number>`count(*)::int`.as('count'))
    .where('cluster_id', '=', cluster.id)
    .where('status', '=', 'provisioning')
    .executeTakeFirstOrThrow();
  return count < limit;
}

/** A failed provision: the next wait of the cluster's backoff, which is returned. */
export async function recordFailure(trx: Kysely<Database>, clusterId: string, offering: string, now: number): Promise<{ failures: number; until: number }> {
  const previous = await trx.selectFrom('provisioning_backoff').selectAll().where('cluster_id', '=', clusterId).forUpdate().executeTakeFirst();
  const failures = previous && previous.offering === offering ? previous.failures + 1 : 1;
  const until = now + BACKOFF_SECONDS[Math.min(failures, BACKOFF_SECONDS.length) - 1]!;
  await trx
    .insertInto('provisioning_backoff')
    .values({ cluster_id: clusterId, failures, backoff_until: until, offering })
    .onConflict((oc) => oc.column('cluster_id').doUpdateSet({ failures, backoff_until: until, offering }))
    .execute();
  return { failures, until };
}

export async function recordSuccess(trx: Kysely<Database>, clusterId: string): Promise<void> {
  await trx.deleteFrom('provisioning_backoff').where('cluster_id', '=', clusterId).execute();
}

/** The provision workflow of the cluster's oldest queued machine, which a freed slot should go to. */
export async function nextQueued(trx: Kysely<Database>, clusterId: string): Promise<string | undefined> {
  const row = await trx
    .selectFrom('machines')
    .innerJoin('workflows', (join) => join.onRef('workflows.subject_id', '=', 'machines.provider_id').on('workflows.kind', '=', 'requestMachine'))
    .select('workflows.id')
    .where('machines.cluster_id', '=', clusterId)
    .where('machines.status', '=', 'queued')
    .where('workflows.status', 'in', ['pending', 'running'])
    .orderBy('machines.created_at')
    .orderBy('machines.provider_id')
    .limit(1)
    .executeTakeFirst();
  return row?.id;
}

/** A cluster's machines, its limit, and where its provisioning stands (paused, backing off, scaling or idle). */
export async function computeStatus(db: Kysely<Database>, cluster: ClusterRef, now: number): Promise<Schema<'ComputeStatus'>> {
  const counts = await db
    .selectFrom('machines')
    .select([
      sql<number>`count(*) filter (where status <> 'queued')::int`.as('machines'),
      sql<number>`count(*) filter (where status = 'queued')::int`.as('queued'),
    ])
    .where('cluster_id', '=', cluster.id)
    .executeTakeFirstOrThrow();
  const provisioning = await provisioningUsage(db, cluster.id);
  const { ownerId, limit: provisioningLimit, offering } = await offeringOf(db, cluster);
  const maxMachines = await limitOf(db, ownerId, cluster.workspace_id, 'compute/machines');
  const backoff = await backoffOf(db, cluster.id, offering, now);
  // Provisioning runs only on a running cluster, and waits while the cluster backs off after failures.
  const state = cluster.status !== 'RUNNING' ? 'paused' : backoff ? 'backoff' : provisioning + counts.queued > 0 ? 'scaling' : 'idle';
  return {
    machines: counts.machines,
    max_machines: maxMachines,
    autoscaling: { state, provisioning, queued: counts.queued, provisioning_limit: provisioningLimit, backoff_until: backoff?.until ?? null },
  };
}
