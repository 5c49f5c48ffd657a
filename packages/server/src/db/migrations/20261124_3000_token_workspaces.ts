// Personal access tokens restricted to workspaces (as GitHub's fine-grained tokens are to repositories):
// `workspace_ids` null means every workspace of the user. A session token always acts in every workspace.
// Ids are kept as text, like the scopes: a workspace deleted later is removed from the arrays by its deletion.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE tokens ADD COLUMN workspace_ids text[]`.execute(db);
  await sql`ALTER TABLE tokens ADD CONSTRAINT tokens_pat_workspaces CHECK (kind = 'pat' OR workspace_ids IS NULL)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE tokens DROP COLUMN workspace_ids`.execute(db);
}
