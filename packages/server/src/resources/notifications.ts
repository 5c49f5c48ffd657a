// Notifications tell the members of a workspace what happened to its resources while they were not looking:
// a workflow's end, a failed provision, a quota reached. The only writer of `notifications`.
import type { Schema } from '@platform/api-types';
import { type Kysely, sql } from 'kysely';
import type { Database, NewRow, Row } from '../db/schema.ts';
import { notFound } from '../errors.ts';
import { newId } from '../ids.ts';
import { afterCursor } from '../services/lists.ts';
import { decodeCursor, page } from '../services/pagination.ts';
import { type WorkspaceCaller, withinRestriction } from '../services/tenancy.ts';
import { memberIds } from './workspaces.ts';

/** Row → record, typed on both ends: a drift between the database and the contract fails the type check. */
const toNotification = (row: Row<'notifications'>): Schema<'Notification'> => ({
  id: row.id,
  type: row.type,
  resource_type: row.resource_type,
  resource_id: row.resource_id,
  title: row.title,
  body: row.body,
  severity: row.severity,
  read_at: row.read_at,
  created_at: row.created_at,
});

export interface NotificationInput {
  /** `<resource>.<event>`, e.g. `install.running`. */
  type: Schema<'Notification'>['type'];
  resource_type: Row<'notifications'>['resource_type'];
  resource_id: string;
  title: string;
  body: string;
  severity: Row<'notifications'>['severity'];
}

/** One notification for every member of the workspace. */
export async function notifyWorkspace(db: Kysely<Database>, workspaceId: string, now: number, notification: NotificationInput): Promise<void> {
  const members = await memberIds(db, workspaceId);
  if (members.length === 0) return;
  await db
    .insertInto('notifications')
    .values(members.map((userId) => ({ id: newId('ntf'), user_id: userId, workspace_id: workspaceId, ...notification, read_at: null, created_at: now })))
    .execute();
}

/** One notification for one user (user-level resources such as quotas). */
export async function notifyUser(db: Kysely<Database>, userId: string, now: number, notification: NotificationInput): Promise<void> {
  await db
    .insertInto('notifications')
    .values({ id: newId('ntf'), user_id: userId, workspace_id: null, ...notification, read_at: null, created_at: now })
    .execute();
}

/**
 * What the caller may read: their notifications, and for a token restricted to workspaces only those about
 * resources of its workspaces (not the user-level ones, which speak of every workspace the user owns).
 */
const visible = (db: Kysely<Database>, caller: WorkspaceCaller) =>
  db.selectFrom('notifications').where('user_id', '=', caller.userId).where(withinRestriction(caller, 'notifications.workspace_id'));

export async function listNotifications(
  db: Kysely<Database>,
  caller: WorkspaceCaller,
  { cursor, limit, unread }: { cursor?: string; limit: number; unread: boolean },
) {
  let base = visible(db, caller).selectAll();
  if (unread) base = base.where('read_at', 'is', null);
  const rows = await afterCursor(base, 'notifications', decodeCursor(cursor, 'notifications'), limit).execute();
  return page(rows, limit, cursor, toNotification);
}

/** Idempotent: a second call keeps the first read_at. */
export async function markRead(db: Kysely<Database>, caller: WorkspaceCaller, id: string, now: number): Promise<Schema<'Notification'>> {
  const row = await db
    .updateTable('notifications')
    .set({ read_at: sql<number>`coalesce(read_at, ${now})` })
    .where('id', 'in', visible(db, caller).select('id'))
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw notFound('Notification', id);
  return toNotification(row);
}

/** The demo data's notifications (db/seed.ts), written as they are: no creation's rules, quota or workflow. */
export async function seedNotifications(db: Kysely<Database>, rows: NewRow<'notifications'>[]): Promise<void> {
  await db.insertInto('notifications').values(rows).execute();
}
