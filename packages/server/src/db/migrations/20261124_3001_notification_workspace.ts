// A notification about a workspace's resource names its workspace: deleting the workspace deletes its
// notifications (the resources they name are gone), and a token restricted to workspaces sees only theirs.
// User-level notifications (a quota reached) have none. Existing rows get the workspace of the resource they
// name where it still exists.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE notifications ADD COLUMN workspace_id text REFERENCES workspaces (id) ON DELETE CASCADE;
    CREATE INDEX notifications_workspace ON notifications (workspace_id) WHERE workspace_id IS NOT NULL;
    UPDATE notifications n SET workspace_id = r.workspace_id FROM clusters r WHERE n.resource_type = 'cluster' AND r.id = n.resource_id;
    UPDATE notifications n SET workspace_id = c.workspace_id FROM machines m JOIN clusters c ON c.id = m.cluster_id
      WHERE n.resource_type = 'machine' AND m.provider_id = n.resource_id;
    UPDATE notifications n SET workspace_id = r.workspace_id FROM suspensions r WHERE n.resource_type = 'suspension' AND r.id = n.resource_id;
    UPDATE notifications n SET workspace_id = r.workspace_id FROM products r WHERE n.resource_type = 'product' AND r.id = n.resource_id;
    UPDATE notifications n SET workspace_id = r.workspace_id FROM installs r WHERE n.resource_type = 'install' AND r.id = n.resource_id;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE notifications DROP COLUMN workspace_id`.execute(db);
}
