// The keyset step shared by every list: rows after the cursor's (created_at, id), oldest first, one extra
// row to learn whether another page follows.
import { type Kysely, type SelectQueryBuilder, sql } from 'kysely';
import { rawRows } from '../db/raw-query.ts';
import type { Database, Row } from '../db/schema.ts';
import { decodeCursor, type Position, page } from './pagination.ts';
import type { WorkspaceRef } from './tenancy.ts';

/** The keyset: rows strictly after the cursor's position, in (created_at, id) order. */
function keyset(table: string, after: Position | undefined, idColumn: string) {
  const created = sql.ref(`${table}.created_at`);
  const id = sql.ref(`${table}.${idColumn}`);
  return { after: after ? sql<boolean>`(${created}, ${id}) > (${after.created_at}, ${after.id})` : undefined, order: sql`${created}, ${id}` };
}

export function afterCursor<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  table: string,
  after: Position | undefined,
  limit: number,
  idColumn = 'id',
): SelectQueryBuilder<DB, TB, O> {
  const step = keyset(table, after, idColumn);
  return (step.after ? query.where(step.after) : query).orderBy(step.order).limit(limit + 1);
}

/** What a workspace-scoped list request carries: the workspace it acts in (resolved by the binding) and the page query. */
export interface PageInput {
  workspace: WorkspaceRef | undefined;
  /** `limit` has the contract's default filled in by the request validator. */
  query: { cursor?: string; limit: number };
}

/** Every table of rows that belong to one workspace and have an id (a new such table lists with no change here). */
type WorkspaceTable = { [T in keyof Database]: Row<T> extends { id: string; workspace_id: string; created_at: number } ? T : never }[keyof Database];

/**
 * One page of a workspace-scoped list: of the workspace the request acts in, named or the caller's default one
 * (an empty page when there is none).
 */
export async function workspacePage<T extends WorkspaceTable, R>(db: Kysely<Database>, input: PageInput, table: T, toRecord: (row: Row<T>) => R) {
  const { cursor, limit } = input.query;
  const after = decodeCursor(cursor, table);
  const { workspace } = input;
  if (!workspace) return page([], limit, cursor, toRecord);
  // One query text per table serves every workspace table; the rows are of table T. Written as SQL, not with the
  // builder, and run past Kysely's query path (raw-query.ts): lists are the API's busiest reads.
  const rows = after
    ? await rawRows<Row<T> & Position>(db, pageAfterSql(table), [workspace.id, after.created_at, after.id, limit + 1])
    : await rawRows<Row<T> & Position>(db, firstPageSql(table), [workspace.id, limit + 1]);
  return page(rows, limit, cursor, toRecord);
}

// Table names come from the Database type (WorkspaceTable), never from a request.
const firstPageSql = (table: string) => `SELECT * FROM "${table}" WHERE workspace_id = $1 ORDER BY created_at, id LIMIT $2`;
const pageAfterSql = (table: string) => `SELECT * FROM "${table}" WHERE workspace_id = $1 AND (created_at, id) > ($2, $3) ORDER BY created_at, id LIMIT $4`;
