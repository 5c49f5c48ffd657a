// The audit log: one row per request that changes something (written in the request's transaction, or on its own
// when the request was refused) and per workflow transition. Ids only, never a body or a secret. No foreign keys:
// the log outlives what it names (a deleted workspace, user or cluster) until the retention prunes it.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE audit_events (
      id text PRIMARY KEY,
      created_at bigint NOT NULL,
      actor_type text NOT NULL CHECK (actor_type IN ('user', 'platform')),
      actor_id text,
      token_kind text CHECK (token_kind IN ('pat', 'session', 'jwt')),
      token_id text,
      workspace_id text,
      operation text NOT NULL,
      target_ids text[] NOT NULL DEFAULT '{}',
      request_id text,
      outcome text NOT NULL CHECK (outcome IN ('succeeded', 'failed', 'denied')),
      status integer,
      error_code text CHECK (error_code IN (
        'bad_request', 'unauthorized', 'forbidden', 'quota_exceeded', 'not_found', 'method_not_allowed', 'conflict',
        'validation_error', 'idempotency_key_reused', 'rate_limited', 'payload_too_large', 'unsupported_media_type',
        'internal_error', 'service_unavailable')),
      client_address text,
      CHECK ((actor_type = 'user') = (actor_id IS NOT NULL))
    );
    -- The two lists (a workspace's, a user's as actor) page by (created_at, id); target_id filters through GIN.
    CREATE INDEX audit_events_workspace ON audit_events (workspace_id, created_at, id) WHERE workspace_id IS NOT NULL;
    CREATE INDEX audit_events_actor ON audit_events (actor_id, created_at, id) WHERE actor_id IS NOT NULL;
    CREATE INDEX audit_events_targets ON audit_events USING gin (target_ids);
    CREATE INDEX audit_events_created ON audit_events (created_at);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE audit_events;`.execute(db);
}
