// Kubernetes versions of the managed control plane: the only writer of `kaas_versions` (filled by the migrations,
// changed by an operator with `pnpm admin kaas-versions`). A version names a minor (`v1.35`) and the patch release
// (`v1.35.9`) a new cluster of it runs; a retired one stays, so its clusters keep their version and release.
import type { Schema } from '@platform/api-types';
import type { Kysely } from 'kysely';
import type { Database, Row } from '../db/schema.ts';
import { validationError } from '../errors.ts';
import { afterCursor } from '../services/lists.ts';
import { decodeCursor, page } from '../services/pagination.ts';

type Db = Kysely<Database>;

/** Row → record, typed on both ends: a drift between the database and the contract fails the type check. */
const toKaasVersion = (row: Row<'kaas_versions'>): Schema<'KaasVersion'> => ({
  id: row.id,
  release: row.release,
  available_for_new_clusters: row.available_for_new_clusters,
  end_of_support_at: row.end_of_support_at,
  created_at: row.created_at,
});

export async function listKaasVersions(db: Db, { cursor, limit }: { cursor?: string; limit: number }) {
  const rows = await afterCursor(db.selectFrom('kaas_versions').selectAll(), 'kaas_versions', decodeCursor(cursor, 'kaas_versions'), limit).execute();
  return page(rows, limit, cursor, toKaasVersion);
}

/** The versions new clusters may use, oldest first. */
const offered = async (db: Db): Promise<string[]> =>
  (await db.selectFrom('kaas_versions').select('id').where('available_for_new_clusters', '=', true).orderBy('created_at').orderBy('id').execute()).map(
    (r) => r.id,
  );

/**
 * The patch release a new cluster of `version` runs; 422 naming `kaas_version` for a version that is unknown or
 * retired, with the versions on offer.
 */
export async function releaseForNewCluster(db: Db, version: string): Promise<string> {
  const row = await db.selectFrom('kaas_versions').select(['release', 'available_for_new_clusters']).where('id', '=', version).executeTakeFirst();
  if (row?.available_for_new_clusters) return row.release;
  const onOffer = await offered(db);
  const choose = onOffer.length > 0 ? `Choose one of: ${onOffer.join(', ')} (GET /v1/kaas/versions).` : 'No version is on offer now; ask the operator.';
  throw validationError(
    'kaas_version',
    row
      ? `Kubernetes ${version} is retired: its clusters keep running, but no new cluster may use it.`
      : `Kubernetes ${version} is not a version of this platform.`,
    choose,
  );
}

/** What an operator sets of a version (`pnpm admin kaas-versions set`): a new one, or a new release or end of support. */
export interface KaasVersionSettings {
  id: string;
  release: string;
  end_of_support_at: number | null;
}

/**
 * Adds a version, on offer to new clusters, or changes its release and end of support (its clusters keep the release
 * they were created with). The release must be a patch release of the version.
 */
export async function setKaasVersion(db: Db, settings: KaasVersionSettings, now: number): Promise<Schema<'KaasVersion'>> {
  if (!/^v\d+\.\d+$/.test(settings.id)) throw validationError('id', `"${settings.id}" is not a version of the form v<major>.<minor>.`);
  if (!settings.release.startsWith(`${settings.id}.`) || !/^v\d+\.\d+\.\d+$/.test(settings.release))
    throw validationError('release', `"${settings.release}" is not a patch release of ${settings.id} (${settings.id}.<patch>).`);
  const row = await db
    .insertInto('kaas_versions')
    .values({ ...settings, available_for_new_clusters: true, created_at: now })
    .onConflict((c) => c.column('id').doUpdateSet({ release: settings.release, end_of_support_at: settings.end_of_support_at }))
    .returningAll()
    .executeTakeFirstOrThrow();
  return toKaasVersion(row);
}

/** Retires a version (no new cluster may use it; its clusters keep running) or offers it again; 422 for an unknown one. */
export async function setKaasVersionAvailability(db: Db, id: string, available: boolean): Promise<Schema<'KaasVersion'>> {
  const row = await db.updateTable('kaas_versions').set({ available_for_new_clusters: available }).where('id', '=', id).returningAll().executeTakeFirst();
  if (!row)
    throw validationError(
      'id',
      `Kubernetes ${id} is not a version of this platform.`,
      `Add it with its release first: kaas-versions set ${id} --release ${id}.<patch>.`,
    );
  return toKaasVersion(row);
}
