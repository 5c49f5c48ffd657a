// Notifications tell the members of a workspace what happened to its resources while they were not looking:
// a workflow's end, a failed provision, a quota reached.
import type { Schema } from '@platform/api-types';
import type { Kysely } from 'kysely';
import type { Database, Row } from '../db/schema.ts';
import { newId } from '../ids.ts';

export interface NotificationInput {
  /** `<resource>.<event>`, one of the contract's Notification types. */
  type: Schema<'Notification'>['type'];
  resource_type: Row<'notifications'>['resource_type'];
  resource_id: string;
  title: string;
  body: string;
  severity: Row<'notifications'>['severity'];
}

/** One notification for every member of the workspace. */
export async function notifyWorkspace(db: Kysely<Database>, workspaceId: string, now: number, notification: NotificationInput): Promise<void> {
  const members = await db.selectFrom('workspace_members').select('user_id').where('workspace_id', '=', workspaceId).execute();
  if (members.length === 0) return;
  await db
    .insertInto('notifications')
    .values(members.map((m) => ({ id: newId('ntf'), user_id: m.user_id, ...notification, read_at: null, created_at: now })))
    .execute();
}

/** One notification for one user (user-level resources such as quotas). */
export async function notifyUser(db: Kysely<Database>, userId: string, now: number, notification: NotificationInput): Promise<void> {
  await db.insertInto('notifications').values({ id: newId('ntf'), user_id: userId, ...notification, read_at: null, created_at: now }).execute();
}
