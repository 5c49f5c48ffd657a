// Events: the outbox of changes worth telling (a cluster came up, an install failed, …). The only writer of
// `events`. Each resource records its events through `recordEvent` in the transaction that makes the change, so
// a crash leaves both or neither; the event's webhook deliveries are written in that transaction too. A change
// its workspace's members (or one user) must hear of is told with `recordEventAndNotify`, the one place an event
// and its notification are written: together, with one type (a notification type is an event type).
import { setTimeout as sleep } from 'node:timers/promises';
import type { Schema } from '@platform/api-types';
import { type Kysely, sql } from 'kysely';
import type { Clock } from '../clock.ts';
import type { Database, Row } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { validationError } from '../errors.ts';
import { newId } from '../ids.ts';
import { afterCursor, type PageInput } from '../services/lists.ts';
import { decodeCursor, type Position, page } from '../services/pagination.ts';
import { streamSlots } from '../services/stream-slots.ts';
import { currentTraceparent } from '../telemetry/tracing.ts';
import { notifyUser, notifyWorkspace } from './notifications.ts';
import { deleteWithDeliveries, writeWithDeliveries } from './webhook-deliveries.ts';

type Db = Kysely<Database>;
type Event = Schema<'Event'>;

const toEvent = (row: Row<'events'>): Event => ({
  id: row.id,
  type: row.type,
  workspace_id: row.workspace_id,
  object_type: row.object_type,
  object_id: row.object_id,
  object: row.object,
  created_at: row.created_at,
});

/** What a resource tells: the type, and the object after the change with its kind and id. */
export type EventInput = Pick<Event, 'type' | 'workspace_id' | 'object_type' | 'object_id' | 'object'>;

/**
 * Call inside the transaction of the change it tells; returns the event's id. Writes the event and one webhook
 * delivery per endpoint of the workspace that subscribes to its type, together (in a transaction of their own when
 * given none), in one statement (writeWithDeliveries).
 */
export async function recordEvent(db: Db, event: EventInput, now: number): Promise<string> {
  const id = newId('evt');
  const write = (trx: Db) =>
    writeWithDeliveries(
      trx,
      sql`INSERT INTO events (id, type, workspace_id, object_type, object_id, object, trace_parent, created_at)
        VALUES (${id}, ${event.type}, ${event.workspace_id}, ${event.object_type}, ${event.object_id}, ${JSON.stringify(event.object)}, ${currentTraceparent()}, ${now})`,
      { id, type: event.type, workspace_id: event.workspace_id },
      now,
    );
  await inTransaction(db, write);
  return id;
}

/** An event of a type that is also a notification type (the contract's Notification.type, a subset of EventType). */
export type NotifiedEventInput = EventInput & { type: Schema<'Notification'>['type'] };

/** What the notification of a change says; its type and the resource it names are its event's. */
export interface Notice {
  title: string;
  body: string;
  severity: Row<'notifications'>['severity'];
  /** Told to this user alone (their quota, their token), not to every member of the event's workspace. */
  userId?: string;
}

/**
 * Records the event of a change and notifies of it, with the same type, naming the event's object, in one
 * transaction (the caller's, when it is in one): the change's resource calls it where it makes the change.
 */
export async function recordEventAndNotify(db: Db, event: NotifiedEventInput, now: number, { userId, ...text }: Notice): Promise<string> {
  return inTransaction(db, async (trx) => {
    const id = await recordEvent(trx, event, now);
    const notification = { type: event.type, resource_type: event.object_type, resource_id: event.object_id, ...text };
    await (userId === undefined ? notifyWorkspace(trx, event.workspace_id, now, notification) : notifyUser(trx, userId, now, notification));
    return id;
  });
}

/** One event as the feed shows it (a webhook delivery's body); undefined once pruned. */
export async function eventById(db: Db, id: string): Promise<Event | undefined> {
  const row = await db.selectFrom('events').selectAll().where('id', '=', id).executeTakeFirst();
  return row && toEvent(row);
}

export async function listEvents(db: Db, input: PageInput & { query: { type?: Event['type']; object_id?: string } }) {
  const { cursor, limit, type, object_id } = input.query;
  const after = decodeCursor(cursor, 'events');
  const { workspace } = input;
  if (!workspace) return page([], limit, cursor, toEvent);
  let query = db.selectFrom('events').selectAll().where('workspace_id', '=', workspace.id);
  if (type) query = query.where('type', '=', type);
  if (object_id) query = query.where('object_id', '=', object_id);
  return page(await afterCursor(query, 'events', after, limit).execute(), limit, cursor, toEvent);
}

/** Deletes events created before `before` (Unix seconds), and their webhook deliveries; returns how many events. */
export async function pruneEvents(db: Db, before: number): Promise<number> {
  return deleteWithDeliveries(db, sql`DELETE FROM events WHERE created_at < ${before} RETURNING id`);
}

export interface EventStreamRequest {
  workspaceId: string;
  type?: Event['type'];
  object_id?: string;
  lastEventId?: string;
}

export interface EventStreamEnv {
  db: Db;
  clock: Clock;
  /** Aborted when the client leaves. */
  signal: AbortSignal;
  /** Aborted when this process shuts down: the stream tells the client to reconnect elsewhere. */
  shutdown: AbortSignal;
  pollMs: number;
}

const KEEP_ALIVE_MS = 15_000;
/**
 * Seconds an event may be committed after a newer one (its transaction began earlier and ran longer). Each poll
 * also reads this far back, and sends what it had not sent.
 */
const LATE_SECONDS = 5;
const BATCH = 500;

const after = (position: Position) => sql<boolean>`(created_at, id) > (${position.created_at}, ${position.id})`;
const before = (position: Position) => sql<boolean>`(created_at, id) < (${position.created_at}, ${position.id})`;

async function* followEvents(request: EventStreamRequest, from: Position | undefined, env: EventStreamEnv): AsyncGenerator<string> {
  const stop = AbortSignal.any([env.signal, env.shutdown]);
  let query = env.db.selectFrom('events').selectAll().where('workspace_id', '=', request.workspaceId);
  if (request.type) query = query.where('type', '=', request.type);
  if (request.object_id) query = query.where('object_id', '=', request.object_id);
  // Sent by this stream within LATE_SECONDS of the newest sent: a late event is told from a sent one by its id.
  const sent = new Map<string, number>();
  let cursor = from;
  let quietSince = Date.now();
  while (!stop.aborted) {
    const late = cursor
      ? await query
          .where('created_at', '>=', cursor.created_at - LATE_SECONDS)
          .where(before(cursor))
          .$if(from !== undefined, (q) => q.where(after(from!)))
          .orderBy('created_at')
          .orderBy('id')
          .execute()
      : [];
    const fresh = await (cursor ? query.where(after(cursor)) : query).orderBy('created_at').orderBy('id').limit(BATCH).execute();
    let chunk = '';
    for (const row of [...late.filter((r) => !sent.has(r.id)), ...fresh]) {
      sent.set(row.id, row.created_at);
      chunk += `id: ${row.id}\nevent: event\ndata: ${JSON.stringify(toEvent(row))}\n\n`;
    }
    const last = fresh.at(-1);
    if (last) cursor = { created_at: last.created_at, id: last.id };
    if (cursor) for (const [id, createdAt] of sent) if (createdAt < cursor.created_at - LATE_SECONDS) sent.delete(id);
    if (chunk) {
      yield chunk;
      quietSince = Date.now();
    } else if (Date.now() - quietSince >= KEEP_ALIVE_MS) {
      yield ': keep-alive\n\n';
      quietSince = Date.now();
    }
    if (fresh.length === BATCH) continue;
    await sleep(env.pollMs, undefined, { signal: stop }).catch(() => undefined);
  }
  // This process is going away: ask the client to come back (to another process) after its last id.
  if (env.shutdown.aborted && !env.signal.aborted) yield 'retry: 1000\n: server shutting down; reconnect with Last-Event-ID\n\n';
}

/**
 * Opens a workspace's events stream, holding one of the caller's stream slots while it is open (429 over the
 * cap). A Last-Event-ID that is not an event of the workspace is a 422 before the stream starts.
 */
export async function openEventStream(
  request: EventStreamRequest,
  env: EventStreamEnv,
  slots: { key: string; limit: number },
): Promise<AsyncGenerator<string>> {
  let from: Position | undefined;
  if (request.lastEventId !== undefined) {
    from = await env.db
      .selectFrom('events')
      .select(['created_at', 'id'])
      .where('id', '=', request.lastEventId)
      .where('workspace_id', '=', request.workspaceId)
      .executeTakeFirst();
    if (!from) {
      throw validationError(
        'Last-Event-ID',
        `Last-Event-ID ${request.lastEventId} is not an event of the workspace (or it is older than the retention).`,
        'Send the id of the last event received, or omit the header to start from the oldest event kept.',
      );
    }
  }
  const slot = await streamSlots(env.db, env.clock).acquire(slots.key, slots.limit);
  async function* stream() {
    try {
      yield* followEvents(request, from, env);
    } finally {
      await slot.release();
    }
  }
  return stream();
}
