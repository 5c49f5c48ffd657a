// Quotas per the decisions: per user, across every workspace they own; plan defaults; a workspace override
// wins over a user override, which wins over the plan. BYOM machines count toward no allocation quota.
import type { Schema } from '@platform/api-types';
import { type Kysely, sql } from 'kysely';
import type { Database, Plan } from '../db/schema.ts';
import { ApiError } from '../errors.ts';
import { recordEventAndNotify } from '../resources/events.ts';
import { type WorkspaceCaller, type WorkspaceRef, withinRestriction } from './tenancy.ts';

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
export const limitOf = async (db: Kysely<Database>, userId: string, workspaceId: string | undefined, metric: Metric): Promise<number> =>
  (await quotaLimit(db, userId, workspaceId, metric)).limit;

/** The limit, and where it comes from: an enterprise override, or the user's plan. */
async function quotaLimit(db: Kysely<Database>, userId: string, workspaceId: string | undefined, metric: Metric) {
  const { plan } = await db.selectFrom('users').select('plan').where('id', '=', userId).executeTakeFirstOrThrow();
  const overrides = await db
    .selectFrom('quota_overrides')
    .select(['workspace_id', 'limit'])
    .where('metric', '=', metric)
    .where((eb) => eb.or([eb('user_id', '=', userId), ...(workspaceId ? [eb('workspace_id', '=', workspaceId)] : [])]))
    .execute();
  const override = overrides.find((o) => o.workspace_id !== null) ?? overrides.find((o) => o.workspace_id === null);
  return { limit: override?.limit ?? METRICS[metric].plan[plan], plan, overridden: override !== undefined };
}

/**
 * What a user owns now, across every workspace they own (BYOM machines excluded); with `shownTo`, a token
 * restricted to workspaces, only in those (what it reports: the limit is enforced on the whole).
 */
export async function allocationUsage(
  db: Kysely<Database>,
  userId: string,
  shownTo?: WorkspaceCaller,
): Promise<Record<Exclude<Metric, 'compute/provisioning'>, number>> {
  const owned = db
    .selectFrom('workspaces')
    .select('id')
    .where('owner_id', '=', userId)
    .$if(shownTo !== undefined, (q) => q.where(withinRestriction(shownTo!, 'workspaces.id')));
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

/**
 * A cluster's provisioning entry: the limit of its workspace's owner (the one provisioning enforces, whoever
 * asks) and the provisions in progress.
 */
export async function provisioningEntry(db: Kysely<Database>, cluster: { id: string; workspace_id: string }): Promise<Entry> {
  const { owner_id } = await db.selectFrom('workspaces').select('owner_id').where('id', '=', cluster.workspace_id).executeTakeFirstOrThrow();
  return entry('compute/provisioning', await limitOf(db, owner_id, cluster.workspace_id, 'compute/provisioning'), await provisioningUsage(db, cluster.id));
}

export function entry(metric: Metric, limit: number, usage: number): Entry {
  const { type, displayName, unit } = METRICS[metric];
  return { metric, type, displayName, unit, limit, usage, remaining: Math.max(0, limit - usage) };
}

/**
 * Where more of the metric comes from: a raised override where one sets the limit, else a free plan's upgrade or an
 * enterprise override; for the machines' metrics, also BYOM machines, which count toward no quota (never for clusters).
 */
function moreRoom(metric: Exclude<Metric, 'compute/provisioning'>, { plan, overridden }: { plan: Plan; overridden: boolean }): string {
  // An override replaces the plan's limit, so a plan upgrade would not raise it.
  const raise = overridden
    ? 'ask us to raise the enterprise override that sets this limit'
    : plan === 'free'
      ? "upgrade the workspace owner's plan to Pro"
      : 'ask us for a higher limit (an enterprise override)';
  if (metric === 'kaas/clusters') return `Delete a cluster you no longer need, or ${raise}.`;
  return `Delete a machine you no longer need, ${raise}, or provision machines with your own cloud credential (BYOM), which count toward no quota.`;
}

const GiBFormat = (bytes: number) => `${(bytes / GiB).toFixed(bytes % GiB === 0 ? 0 : 1)} GiB`;

/**
 * Checks that the workspace owner can take `requested` more of each metric, inside the transaction that
 * inserts the resources. A per-owner advisory lock serialises the owner's creations across every server
 * process, so two racing requests cannot both take the last free slot.
 */
export async function enforceQuota(
  trx: Kysely<Database>,
  workspace: WorkspaceRef,
  requested: Partial<Record<Exclude<Metric, 'compute/provisioning'>, number>>,
  now: number,
): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`quota:${workspace.owner_id}`}, 0))`.execute(trx);
  const usage = await allocationUsage(trx, workspace.owner_id);
  for (const [metric, amount] of Object.entries(requested) as [Exclude<Metric, 'compute/provisioning'>, number][]) {
    const quota = await quotaLimit(trx, workspace.owner_id, workspace.id, metric);
    const { limit } = quota;
    if (usage[metric] + amount > limit) {
      const show = (n: number) => (METRICS[metric].unit === 'bytes' ? GiBFormat(n) : String(n));
      throw new ApiError('quota_exceeded', `Quota ${metric} exceeded: limit ${show(limit)}, in use ${show(usage[metric])}, requested ${show(amount)}.`, {
        suggestion: moreRoom(metric, quota),
        details: { metric, limit, usage: usage[metric], requested: amount },
      });
    }
    // This creation takes the last of the quota: tell the owner before the next one is refused.
    if (amount > 0 && usage[metric] + amount === limit) {
      const show = (n: number) => (METRICS[metric].unit === 'bytes' ? GiBFormat(n) : String(n));
      await recordEventAndNotify(
        trx,
        { type: 'quota.reached', workspace_id: workspace.id, object_type: 'quota', object_id: metric, object: entry(metric, limit, limit) },
        now,
        {
          title: `${METRICS[metric].displayName}: quota reached`,
          body: `You now use all ${show(limit)} of ${metric}; further creations are refused. ${moreRoom(metric, quota)}`,
          severity: 'warning',
          // The quotas are the owner's: told to them, not to every member.
          userId: workspace.owner_id,
        },
      );
    }
  }
}
