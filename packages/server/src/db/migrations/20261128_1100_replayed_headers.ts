// An idempotent replay answers with the first response's own headers too (those its handler set), not its status
// and body alone. Nullable: rows kept from before have none, and replay as they did.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE idempotency_keys ADD COLUMN response_headers json`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE idempotency_keys DROP COLUMN response_headers`.execute(db);
}
