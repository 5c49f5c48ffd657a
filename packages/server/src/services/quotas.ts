// Quotas per the decisions: per user, across every workspace they own; plan defaults; a workspace override
// wins over a user override, which wins over the plan. BYOM machines count toward no allocation quota.
import type { Schema } from '@platform/api-types';
import { type Kysely, sql } from 'kysely';
import type { Database, Plan } from '../db/schema.ts';

export type Metric = Schema<'QuotaEntry'>['metric'];
type Entry = Schema<'QuotaEntry'>;

const GiB = 1024 ** 3;

export const METRICS: Record<Metric, { type: Entry['type']; displayName: string; unit: Entry['unit']; plan: Record<Plan, number> }> = {
  'kaas/clusters': { type: 'allocation', displayName: 'Managed clusters', unit: 'count', plan: { free: 1, pro: 3 } },
  'compute/machines': { type: 'allocation', displayName: 'Compute machines', unit: 'count', plan: { free: 1, pro: 3 } },
  'compute/cpu': { type: 'allocation', displayName: 'CPU cores', unit: 'cores', plan: { free: 2, pro: 8 } },
  'compute/memory': { type: 'allocation', displayName: 'Memory', unit: 'bytes', plan: { free: 4 * GiB, pro: 16 * GiB } },
  'compute/provisioning': { type: 'concurrency', displayName: 'Simultaneous provisions', unit: 'count', plan: { free: 1, pro: 3 } },
};

export const isMetric = (name: string): name is Metric => Object.hasOwn(METRICS, name);

/** The limit of one metric for a user, acting in a workspace (whose override wins) or none. */
export async function limitOf(db: Kysely<Database>, userId: string, workspaceId: string | undefined, metric: Metric): Promise<number> {
  const user = await db.selectFrom('users').select('plan').where('id', '=', userId).executeTakeFirstOrThrow();
  const overrides = await db
    .selectFrom('quota_overrides')
    .select(['workspace_id', 'limit'])
    .where('metric', '=', metric)
    .where((eb) => eb.or([eb('user_id', '=', userId), ...(workspaceId ? [eb('workspace_id', '=', workspaceId)] : [])]))
    .execute();
  const workspace = overrides.find((o) => o.workspace_id !== null);
  const personal = overrides.find((o) => o.workspace_id === null);
  return workspace?.limit ?? personal?.limit ?? METRICS[metric].plan[user.plan];
}

/** What a user owns now, across every workspace they own. Suspended machines have no server and count for nothing. */
export async function allocationUsage(db: Kysely<Database>, userId: string): Promise<Record<Exclude<Metric, 'compute/provisioning'>, number>> {
  const owned = db.selectFrom('workspaces').select('id').where('owner_id', '=', userId);
  const clusters = await db
    .selectFrom('clusters')
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .where('workspace_id', 'in', owned)
    .executeTakeFirstOrThrow();
  const machines = await db
    .selectFrom('machines')
    .innerJoin('clusters', 'clusters.id', 'machines.cluster_id')
    .select([
      sql<number>`count(*)::int`.as('count'),
      sql<number>`coalesce(sum(machines.cpu), 0)::int`.as('cpu'),
      sql<number>`coalesce(sum(machines.memory_bytes), 0)::bigint`.as('memory'),
    ])
    .where('clusters.workspace_id', 'in', owned)
    .where('machines.byom', '=', false)
    .where('machines.status', '!=', 'suspended')
    .executeTakeFirstOrThrow();
  return {
    'kaas/clusters': Number(clusters.count),
    'compute/machines': machines.count,
    'compute/cpu': machines.cpu,
    'compute/memory': Number(machines.memory),
  };
}

/** Provisions in progress in one cluster. */
export async function provisioningUsage(db: Kysely<Database>, clusterId: string): Promise<number> {
  const row = await db
    .selectFrom('machines')
    .select(sql<number>`count(*)::int`.as('count'))
    .where('cluster_id', '=', clusterId)
    .where('status', '=', 'provisioning')
    .executeTakeFirstOrThrow();
  return row.count;
}

export function entry(metric: Metric, limit: number, usage: number): Entry {
  const { type, displayName, unit } = METRICS[metric];
  return { metric, type, displayName, unit, limit, usage, remaining: Math.max(0, limit - usage) };
}
