import { sql } from 'kysely';
import { toNotification } from '../db/mappers.ts';
import { notFound } from '../http/errors.ts';
import { afterCursor } from '../services/lists.ts';
import { decodeCursor, page } from '../services/pagination.ts';
import type { Handler } from './types.ts';

export const listNotifications: Handler<'listNotifications'> = async ({ query, caller }, { db }) => {
  const limit = query.limit ?? 50;
  let base = db.selectFrom('notifications').selectAll().where('user_id', '=', caller.userId);
  if (query.unread) base = base.where('read_at', 'is', null);
  const rows = await afterCursor(base, 'notifications', decodeCursor(query.cursor), limit).execute();
  return { status: 200, body: page(rows, limit, query.cursor, toNotification) };
};

export const markNotificationRead: Handler<'markNotificationRead'> = async ({ params, caller }, { db, clock }) => {
  // Idempotent: a second call keeps the first read_at.
  const row = await db
    .updateTable('notifications')
    .set({ read_at: sql<number>`coalesce(read_at, ${clock.now()})` })
    .where('id', '=', params.id)
    .where('user_id', '=', caller.userId)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw notFound('Notification', params.id);
  return { status: 200, body: toNotification(row) };
};
