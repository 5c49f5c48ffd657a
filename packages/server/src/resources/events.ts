// Events: the outbox of changes worth telling (a cluster came up, an install failed, …). The only writer of
// `events`. Each resource records its events through `recordEvent` in the transaction that makes the change, so
// a crash leaves both or neither.
import type { Schema } from '@platform/api-types';
import type { Kysely } from 'kysely';
import type { Database, Row } from '../db/schema.ts';
import { newId } from '../ids.ts';
import { afterCursor, type PageInput } from '../services/lists.ts';
import { decodeCursor, page } from '../services/pagination.ts';
import { resolveWorkspace } from '../services/tenancy.ts';

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

/** Call inside the transaction of the change it tells. */
export async function recordEvent(db: Db, event: EventInput, now: number): Promise<void> {
  await db
    .insertInto('events')
    .values({ ...event, id: newId('evt'), object: JSON.stringify(event.object), created_at: now })
    .execute();
}

export async function listEvents(db: Db, input: PageInput & { query: { type?: Event['type']; object_id?: string } }) {
  const { cursor, limit = 50, type, object_id } = input.query;
  const after = decodeCursor(cursor);
  const workspace = await resolveWorkspace(db, input.caller, input.headers['X-Workspace-Id']);
  if (!workspace) return page([], limit, cursor, toEvent);
  let query = db.selectFrom('events').selectAll().where('workspace_id', '=', workspace.id);
  if (type) query = query.where('type', '=', type);
  if (object_id) query = query.where('object_id', '=', object_id);
  return page(await afterCursor(query, 'events', after, limit).execute(), limit, cursor, toEvent);
}

/** Deletes events created before `before` (Unix seconds); returns how many. */
export async function pruneEvents(db: Db, before: number): Promise<number> {
  const result = await db.deleteFrom('events').where('created_at', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows);
}
