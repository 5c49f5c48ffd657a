import * as notifications from '../resources/notifications.ts';
import type { Handler } from './types.ts';

export const listNotifications: Handler<'listNotifications'> = async ({ query, caller }, { db }) => ({
  status: 200,
  body: await notifications.listNotifications(db, caller, query),
});

export const markNotificationRead: Handler<'markNotificationRead'> = async ({ params, caller }, { db, clock }) => ({
  status: 200,
  body: await notifications.markRead(db, caller, params.id, clock.now()),
});
