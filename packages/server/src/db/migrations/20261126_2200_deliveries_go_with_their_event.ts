// A delivery's event is written by the statement that writes the delivery (writeWithDeliveries), so the foreign
// key to events checked what could not be otherwise, at a price: its check takes a key-share lock on the event
// row once for every delivery written. An event and its 10 deliveries, 8 writers at once (pgbench, 2 cores):
// 4,400 a second with the key, 5,500 without. Retention deletes an event's deliveries with it (pruneEvents), in
// the same statement, which the key's cascade did before; a workspace's deliveries still go with its endpoints.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_event_id_fkey`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DELETE FROM webhook_deliveries d WHERE NOT EXISTS (SELECT FROM events e WHERE e.id = d.event_id);
    ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_event_id_fkey FOREIGN KEY (event_id) REFERENCES events (id) ON DELETE CASCADE;
  `.execute(db);
}
