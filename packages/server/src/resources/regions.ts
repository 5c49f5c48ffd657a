// Regions: read-only reference data (the migrations fill `regions`).
import type { Kysely } from 'kysely';
import { toRegion } from '../db/mappers.ts';
import type { Database } from '../db/schema.ts';
import { notFound } from '../http/errors.ts';
import { afterCursor } from '../services/lists.ts';
import { decodeCursor, page } from '../services/pagination.ts';

export async function listRegions(db: Kysely<Database>, { cursor, limit = 50 }: { cursor?: string; limit?: number }) {
  const rows = await afterCursor(db.selectFrom('regions').selectAll(), 'regions', decodeCursor(cursor), limit).execute();
  return page(rows, limit, cursor, toRegion);
}

/** The id of an existing region; 404 naming `param` otherwise. */
export async function requireRegion(db: Kysely<Database>, id: string, param = 'region_id'): Promise<string> {
  const region = await db.selectFrom('regions').select('id').where('id', '=', id).executeTakeFirst();
  if (!region) throw notFound('Region', id, param);
  return region.id;
}
