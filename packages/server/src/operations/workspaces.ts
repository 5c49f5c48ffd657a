import { sql } from 'kysely';
import { toWorkspace, toWorkspaceMember } from '../db/mappers.ts';
import { ApiError, conflict, notFound } from '../http/errors.ts';
import { newId } from '../ids.ts';
import { afterCursor } from '../services/lists.ts';
import { decodeCursor, page } from '../services/pagination.ts';
import type { Handler } from './types.ts';

export const listWorkspaces: Handler<'listWorkspaces'> = async ({ query, caller }, { db }) => {
  const limit = query.limit ?? 50;
  const base = db
    .selectFrom('workspaces')
    .innerJoin('workspace_members', 'workspace_members.workspace_id', 'workspaces.id')
    .selectAll('workspaces')
    .where('workspace_members.user_id', '=', caller.userId);
  const rows = await afterCursor(base, 'workspaces', decodeCursor(query.cursor), limit).execute();
  return { status: 200, body: page(rows, limit, query.cursor, toWorkspace) };
};

export const createWorkspace: Handler<'createWorkspace'> = async ({ body, caller }, { db, clock }) => {
  const now = clock.now();
  const row = await db.transaction().execute(async (trx) => {
    const workspace = await trx.insertInto('workspaces').values({ id: newId('ws'), name: body.name, icon: body.icon ?? null, owner_id: caller.userId, created_at: now }).returningAll().executeTakeFirstOrThrow();
    await trx.insertInto('workspace_members').values({ workspace_id: workspace.id, user_id: caller.userId, role: 'owner', created_at: now }).execute();
    return workspace;
  });
  return { status: 201, body: toWorkspace(row) };
};

/** The caller's role in a workspace; 404 when they are not a member (a workspace they cannot see). */
async function membership(db: Parameters<Handler<'getWorkspace'>>[1]['db'], workspaceId: string, userId: string) {
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

const ownerOnly = (workspaceId: string) =>
  new ApiError('forbidden', `Only the owner of workspace ${workspaceId} manages its members.`, { suggestion: 'Ask the workspace owner.' });

export const getWorkspace: Handler<'getWorkspace'> = async ({ params, caller }, { db }) => ({
  status: 200,
  body: toWorkspace(await membership(db, params.workspaceId, caller.userId)),
});

export const listWorkspaceMembers: Handler<'listWorkspaceMembers'> = async ({ params, query, caller }, { db }) => {
  await membership(db, params.workspaceId, caller.userId);
  const limit = query.limit ?? 50;
  const base = db
    .selectFrom('workspace_members')
    .innerJoin('users', 'users.id', 'workspace_members.user_id')
    .select(['workspace_members.user_id', 'workspace_members.role', 'workspace_members.created_at', 'users.email', sql<string>`workspace_members.user_id`.as('id')])
    .where('workspace_members.workspace_id', '=', params.workspaceId);
  const rows = await afterCursor(base, 'workspace_members', decodeCursor(query.cursor), limit, 'user_id').execute();
  return { status: 200, body: page(rows, limit, query.cursor, toWorkspaceMember) };
};

export const addWorkspaceMember: Handler<'addWorkspaceMember'> = async ({ params, body, caller }, { db, clock }) => {
  const workspace = await membership(db, params.workspaceId, caller.userId);
  if (workspace.role !== 'owner') throw ownerOnly(workspace.id);
  const user = await db.selectFrom('users').select(['id', 'email']).where('email', '=', body.email.toLowerCase()).executeTakeFirst();
  if (!user) throw notFound('User with email', body.email, 'email');
  const row = await db
    .insertInto('workspace_members')
    .values({ workspace_id: workspace.id, user_id: user.id, role: 'member', created_at: clock.now() })
    .onConflict((oc) => oc.columns(['workspace_id', 'user_id']).doNothing())
    .returningAll()
    .executeTakeFirst();
  if (!row) throw conflict(`${body.email} is a member of workspace ${workspace.id} already.`, 'Nothing to do.', undefined, 'email');
  return { status: 201, body: toWorkspaceMember({ ...row, email: user.email }) };
};

export const removeWorkspaceMember: Handler<'removeWorkspaceMember'> = async ({ params, caller }, { db }) => {
  const workspace = await membership(db, params.workspaceId, caller.userId);
  if (workspace.role !== 'owner') throw ownerOnly(workspace.id);
  if (params.userId === workspace.owner_id) throw conflict('The owner cannot be removed from their workspace.', 'Remove other members only.');
  const result = await db.deleteFrom('workspace_members').where('workspace_id', '=', workspace.id).where('user_id', '=', params.userId).executeTakeFirst();
  if (result.numDeletedRows === 0n) throw notFound('Member', params.userId);
  return { status: 204, body: undefined };
};
