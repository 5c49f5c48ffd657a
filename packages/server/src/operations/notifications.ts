import * as notifications from '../resources/notifications.ts';
import type { Handler } from './types.ts';

export const listNotifications: Handler<'listNotifications'> = async ({ query, caller }, { db }) => ({
  status: 200,
  body: await notifications.listNotifications(db, caller.userId, query),
});

export const markNotificationRead: Handler<'markNotificationRead'> = async ({ params, caller }, { db, clock }) => ({
  status: 200,
  body: await notifications.markRead(db, caller.userId, params.id, clock.now()),
});
