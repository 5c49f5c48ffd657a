import { notFound, validationError } from '../http/errors.ts';
import { allocationUsage, entry, isMetric, limitOf, METRICS, type Metric, provisioningUsage } from '../services/quotas.ts';
import { resolveWorkspace } from '../services/tenancy.ts';
import { visibleCluster } from '../services/visibility.ts';
import type { Handler } from './types.ts';

const ALLOCATION = (Object.keys(METRICS) as Metric[]).filter((m) => METRICS[m].type === 'allocation') as Exclude<Metric, 'compute/provisioning'>[];

export const listQuotas: Handler<'listQuotas'> = async ({ query, headers, caller }, { db }) => {
  const workspaceId = (await resolveWorkspace(db, caller, headers['X-Workspace-Id']))?.id;
  const cluster = query.cluster_id === undefined ? undefined : await visibleCluster(db, caller.userId, query.cluster_id, 'cluster_id');
  const usage = await allocationUsage(db, caller.userId);
  const entries = await Promise.all(ALLOCATION.map(async (metric) => entry(metric, await limitOf(db, caller.userId, workspaceId, metric), usage[metric])));
  if (cluster) {
    const limit = await limitOf(db, caller.userId, cluster.workspace_id, 'compute/provisioning');
    entries.push(entry('compute/provisioning', limit, await provisioningUsage(db, cluster.id)));
  }
  return { status: 200, body: entries };
};

export const getQuota: Handler<'getQuota'> = async ({ params, query, headers, caller }, { db }) => {
  const metric = params.metric;
  if (!isMetric(metric)) {
    throw notFound('Quota metric', metric);
  }
  const workspaceId = (await resolveWorkspace(db, caller, headers['X-Workspace-Id']))?.id;
  if (metric === 'compute/provisioning') {
    if (query.cluster_id === undefined) {
      throw validationError('cluster_id', 'compute/provisioning is counted per cluster: cluster_id is required.', 'Add ?cluster_id=<cluster id>.');
    }
    const cluster = await visibleCluster(db, caller.userId, query.cluster_id, 'cluster_id');
    const limit = await limitOf(db, caller.userId, cluster.workspace_id, metric);
    return { status: 200, body: entry(metric, limit, await provisioningUsage(db, cluster.id)) };
  }
  const usage = await allocationUsage(db, caller.userId);
  return { status: 200, body: entry(metric, await limitOf(db, caller.userId, workspaceId, metric), usage[metric]) };
};
