// A cloud credential can be switched off (is_active = false) without deleting it: new compute configs and
// machines cannot use it, the machines made with it are still driven with it. Existing credentials stay active.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE cloud_credentials ADD COLUMN is_active boolean NOT NULL DEFAULT true`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE cloud_credentials DROP COLUMN is_active`.execute(db);
}
