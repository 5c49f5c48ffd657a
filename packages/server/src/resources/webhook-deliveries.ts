// Webhook deliveries: one event to one endpoint. The only writer of `webhook_deliveries`. An event's deliveries are
// written in the event's transaction (fanOut, called by recordEvent), so there is no event without its deliveries
// and no delivery without its event. The row is the truth about the sending, as a workflow's row is: due at
// `next_attempt_at` on the clock; the dispatcher's ticker sends a pg-boss job for what is due and for orphans (an
// attempt whose worker died), a worker leases the row for one attempt and settles it. pending → succeeded, or
// back to pending with the next attempt's moment, or failed when the retries run out; cancelled when the
// endpoint is disabled.
import type { Schema } from '@platform/api-types';
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database, Row } from '../db/schema.ts';
import { conflict, notFound } from '../errors.ts';
import { newId } from '../ids.ts';
import { afterCursor } from '../services/lists.ts';
import { decodeCursor, page } from '../services/pagination.ts';
import { memberWorkspaces, type WorkspaceCaller } from '../services/tenancy.ts';

type Db = Kysely<Database>;
type Delivery = Schema<'WebhookDelivery'>;

/** Row → record, typed on both ends: a drift between the database and the contract fails the type check. */
const toWebhookDelivery = (row: Row<'webhook_deliveries'>): Delivery => ({
  id: row.id,
  endpoint_id: row.endpoint_id,
  event_id: row.event_id,
  event_type: row.event_type,
  status: row.status,
  attempts: row.attempts,
  last_attempt_at: row.last_attempt_at,
  last_response_status: row.last_response_status,
  last_duration_ms: row.last_duration_ms,
  last_error: row.last_error,
  next_attempt_at: row.next_attempt_at,
  created_at: row.created_at,
  updated_at: row.updated_at,
});

/**
 * One pending delivery, due now, for every enabled endpoint of the event's workspace that subscribes to its type.
 * Call in the event's transaction.
 */
/**
 * The channel on which a commit that makes deliveries due is told: NOTIFY is sent at commit (never before the rows
 * exist, nor for a rollback), so a dispatcher listening sends them at once instead of at its next tick.
 */
export const DELIVERIES_DUE_CHANNEL = 'webhook_deliveries_due';

const tellDue = (db: Db) => sql`SELECT pg_notify(${DELIVERIES_DUE_CHANNEL}, '')`.execute(db);

export async function fanOut(trx: Db, event: { id: string; type: Schema<'EventType'>; workspace_id: string }, now: number): Promise<number> {
  const endpoints = await trx
    .selectFrom('webhook_endpoints')
    .select('id')
    .where('workspace_id', '=', event.workspace_id)
    .where('enabled', '=', true)
    .where(sql<boolean>`(cardinality(event_types) = 0 OR ${event.type} = ANY(event_types))`)
    .execute();
  if (endpoints.length === 0) return 0;
  await trx
    .insertInto('webhook_deliveries')
    .values(
      endpoints.map((endpoint) => ({
        id: newId('whd'),
        endpoint_id: endpoint.id,
        event_id: event.id,
        event_type: event.type,
        status: 'pending' as const,
        first_attempt_at: now,
        last_attempt_at: null,
        last_response_status: null,
        last_duration_ms: null,
        last_error: null,
        next_attempt_at: now,
        created_at: now,
        updated_at: now,
      })),
    )
    .execute();
  await tellDue(trx);
  return endpoints.length;
}

/** The endpoint, when the user is a member of its workspace; 404 otherwise. */
async function visibleEndpoint(db: Db, caller: WorkspaceCaller, endpointId: string) {
  const endpoint = await db
    .selectFrom('webhook_endpoints')
    .select(['id', 'enabled'])
    .where('id', '=', endpointId)
    .where('workspace_id', 'in', memberWorkspaces(db, caller))
    .executeTakeFirst();
  if (!endpoint) throw notFound('Webhook endpoint', endpointId);
  return endpoint;
}

export async function listWebhookDeliveries(
  db: Db,
  caller: WorkspaceCaller,
  endpointId: string,
  query: { cursor?: string; limit: number; status?: Delivery['status'] },
) {
  // The cursor is input: checked before anything is looked up.
  const after = decodeCursor(query.cursor);
  await visibleEndpoint(db, caller, endpointId);
  let base = db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', endpointId);
  if (query.status) base = base.where('status', '=', query.status);
  const rows = await afterCursor(base, 'webhook_deliveries', after, query.limit).execute();
  return page(rows, query.limit, query.cursor, toWebhookDelivery);
}

/**
 * → pending and due now, with a fresh retry schedule (3 days from now); the attempts count on. 409 when the
 * endpoint is disabled.
 */
export async function redeliver(db: Db, caller: WorkspaceCaller, endpointId: string, deliveryId: string, now: number): Promise<Delivery> {
  const endpoint = await visibleEndpoint(db, caller, endpointId);
  if (!endpoint.enabled) {
    throw conflict(`Webhook endpoint ${endpointId} is disabled; nothing is delivered to it.`, 'Enable it (PATCH with enabled: true), then redeliver.');
  }
  const row = await db
    .updateTable('webhook_deliveries')
    .set({ status: 'pending', first_attempt_at: now, next_attempt_at: now, leased_until: null, updated_at: now })
    .where('id', '=', deliveryId)
    .where('endpoint_id', '=', endpointId)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw notFound('Webhook delivery', deliveryId);
  await tellDue(db);
  return toWebhookDelivery(row);
}

/** Pending deliveries of the endpoint → cancelled (it was disabled): nothing more is attempted. */
export async function cancelPendingDeliveries(trx: Db, endpointId: string, reason: string, now: number): Promise<void> {
  await trx
    .updateTable('webhook_deliveries')
    .set({ status: 'cancelled', next_attempt_at: null, leased_until: null, last_error: reason, updated_at: now })
    .where('endpoint_id', '=', endpointId)
    .where('status', '=', 'pending')
    .execute();
}

// What the dispatcher does to deliveries.

/**
 * Marks what is due (by the clock) and orphans (pending, not due, its job no longer waiting in the queue, no
 * worker holding a lease, and sent longer ago than `orphanAfterSeconds`: what a killed worker held) as sent
 * with a new job id, in the caller's transaction, which also sends the jobs. Returns them.
 */
export async function takeDueDeliveries(
  trx: Transaction<Database>,
  { now, queue, orphanAfterSeconds, limit }: { now: number; queue: string; orphanAfterSeconds: number; limit: number },
): Promise<{ id: string; job_id: string }[]> {
  const due = await sql<{ id: string; job_id: string }>`
    UPDATE webhook_deliveries d SET next_attempt_at = NULL, enqueued_at = now(), job_id = gen_random_uuid()
    FROM (
      SELECT id FROM webhook_deliveries WHERE next_attempt_at <= ${now} ORDER BY next_attempt_at LIMIT ${limit} FOR UPDATE SKIP LOCKED
    ) due
    WHERE d.id = due.id
    RETURNING d.id, d.job_id`.execute(trx);
  const orphans = await sql<{ id: string; job_id: string }>`
    UPDATE webhook_deliveries d SET enqueued_at = now(), job_id = gen_random_uuid(), leased_until = NULL
    FROM (
      SELECT id FROM webhook_deliveries
      WHERE status = 'pending' AND next_attempt_at IS NULL
        AND (enqueued_at IS NULL OR enqueued_at < now() - make_interval(secs => ${orphanAfterSeconds}))
        AND (leased_until IS NULL OR leased_until < now())
        AND NOT EXISTS (
          SELECT 1 FROM pgboss.job j WHERE j.name = ${queue} AND j.id = webhook_deliveries.job_id AND j.state IN ('created', 'retry'))
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    ) orphan
    WHERE d.id = orphan.id
    RETURNING d.id, d.job_id`.execute(trx);
  return [...due.rows, ...orphans.rows];
}

/**
 * Holds a delivery for one attempt until `leaseSeconds` from now (real time), when this job is still the one
 * sent for it and no other worker holds it; undefined otherwise (a duplicate or stale job).
 */
export async function leaseDelivery(db: Db, id: string, jobId: string, leaseSeconds: number): Promise<Row<'webhook_deliveries'> | undefined> {
  return db
    .updateTable('webhook_deliveries')
    .set({ leased_until: sql<Date>`now() + make_interval(secs => ${leaseSeconds})` })
    .where('id', '=', id)
    .where('job_id', '=', jobId)
    .where('status', '=', 'pending')
    .where('next_attempt_at', 'is', null)
    .where((eb) => eb.or([eb('leased_until', 'is', null), eb('leased_until', '<', sql<Date>`now()`)]))
    .returningAll()
    .executeTakeFirst();
}

export type Settlement =
  | { status: 'succeeded' }
  /** Failed; attempted again at `next_attempt_at`, or never again (`failed`, `cancelled`). */
  | { status: 'pending'; next_attempt_at: number; error: string }
  | { status: 'failed' | 'cancelled'; error: string };

/**
 * Records an attempt's outcome, when the delivery is still held by this job (a redelivery or a cancellation
 * meanwhile wins). Returns whether it was recorded.
 */
export async function settleDelivery(
  db: Db,
  delivery: { id: string; job_id: string | null },
  attempt: { made: boolean; response_status?: number; duration_ms?: number },
  settlement: Settlement,
  now: number,
): Promise<boolean> {
  const result = await db
    .updateTable('webhook_deliveries')
    .set({
      status: settlement.status,
      next_attempt_at: settlement.status === 'pending' ? settlement.next_attempt_at : null,
      last_error: settlement.status === 'succeeded' ? null : settlement.error,
      leased_until: null,
      updated_at: now,
      ...(attempt.made
        ? {
            attempts: sql<number>`attempts + 1`,
            last_attempt_at: now,
            last_response_status: attempt.response_status ?? null,
            last_duration_ms: attempt.duration_ms ?? null,
          }
        : {}),
    })
    .where('id', '=', delivery.id)
    .where('job_id', '=', delivery.job_id)
    .where('status', '=', 'pending')
    .where('next_attempt_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
