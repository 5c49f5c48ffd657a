// Every change of what a user may access is announced by the database itself (NOTIFY access_changed with the
// user's id, sent when the transaction commits), whoever makes it: a request, a worker, a row edited by hand.
// Gaining access is not announced: nothing kept of a caller's access holds it back (services/access-cache.ts).
// A token's use (its last use, a session's later expiry, where it came from) changes no access and is not announced.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION announce_access_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_TABLE_NAME = 'workspaces' THEN
        PERFORM pg_notify('access_changed', OLD.owner_id);
        IF TG_OP = 'UPDATE' THEN PERFORM pg_notify('access_changed', NEW.owner_id); END IF;
      ELSE
        PERFORM pg_notify('access_changed', OLD.user_id);
        IF TG_OP = 'UPDATE' THEN PERFORM pg_notify('access_changed', NEW.user_id); END IF;
      END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER tokens_access_removed AFTER DELETE ON tokens
      FOR EACH ROW EXECUTE FUNCTION announce_access_change();
    CREATE TRIGGER tokens_access_changed AFTER UPDATE ON tokens
      FOR EACH ROW WHEN (
        (OLD.user_id, OLD.kind, OLD.digest, OLD.scopes, OLD.workspace_ids) IS DISTINCT FROM (NEW.user_id, NEW.kind, NEW.digest, NEW.scopes, NEW.workspace_ids)
        OR (NEW.expires_at IS NOT NULL AND (OLD.expires_at IS NULL OR NEW.expires_at < OLD.expires_at))
      ) EXECUTE FUNCTION announce_access_change();
    CREATE TRIGGER workspace_members_access_changed AFTER UPDATE OR DELETE ON workspace_members
      FOR EACH ROW EXECUTE FUNCTION announce_access_change();
    CREATE TRIGGER workspaces_access_changed AFTER UPDATE OF owner_id OR DELETE ON workspaces
      FOR EACH ROW EXECUTE FUNCTION announce_access_change();
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP TRIGGER workspaces_access_changed ON workspaces;
    DROP TRIGGER workspace_members_access_changed ON workspace_members;
    DROP TRIGGER tokens_access_changed ON tokens;
    DROP TRIGGER tokens_access_removed ON tokens;
    DROP FUNCTION announce_access_change;
  `.execute(db);
}
