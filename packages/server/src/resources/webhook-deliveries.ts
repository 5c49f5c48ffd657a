// Webhook deliveries: one event to one endpoint. The only writer of `webhook_deliveries`. An event's deliveries are
// written in the event's transaction (fanOut, called by recordEvent), so there is no event without its deliveries
// and no delivery without its event. The row is the truth about the sending, as a workflow's row is: due at
// `next_attempt_at` on the clock; a dispatcher claims what is due for one attempt (a lease that runs out when
// its worker dies, so the delivery is claimed again) and settles it. pending → succeeded, or
// back to pending with the next attempt's moment, or failed when the retries run out; cancelled when the
// endpoint is disabled.
import type { Schema } from '@platform/api-types';
import { type Kysely, type RawBuilder, sql } from 'kysely';
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
 * The channel on which a commit that makes deliveries due is told: NOTIFY is sent at commit (never before the rows
 * exist, nor for a rollback), so a dispatcher listening sends them at once instead of at its next tick.
 */
export const DELIVERIES_DUE_CHANNEL = 'webhook_deliveries_due';

const tellDue = (db: Db) => sql`SELECT pg_notify(${DELIVERIES_DUE_CHANNEL}, '')`.execute(db);

/**
 * How many of an event's deliveries are written by the statement that writes the event, with ids made beforehand
 * (more ids than most workspaces have endpoints, few enough to cost little for an event of a workspace with none);
 * a workspace with more endpoints subscribed has the rest written by a second statement.
 */
export const DELIVERIES_WITH_EVENT = 16;

type EventRef = { id: string; type: Schema<'EventType'>; workspace_id: string };

/**
 * Writes an event (`writeEvent`, its INSERT) and its deliveries in one statement, one round trip for both: one
 * pending delivery, due now, for every enabled endpoint of its workspace that subscribes to its type, and the NOTIFY
 * that tells the dispatchers at commit. An event of a workspace with no endpoint costs no statement more. Call in
 * the event's transaction.
 */
export async function writeWithDeliveries(trx: Db, writeEvent: RawBuilder<unknown>, event: EventRef, now: number): Promise<void> {
  const ids = Array.from({ length: DELIVERIES_WITH_EVENT }, () => newId('whd'));
  // `written` and `told` run whatever the main query reads: a data-modifying WITH always runs, and `told` is read by
  // the UNION. The main query's rows are the endpoints left over (their number beyond the ids), then one NULL if
  // the dispatchers were told.
  const { rows } = await sql<{ endpoint_id: string | null }>`
    WITH event AS (${writeEvent}),
    subscribed AS (
      SELECT endpoint_id, row_number() OVER () AS n FROM (
        SELECT id AS endpoint_id FROM webhook_endpoints
        WHERE workspace_id = ${event.workspace_id} AND enabled AND (cardinality(event_types) = 0 OR ${event.type} = ANY(event_types))
        -- The lock the deliveries' key check takes anyway, taken here: an endpoint being deleted meanwhile is waited
        -- for and then left out, where the key check would have failed the event's whole transaction.
        FOR KEY SHARE
      ) AS locked
    ),
    written AS (
      ${insertDeliveries(event, now, sql`(SELECT (${ids}::text[])[n], endpoint_id FROM subscribed WHERE n <= ${ids.length})`)}
      RETURNING 1
    ),
    told AS (SELECT pg_notify(${DELIVERIES_DUE_CHANNEL}, '') FROM (SELECT FROM written LIMIT 1) AS any_written)
    SELECT endpoint_id FROM subscribed WHERE n > ${ids.length}
    UNION ALL SELECT NULL FROM told`.execute(trx);
  const rest = rows.flatMap((row) => row.endpoint_id ?? []);
  // The dispatchers were told by the first statement, which wrote some.
  if (rest.length > 0) await insertDeliveries(event, now, sql`unnest(${rest.map(() => newId('whd'))}::text[], ${rest}::text[])`).execute(trx);
}

/**
 * Deletes events (`deleteEvents`: a DELETE of events RETURNING their id) and their deliveries in one statement, and
 * returns how many events went. A delivery holds no foreign key to its event (its check cost every event written a
 * lock per delivery: migration 20261126_2200), so whatever deletes events deletes their deliveries through here.
 */
export async function deleteWithDeliveries(db: Db, deleteEvents: RawBuilder<unknown>): Promise<number> {
  const { rows } = await sql<{ deleted: number }>`
    WITH gone AS (${deleteEvents}),
    deliveries AS (DELETE FROM webhook_deliveries d USING gone WHERE d.event_id = gone.id)
    SELECT count(*)::int AS deleted FROM gone`.execute(db);
  return rows[0]!.deleted;
}

/** One pending delivery of the event, due now, for each (id, endpoint_id) row of `targets`. */
const insertDeliveries = (event: EventRef, now: number, targets: RawBuilder<unknown>) => sql`
  INSERT INTO webhook_deliveries (id, endpoint_id, workspace_id, event_id, event_type, status, first_attempt_at, next_attempt_at, created_at, updated_at)
  SELECT t.id, t.endpoint_id, ${event.workspace_id}, ${event.id}, ${event.type}, 'pending', ${now}, ${now}, ${now}, ${now}
  FROM ${targets} AS t (id, endpoint_id)`;

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
  const after = decodeCursor(query.cursor, 'webhook_deliveries');
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
    .set({ status: 'pending', first_attempt_at: now, next_attempt_at: now, leased_until: null, lease_id: null, updated_at: now })
    .where('id', '=', deliveryId)
    .where('endpoint_id', '=', endpointId)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw notFound('Webhook delivery', deliveryId);
  await tellDue(db);
  return toWebhookDelivery(row);
}

/**
 * Pending deliveries of the endpoint → cancelled (it was disabled): nothing more is attempted. Its rows are locked in
 * id order, as a settling locks those it records (settleDeliveries), so the two never wait on each other in a circle
 * (PostgreSQL would abort one of them as a deadlock).
 */
export async function cancelPendingDeliveries(trx: Db, endpointId: string, reason: string, now: number): Promise<void> {
  await sql`
    UPDATE webhook_deliveries
    SET status = 'cancelled', next_attempt_at = NULL, leased_until = NULL, lease_id = NULL, last_error = ${reason}, updated_at = ${now}
    WHERE id IN (SELECT id FROM webhook_deliveries WHERE endpoint_id = ${endpointId} AND status = 'pending' ORDER BY id FOR UPDATE)`.execute(trx);
}

// What the dispatcher does to deliveries.

/**
 * The settings of the dispatcher's own connections, on which it claims and settles (runtime.ts opens them):
 *   - synchronous_commit off: a claim or a settling does not wait for its WAL to reach the disk (2–5 ms a commit
 *     on the benchmark's machine), which was on the path of every delivery (an endpoint's next attempt waits for a
 *     claim). What a crash of PostgreSQL itself can lose (the commits of its last moments, at most three
 *     wal_writer_delay: 600 ms by default) keeps every delivery: a lost settling leaves the delivery claimed, so it
 *     is sent again when the lease runs out, which at least once allows (its attempt was counted by the claim); a
 *     lost claim leaves the delivery unclaimed and due, and it is sent again (the one attempt such a crash can leave
 *     uncounted). A worker's crash loses nothing: the commit is PostgreSQL's, not the worker's. The dispatcher's
 *     other writes (disabling an endpoint, with its notification) stay on the shared, synchronous connections.
 *   - plan_cache_mode force_generic_plan: each statement is planned once per connection. Left to choose,
 *     PostgreSQL planned the claim on every call (the custom plan looked cheaper): a third to a half of its CPU.
 *   - no sequential, bitmap, hash or merge join plans: these statements read rows by key only (the skip scans, the
 *     head of each endpoint's queue, its live leases, rows by id), and a plan made once while the table is nearly
 *     empty (a fresh database, a server's first claim) would otherwise scan it whole for as long as it is used:
 *     a settling so planned read every row of the table, 254 µs of PostgreSQL's CPU a delivery against 31.
 *   - jit off: once the table holds enough rows, the planner's estimate for the claim passes jit_above_cost, and
 *     JIT compilation, which is not kept between executions, took 160–390 ms a claim.
 */
export const DELIVERY_SESSION: Readonly<Record<string, string>> = {
  application_name: 'webhook-dispatcher',
  synchronous_commit: 'off',
  plan_cache_mode: 'force_generic_plan',
  enable_seqscan: 'off',
  enable_bitmapscan: 'off',
  enable_hashjoin: 'off',
  enable_mergejoin: 'off',
  jit: 'off',
};

/** A delivery claimed for one attempt, with what the attempt needs of its endpoint and its event. */
export interface ClaimedDelivery {
  id: string;
  lease_id: string;
  /** Attempts made, this one included. */
  attempts: number;
  first_attempt_at: number;
  endpoint_id: string;
  workspace_id: string;
  url: string;
  secret_ciphertext: Buffer;
  previous_secret_ciphertext: Buffer | null;
  previous_secret_expires_at: number | null;
  consecutive_failures: number;
  /** The endpoint's circuit is open and this is its probe: its lease takes the endpoint's room until it is settled. */
  probe: boolean;
  event_id: string;
  /** The event as the feed lists it, as JSON text (the same for each of the event's deliveries). */
  event: string;
  /** The W3C traceparent of the span that recorded the event (the delivery's parent); null without tracing. */
  trace_parent: string | null;
}

export interface ClaimLimits {
  now: number;
  /** Slots of the dispatcher free now. */
  free: number;
  /** Its slots in all. */
  slots: number;
  /** Slots of the dispatcher each workspace holds now. */
  held: ReadonlyMap<string, number>;
  /** Attempts an endpoint may have at once, across dispatchers (one while it is failing, and a cooling endpoint's probe). */
  endpointConcurrency: number;
  /**
   * Leases of this dispatcher whose attempts ended and wait to be settled: no longer attempts under way, so they
   * take no room of an endpoint whose circuit is closed (a cooling endpoint's probe keeps its lease until its
   * circuit is set, so that no second probe starts before).
   */
  ended?: readonly string[];
  /** How long (real seconds) the claim holds a delivery: longer than an attempt can take. */
  leaseSeconds: number;
}

/**
 * Claims due deliveries for one attempt each, in one statement that also brings their endpoints and events:
 *   - only endpoints that are enabled and not cooling (a cooling endpoint whose time has come: one probe);
 *   - no endpoint beyond its concurrency, counting the live leases of every dispatcher; an endpoint whose last
 *     attempt failed (a timeout, a refusal, an error status) has one attempt at a time until one succeeds, so a
 *     receiver that hangs holds one slot, not four, for each timeout;
 *   - no workspace beyond a fair share of this dispatcher's slots while others could use them: each workspace
 *     holding or waiting could have at most its endpoints' concurrency under way, and the share is the max-min
 *     fair level of those demands, with one workspace more counted to keep a share free for the next whose work
 *     comes (the slots ÷ (workspaces + 1) when all want more than that; all the slots when every demand fits);
 *     the workspaces holding fewest slots first;
 *   - the oldest due first within a workspace.
 * The workspaces with pending deliveries are found by a skip scan of the pending index (workspace first: one probe
 * each). The endpoints with pending deliveries of those holding no slot here are walked (one probe each, its
 * earliest due first, so an endpoint with only later retries, or cooling, costs no more) to know which have work
 * due; those workspaces and the ones holding slots, with their endpoints' concurrency, make the share. Then the endpoints of the workspaces holding fewer
 * slots than their share are walked too: a workspace at its share (endpoints that hang, say) costs no more than
 * its one probe, however many endpoints and deliveries it has waiting. Of each endpoint at most its room is read.
 * The backlog is never loaded. The claim counts the attempt: an attempt whose worker
 * dies after it reached the receiver is counted, and its outcome fields are empty until it ends. A lease that runs
 * out frees the delivery again.
 */
export async function claimDeliveries(db: Db, limits: ClaimLimits): Promise<ClaimedDelivery[]> {
  if (limits.free <= 0) return [];
  const held = JSON.stringify(Object.fromEntries(limits.held));
  const { rows } = await sql<ClaimedDelivery>`
    WITH RECURSIVE busy (workspace_id) AS (
      (SELECT workspace_id FROM webhook_deliveries WHERE status = 'pending' ORDER BY workspace_id LIMIT 1)
      UNION ALL
      SELECT n.workspace_id FROM busy b CROSS JOIN LATERAL (
        SELECT d.workspace_id FROM webhook_deliveries d
        WHERE d.status = 'pending' AND d.workspace_id > b.workspace_id ORDER BY d.workspace_id LIMIT 1
      ) n
    ),
    held AS (SELECT key AS workspace_id, value::int AS slots FROM jsonb_each_text(${held}::jsonb)),
    -- The endpoints with pending deliveries of the workspaces holding no slot here: one probe each.
    fresh (workspace_id, endpoint_id, due_at) AS (
      SELECT b.workspace_id, f.endpoint_id, f.next_attempt_at FROM busy b CROSS JOIN LATERAL (
        SELECT d.endpoint_id, d.next_attempt_at FROM webhook_deliveries d
        WHERE d.status = 'pending' AND d.workspace_id = b.workspace_id ORDER BY d.endpoint_id, d.next_attempt_at LIMIT 1
      ) f
      WHERE NOT EXISTS (SELECT FROM held h WHERE h.workspace_id = b.workspace_id)
      UNION ALL
      SELECT w.workspace_id, n.endpoint_id, n.next_attempt_at FROM fresh w CROSS JOIN LATERAL (
        SELECT d.endpoint_id, d.next_attempt_at FROM webhook_deliveries d
        WHERE d.status = 'pending' AND d.workspace_id = w.workspace_id AND d.endpoint_id > w.endpoint_id
        ORDER BY d.endpoint_id, d.next_attempt_at LIMIT 1
      ) n
    ),
    fresh_open AS (
      SELECT e.id, e.workspace_id, e.cooling_until, e.consecutive_failures
      FROM fresh w JOIN webhook_endpoints e ON e.id = w.endpoint_id
      WHERE w.due_at <= ${limits.now} AND e.enabled AND (e.cooling_until IS NULL OR e.cooling_until <= ${limits.now})
    ),
    -- What each workspace with work due or holding slots could have under way at most: its endpoints' concurrency.
    demand AS (
      SELECT e.workspace_id, sum(CASE WHEN e.cooling_until IS NULL AND e.consecutive_failures = 0 THEN ${limits.endpointConcurrency} ELSE 1 END) AS slots
      FROM (SELECT workspace_id FROM fresh_open UNION SELECT workspace_id FROM held) w
      JOIN webhook_endpoints e ON e.workspace_id = w.workspace_id AND e.enabled
      GROUP BY e.workspace_id
    ),
    -- The share (max-min fair): the level that the demands above it split, counting one more workspace to keep a
    -- share free for the next whose work comes; the whole slots when every demand fits.
    levels AS (
      SELECT slots, row_number() OVER w AS k, count(*) OVER () AS n,
        coalesce(sum(slots) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS below
      FROM demand WINDOW w AS (ORDER BY slots)
    ),
    share AS (
      SELECT coalesce((
        SELECT ceil((${limits.slots} - below)::numeric / (n - k + 2))::int FROM levels
        WHERE slots * (n - k + 2) >= ${limits.slots} - below ORDER BY k LIMIT 1
      ), ${limits.slots}) AS slots
    ),
    -- The endpoints with pending deliveries of the workspaces holding slots, below their share and below what their
    -- endpoints could have under way only (a workspace whose failing endpoints each have their one attempt is not read).
    holding (workspace_id, endpoint_id, due_at) AS (
      SELECT h.workspace_id, f.endpoint_id, f.next_attempt_at FROM held h JOIN demand USING (workspace_id) CROSS JOIN share CROSS JOIN LATERAL (
        SELECT d.endpoint_id, d.next_attempt_at FROM webhook_deliveries d
        WHERE d.status = 'pending' AND d.workspace_id = h.workspace_id ORDER BY d.endpoint_id, d.next_attempt_at LIMIT 1
      ) f
      WHERE h.slots < least(share.slots, demand.slots)
      UNION ALL
      SELECT w.workspace_id, n.endpoint_id, n.next_attempt_at FROM holding w CROSS JOIN LATERAL (
        SELECT d.endpoint_id, d.next_attempt_at FROM webhook_deliveries d
        WHERE d.status = 'pending' AND d.workspace_id = w.workspace_id AND d.endpoint_id > w.endpoint_id
        ORDER BY d.endpoint_id, d.next_attempt_at LIMIT 1
      ) n
    ),
    open AS (
      SELECT id, workspace_id, cooling_until, consecutive_failures FROM fresh_open
      UNION ALL
      SELECT e.id, e.workspace_id, e.cooling_until, e.consecutive_failures
      FROM holding w JOIN webhook_endpoints e ON e.id = w.endpoint_id
      WHERE w.due_at <= ${limits.now} AND e.enabled AND (e.cooling_until IS NULL OR e.cooling_until <= ${limits.now})
    ),
    allowed AS MATERIALIZED (
      SELECT o.id, o.workspace_id, coalesce(h.slots, 0) AS holding, share.slots - coalesce(h.slots, 0) AS allowance,
        least(share.slots - coalesce(h.slots, 0),
          CASE WHEN o.cooling_until IS NULL AND o.consecutive_failures = 0 THEN ${limits.endpointConcurrency} ELSE 1 END
            - (SELECT count(*) FROM (
                SELECT FROM webhook_deliveries l WHERE l.endpoint_id = o.id AND l.leased_until > now()
                  AND NOT (o.cooling_until IS NULL AND l.lease_id = ANY(${limits.ended ?? []}::uuid[]))
                LIMIT ${limits.endpointConcurrency}) live)) AS room
      FROM open o CROSS JOIN share LEFT JOIN held h USING (workspace_id)
      WHERE share.slots > coalesce(h.slots, 0)
    ),
    -- A workspace's allowance goes round its endpoints (each one's oldest, then each one's second, …): an endpoint
    -- with a backlog does not keep its siblings waiting.
    candidate AS (
      SELECT id, holding, allowance, next_attempt_at, row_number() OVER (PARTITION BY workspace_id ORDER BY turn, next_attempt_at, id) AS nth
      FROM (
        SELECT c.id, a.workspace_id, a.holding, a.allowance, c.next_attempt_at,
          row_number() OVER (PARTITION BY a.id ORDER BY c.next_attempt_at, c.id) AS turn
        FROM (SELECT * FROM allowed WHERE room > 0) a CROSS JOIN LATERAL (
          SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
          WHERE d.workspace_id = a.workspace_id AND d.endpoint_id = a.id AND d.status = 'pending' AND d.next_attempt_at <= ${limits.now}
            AND (d.leased_until IS NULL OR d.leased_until < now())
          ORDER BY d.next_attempt_at LIMIT a.room
          FOR UPDATE SKIP LOCKED
        ) c
      ) per_endpoint
    ),
    chosen AS (
      SELECT id FROM candidate WHERE nth <= allowance
      ORDER BY holding + nth, next_attempt_at
      LIMIT ${limits.free}
    )
    UPDATE webhook_deliveries d
    SET leased_until = now() + make_interval(secs => ${limits.leaseSeconds}), lease_id = gen_random_uuid(),
      attempts = d.attempts + 1, last_attempt_at = ${limits.now}, updated_at = ${limits.now},
      last_response_status = NULL, last_duration_ms = NULL, last_error = NULL
    FROM chosen, webhook_endpoints e, events ev
    WHERE d.id = chosen.id AND e.id = d.endpoint_id AND ev.id = d.event_id
    RETURNING d.id, d.lease_id, d.attempts, d.first_attempt_at, d.endpoint_id, e.workspace_id, e.url, e.secret_ciphertext,
      e.previous_secret_ciphertext, e.previous_secret_expires_at, e.consecutive_failures, e.cooling_until IS NOT NULL AS probe, d.event_id,
      json_build_object('id', ev.id, 'type', ev.type, 'workspace_id', ev.workspace_id, 'object_type', ev.object_type,
        'object_id', ev.object_id, 'object', ev.object, 'created_at', ev.created_at)::text AS event, ev.trace_parent`.execute(db);
  return rows;
}

export type Settlement =
  | { status: 'succeeded' }
  /** Failed; attempted again at `next_attempt_at`, or never again (`failed`). */
  | { status: 'pending'; next_attempt_at: number; error: string }
  | { status: 'failed'; error: string };

export interface Settled {
  id: string;
  lease_id: string;
  response_status: number | null;
  duration_ms: number;
  settlement: Settlement;
}

/**
 * Records attempts' outcomes in one statement, each when its delivery is still held by its claim: its lease id,
 * which a redelivery or a cancellation meanwhile clears (they win) and a later claim replaces. The rows are found
 * by their ids alone (the primary key): asked for pending rows too, the planner read every pending delivery to
 * settle 40 (a hash join over the pending index: 14,000 rows with that many waiting).
 */
export async function settleDeliveries(db: Db, settled: readonly Settled[], now: number): Promise<void> {
  if (settled.length === 0) return;
  // In id order: on the dispatcher's connections (nested loops only) the rows are updated, and so locked, in the
  // arrays' order, the order in which a cancellation locks them too (cancelPendingDeliveries).
  const ordered = [...settled].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const column = <T>(pick: (one: Settled) => T) => ordered.map(pick);
  await sql`
    UPDATE webhook_deliveries d
    SET status = v.status, next_attempt_at = v.next_attempt_at, last_error = v.error, last_response_status = v.response_status,
      last_duration_ms = v.duration_ms, leased_until = NULL, updated_at = ${now}
    FROM unnest(
      ${column((one) => one.id)}::text[], ${column((one) => one.lease_id)}::uuid[], ${column((one) => one.settlement.status)}::text[],
      ${column((one) => (one.settlement.status === 'pending' ? one.settlement.next_attempt_at : null))}::bigint[],
      ${column((one) => (one.settlement.status === 'succeeded' ? null : one.settlement.error))}::text[],
      ${column((one) => one.response_status)}::integer[], ${column((one) => one.duration_ms)}::integer[]
    ) AS v (id, lease_id, status, next_attempt_at, error, response_status, duration_ms)
    WHERE d.id = v.id AND d.lease_id = v.lease_id`.execute(db);
}
