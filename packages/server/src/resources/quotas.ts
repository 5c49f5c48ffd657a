// Quotas as the API reports them, and their overrides: the only writer of `quota_overrides` (set by `pnpm admin`;
// read by services/quotas.ts, which enforces the limits).
import type { Schema } from '@platform/api-types';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { notFound, validationError } from '../errors.ts';
import { allocationUsage, entry, isMetric, limitOf, METRICS, type Metric, provisioningEntry } from '../services/quotas.ts';
import type { WorkspaceCaller } from '../services/tenancy.ts';
import { visibleCluster } from './clusters.ts';

type Db = Kysely<Database>;
const ALLOCATION = (Object.keys(METRICS) as Metric[]).filter((m) => METRICS[m].type === 'allocation') as Exclude<Metric, 'compute/provisioning'>[];

/** The caller's allocation quotas (acting in a workspace or none), and a cluster's provisioning quota when named. */
export async function listQuotas(
  db: Db,
  caller: WorkspaceCaller,
  workspaceId: string | undefined,
  clusterId: string | undefined,
): Promise<Schema<'QuotaEntry'>[]> {
  const cluster = clusterId === undefined ? undefined : await visibleCluster(db, caller, clusterId, 'cluster_id');
  const usage = await allocationUsage(db, caller.userId, caller);
  const entries = await Promise.all(ALLOCATION.map(async (metric) => entry(metric, await limitOf(db, caller.userId, workspaceId, metric), usage[metric])));
  if (cluster) entries.push(await provisioningEntry(db, cluster));
  return entries;
}

/** A metric's name as a metric; 404 when there is no such metric. */
export function requireMetric(name: string): Metric {
  if (!isMetric(name)) throw notFound('Quota metric', name);
  return name;
}

/** One quota; compute/provisioning is counted per cluster, so it needs the cluster. */
export async function getQuota(
  db: Db,
  caller: WorkspaceCaller,
  workspaceId: string | undefined,
  metric: Metric,
  clusterId: string | undefined,
): Promise<Schema<'QuotaEntry'>> {
  if (metric === 'compute/provisioning') {
    if (clusterId === undefined) {
      throw validationError('cluster_id', 'compute/provisioning is counted per cluster: cluster_id is required.', 'Add ?cluster_id=<cluster id>.');
    }
    return provisioningEntry(db, await visibleCluster(db, caller, clusterId, 'cluster_id'));
  }
  const usage = await allocationUsage(db, caller.userId, caller);
  return entry(metric, await limitOf(db, caller.userId, workspaceId, metric), usage[metric]);
}

export type OverrideScope = { user_id: string; workspace_id: null } | { user_id: null; workspace_id: string };

/** Replaces the override of one metric for a user or a workspace. */
export async function setQuotaOverride(db: Kysely<Database>, scope: OverrideScope, metric: string, limit: number): Promise<void> {
  await inTransaction(db, async (trx) => {
    const existing = trx.deleteFrom('quota_overrides').where('metric', '=', metric);
    await (scope.user_id !== null ? existing.where('user_id', '=', scope.user_id) : existing.where('workspace_id', '=', scope.workspace_id)).execute();
    await trx
      .insertInto('quota_overrides')
      .values({ ...scope, metric, limit })
      .execute();
  });
}
