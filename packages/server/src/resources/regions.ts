// Regions: read-only reference data (the migrations fill `regions`).
import type { Schema } from '@platform/api-types';
import type { Kysely } from 'kysely';
import type { Database, Row } from '../db/schema.ts';
import { notFound } from '../errors.ts';
import { afterCursor } from '../services/lists.ts';
import { decodeCursor, page } from '../services/pagination.ts';

/** Row → record, typed on both ends: a drift between the database and the contract fails the type check. */
const toRegion = (row: Row<'regions'>): Schema<'Region'> => ({
  id: row.id,
  name: row.name,
  country: row.country,
  created_at: row.created_at,
});

export async function listRegions(db: Kysely<Database>, { cursor, limit }: { cursor?: string; limit: number }) {
  const rows = await afterCursor(db.selectFrom('regions').selectAll(), 'regions', decodeCursor(cursor, 'regions'), limit).execute();
  return page(rows, limit, cursor, toRegion);
}

/** Every region's id, in order. */
export const regionIds = async (db: Kysely<Database>): Promise<string[]> =>
  (await db.selectFrom('regions').select('id').orderBy('id').execute()).map((r) => r.id);

/** The id of an existing region; 404 naming `param` otherwise. */
export async function requireRegion(db: Kysely<Database>, id: string, param = 'region_id'): Promise<string> {
  const region = await db.selectFrom('regions').select('id').where('id', '=', id).executeTakeFirst();
  // Regions belong to no workspace: the hint is where to find their ids.
  if (!region) throw notFound('Region', id, param, 'List the regions with GET /v1/regions and use one of their ids.');
  return region.id;
}
