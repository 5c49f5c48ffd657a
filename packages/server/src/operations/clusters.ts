import { sql } from 'kysely';
import { toCluster, toRegion } from '../db/mappers.ts';
import { ApiError, conflict, notFound } from '../http/errors.ts';
import { newId } from '../ids.ts';
import { afterCursor, workspacePage } from '../services/lists.ts';
import { decodeCursor, page } from '../services/pagination.ts';
import { enforceQuota } from '../services/quotas.ts';
import { requireWorkspace, resolveWorkspace } from '../services/tenancy.ts';
import { visibleCluster } from '../services/visibility.ts';
import type { Handler } from './types.ts';

export const listClusters: Handler<'listClusters'> = async (input, { db }) => ({
  status: 200,
  body: await workspacePage(db, input, 'clusters', toCluster),
});

export const listRegions: Handler<'listRegions'> = async ({ query }, { db }) => {
  const limit = query.limit ?? 50;
  const rows = await afterCursor(db.selectFrom('regions').selectAll(), 'regions', decodeCursor(query.cursor), limit).execute();
  return { status: 200, body: page(rows, limit, query.cursor, toRegion) };
};

export const createCluster: Handler<'createCluster'> = async ({ body, headers, caller }, { db, clock, workflows }) => {
  const workspace = await requireWorkspace(db, caller, headers['X-Workspace-Id']);
  const region = await db.selectFrom('regions').select('id').where('id', '=', body.region_id).executeTakeFirst();
  if (!region) throw notFound('Region', body.region_id, 'region_id');
  const now = clock.now();
  const row = await db.transaction().execute(async (trx) => {
    await enforceQuota(trx, workspace, { 'kaas/clusters': 1 }, now);
    const taken = await trx.selectFrom('clusters').select('id').where('workspace_id', '=', workspace.id).where('name', '=', body.name).executeTakeFirst();
    if (taken) throw conflict(`The workspace has a cluster named ${body.name} already.`, 'Choose another name.', undefined, 'name');
    const id = newId('cl');
    // The workflow brings the control plane up: PROVISIONING → RUNNING (or ERROR).
    await workflows.start(trx, 'cluster_create', id);
    return trx
      .insertInto('clusters')
      .values({ id, workspace_id: workspace.id, name: body.name, region_id: region.id, kaas_version: body.kaas_version ?? 'v1.31', status: 'PROVISIONING', status_message: 'Creating control plane', created_at: now })
      .returningAll()
      .executeTakeFirstOrThrow();
  });
  return { status: 202, body: toCluster(row) };
};

export const getCluster: Handler<'getCluster'> = async ({ params, headers, caller }, { db }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  return { status: 200, body: toCluster(await visibleCluster(db, caller.userId, params.clusterId)) };
};

export const deleteCluster: Handler<'deleteCluster'> = async ({ params, headers, caller }, { db, driver, logger }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  await db.transaction().execute(async (trx) => {
    const cluster = await visibleCluster(trx, caller.userId, params.clusterId);
    await trx.selectFrom('clusters').select('id').where('id', '=', cluster.id).forUpdate().execute();
    const { machines, installs } = await trx
      .selectNoFrom([
        sql<number>`(SELECT count(*) FROM machines WHERE cluster_id = ${cluster.id})::int`.as('machines'),
        sql<number>`(SELECT count(*) FROM installs WHERE cluster_id = ${cluster.id})::int`.as('installs'),
      ])
      .executeTakeFirstOrThrow();
    if (machines + installs > 0) {
      throw new ApiError(409, 'conflict', `Cluster ${cluster.id} still has ${machines} machines and ${installs} installs.`, {
        suggestion: 'Delete its machines and installs first.',
        details: { machines, installs },
      });
    }
    await trx.deleteFrom('workflows').where('subject_id', '=', cluster.id).execute();
    await trx.deleteFrom('clusters').where('id', '=', cluster.id).execute();
  });
  // The control plane goes after the record; one the driver fails to delete stays, labelled, to clean up.
  await driver.deleteCluster(params.clusterId).catch((error: unknown) => logger.warn({ err: error, cluster: params.clusterId }, 'deleting the control plane failed'));
  return { status: 204, body: undefined };
};
