// The one way resources and services open a transaction. A request that changes something already runs in one
// (http/audit.ts: its change and its audit event commit together), so work handed a transaction joins it: its
// statements commit or roll back with the request's, and a lock it takes is held until then. Given the pool,
// it opens a transaction of its own (workflows, admin commands, the seed).
import type { Kysely, Transaction } from 'kysely';
import type { Database } from './schema.ts';

export const inTransaction = <T>(db: Kysely<Database>, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> =>
  db.isTransaction ? work(db as Transaction<Database>) : db.transaction().execute(work);

/**
 * Holds the row a change is about to refer to until its transaction commits (`FOR KEY SHARE`, the lock a foreign
 * key's check takes anyway): a deletion of it (which locks it, then counts what refers to it) either waits for the
 * change and finds what it made (409), or went first, and then this finds no row (false) instead of the change
 * failing on the foreign key. Outside a transaction it only looks.
 */
export async function holdReferenced(db: Kysely<Database>, table: 'workspaces' | 'clusters' | 'compute_configs', id: string): Promise<boolean> {
  const query = db.selectFrom(table).select('id').where('id', '=', id);
  return (await (db.isTransaction ? query.forKeyShare() : query).executeTakeFirst()) !== undefined;
}
