// Which workspace a request acts in, and which resources a caller may see. A resource of a workspace the
// caller is not a member of is reported exactly like a missing one.
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import { ApiError } from '../http/errors.ts';

/**
 * The workspace named by X-Workspace-Id (403 when it does not exist or the caller is not a member), or the
 * caller's default workspace (the oldest one they own), or undefined when they own none.
 */
export async function resolveWorkspace(db: Kysely<Database>, userId: string, header: string | undefined): Promise<string | undefined> {
  if (header !== undefined) {
    const member = await db
      .selectFrom('workspace_members')
      .select('workspace_id')
      .where('workspace_id', '=', header)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    if (!member) {
      throw new ApiError(403, 'forbidden', `You are not a member of workspace ${header}, or it does not exist.`, {
        param: 'X-Workspace-Id',
        suggestion: 'List your workspaces with GET /v1/workspaces and send one of their ids.',
      });
    }
    return header;
  }
  const owned = await db
    .selectFrom('workspaces')
    .select('id')
    .where('owner_id', '=', userId)
    .orderBy('created_at')
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
  return owned?.id;
}

/** A subquery of the workspaces the caller is a member of, for `where workspace_id in (…)`. */
export function memberWorkspaces(db: Kysely<Database>, userId: string) {
  return db.selectFrom('workspace_members').select('workspace_id').where('user_id', '=', userId);
}
