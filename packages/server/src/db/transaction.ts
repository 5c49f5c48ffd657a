// The one way resources and services open a transaction. A request that changes something already runs in one
// (http/audit.ts: its change and its audit event commit together), so work handed a transaction joins it: its
// statements commit or roll back with the request's, and a lock it takes is held until then. Given the pool,
// it opens a transaction of its own (workflows, admin commands, the seed).
import type { Kysely, Transaction } from 'kysely';
import type { Database } from './schema.ts';

export const inTransaction = <T>(db: Kysely<Database>, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> =>
  db.isTransaction ? work(db as Transaction<Database>) : db.transaction().execute(work);
