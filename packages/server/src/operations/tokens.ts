import { validationError } from '../http/errors.ts';
import { createToken } from '../services/tokens.ts';
import type { Handler } from './types.ts';

export const createUserToken: Handler<'createUserToken'> = async ({ body, caller }, { db, clock }) => {
  const expiresAt = body.expires_at ?? null;
  if (expiresAt !== null && expiresAt <= clock.now()) {
    throw validationError('expires_at', 'expires_at must be in the future.', 'Send Unix seconds later than now, or omit expires_at for a token that never expires.');
  }
  const { row, secret } = await createToken(db, clock, { userId: caller.userId, kind: 'pat', name: body.name, expiresAt });
  return { status: 201, body: { id: row.id, name: row.name, token: secret, expires_at: row.expires_at } };
};
