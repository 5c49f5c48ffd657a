// The busiest queries (the token look-up of every authenticated request, the page of a workspace list) as SQL
// texts run on the pool itself, past Kysely's query path (building, compiling, acquiring and releasing its
// connection through the driver, transforming the result), which allocated about 16 KB of the ~130 KB garbage
// of a list request and a share of its CPU. The pool's connections prepare the texts as every other query's
// (prepared-statements.ts). Inside a transaction the query joins it through Kysely, as any other statement.
import { CompiledQuery, type Kysely } from 'kysely';
import type pg from 'pg';
import type { Database } from './schema.ts';

const pools = new WeakMap<Kysely<Database>, pg.Pool>();

/** Called by openDatabase: queries on `db` outside a transaction may run on `pool` directly. */
export function registerPool(db: Kysely<Database>, pool: pg.Pool): void {
  pools.set(db, pool);
}

/** The rows of one parameterised SQL text ($1, $2, …), on the pool when `db` is not a transaction. */
export async function rawRows<R>(db: Kysely<Database>, text: string, values: unknown[]): Promise<R[]> {
  const pool = pools.get(db);
  if (pool) {
    // Not pool.query: it calls the client with a callback, which the prepared-statement wrapper leaves unnamed.
    const client = await pool.connect();
    try {
      return (await client.query(text, values)).rows as R[];
    } finally {
      client.release();
    }
  }
  return (await db.executeQuery<R>(CompiledQuery.raw(text, values))).rows;
}
