import { toCluster } from '../db/mappers.ts';
import { afterCursor } from '../services/lists.ts';
import { decodeCursor, page } from '../services/pagination.ts';
import { resolveWorkspace } from '../services/tenancy.ts';
import type { Handler } from './types.ts';

export const listClusters: Handler<'listClusters'> = async ({ query, headers, caller }, { db }) => {
  const limit = query.limit ?? 50;
  const after = decodeCursor(query.cursor);
  const workspaceId = await resolveWorkspace(db, caller.userId, headers['X-Workspace-Id']);
  if (!workspaceId) return { status: 200, body: page([], limit, query.cursor, toCluster) };
  const base = db.selectFrom('clusters').selectAll().where('workspace_id', '=', workspaceId);
  const rows = await afterCursor(base, 'clusters', after, limit).execute();
  return { status: 200, body: page(rows, limit, query.cursor, toCluster) };
};
