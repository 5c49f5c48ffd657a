// Webhooks: endpoints that receive a workspace's events, and one delivery per (endpoint, event), written in the
// transaction of the event (resources/webhook-deliveries.ts fans each event out). A delivery row is the truth
// about its sending; pg-boss jobs only trigger its attempts (workflows/webhook-dispatcher.ts). The event types
// grow by the install lifecycle, quotas reached and tokens about to expire; tokens remember that they were told.
import { type Kysely, sql } from 'kysely';

const TYPES_BEFORE = `'cluster.created', 'cluster.running', 'cluster.failed',
  'machine.ready', 'machine.provision_failed', 'machine.failed',
  'suspension.suspended', 'suspension.failed', 'suspension.resumed', 'suspension.resume_failed',
  'install.created', 'install.running', 'install.failed',
  'product.regeneration_succeeded', 'product.regeneration_failed'`;
const TYPES_ADDED = `'install.updated', 'install.rolled_back', 'install.uninstalled', 'quota.reached', 'token.expiring_soon'`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE events DROP CONSTRAINT events_type_check;
    ALTER TABLE events ADD CONSTRAINT events_type_check CHECK (type IN (${sql.raw(TYPES_BEFORE)}, ${sql.raw(TYPES_ADDED)}));
    ALTER TABLE events DROP CONSTRAINT events_object_type_check;
    ALTER TABLE events ADD CONSTRAINT events_object_type_check
      CHECK (object_type IN ('cluster', 'machine', 'suspension', 'install', 'product', 'quota', 'token'));

    ALTER TABLE notifications DROP CONSTRAINT notifications_resource_type_check;
    ALTER TABLE notifications ADD CONSTRAINT notifications_resource_type_check
      CHECK (resource_type IN ('cluster', 'machine', 'suspension', 'product', 'install', 'token', 'quota', 'webhook_endpoint'));

    ALTER TABLE tokens ADD COLUMN expiry_told_at bigint;

    CREATE TABLE webhook_endpoints (
      id text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
      url text NOT NULL,
      -- Empty: every type, including types added later.
      event_types text[] NOT NULL,
      description text NOT NULL,
      enabled boolean NOT NULL,
      disabled_reason text,
      -- AES-256-GCM (services/secrets.ts) of the whsec_ secret; the previous one signs too until its deadline.
      secret_ciphertext bytea NOT NULL,
      previous_secret_ciphertext bytea,
      previous_secret_expires_at bigint,
      -- The first failed attempt since the last success.
      failing_since bigint,
      created_at bigint NOT NULL,
      updated_at bigint NOT NULL,
      CHECK ((previous_secret_ciphertext IS NULL) = (previous_secret_expires_at IS NULL))
    );
    CREATE INDEX webhook_endpoints_workspace ON webhook_endpoints (workspace_id, created_at, id);

    CREATE TABLE webhook_deliveries (
      id text PRIMARY KEY,
      endpoint_id text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
      -- A delivery goes with its event (the events' retention).
      event_id text NOT NULL REFERENCES events (id) ON DELETE CASCADE,
      event_type text NOT NULL,
      status text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed', 'cancelled')),
      attempts integer NOT NULL DEFAULT 0,
      -- When the current run of attempts began (creation or redelivery): retries stop 3 days after it.
      first_attempt_at bigint NOT NULL,
      last_attempt_at bigint,
      last_response_status integer,
      last_duration_ms integer,
      last_error text,
      -- Due at this moment (clock seconds) while pending; null while a job for it is queued or running.
      next_attempt_at bigint,
      -- The pg-boss job last sent for it, and when (real time): while that job waits, the delivery is no orphan.
      job_id uuid,
      enqueued_at timestamptz,
      -- A worker attempting it holds it until then (real time); a worker killed mid-attempt lets go this way.
      leased_until timestamptz,
      created_at bigint NOT NULL,
      updated_at bigint NOT NULL,
      UNIQUE (endpoint_id, event_id)
    );
    CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at, id);
    CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE next_attempt_at IS NOT NULL;
    CREATE INDEX webhook_deliveries_in_flight ON webhook_deliveries (enqueued_at) WHERE status = 'pending' AND next_attempt_at IS NULL;
    CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP TABLE webhook_deliveries;
    DROP TABLE webhook_endpoints;
    ALTER TABLE tokens DROP COLUMN expiry_told_at;
    DELETE FROM notifications WHERE resource_type = 'webhook_endpoint';
    ALTER TABLE notifications DROP CONSTRAINT notifications_resource_type_check;
    ALTER TABLE notifications ADD CONSTRAINT notifications_resource_type_check
      CHECK (resource_type IN ('cluster', 'machine', 'suspension', 'product', 'install', 'token', 'quota'));
    DELETE FROM events WHERE type IN (${sql.raw(TYPES_ADDED)});
    ALTER TABLE events DROP CONSTRAINT events_object_type_check;
    ALTER TABLE events ADD CONSTRAINT events_object_type_check CHECK (object_type IN ('cluster', 'machine', 'suspension', 'install', 'product'));
    ALTER TABLE events DROP CONSTRAINT events_type_check;
    ALTER TABLE events ADD CONSTRAINT events_type_check CHECK (type IN (${sql.raw(TYPES_BEFORE)}));
  `.execute(db);
}
