// Sessions a user can recognise: where and with which client a session token was last used (recorded with
// last_used_at, at most once a minute).
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE tokens ADD COLUMN last_address text, ADD COLUMN user_agent text`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE tokens DROP COLUMN last_address, DROP COLUMN user_agent`.execute(db);
}
