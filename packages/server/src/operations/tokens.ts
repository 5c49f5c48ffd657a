import { toToken } from '../db/mappers.ts';
import { notFound, validationError } from '../http/errors.ts';
import { afterCursor } from '../services/lists.ts';
import { decodeCursor, page } from '../services/pagination.ts';
import { createToken } from '../services/tokens.ts';
import type { Handler } from './types.ts';

export const listUserTokens: Handler<'listUserTokens'> = async ({ query, caller }, { db }) => {
  const limit = query.limit ?? 50;
  const base = db.selectFrom('tokens').selectAll().where('user_id', '=', caller.userId).where('kind', '=', 'pat');
  const rows = await afterCursor(base, 'tokens', decodeCursor(query.cursor), limit).execute();
  return { status: 200, body: page(rows, limit, query.cursor, toToken) };
};

export const createUserToken: Handler<'createUserToken'> = async ({ body, caller }, { db, clock }) => {
  const expiresAt = body.expires_at ?? null;
  if (expiresAt !== null && expiresAt <= clock.now()) {
    throw validationError('expires_at', 'expires_at must be in the future.', 'Send Unix seconds later than now, or omit expires_at for a token that never expires.');
  }
  const { row, secret } = await createToken(db, clock, { userId: caller.userId, kind: 'pat', name: body.name, expiresAt });
  return { status: 201, body: { id: row.id, name: row.name, token: secret, expires_at: row.expires_at } };
};

export const revokeUserToken: Handler<'revokeUserToken'> = async ({ params, caller }, { db }) => {
  // Revocation deletes the row: the token cannot be recovered and its next use gets 401.
  const result = await db.deleteFrom('tokens').where('id', '=', params.id).where('user_id', '=', caller.userId).where('kind', '=', 'pat').executeTakeFirst();
  if (result.numDeletedRows === 0n) throw notFound('Token', params.id);
  return { status: 204, body: undefined };
};

export const logout: Handler<'logout'> = async ({ caller }, { db }) => {
  if (caller.tokenId === null) {
    throw validationError('Authorization', 'An OAuth2 JWT cannot be revoked by this service.', 'Revoke the token at the identity provider that issued it.');
  }
  await db.deleteFrom('tokens').where('id', '=', caller.tokenId).execute();
  return { status: 204, body: undefined };
};
