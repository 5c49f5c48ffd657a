// Which workspace a request acts in, and which resources a caller may see. A resource of a workspace the
// caller is not a member of is reported exactly like a missing one.
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import { ApiError } from '../errors.ts';

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

/** Who is asking: the user, and the named workspace when authentication already looked it up. */
export interface WorkspaceCaller {
  userId: string;
  namedWorkspace?: NamedWorkspace;
}

const forbidden = (id: string) =>
  new ApiError('forbidden', `You are not a member of workspace ${id}, or it does not exist.`, {
    param: 'X-Workspace-Id',
    suggestion: 'List your workspaces with GET /v1/workspaces and send one of their ids.',
  });

/**
 * The workspace named by X-Workspace-Id (403 when it does not exist or the caller is not a member), or the
 * caller's default workspace (the oldest one they own), or undefined when they own none. With
 * `onlyWhenNamed`, only a named workspace is checked (operations on resources addressed by id).
 */
export async function resolveWorkspace(
  db: Kysely<Database>,
  caller: WorkspaceCaller,
  header: string | undefined,
  options: { onlyWhenNamed?: boolean } = {},
): Promise<WorkspaceRef | undefined> {
  const { userId } = caller;
  if (header !== undefined) {
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
    return named;
  }
  if (options.onlyWhenNamed) return undefined;
  return db.selectFrom('workspaces').select(['id', 'owner_id']).where('owner_id', '=', userId).orderBy('created_at').orderBy('id').limit(1).executeTakeFirst();
}

/** Like resolveWorkspace, for creations: acting without a workspace is a 422 naming the header. */
export async function requireWorkspace(db: Kysely<Database>, caller: WorkspaceCaller, header: string | undefined): Promise<WorkspaceRef> {
  const workspace = await resolveWorkspace(db, caller, header);
  if (!workspace) {
    throw new ApiError('validation_error', 'You own no workspace, so X-Workspace-Id is required.', {
      param: 'X-Workspace-Id',
      suggestion: 'Create a workspace with POST /v1/workspaces, or send the id of a workspace you are a member of.',
    });
  }
  return workspace;
}

/** A subquery of the workspaces the caller is a member of, for `where workspace_id in (…)`. */
export function memberWorkspaces(db: Kysely<Database>, userId: string) {
  return db.selectFrom('workspace_members').select('workspace_id').where('user_id', '=', userId);
}
