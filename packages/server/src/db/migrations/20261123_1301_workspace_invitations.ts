// Membership by invitation: an invitation is addressed to an email, whether or not it has an account, and the
// user of that email accepts it. Accepted, declined and expired invitations are deleted or ignored.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE workspace_invitations (
      id text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
      email text NOT NULL,
      role text NOT NULL CHECK (role IN ('admin', 'member', 'viewer')),
      invited_by text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      created_at bigint NOT NULL,
      expires_at bigint NOT NULL
    );
    CREATE INDEX workspace_invitations_email ON workspace_invitations (email, created_at, id);
    CREATE INDEX workspace_invitations_workspace ON workspace_invitations (workspace_id);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE workspace_invitations`.execute(db);
}
