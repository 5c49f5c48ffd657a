// The events outbox: one row per change worth telling, written in the transaction of the change, so an event
// exists exactly when its change does. The feed reads it oldest first by (created_at, id); the worker prunes rows
// older than the retention.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE events (
      id text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
      type text NOT NULL CHECK (type IN (
        'cluster.created', 'cluster.running', 'cluster.failed',
        'machine.ready', 'machine.provision_failed', 'machine.failed',
        'suspension.suspended', 'suspension.failed', 'suspension.resumed', 'suspension.resume_failed',
        'install.created', 'install.running', 'install.failed',
        'product.regeneration_succeeded', 'product.regeneration_failed')),
      object_type text NOT NULL CHECK (object_type IN ('cluster', 'machine', 'suspension', 'install', 'product')),
      object_id text NOT NULL,
      -- The object as the API returned it right after the change.
      object jsonb NOT NULL,
      created_at bigint NOT NULL
    );
    CREATE INDEX events_workspace ON events (workspace_id, created_at, id);
    CREATE INDEX events_object ON events (workspace_id, object_id, created_at, id);
    CREATE INDEX events_created ON events (created_at);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE events;`.execute(db);
}
