import { sql } from 'kysely';
import { toNotification } from '../db/mappers.ts';
import { notFound } from '../http/errors.ts';
import type { Handler } from './types.ts';

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
