import * as quotas from '../resources/quotas.ts';
import type { Handler } from './types.ts';

export const listQuotas: Handler<'listQuotas'> = async ({ query, caller, workspace }, { db }) => {
  return { status: 200, body: await quotas.listQuotas(db, caller, workspace?.id, query.cluster_id) };
};

export const getQuota: Handler<'getQuota'> = async ({ params, query, caller, workspace }, { db }) => {
  const metric = quotas.requireMetric(params.metric);
  return { status: 200, body: await quotas.getQuota(db, caller, workspace?.id, metric, query.cluster_id) };
};
