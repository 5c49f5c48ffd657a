// Idempotency keys per the decisions: scoped per user, kept at least 24 hours. The first request with a key
// takes a transaction-scoped advisory lock on it (across every server process), does the work and stores its
// response in the same transaction; a later one replays that response (or gets 422 when its body differs),
// and one that arrives while the first is still running gets 409 at once (the decisions' rule; the client
// retries it). A crash rolls everything back, so a retry starts clean.
import { createHash } from 'node:crypto';
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Clock } from '../clock.ts';
import type { Database } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { ApiError, conflict } from '../errors.ts';

export const IDEMPOTENCY_RETENTION_SECONDS = 24 * 3600;

export interface StoredResponse {
  status: number;
  body: unknown;
  /** Headers the handler set (a request's own, such as X-Request-Id, are not part of it). */
  headers?: Record<string, string> | undefined;
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
  const now = clock.now();
  // A finished first request is replayed without the lock, so repeats never queue behind one another.
  const stored = await storedResponse<R>(db, scope, now);
  if (stored) return stored;
  return inTransaction(db, async (trx) => {
    // User ids hold no ':', so "<user>:<key>" names one (user, key) pair. (PostgreSQL text cannot hold NUL.)
    const { rows } = await sql<{ locked: boolean }>`
      SELECT pg_try_advisory_xact_lock(hashtextextended(${`${scope.userId}:${scope.key}`}, 0)) AS locked`.execute(trx);
    if (!rows[0]?.locked) {
      throw conflict('A request with this idempotency-key is still being processed.', 'Retry in a moment to get its result.', undefined, 'idempotency-key');
    }
    // The first may have finished between the look above and the lock.
    const finished = await storedResponse<R>(trx, scope, now);
    if (finished) return finished;
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
        response_headers: response.headers ? JSON.stringify(response.headers) : null,
        created_at: now,
      })
      .onConflict((oc) =>
        oc.columns(['user_id', 'key']).doUpdateSet({
          operation: scope.operation,
          request_hash: scope.hash,
          status_code: response.status,
          response_body: JSON.stringify(response.body),
          response_headers: response.headers ? JSON.stringify(response.headers) : null,
          created_at: now,
        }),
      )
      .execute();
    return { response, replayed: false };
  });
}

/** The stored response of an earlier request with the key, kept within the retention; 422 when its body differed. */
async function storedResponse<R extends StoredResponse>(
  db: Kysely<Database>,
  scope: { userId: string; key: string; operation: string; hash: string },
  now: number,
): Promise<{ response: R; replayed: true } | undefined> {
  const existing = await db
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('user_id', '=', scope.userId)
    .where('key', '=', scope.key)
    .where('created_at', '>=', now - IDEMPOTENCY_RETENTION_SECONDS)
    .executeTakeFirst();
  if (!existing) return undefined;
  if (existing.operation !== scope.operation || existing.request_hash !== scope.hash) {
    throw new ApiError('idempotency_key_reused', 'This idempotency-key was used with a different request body.', {
      param: 'idempotency-key',
      suggestion: 'Use a new key for a new request.',
    });
  }
  return {
    response: { status: existing.status_code ?? 200, body: existing.response_body, headers: existing.response_headers ?? undefined } as R,
    replayed: true,
  };
}
