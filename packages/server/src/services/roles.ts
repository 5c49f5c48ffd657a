// Workspace roles: their order, and a user's role in a workspace or in the workspace holding a resource.
import type { Schema } from '@platform/api-types';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import { memberWorkspaces, type WorkspaceCaller } from './tenancy.ts';

export type Role = Schema<'WorkspaceMember'>['role'];

/** Least to most: each role allows what the ones before it allow. */
export const ROLES: readonly Role[] = ['viewer', 'member', 'admin', 'owner'];

export const allows = (role: Role, required: Role): boolean => ROLES.indexOf(role) >= ROLES.indexOf(required);

/**
 * The resources a path may address by id, by the path up to that id, each with the query of its workspace: the one
 * place a new kind of resource addressed by id is declared (the server refuses to start on a path it lacks).
 */
export const ADDRESSED = {
  '/v1/clusters/': (db: Kysely<Database>, id: string) => db.selectFrom('clusters').select('workspace_id').where('id', '=', id),
  '/v1/compute/configs/': (db: Kysely<Database>, id: string) => db.selectFrom('compute_configs').select('workspace_id').where('id', '=', id),
  '/v1/compute/cloud_credentials/': (db: Kysely<Database>, id: string) => db.selectFrom('cloud_credentials').select('workspace_id').where('id', '=', id),
  '/v1/compute/machines/': (db: Kysely<Database>, id: string) =>
    db
      .selectFrom('machines')
      .innerJoin('clusters', 'clusters.id', 'machines.cluster_id')
      .select('clusters.workspace_id')
      .where('machines.provider_id', '=', id),
  '/v1/compute/suspensions/': (db: Kysely<Database>, id: string) => db.selectFrom('suspensions').select('workspace_id').where('id', '=', id),
  '/v1/registry/credentials/': (db: Kysely<Database>, id: string) => db.selectFrom('registry_credentials').select('workspace_id').where('id', '=', id),
  '/v1/products/': (db: Kysely<Database>, id: string) => db.selectFrom('products').select('workspace_id').where('id', '=', id),
  '/v1/installs/': (db: Kysely<Database>, id: string) => db.selectFrom('installs').select('workspace_id').where('id', '=', id),
  '/v1/webhook_endpoints/': (db: Kysely<Database>, id: string) => db.selectFrom('webhook_endpoints').select('workspace_id').where('id', '=', id),
};

export type AddressedResource = keyof typeof ADDRESSED;

export interface Membership {
  workspaceId: string;
  role: Role;
}

/**
 * The caller's membership of the workspace; undefined when they are not a member (or it does not exist), or
 * their token may not act in it.
 */
export async function membershipOf(db: Kysely<Database>, caller: WorkspaceCaller, workspaceId: string): Promise<Membership | undefined> {
  const row = await db
    .selectFrom('workspace_members')
    .select(['workspace_id', 'role'])
    .where('user_id', '=', caller.userId)
    .where('workspace_id', '=', workspaceId)
    .where('workspace_id', 'in', memberWorkspaces(db, caller))
    .executeTakeFirst();
  return row && { workspaceId: row.workspace_id, role: row.role };
}

/**
 * The caller's membership of the workspace holding the resource; undefined when there is none, no such resource,
 * or their token may not act in that workspace.
 */
export async function membershipOfResource(
  db: Kysely<Database>,
  caller: WorkspaceCaller,
  resource: AddressedResource,
  id: string,
): Promise<Membership | undefined> {
  const row = await db
    .selectFrom('workspace_members')
    .select(['workspace_id', 'role'])
    .where('user_id', '=', caller.userId)
    .where('workspace_id', '=', ADDRESSED[resource](db, id))
    .where('workspace_id', 'in', memberWorkspaces(db, caller))
    .executeTakeFirst();
  return row && { workspaceId: row.workspace_id, role: row.role };
}
