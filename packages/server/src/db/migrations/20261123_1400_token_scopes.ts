// Scoped personal access tokens: a PAT holds the scopes it was created with; a session token (null) holds every
// scope. The PATs that exist were made when every token could do everything, so they keep every scope of today.
import { type Kysely, sql } from 'kysely';

const EVERY_SCOPE_TODAY = [
  'workspaces:read',
  'workspaces:write',
  'clusters:read',
  'clusters:write',
  'compute:read',
  'compute:write',
  'registry:read',
  'registry:write',
  'products:read',
  'products:write',
  'installs:read',
  'installs:write',
  'notifications:read',
  'notifications:write',
  'quotas:read',
  'tokens:read',
  'tokens:write',
];

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE tokens ADD COLUMN scopes text[]`.execute(db);
  await sql`UPDATE tokens SET scopes = ${EVERY_SCOPE_TODAY}::text[] WHERE kind = 'pat'`.execute(db);
  await sql`ALTER TABLE tokens ADD CONSTRAINT tokens_pat_scopes CHECK ((kind = 'pat') = (scopes IS NOT NULL))`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE tokens DROP COLUMN scopes`.execute(db);
}
