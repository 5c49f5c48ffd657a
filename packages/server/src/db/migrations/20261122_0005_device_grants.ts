// The OAuth 2.0 Device Authorization Grant (RFC 8628): one row per device authorization request, and the
// per-user count of unknown user codes entered (the brute-force limit of the approval). Both live here, not in
// a process, because the service runs as many processes.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE device_grants (
      id text PRIMARY KEY,
      -- SHA-256 of the device code; the plaintext is never stored.
      device_code_digest bytea NOT NULL UNIQUE,
      -- Normalised: 8 upper-case letters, no dash.
      user_code text NOT NULL UNIQUE CHECK (user_code ~ '^[A-Z]{8}$'),
      client_id text,
      scope text,
      status text NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'issued')),
      user_id text REFERENCES users (id) ON DELETE CASCADE,
      interval_seconds integer NOT NULL CHECK (interval_seconds > 0),
      last_polled_at bigint,
      decided_at bigint,
      token_id text REFERENCES tokens (id) ON DELETE SET NULL,
      created_at bigint NOT NULL,
      expires_at bigint NOT NULL
    );
    CREATE INDEX device_grants_expires ON device_grants (expires_at);
    CREATE TABLE device_code_attempts (
      user_id text PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
      window_started_at bigint NOT NULL,
      attempts integer NOT NULL
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP TABLE device_code_attempts;
    DROP TABLE device_grants;
  `.execute(db);
}
