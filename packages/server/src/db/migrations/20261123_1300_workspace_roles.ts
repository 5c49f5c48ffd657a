// Workspace roles: viewer and admin join owner and member (the contract's WorkspaceMember.role).
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE workspace_members DROP CONSTRAINT workspace_members_role_check;
    ALTER TABLE workspace_members ADD CONSTRAINT workspace_members_role_check CHECK (role IN ('owner', 'admin', 'member', 'viewer'));
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  // The roles added here become member, the role that had their rights before.
  await sql`
    UPDATE workspace_members SET role = 'member' WHERE role IN ('admin', 'viewer');
    ALTER TABLE workspace_members DROP CONSTRAINT workspace_members_role_check;
    ALTER TABLE workspace_members ADD CONSTRAINT workspace_members_role_check CHECK (role IN ('owner', 'member'));
  `.execute(db);
}
