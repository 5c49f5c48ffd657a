// Look-ups of resources by id that a caller may see: a member of the resource's workspace. Anything else is
// the same 404 as a missing resource.
import type { Kysely } from 'kysely';
import type { Database, Row } from '../db/schema.ts';
import { notFound } from '../http/errors.ts';
import { memberWorkspaces } from './tenancy.ts';

export async function visibleCluster(db: Kysely<Database>, userId: string, id: string, param?: string): Promise<Row<'clusters'>> {
  const row = await db.selectFrom('clusters').selectAll().where('id', '=', id).where('workspace_id', 'in', memberWorkspaces(db, userId)).executeTakeFirst();
  if (!row) throw notFound('Cluster', id, param);
  return row;
}

export async function visibleComputeConfig(db: Kysely<Database>, userId: string, id: string): Promise<Row<'compute_configs'>> {
  const row = await db.selectFrom('compute_configs').selectAll().where('id', '=', id).where('workspace_id', 'in', memberWorkspaces(db, userId)).executeTakeFirst();
  if (!row) throw notFound('Compute config', id);
  return row;
}

export async function visibleMachine(db: Kysely<Database>, userId: string, providerId: string) {
  const row = await db
    .selectFrom('machines')
    .innerJoin('clusters', 'clusters.id', 'machines.cluster_id')
    .innerJoin('compute_configs', 'compute_configs.id', 'machines.compute_config_id')
    .selectAll('machines')
    .select(['compute_configs.provider_config', 'clusters.region_id'])
    .where('machines.provider_id', '=', providerId)
    .where('clusters.workspace_id', 'in', memberWorkspaces(db, userId))
    .executeTakeFirst();
  if (!row) throw notFound('Machine', providerId);
  return row;
}

export async function visibleInstall(db: Kysely<Database>, userId: string, id: string): Promise<Row<'installs'>> {
  const row = await db.selectFrom('installs').selectAll().where('id', '=', id).where('workspace_id', 'in', memberWorkspaces(db, userId)).executeTakeFirst();
  if (!row) throw notFound('Install', id);
  return row;
}

export async function visibleProduct(db: Kysely<Database>, userId: string, id: string, param?: string): Promise<Row<'products'>> {
  const row = await db.selectFrom('products').selectAll().where('id', '=', id).where('workspace_id', 'in', memberWorkspaces(db, userId)).executeTakeFirst();
  if (!row) throw notFound('Product', id, param);
  return row;
}
