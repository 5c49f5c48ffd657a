// Workspaces and their members: the only writer of `workspaces` and `workspace_members`. A workspace the
// caller is not a member of is reported exactly like a missing one.
import type { Schema } from '@platform/api-types';
import { type Kysely, sql } from 'kysely';
import type { Database, Row } from '../db/schema.ts';
import { conflict, notFound } from '../errors.ts';
import { newId } from '../ids.ts';
import { afterCursor } from '../services/lists.ts';
import { decodeCursor, page } from '../services/pagination.ts';

type Db = Kysely<Database>;

/** Row → record, typed on both ends: a drift between the database and the contract fails the type check. */
const toWorkspace = (row: Row<'workspaces'>): Schema<'Workspace'> => ({
  id: row.id,
  name: row.name,
  icon: row.icon,
  created_at: row.created_at,
});

const toWorkspaceMember = (row: Pick<Row<'workspace_members'>, 'user_id' | 'role' | 'created_at'> & { email: string }): Schema<'WorkspaceMember'> => ({
  user_id: row.user_id,
  email: row.email,
  role: row.role,
  created_at: row.created_at,
});

type PageQuery = { cursor?: string; limit?: number };

export async function listWorkspaces(db: Db, userId: string, { cursor, limit = 50 }: PageQuery) {
  const base = db
    .selectFrom('workspaces')
    .innerJoin('workspace_members', 'workspace_members.workspace_id', 'workspaces.id')
    .selectAll('workspaces')
    .where('workspace_members.user_id', '=', userId);
  const rows = await afterCursor(base, 'workspaces', decodeCursor(cursor), limit).execute();
  return page(rows, limit, cursor, toWorkspace);
}

/** A new workspace owned by the user, who becomes its first member (role owner). */
export async function createWorkspace(db: Db, ownerId: string, input: { name: string; icon?: string | null }, now: number): Promise<Schema<'Workspace'>> {
  const create = async (trx: Db) => {
    const workspace = await trx
      .insertInto('workspaces')
      .values({ id: newId('ws'), name: input.name, icon: input.icon ?? null, owner_id: ownerId, created_at: now })
      .returningAll()
      .executeTakeFirstOrThrow();
    await trx.insertInto('workspace_members').values({ workspace_id: workspace.id, user_id: ownerId, role: 'owner', created_at: now }).execute();
    return workspace;
  };
  const row = db.isTransaction ? await create(db) : await db.transaction().execute(create);
  return toWorkspace(row);
}

/** The caller's role in a workspace; 404 when they are not a member (a workspace they cannot see). */
async function membership(db: Db, workspaceId: string, userId: string) {
  const row = await db
    .selectFrom('workspaces')
    .innerJoin('workspace_members', 'workspace_members.workspace_id', 'workspaces.id')
    .selectAll('workspaces')
    .select('workspace_members.role')
    .where('workspaces.id', '=', workspaceId)
    .where('workspace_members.user_id', '=', userId)
    .executeTakeFirst();
  if (!row) throw notFound('Workspace', workspaceId);
  return row;
}

export const getWorkspace = async (db: Db, workspaceId: string, userId: string): Promise<Schema<'Workspace'>> =>
  toWorkspace(await membership(db, workspaceId, userId));

export async function listMembers(db: Db, workspaceId: string, userId: string, { cursor, limit = 50 }: PageQuery) {
  await membership(db, workspaceId, userId);
  const base = db
    .selectFrom('workspace_members')
    .innerJoin('users', 'users.id', 'workspace_members.user_id')
    .select([
      'workspace_members.user_id',
      'workspace_members.role',
      'workspace_members.created_at',
      'users.email',
      sql<string>`workspace_members.user_id`.as('id'),
    ])
    .where('workspace_members.workspace_id', '=', workspaceId);
  const rows = await afterCursor(base, 'workspace_members', decodeCursor(cursor), limit, 'user_id').execute();
  return page(rows, limit, cursor, toWorkspaceMember);
}

export async function addMember(db: Db, workspaceId: string, callerId: string, email: string, now: number): Promise<Schema<'WorkspaceMember'>> {
  const workspace = await membership(db, workspaceId, callerId);
  const user = await db.selectFrom('users').select(['id', 'email']).where('email', '=', email.toLowerCase()).executeTakeFirst();
  if (!user) throw notFound('User with email', email, 'email');
  const row = await db
    .insertInto('workspace_members')
    .values({ workspace_id: workspace.id, user_id: user.id, role: 'member', created_at: now })
    .onConflict((oc) => oc.columns(['workspace_id', 'user_id']).doNothing())
    .returningAll()
    .executeTakeFirst();
  if (!row) throw conflict(`${email} is a member of workspace ${workspace.id} already.`, 'Nothing to do.', undefined, 'email');
  return toWorkspaceMember({ ...row, email: user.email });
}

export async function removeMember(db: Db, workspaceId: string, callerId: string, userId: string): Promise<void> {
  const workspace = await membership(db, workspaceId, callerId);
  if (userId === workspace.owner_id) throw conflict('The owner cannot be removed from their workspace.', 'Remove other members only.');
  const result = await db.deleteFrom('workspace_members').where('workspace_id', '=', workspace.id).where('user_id', '=', userId).executeTakeFirst();
  if (result.numDeletedRows === 0n) throw notFound('Member', userId);
}

/** The members of a workspace, who are told about its resources (notifications). */
export async function memberIds(db: Db, workspaceId: string): Promise<string[]> {
  const rows = await db.selectFrom('workspace_members').select('user_id').where('workspace_id', '=', workspaceId).execute();
  return rows.map((r) => r.user_id);
}

/** The workspace's owner and their plan: whose quotas and provisioning limit apply to its resources. */
export async function ownerOf(db: Db, workspaceId: string) {
  return db
    .selectFrom('workspaces')
    .innerJoin('users', 'users.id', 'workspaces.owner_id')
    .select(['workspaces.id', 'workspaces.owner_id', 'users.plan'])
    .where('workspaces.id', '=', workspaceId)
    .executeTakeFirstOrThrow();
}

export const workspaceExists = async (db: Db, workspaceId: string): Promise<boolean> =>
  (await db.selectFrom('workspaces').select('id').where('id', '=', workspaceId).executeTakeFirst()) !== undefined;
