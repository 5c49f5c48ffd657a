// A cap on the log streams one user holds open at once (OWASP API4, unrestricted resource consumption), over
// every server process: a slot is a row in stream_slots with a lease the holding process renews while the
// stream is open. Acquiring counts the key's live slots under a transaction-scoped advisory lock on the key, so
// two racing streams cannot both take the last slot. A process that dies without releasing frees its slots
// when their lease runs out (LEASE_SECONDS).
//
// Use from a streaming handler, before the first byte is written (the refusal is a JSON error body):
//
//   const slot = await streamSlots(env.db, env.clock).acquire(callerKey(input.caller), env.config.logStreamsPerUser);
//   try { ...yield events... } finally { await slot.release(); }
//
// acquire() throws ApiError 429 rate_limited (Retry-After) when the key already holds `limit` slots; a limit
// of 0 means no cap (and no database work). release() is idempotent and never throws.
import { type Kysely, sql } from 'kysely';
import type { Clock } from '../clock.ts';
import type { Database } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { ApiError } from '../errors.ts';
import { newId } from '../ids.ts';

/** A slot not renewed for this long is free again (its process is gone). */
export const LEASE_SECONDS = 60;
/** How often an open stream renews its lease (real time; a third of the lease). */
const RENEW_MS = (LEASE_SECONDS / 3) * 1000;
/** The Retry-After of a refusal: streams end when their clients leave, so a short wait is worth a try. */
const RETRY_AFTER_SECONDS = 10;

export interface StreamSlot {
  /** Frees the slot now. Safe to call more than once; failures are swallowed (the lease runs out anyway). */
  release(): Promise<void>;
}

export interface StreamSlots {
  acquire(key: string, limit: number): Promise<StreamSlot>;
}

const noSlot: StreamSlot = { release: async () => {} };

export function streamSlots(db: Kysely<Database>, clock: Clock): StreamSlots {
  return {
    async acquire(key, limit) {
      if (limit <= 0) return noSlot;
      const id = newId('ss');
      const now = clock.now();
      const taken = await inTransaction(db, async (trx) => {
        await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`stream_slots:${key}`}, 0))`.execute(trx);
        await trx.deleteFrom('stream_slots').where('key', '=', key).where('expires_at', '<=', now).execute();
        const { held } = await trx
          .selectFrom('stream_slots')
          .select((eb) => eb.fn.countAll<string>().as('held'))
          .where('key', '=', key)
          .executeTakeFirstOrThrow();
        if (Number(held) >= limit) return false;
        await trx
          .insertInto('stream_slots')
          .values({ id, key, acquired_at: now, expires_at: now + LEASE_SECONDS })
          .execute();
        return true;
      });
      if (!taken) {
        throw new ApiError('rate_limited', `Too many open log streams; this token may hold ${limit} at once.`, {
          suggestion: 'Close a log stream you no longer read, or wait for the number of seconds in Retry-After.',
          details: { limit, open_streams: limit },
          headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
        });
      }
      let released = false;
      const renew = setInterval(() => {
        void db
          .updateTable('stream_slots')
          .set({ expires_at: clock.now() + LEASE_SECONDS })
          .where('id', '=', id)
          .execute()
          .catch(() => {});
      }, RENEW_MS);
      renew.unref();
      return {
        async release() {
          if (released) return;
          released = true;
          clearInterval(renew);
          await db
            .deleteFrom('stream_slots')
            .where('id', '=', id)
            .execute()
            .catch(() => {});
        },
      };
    },
  };
}
