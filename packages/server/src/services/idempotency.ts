// Idempotency keys per the decisions: scoped per user, kept at least 24 hours. Requests with the same key
// take a transaction-scoped advisory lock on it, so they run one at a time across every server process:
// the first does the work and stores its response in the same transaction; the others wait for it and replay
// that response (or get 422 when their body differs). Only a first request still running after the lock
// timeout makes a later one give up with 409. A crash rolls everything back, so a retry starts clean.
import { createHash } from 'node:crypto';
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Clock } from '../clock.ts';
import type { Database } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { ApiError, conflict } from '../errors.ts';

export const IDEMPOTENCY_RETENTION_SECONDS = 24 * 3600;
const LOCK_TIMEOUT = '10s';

export interface StoredResponse {
  status: number;
  body: unknown;
}

/**
 * JSON with every object's keys in sorted order, so two bodies that differ only in key order (the same JSON
 * value) hash alike. Array order is meaning and stays. Request values are at most MAX_JSON_DEPTH deep.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

export function requestHash(operation: string, request: unknown): string {
  return createHash('sha256').update(operation).update('\0').update(canonicalJson(request)).digest('hex');
}

/**
 * Runs `work` once per (user, key): returns its response, or the stored response of an earlier request with
 * the same key and request hash (`replayed: true`).
 */
export async function withIdempotencyKey<R extends StoredResponse>(
  db: Kysely<Database>,
  clock: Clock,
  scope: { userId: string; key: string; operation: string; hash: string },
  work: (trx: Transaction<Database>) => Promise<R>,
): Promise<{ response: R; replayed: boolean }> {
  try {
    return await inTransaction(db, async (trx) => {
      await sql`SET LOCAL lock_timeout = ${sql.lit(LOCK_TIMEOUT)}`.execute(trx);
      // User ids hold no ':', so "<user>:<key>" names one (user, key) pair. (PostgreSQL text cannot hold NUL.)
      await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`${scope.userId}:${scope.key}`}, 0))`.execute(trx);
      const now = clock.now();
      const existing = await trx
        .selectFrom('idempotency_keys')
        .selectAll()
        .where('user_id', '=', scope.userId)
        .where('key', '=', scope.key)
        .where('created_at', '>=', now - IDEMPOTENCY_RETENTION_SECONDS)
        .executeTakeFirst();
      if (existing) {
        if (existing.operation !== scope.operation || existing.request_hash !== scope.hash) {
          throw new ApiError('idempotency_key_reused', 'This idempotency-key was used with a different request body.', {
            param: 'idempotency-key',
            suggestion: 'Use a new key for a new request.',
          });
        }
        return { response: { status: existing.status_code ?? 200, body: existing.response_body } as R, replayed: true };
      }
      const response = await work(trx);
      await trx
        .insertInto('idempotency_keys')
        .values({
          user_id: scope.userId,
          key: scope.key,
          operation: scope.operation,
          request_hash: scope.hash,
          status_code: response.status,
          response_body: JSON.stringify(response.body),
          created_at: now,
        })
        .onConflict((oc) =>
          oc.columns(['user_id', 'key']).doUpdateSet({
            operation: scope.operation,
            request_hash: scope.hash,
            status_code: response.status,
            response_body: JSON.stringify(response.body),
            created_at: now,
          }),
        )
        .execute();
      return { response, replayed: false };
    });
  } catch (error) {
    // lock_not_available: the first request with this key is still running.
    if ((error as { code?: string }).code === '55P03') {
      throw conflict('A request with this idempotency-key is still being processed.', 'Retry in a moment to get its result.', undefined, 'idempotency-key');
    }
    throw error;
  }
}
