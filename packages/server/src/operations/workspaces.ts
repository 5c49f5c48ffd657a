import { toWorkspace } from '../db/mappers.ts';
import { afterCursor } from '../services/lists.ts';
import { decodeCursor, page } from '../services/pagination.ts';
import type { Handler } from './types.ts';

const DEFAULT_LIMIT = 50;

export const listWorkspaces: Handler<'listWorkspaces'> = async ({ query, caller }, { db }) => {
  const limit = query.limit ?? DEFAULT_LIMIT;
  const base = db
    .selectFrom('workspaces')
    .innerJoin('workspace_members', 'workspace_members.workspace_id', 'workspaces.id')
    .selectAll('workspaces')
    .where('workspace_members.user_id', '=', caller.userId);
  const rows = await afterCursor(base, 'workspaces', decodeCursor(query.cursor), limit).execute();
  return { status: 200, body: page(rows, limit, query.cursor, toWorkspace) };
};
