// Workspaces and their members: the only writer of `workspaces`, `workspace_members` and
// `workspace_invitations`. A workspace the caller may not act in (not a member, or outside their token's
// restriction) is reported exactly like a missing one.
import type { Schema } from '@platform/api-types';
import { type Kysely, sql } from 'kysely';
import type { Database, Row } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { ApiError, conflict, notFound } from '../errors.ts';
import { newId } from '../ids.ts';
import { changingAccess } from '../services/access-changes.ts';
import { afterCursor } from '../services/lists.ts';
import { decodeCursor, page } from '../services/pagination.ts';
import { allows, type Role } from '../services/roles.ts';
import { holdWorkspace, memberWorkspaces, type WorkspaceCaller, withinRestriction } from '../services/tenancy.ts';

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

type PageQuery = { cursor?: string; limit: number };

export async function listWorkspaces(db: Db, caller: WorkspaceCaller, { cursor, limit }: PageQuery) {
  const base = db.selectFrom('workspaces').selectAll('workspaces').where('workspaces.id', 'in', memberWorkspaces(db, caller));
  const rows = await afterCursor(base, 'workspaces', decodeCursor(cursor, 'workspaces'), limit).execute();
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
  const row = await inTransaction(db, create);
  return toWorkspace(row);
}

/** The caller's role in a workspace; 404 when they may not act in it (a workspace they cannot see). */
async function membership(db: Db, workspaceId: string, caller: WorkspaceCaller) {
  const row = await db
    .selectFrom('workspaces')
    .innerJoin('workspace_members', 'workspace_members.workspace_id', 'workspaces.id')
    .selectAll('workspaces')
    .select('workspace_members.role')
    .where('workspaces.id', '=', workspaceId)
    .where('workspace_members.user_id', '=', caller.userId)
    .where(withinRestriction(caller, 'workspaces.id'))
    .executeTakeFirst();
  if (!row) throw notFound('Workspace', workspaceId);
  return row;
}

export const getWorkspace = async (db: Db, workspaceId: string, caller: WorkspaceCaller): Promise<Schema<'Workspace'>> =>
  toWorkspace(await membership(db, workspaceId, caller));

/** A new name or icon, for any member (fields left out keep their value). */
export async function updateWorkspace(db: Db, workspaceId: string, caller: WorkspaceCaller, input: Schema<'WorkspaceUpdate'>): Promise<Schema<'Workspace'>> {
  const workspace = await membership(db, workspaceId, caller);
  const row = await db
    .updateTable('workspaces')
    .set({ ...(input.name === undefined ? {} : { name: input.name }), ...(input.icon === undefined ? {} : { icon: input.icon }) })
    .where('id', '=', workspace.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return toWorkspace(row);
}

export async function listMembers(db: Db, workspaceId: string, caller: WorkspaceCaller, { cursor, limit }: PageQuery) {
  await membership(db, workspaceId, caller);
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
  const rows = await afterCursor(base, 'workspace_members', decodeCursor(cursor, 'workspace_members'), limit, 'user_id').execute();
  return page(rows, limit, cursor, toWorkspaceMember);
}

/** How long an invitation waits for its invitee. */
const INVITATION_SECONDS = 7 * 24 * 60 * 60;

const toInvitation = (row: Row<'workspace_invitations'> & { workspace_name: string }): Schema<'WorkspaceInvitation'> => ({
  id: row.id,
  workspace_id: row.workspace_id,
  workspace_name: row.workspace_name,
  email: row.email,
  role: row.role,
  created_at: row.created_at,
  expires_at: row.expires_at,
});

/**
 * An invitation for the email, made alike whether or not anyone has an account under it: only the workspace's
 * members are looked up (409 for one of them, whom the inviter sees in the member list anyway), so neither the
 * answer nor its timing tells the inviter whether an account exists.
 */
export async function invite(
  db: Db,
  workspaceId: string,
  caller: WorkspaceCaller,
  input: Schema<'WorkspaceInvitationCreate'>,
  now: number,
): Promise<Schema<'WorkspaceInvitation'>> {
  return inTransaction(db, async (trx) => {
    const workspace = await membership(trx, workspaceId, caller);
    if (!(await holdWorkspace(trx, workspace.id))) throw notFound('Workspace', workspaceId);
    await holdInviter(trx, workspace.id, caller.userId);
    return makeInvitation(trx, workspace, caller.userId, input, now);
  });
}

/**
 * The inviter's membership, held (FOR SHARE) until the invitation commits, and their role read under that lock: a
 * removal or a demotion, which writes that row, waits for the invitation and then withdraws it, or goes first and
 * the invitation is refused. Without it, an invitation checked against a membership that a removal was deleting
 * outlived the removal.
 */
async function holdInviter(trx: Db, workspaceId: string, userId: string): Promise<void> {
  const row = await trx
    .selectFrom('workspace_members')
    .select('role')
    .where('workspace_id', '=', workspaceId)
    .where('user_id', '=', userId)
    .forShare()
    .executeTakeFirst();
  if (!row) throw notFound('Workspace', workspaceId);
  if (!allows(row.role, 'admin')) {
    throw new ApiError('forbidden', `createWorkspaceInvitation needs the admin role in workspace ${workspaceId}; your role is ${row.role}.`, {
      suggestion: 'Ask an admin or the owner of the workspace for the admin role.',
      details: { required_role: 'admin', role: row.role },
    });
  }
}

async function makeInvitation(
  db: Db,
  workspace: { id: string; name: string },
  inviterId: string,
  input: Schema<'WorkspaceInvitationCreate'>,
  now: number,
): Promise<Schema<'WorkspaceInvitation'>> {
  const email = input.email.toLowerCase();
  const existing = await db
    .selectFrom('workspace_members')
    .innerJoin('users', 'users.id', 'workspace_members.user_id')
    .select(['workspace_members.user_id', 'workspace_members.role'])
    .where('workspace_members.workspace_id', '=', workspace.id)
    .where('users.email', '=', email)
    .executeTakeFirst();
  if (existing) {
    throw conflict(
      `${email} is already a member of workspace ${workspace.id} (user ${existing.user_id}, role ${existing.role}).`,
      `Change their role with PATCH /v1/workspaces/${workspace.id}/members/${existing.user_id} instead.`,
      { user_id: existing.user_id, role: existing.role },
      'email',
    );
  }
  const row = await db
    .insertInto('workspace_invitations')
    .values({
      id: newId('inv'),
      workspace_id: workspace.id,
      email,
      role: input.role ?? 'member',
      invited_by: inviterId,
      created_at: now,
      expires_at: now + INVITATION_SECONDS,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toInvitation({ ...row, workspace_name: workspace.name });
}

/**
 * The invitations addressed to the user's email that have not expired; for a token restricted to workspaces,
 * only those of its workspaces (joining another workspace is acting beyond them).
 */
const openInvitations = (db: Db, caller: WorkspaceCaller, now: number) =>
  db
    .selectFrom('workspace_invitations')
    .innerJoin('users', 'users.email', 'workspace_invitations.email')
    .innerJoin('workspaces', 'workspaces.id', 'workspace_invitations.workspace_id')
    .where('users.id', '=', caller.userId)
    .where('workspace_invitations.expires_at', '>', now)
    .where(withinRestriction(caller, 'workspace_invitations.workspace_id'));

export async function listInvitations(db: Db, caller: WorkspaceCaller, { cursor, limit = 50 }: PageQuery, now: number) {
  const base = openInvitations(db, caller, now).selectAll('workspace_invitations').select('workspaces.name as workspace_name');
  const rows = await afterCursor(base, 'workspace_invitations', decodeCursor(cursor, 'workspace_invitations'), limit).execute();
  return page(rows, limit, cursor, toInvitation);
}

/** The workspace's pending invitations (not expired), for its admins. */
export async function listWorkspaceInvitations(db: Db, workspaceId: string, caller: WorkspaceCaller, { cursor, limit }: PageQuery, now: number) {
  const workspace = await membership(db, workspaceId, caller);
  const base = db
    .selectFrom('workspace_invitations')
    .selectAll()
    .select(sql<string>`${workspace.name}`.as('workspace_name'))
    .where('workspace_id', '=', workspace.id)
    .where('expires_at', '>', now);
  const rows = await afterCursor(base, 'workspace_invitations', decodeCursor(cursor, 'workspace_invitations'), limit).execute();
  return page(rows, limit, cursor, toInvitation);
}

/** Withdraws a pending invitation of the workspace; 404 for one of another workspace, expired or gone. */
export async function revokeInvitation(db: Db, workspaceId: string, caller: WorkspaceCaller, invitationId: string, now: number): Promise<void> {
  const workspace = await membership(db, workspaceId, caller);
  const result = await db
    .deleteFrom('workspace_invitations')
    .where('id', '=', invitationId)
    .where('workspace_id', '=', workspace.id)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  if (result.numDeletedRows === 0n) throw notFound('Invitation', invitationId, 'invitationId');
}

/** The invitee joins with the invitation's role (a member already keeps theirs), and the invitation ends. */
export async function acceptInvitation(db: Db, caller: WorkspaceCaller, id: string, now: number): Promise<Schema<'WorkspaceMember'>> {
  const { userId } = caller;
  return inTransaction(db, async (trx) => {
    // The workspace first, held until the membership commits, as its deletion takes it before its invitations: of
    // an accept and a deletion at once, one waits for the other, and neither fails on a foreign key or deadlocks.
    const invitation = await openInvitations(trx, caller, now)
      .select('workspace_invitations.workspace_id')
      .where('workspace_invitations.id', '=', id)
      .executeTakeFirst();
    if (!invitation || !(await holdWorkspace(trx, invitation.workspace_id))) throw notFound('Invitation', id);
    // Deleting it claims it: of two accepts at once, one finds nothing to delete.
    const claimed = await trx
      .deleteFrom('workspace_invitations')
      .where('id', '=', id)
      .where('id', 'in', openInvitations(trx, caller, now).select('workspace_invitations.id'))
      .returning(['workspace_id', 'role'])
      .executeTakeFirst();
    if (!claimed) throw notFound('Invitation', id);
    await trx
      .insertInto('workspace_members')
      .values({ workspace_id: claimed.workspace_id, user_id: userId, role: claimed.role, created_at: now })
      .onConflict((oc) => oc.columns(['workspace_id', 'user_id']).doNothing())
      .execute();
    return toWorkspaceMember(await member(trx, claimed.workspace_id, userId));
  });
}

export async function declineInvitation(db: Db, caller: WorkspaceCaller, id: string, now: number): Promise<void> {
  const result = await db
    .deleteFrom('workspace_invitations')
    .where('id', '=', id)
    .where('id', 'in', openInvitations(db, caller, now).select('workspace_invitations.id'))
    .executeTakeFirst();
  if (result.numDeletedRows === 0n) throw notFound('Invitation', id);
}

/**
 * A membership that ends takes with it the workspace's pending invitations addressed to the user and those they
 * made (an admin removed must not come back through an invitation of their own); returns their ids.
 */
async function withdrawInvitationsOf(db: Db, workspaceId: string, userId: string): Promise<string[]> {
  const rows = await db
    .deleteFrom('workspace_invitations')
    .where('workspace_id', '=', workspaceId)
    .where((eb) => eb.or([eb('invited_by', '=', userId), eb('email', '=', eb.selectFrom('users').select('email').where('id', '=', userId))]))
    .returning('id')
    .execute();
  return rows.map((row) => row.id);
}

/** Removes a member; returns the ids of the invitations withdrawn with them. */
export async function removeMember(db: Db, workspaceId: string, caller: WorkspaceCaller, userId: string): Promise<string[]> {
  const workspace = await membership(db, workspaceId, caller);
  if (userId === workspace.owner_id) throw conflict('The owner cannot be removed from their workspace.', 'Remove other members only.');
  const result = await db.deleteFrom('workspace_members').where('workspace_id', '=', workspace.id).where('user_id', '=', userId).executeTakeFirst();
  if (result.numDeletedRows === 0n) throw notFound('Member', userId);
  changingAccess();
  return withdrawInvitationsOf(db, workspace.id, userId);
}

/** A member of the workspace with their email; 404 when the user is not one. */
async function member(db: Db, workspaceId: string, userId: string) {
  const row = await db
    .selectFrom('workspace_members')
    .innerJoin('users', 'users.id', 'workspace_members.user_id')
    .select(['workspace_members.user_id', 'workspace_members.role', 'workspace_members.created_at', 'users.email'])
    .where('workspace_members.workspace_id', '=', workspaceId)
    .where('workspace_members.user_id', '=', userId)
    .executeTakeFirst();
  if (!row) throw notFound('Member', userId);
  return row;
}

const transferSuggestion = (workspaceId: string) => `Transfer ownership first with POST /v1/workspaces/${workspaceId}/transfer.`;

export async function setMemberRole(db: Db, workspaceId: string, caller: WorkspaceCaller, userId: string, role: Exclude<Role, 'owner'>) {
  await membership(db, workspaceId, caller);
  const target = await member(db, workspaceId, userId);
  if (target.role === 'owner')
    throw conflict(`${userId} owns workspace ${workspaceId}; the owner's role is not changed here.`, transferSuggestion(workspaceId), undefined, 'userId');
  return inTransaction(db, async (trx) => {
    await trx.updateTable('workspace_members').set({ role }).where('workspace_id', '=', workspaceId).where('user_id', '=', userId).execute();
    // A member who may no longer invite takes back the invitations they made: accepted later, one of them could
    // make its invitee an admin who grants the demoted member their role again.
    if (!allows(role, 'admin'))
      await trx.deleteFrom('workspace_invitations').where('workspace_id', '=', workspaceId).where('invited_by', '=', userId).execute();
    changingAccess();
    return toWorkspaceMember({ ...target, role });
  });
}

/** The member becomes the owner (of the workspace's row and by role); the previous owner stays as an admin. */
export async function transferOwnership(db: Db, workspaceId: string, userId: string): Promise<Schema<'WorkspaceMember'>> {
  return inTransaction(db, async (trx) => {
    // Under the workspace's row lock: two transfers at once cannot leave two owners.
    const workspace = await trx.selectFrom('workspaces').select('owner_id').where('id', '=', workspaceId).forUpdate().executeTakeFirst();
    if (!workspace) throw notFound('Workspace', workspaceId);
    const target = await member(trx, workspaceId, userId);
    if (userId === workspace.owner_id) return toWorkspaceMember(target);
    await trx.updateTable('workspaces').set({ owner_id: userId }).where('id', '=', workspaceId).execute();
    await trx.updateTable('workspace_members').set({ role: 'admin' }).where('workspace_id', '=', workspaceId).where('role', '=', 'owner').execute();
    await trx.updateTable('workspace_members').set({ role: 'owner' }).where('workspace_id', '=', workspaceId).where('user_id', '=', userId).execute();
    changingAccess();
    return toWorkspaceMember({ ...target, role: 'owner' });
  });
}

/** Ends the caller's own membership (the owner stays until they transfer ownership); returns the ids of the invitations withdrawn with it. */
export async function leave(db: Db, workspaceId: string, caller: WorkspaceCaller): Promise<string[]> {
  const { role } = await membership(db, workspaceId, caller);
  if (role === 'owner') throw conflict(`You own workspace ${workspaceId}, and a workspace keeps its owner.`, transferSuggestion(workspaceId));
  await db.deleteFrom('workspace_members').where('workspace_id', '=', workspaceId).where('user_id', '=', caller.userId).execute();
  changingAccess();
  return withdrawInvitationsOf(db, workspaceId, caller.userId);
}

/**
 * What a workspace may not be deleted with, in the order to delete them: each kind has real infrastructure or
 * secrets behind it (machines and suspensions belong to their cluster, so clusters cover them).
 */
const HELD = [
  ['installs', 'install'],
  ['products', 'product'],
  ['clusters', 'cluster'],
  ['compute_configs', 'compute config'],
  ['cloud_credentials', 'cloud credential'],
  ['registry_credentials', 'registry credential'],
] as const;
/** Ids shown per kind in a refusal. */
const SHOWN_IDS = 20;

/**
 * What the resources that refer to a workspace do, in its deletion's transaction, to let it go
 * (workspace-releases.ts): the deletion calls this one hook and knows none of them, so they may use this module.
 */
export type WorkspaceRelease = (trx: Db, workspaceId: string) => Promise<void>;

/**
 * Deletes an empty workspace with what only describes it: memberships, pending invitations, what the other
 * resources release (`release`: the tokens' restrictions naming it, its webhook endpoints), and (by their foreign
 * keys, ON DELETE CASCADE) its notifications, events and quota overrides. 409 naming what it still holds. Audit
 * records keep its id as text and stay.
 */
export async function deleteWorkspace(db: Db, workspaceId: string, caller: WorkspaceCaller, release: WorkspaceRelease): Promise<void> {
  await inTransaction(db, async (trx) => {
    await membership(trx, workspaceId, caller);
    // Under the row lock a creation in the workspace either went first (and is counted below) or waits for this
    // transaction (the binding holds the row: http/bind-handler.ts) and then finds no workspace: nothing is left behind.
    await trx.selectFrom('workspaces').select('id').where('id', '=', workspaceId).forUpdate().execute();
    const remaining: { kind: string; count: number; ids: string[] }[] = [];
    const said: string[] = [];
    for (const [table, noun] of HELD) {
      const { rows } = await sql<{ id: string; count: number }>`
        SELECT id, (count(*) OVER ())::int AS count FROM ${sql.table(table)}
        WHERE workspace_id = ${workspaceId} ORDER BY created_at, id LIMIT ${SHOWN_IDS}`.execute(trx);
      if (rows.length === 0) continue;
      const count = rows[0]!.count;
      remaining.push({ kind: table, count, ids: rows.map((row) => row.id) });
      said.push(`${count} ${noun}${count === 1 ? '' : 's'}`);
    }
    if (remaining.length > 0) {
      throw new ApiError('conflict', `Workspace ${workspaceId} still holds ${said.join(', ').replace(/, ([^,]*)$/, ' and $1')}.`, {
        suggestion:
          'Delete them first (installs, then products and clusters with their machines, then compute configs and credentials), then delete the workspace.',
        details: { remaining },
      });
    }
    await release(trx, workspaceId);
    await trx.deleteFrom('workspace_invitations').where('workspace_id', '=', workspaceId).execute();
    await trx.deleteFrom('workspace_members').where('workspace_id', '=', workspaceId).execute();
    await trx.deleteFrom('workspaces').where('id', '=', workspaceId).execute();
    changingAccess();
  });
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
