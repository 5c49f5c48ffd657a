// A notification's type is the type of the event its change records: `cluster.ready` was the one notification
// type that differed (the event is `cluster.running`), so stored notifications are renamed, and the column gets the
// CHECK constraint of the contract's enum that the other enum columns have (0009). A webhook endpoint disabled for
// failing becomes an event too (`webhook_endpoint.disabled`, of object type `webhook_endpoint`), as it was already
// a notification.
import { type Kysely, sql } from 'kysely';

const EVENT_TYPES = `'cluster.created', 'cluster.running', 'cluster.failed',
  'machine.ready', 'machine.provision_failed', 'machine.failed',
  'suspension.suspended', 'suspension.failed', 'suspension.resumed', 'suspension.resume_failed',
  'install.created', 'install.running', 'install.failed', 'install.updated', 'install.rolled_back', 'install.uninstalled',
  'product.regeneration_succeeded', 'product.regeneration_failed', 'quota.reached', 'token.expiring_soon'`;
const OBJECT_TYPES = `'cluster', 'machine', 'suspension', 'install', 'product', 'quota', 'token'`;
const NOTIFICATION_TYPES = `'cluster.running', 'cluster.failed', 'machine.provision_failed', 'machine.failed',
  'suspension.failed', 'suspension.resumed', 'suspension.resume_failed', 'install.running', 'install.failed',
  'quota.reached', 'token.expiring_soon', 'webhook_endpoint.disabled'`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    UPDATE notifications SET type = 'cluster.running' WHERE type = 'cluster.ready';
    ALTER TABLE notifications ADD CONSTRAINT notifications_type_check CHECK (type IN (${sql.raw(NOTIFICATION_TYPES)}));

    ALTER TABLE events DROP CONSTRAINT events_type_check;
    ALTER TABLE events ADD CONSTRAINT events_type_check CHECK (type IN (${sql.raw(EVENT_TYPES)}, 'webhook_endpoint.disabled'));
    ALTER TABLE events DROP CONSTRAINT events_object_type_check;
    ALTER TABLE events ADD CONSTRAINT events_object_type_check CHECK (object_type IN (${sql.raw(OBJECT_TYPES)}, 'webhook_endpoint'));
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DELETE FROM events WHERE type = 'webhook_endpoint.disabled';
    ALTER TABLE events DROP CONSTRAINT events_object_type_check;
    ALTER TABLE events ADD CONSTRAINT events_object_type_check CHECK (object_type IN (${sql.raw(OBJECT_TYPES)}));
    ALTER TABLE events DROP CONSTRAINT events_type_check;
    ALTER TABLE events ADD CONSTRAINT events_type_check CHECK (type IN (${sql.raw(EVENT_TYPES)}));

    ALTER TABLE notifications DROP CONSTRAINT notifications_type_check;
    UPDATE notifications SET type = 'cluster.ready' WHERE type = 'cluster.running';
  `.execute(db);
}
