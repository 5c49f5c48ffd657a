// The API's own rate limit (per token, per user for OAuth2 JWTs, per client address for the unauthenticated
// device-flow steps): one row per key and fixed window, counted by one upsert per request. It lives here, not
// in a process, because the service runs as many processes and they must share one count.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE api_rate_limits (
      -- "token:<id>", "user:<id>" or "ip:<address>".
      key text PRIMARY KEY,
      -- Unix seconds at which the current window began (a multiple of the window length).
      window_started_at bigint NOT NULL,
      requests integer NOT NULL CHECK (requests > 0)
    );
    CREATE INDEX api_rate_limits_window ON api_rate_limits (window_started_at);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE api_rate_limits;`.execute(db);
}
