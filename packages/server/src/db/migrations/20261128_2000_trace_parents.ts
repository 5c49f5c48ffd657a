// Where a trace goes on across the queue: the W3C traceparent of the span that started a workflow (its steps are
// spans of that trace) and of the span that recorded an event (its webhook deliveries are). Null without tracing.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE workflows ADD COLUMN trace_parent text`.execute(db);
  await sql`ALTER TABLE events ADD COLUMN trace_parent text`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE workflows DROP COLUMN trace_parent`.execute(db);
  await sql`ALTER TABLE events DROP COLUMN trace_parent`.execute(db);
}
