// Every deploy of an install (its install, an upgrade, a product's regeneration, a rollback) is a revision: the
// template, sources and overrides it rendered, and how it ended. Gone with the install.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE install_revisions (
      id text PRIMARY KEY,
      install_id text NOT NULL REFERENCES installs (id) ON DELETE CASCADE,
      revision integer NOT NULL,
      -- The workflow that deployed it: a re-run of its step records it once.
      workflow_id text NOT NULL,
      template_id text NOT NULL,
      -- The product's sources at that template: a rollback redeploys exactly what this revision rendered.
      sources jsonb NOT NULL,
      overrides jsonb NOT NULL,
      status text NOT NULL CHECK (status IN ('deploying', 'deployed', 'failed')),
      created_at bigint NOT NULL,
      updated_at bigint NOT NULL,
      UNIQUE (install_id, revision),
      UNIQUE (install_id, workflow_id)
    );
    CREATE INDEX install_revisions_list ON install_revisions (install_id, created_at, id);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE install_revisions;`.execute(db);
}
