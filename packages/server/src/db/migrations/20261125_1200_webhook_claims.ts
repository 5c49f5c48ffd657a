// Webhook deliveries are claimed straight from their table (no queue between): a pending delivery is due at
// `next_attempt_at` and free when no live lease holds it, so a worker that dies lets go when its lease runs out.
// The claim counts the attempt, so an attempt that reached the receiver before its worker died is counted. An
// endpoint counts its consecutive failed attempts and cools (its circuit open) until `cooling_until`.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE webhook_endpoints ADD COLUMN consecutive_failures integer NOT NULL DEFAULT 0;
    -- Circuit open: no attempt before this moment (clock seconds), then one probe at a time until one succeeds.
    ALTER TABLE webhook_endpoints ADD COLUMN cooling_until bigint;
    UPDATE webhook_endpoints SET consecutive_failures = 1 WHERE failing_since IS NOT NULL;

    -- What a queue job held is due again at once.
    UPDATE webhook_deliveries SET next_attempt_at = extract(epoch FROM now())::bigint, leased_until = NULL
      WHERE status = 'pending' AND next_attempt_at IS NULL;
    DROP INDEX webhook_deliveries_in_flight;
    DROP INDEX webhook_deliveries_due;
    ALTER TABLE webhook_deliveries DROP COLUMN enqueued_at;
    -- The claim of the attempt under way: only its holder settles it.
    ALTER TABLE webhook_deliveries RENAME COLUMN job_id TO lease_id;
    CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE status = 'pending';
    CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (endpoint_id) WHERE leased_until IS NOT NULL;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP INDEX webhook_deliveries_leased;
    DROP INDEX webhook_deliveries_pending;
    ALTER TABLE webhook_deliveries RENAME COLUMN lease_id TO job_id;
    ALTER TABLE webhook_deliveries ADD COLUMN enqueued_at timestamptz;
    CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE next_attempt_at IS NOT NULL;
    CREATE INDEX webhook_deliveries_in_flight ON webhook_deliveries (enqueued_at) WHERE status = 'pending' AND next_attempt_at IS NULL;
    ALTER TABLE webhook_endpoints DROP COLUMN cooling_until;
    ALTER TABLE webhook_endpoints DROP COLUMN consecutive_failures;
  `.execute(db);
}
