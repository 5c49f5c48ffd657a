import * as quotas from '../resources/quotas.ts';
import { resolveWorkspace } from '../services/tenancy.ts';
import type { Handler } from './types.ts';

export const listQuotas: Handler<'listQuotas'> = async ({ query, headers, caller }, { db }) => {
  const workspace = await resolveWorkspace(db, caller, headers['X-Workspace-Id']);
  return { status: 200, body: await quotas.listQuotas(db, caller, workspace?.id, query.cluster_id) };
};

export const getQuota: Handler<'getQuota'> = async ({ params, query, headers, caller }, { db }) => {
  const metric = quotas.requireMetric(params.metric);
  const workspace = await resolveWorkspace(db, caller, headers['X-Workspace-Id']);
  return { status: 200, body: await quotas.getQuota(db, caller, workspace?.id, metric, query.cluster_id) };
};
