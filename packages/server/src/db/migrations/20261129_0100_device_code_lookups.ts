// Look-ups of device codes (getDeviceSignInRequest, what the /device page does first, at once when opened from a
// link) count against a window of their own, apart from decisions (device_code_attempts): links to unknown codes
// that someone sends a user spend only look-ups, and the user can still approve the code of their own terminal.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE device_code_lookups (
      user_id text PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
      window_started_at bigint NOT NULL,
      attempts integer NOT NULL
    )
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE device_code_lookups`.execute(db);
}
