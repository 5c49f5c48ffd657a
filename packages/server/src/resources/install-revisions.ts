// Install revisions: the only writer of `install_revisions`. Each deploy of an install (createInstall,
// updateInstall, regenerateProduct) records the template and overrides it rendered, deploying → deployed / failed.
// The rows go with their install (ON DELETE CASCADE).
import type { Schema } from '@platform/api-types';
import { type Kysely, sql } from 'kysely';
import type { Database, InstallOverride, ProductSource, Row } from '../db/schema.ts';
import { newId } from '../ids.ts';
import { afterCursor } from '../services/lists.ts';
import { decodeCursor, page } from '../services/pagination.ts';

type Db = Kysely<Database>;

const toRevision = (row: Row<'install_revisions'>): Schema<'InstallRevision'> => ({
  revision: row.revision,
  template_id: row.template_id,
  overrides: row.overrides,
  status: row.status,
  created_at: row.created_at,
  updated_at: row.updated_at,
});

/** The next revision of the install, once per workflow (a re-run of the deploying step records nothing new). */
export async function recordRevision(
  db: Db,
  deploy: {
    install_id: string;
    workflow_id: string;
    template_id: string;
    sources: ProductSource[];
    overrides: InstallOverride[];
    status: Row<'install_revisions'>['status'];
  },
  now: number,
): Promise<void> {
  await sql`
    INSERT INTO install_revisions (id, install_id, revision, workflow_id, template_id, sources, overrides, status, created_at, updated_at)
    SELECT ${newId('rev')}, ${deploy.install_id}, COALESCE(MAX(revision), 0) + 1, ${deploy.workflow_id}, ${deploy.template_id},
      ${JSON.stringify(deploy.sources)}::jsonb, ${JSON.stringify(deploy.overrides)}::jsonb, ${deploy.status}, ${now}, ${now}
    FROM install_revisions WHERE install_id = ${deploy.install_id}
    ON CONFLICT (install_id, workflow_id) DO NOTHING`.execute(db);
}

/** deploying → deployed / failed, for the revision the workflow deployed. */
export async function finishRevision(db: Db, installId: string, workflowId: string, status: 'deployed' | 'failed', now: number): Promise<void> {
  await db
    .updateTable('install_revisions')
    .set({ status, updated_at: now })
    .where('install_id', '=', installId)
    .where('workflow_id', '=', workflowId)
    .where('status', '=', 'deploying')
    .execute();
}

/** The revisions of an install (visible to the caller: the caller checks), oldest first. */
export async function listRevisions(db: Db, installId: string, query: { cursor?: string; limit?: number }) {
  const { cursor, limit = 50 } = query;
  const rows = await afterCursor(
    db.selectFrom('install_revisions').selectAll().where('install_id', '=', installId),
    'install_revisions',
    decodeCursor(cursor, 'install_revisions'),
    limit,
  ).execute();
  return page(rows, limit, cursor, toRevision);
}

/** One revision of an install, with the sources it rendered; undefined when it has none of that number. */
export const revisionOf = (db: Db, installId: string, revision: number) =>
  db.selectFrom('install_revisions').selectAll().where('install_id', '=', installId).where('revision', '=', revision).executeTakeFirst();

/** Every source any revision of the install rendered: what an uninstall removes. */
export async function sourcesEverDeployed(db: Db, installId: string): Promise<ProductSource[]> {
  const rows = await db.selectFrom('install_revisions').select('sources').where('install_id', '=', installId).execute();
  return rows.flatMap((r) => r.sources);
}
