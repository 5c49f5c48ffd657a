// Which workspace a request acts in, and which resources a caller may see: the workspaces the user is a member
// of, within the token's restriction (a PAT's `workspace_ids`). A resource of any other workspace is reported
// exactly like a missing one; a workspace named outside the restriction is a 403 that says so.
import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database } from '../db/schema.ts';
import { holdReferenced } from '../db/transaction.ts';
import { ApiError, shown, validationError } from '../errors.ts';

export interface WorkspaceRef {
  id: string;
  owner_id: string;
}

/**
 * The workspace a request names, looked up in the same query as the caller's token (one round trip fewer on
 * every workspace-scoped request): `ref` is null when it does not exist or the caller is not a member.
 */
export interface NamedWorkspace {
  id: string;
  ref: WorkspaceRef | null;
}

/**
 * Who is asking: the user, the workspaces their token may act in, and the named workspace when authentication
 * already looked it up.
 */
export interface WorkspaceCaller {
  userId: string;
  /**
   * A personal access token restricted to workspaces (`workspace_ids`): only those. Null: every workspace of the
   * user. The restriction never grants anything: a workspace the user is no longer a member of stays out of reach.
   */
  workspaceIds: readonly string[] | null;
  namedWorkspace?: NamedWorkspace;
}

const forbidden = (id: string) =>
  new ApiError('forbidden', `You are not a member of workspace ${id}, or it does not exist.`, {
    param: 'X-Workspace-Id',
    suggestion: 'List your workspaces with GET /v1/workspaces and send one of their ids.',
  });

export const mayActIn = (caller: WorkspaceCaller, workspaceId: string): boolean => caller.workspaceIds === null || caller.workspaceIds.includes(workspaceId);

/** 403 when the caller's token is restricted to other workspaces than the one named by `param`. */
export function requireAllowedWorkspace(caller: WorkspaceCaller, workspaceId: string, param: string): void {
  if (mayActIn(caller, workspaceId)) return;
  throw new ApiError(
    'forbidden',
    `This token is restricted to the workspaces ${caller.workspaceIds!.join(', ') || '(none left)'}; it cannot act in ${workspaceId}.`,
    {
      param,
      suggestion: 'Use a token that may act in that workspace, or create one whose workspace_ids include it (POST /v1/user/tokens).',
      details: { workspace_ids: caller.workspaceIds, workspace_id: workspaceId },
    },
  );
}

/** 403 for a token restricted to workspaces: what `operationId` does reaches beyond any workspace. */
export function requireUnrestricted(caller: WorkspaceCaller, operationId: string, why: string): void {
  if (caller.workspaceIds === null) return;
  throw new ApiError('forbidden', `This token is restricted to workspaces, and ${operationId} ${why}.`, {
    param: 'Authorization',
    suggestion: 'Use a session token or a personal access token without workspace_ids.',
    details: { workspace_ids: caller.workspaceIds },
  });
}

/**
 * The token's restriction as a condition on a column holding a workspace id: always true for a token without
 * one. `memberWorkspaces` applies it to memberships; rows that are not memberships (invitations,
 * notifications) use it directly.
 */
export function withinRestriction(caller: WorkspaceCaller, column: string): RawBuilder<boolean> {
  return caller.workspaceIds === null ? sql<boolean>`true` : sql<boolean>`${sql.ref(column)} = any(${[...caller.workspaceIds]}::text[])`;
}

/** The workspace a request acts in, as the binding resolved it; `named`: X-Workspace-Id named it (else the default). */
export interface ActingWorkspace extends WorkspaceRef {
  named: boolean;
}

/**
 * The workspace named by X-Workspace-Id (403 when it does not exist, the caller is not a member, or their token is
 * restricted to others), or the caller's default workspace (the oldest one they own that their token may act in),
 * or undefined when there is none. With `onlyWhenNamed`, only a named workspace is checked (operations on
 * resources addressed by id). Called by the binding alone, once a request: handlers get the answer.
 */
export async function resolveWorkspace(
  db: Kysely<Database>,
  caller: WorkspaceCaller,
  header: string | undefined,
  options: { onlyWhenNamed?: boolean } = {},
): Promise<ActingWorkspace | undefined> {
  const { userId } = caller;
  if (header !== undefined) {
    requireAllowedWorkspace(caller, header, 'X-Workspace-Id');
    const prefetched = caller.namedWorkspace?.id === header ? caller.namedWorkspace.ref : undefined;
    const named =
      prefetched !== undefined
        ? prefetched
        : await db
            .selectFrom('workspace_members')
            .innerJoin('workspaces', 'workspaces.id', 'workspace_members.workspace_id')
            .select(['workspaces.id', 'workspaces.owner_id'])
            .where('workspace_members.workspace_id', '=', header)
            .where('workspace_members.user_id', '=', userId)
            .executeTakeFirst();
    if (!named) throw forbidden(header);
    return { id: named.id, owner_id: named.owner_id, named: true };
  }
  if (options.onlyWhenNamed) return undefined;
  // The default: the oldest workspace the user owns among those the token may act in.
  const own = await db
    .selectFrom('workspaces')
    .select(['id', 'owner_id'])
    .where('owner_id', '=', userId)
    .where(withinRestriction(caller, 'workspaces.id'))
    .orderBy('created_at')
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
  return own && { id: own.id, owner_id: own.owner_id, named: false };
}

/** An operation that acts in a workspace, called acting in none (none named, none owned): a 422 naming the header. */
export const noWorkspace = () =>
  new ApiError('validation_error', 'You own no workspace, so X-Workspace-Id is required.', {
    param: 'X-Workspace-Id',
    suggestion: 'Create a workspace with POST /v1/workspaces, or send the id of a workspace you are a member of.',
  });

/**
 * Holds the workspace a change acts in until its transaction commits (holdWorkspace): a deletion that went first
 * leaves no workspace, a 403 as for one never there.
 */
export async function holdActingWorkspace(db: Kysely<Database>, workspace: WorkspaceRef): Promise<void> {
  if (!(await holdWorkspace(db, workspace.id))) throw forbidden(workspace.id);
}

/** Holds a workspace's row for a change that adds a row referring to it (db/transaction.ts, holdReferenced). */
export const holdWorkspace = (db: Kysely<Database>, workspaceId: string): Promise<boolean> => holdReferenced(db, 'workspaces', workspaceId);

/**
 * The workspaces the caller may act in, as a subquery for `where workspace_id in (…)`: those the user is a member
 * of, within their token's restriction. Every resource addressed by id is looked up through it, so a token
 * restricted to other workspaces finds it as missing (404), and a membership ended later ends the access.
 */
export function memberWorkspaces(db: Kysely<Database>, caller: WorkspaceCaller) {
  return db
    .selectFrom('workspace_members')
    .select('workspace_members.workspace_id')
    .where('workspace_members.user_id', '=', caller.userId)
    .where(withinRestriction(caller, 'workspace_members.workspace_id'));
}

/**
 * The workspaces a new token may be restricted to: those asked for, each one the caller may act in (403 beyond
 * the calling token's own restriction, 422 for a workspace the user is not a member of, naming
 * `workspace_ids[i]`); omitted, the calling token's own restriction (null: none). Never a token stronger than
 * its maker, as with scopes.
 */
export async function grantableWorkspaces(db: Kysely<Database>, caller: WorkspaceCaller, requested: readonly string[] | undefined): Promise<string[] | null> {
  if (requested === undefined) return caller.workspaceIds === null ? null : [...caller.workspaceIds];
  requested.forEach((id, i) => requireAllowedWorkspace(caller, id, `workspace_ids[${i}]`));
  const rows = await memberWorkspaces(db, caller).where('workspace_members.workspace_id', 'in', requested).execute();
  const found = new Set(rows.map((row) => row.workspace_id));
  const missing = requested.findIndex((id) => !found.has(id));
  if (missing >= 0) {
    throw validationError(
      `workspace_ids[${missing}]`,
      `You are not a member of workspace ${shown(requested[missing]!)}, or it does not exist.`,
      'List your workspaces with GET /v1/workspaces and name some of them.',
    );
  }
  return [...requested];
}
