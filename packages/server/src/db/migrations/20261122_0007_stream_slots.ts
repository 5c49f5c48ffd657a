// Concurrent log streams per token: one row per open stream, with a lease its process renews while the
// stream is open, so a process that dies without releasing frees its slots when the lease runs out. In
// PostgreSQL because a token's streams may be spread over many server processes.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE stream_slots (
      id text PRIMARY KEY,
      -- "token:<id>" or "user:<id>" (OAuth2 JWTs).
      key text NOT NULL,
      acquired_at bigint NOT NULL,
      -- Unix seconds after which the slot is free unless renewed.
      expires_at bigint NOT NULL
    );
    CREATE INDEX stream_slots_key ON stream_slots (key, expires_at);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE stream_slots;`.execute(db);
}
