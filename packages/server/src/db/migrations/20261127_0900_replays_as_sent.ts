// An idempotent replay answers the first response again, byte for byte: its body is kept as the JSON text it was
// (json), not as jsonb, which stores objects with their keys reordered (by length, then bytes), so a replay came back
// equal as a value but not as the text the first answer was.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE idempotency_keys ALTER COLUMN response_body TYPE json USING response_body::json`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE idempotency_keys ALTER COLUMN response_body TYPE jsonb USING response_body::jsonb`.execute(db);
}
