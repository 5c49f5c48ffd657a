// Keyset pagination over (created_at, id), oldest first. The cursor is opaque base64url JSON that points
// after the last record returned, so pages never repeat or skip and page n costs what page 1 costs.
import { validationError } from '../errors.ts';
import { type IdPrefix, PAGED_TABLE_ID_SHAPE, type PagedTable } from '../ids.ts';

export interface Position {
  created_at: number;
  id: string;
}

const ID_IN_CURSOR = /^[\x21-\x7e]{1,256}$/;

export function encodeCursor(position: Position): string {
  return Buffer.from(JSON.stringify({ t: position.created_at, i: position.id })).toString('base64url');
}

/** The position a cursor of `table`'s list points after; a 422 naming `cursor` for any other text. */
export function decodeCursor(cursor: string | undefined, table: PagedTable): Position | undefined {
  if (cursor === undefined || cursor === '') return undefined;
  // A cursor of one list (a position among clusters) passed to another (suspensions) would be read as a place in it
  // and silently skip rows: it is refused as any cursor not from this list.
  const shape: IdPrefix | RegExp | null = PAGED_TABLE_ID_SHAPE[table];
  let position: Position | undefined;
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (typeof value === 'object' && value !== null && 't' in value && 'i' in value) {
      const { t, i } = value as { t: unknown; i: unknown };
      // What was decoded is checked like any input: an id is printable ASCII (every id this API makes is), so
      // no NUL, control character or stray Unicode reaches a query.
      if (Number.isSafeInteger(t) && (t as number) >= 0 && typeof i === 'string' && ID_IN_CURSOR.test(i)) position = { created_at: t as number, id: i };
    }
  } catch {
    // fall through to the 422
  }
  const ofThisList = (id: string) => (shape === null ? true : typeof shape === 'string' ? id.startsWith(`${shape}_`) : shape.test(id));
  if (position && !ofThisList(position.id)) {
    throw validationError(
      'cursor',
      'cursor is a cursor of another list.',
      'Pass pagination.cursor from the previous page of this list, or omit it for the first page.',
    );
  }
  if (position) return position;
  throw validationError(
    'cursor',
    'cursor is not a cursor this API returned.',
    'Pass pagination.cursor from a previous page unchanged, or omit it for the first page.',
  );
}

/** Builds the envelope from `limit + 1` rows fetched after the cursor. */
export function page<R extends Position, T>(rows: R[], limit: number, cursor: string | undefined, toRecord: (row: R) => T) {
  const has_more = rows.length > limit;
  const records = rows.slice(0, limit);
  const last = records.at(-1);
  return {
    data: records.map(toRecord),
    pagination: { cursor: last ? encodeCursor(last) : (cursor ?? ''), has_more },
  };
}
