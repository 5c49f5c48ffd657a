// The keyset step shared by every list: rows after the cursor's (created_at, id), oldest first, one extra
// row to learn whether another page follows.
import { type SelectQueryBuilder, sql } from 'kysely';
import type { Position } from './pagination.ts';

export function afterCursor<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  table: string,
  after: Position | undefined,
  limit: number,
): SelectQueryBuilder<DB, TB, O> {
  const created = sql.ref(`${table}.created_at`);
  const id = sql.ref(`${table}.id`);
  const filtered = after ? query.where(sql<boolean>`(${created}, ${id}) > (${after.created_at}, ${after.id})`) : query;
  return filtered.orderBy(sql`${created}`).orderBy(sql`${id}`).limit(limit + 1);
}
