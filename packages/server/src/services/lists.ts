// The keyset step shared by every list: rows after the cursor's (created_at, id), oldest first, one extra
// row to learn whether another page follows.
import { type Kysely, type SelectQueryBuilder, sql } from 'kysely';
import type { Database, Row } from '../db/schema.ts';
import { decodeCursor, page, type Position } from './pagination.ts';
import { resolveWorkspace } from './tenancy.ts';

export function afterCursor<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  table: string,
  after: Position | undefined,
  limit: number,
  idColumn = 'id',
): SelectQueryBuilder<DB, TB, O> {
  const created = sql.ref(`${table}.created_at`);
  const id = sql.ref(`${table}.${idColumn}`);
  const filtered = after ? query.where(sql<boolean>`(${created}, ${id}) > (${after.created_at}, ${after.id})`) : query;
  return filtered.orderBy(sql`${created}`).orderBy(sql`${id}`).limit(limit + 1);
}

type WorkspaceTable = 'clusters' | 'compute_configs' | 'cloud_credentials' | 'registry_credentials' | 'suspensions' | 'products' | 'installs';

/**
 * One page of a workspace-scoped list: the workspace named by X-Workspace-Id (403 when foreign) or the
 * caller's default one (an empty page when they own none).
 */
export async function workspacePage<T extends WorkspaceTable, R>(
  db: Kysely<Database>,
  input: { caller: { userId: string }; headers: { 'X-Workspace-Id'?: string }; query: { cursor?: string; limit?: number } },
  table: T,
  toRecord: (row: Row<T>) => R,
) {
  const { cursor, limit = 50 } = input.query;
  const after = decodeCursor(cursor);
  const workspace = await resolveWorkspace(db, input.caller, input.headers['X-Workspace-Id']);
  if (!workspace) return page([], limit, cursor, toRecord);
  // One query shape serves every workspace table; the rows are of table T.
  const base = db.selectFrom(table as 'clusters').selectAll().where('workspace_id', '=', workspace.id);
  const rows = (await afterCursor(base, table, after, limit).execute()) as unknown as (Row<T> & Position)[];
  return page(rows, limit, cursor, toRecord);
}
