import * as tokens from '../resources/tokens.ts';
import * as users from '../resources/users.ts';
import type { Handler } from './types.ts';

export const listUserTokens: Handler<'listUserTokens'> = async ({ query, caller }, { db }) => ({
  status: 200,
  body: await tokens.listPersonalTokens(db, caller, query),
});

export const createUserToken: Handler<'createUserToken'> = async ({ body, caller }, { db, clock }) => ({
  status: 201,
  body: await tokens.createPersonalToken(db, clock, caller, body),
});

export const getUserToken: Handler<'getUserToken'> = async ({ params, caller }, { db }) => ({
  status: 200,
  body: await tokens.getPersonalToken(db, caller, params.id),
});

export const revokeUserToken: Handler<'revokeUserToken'> = async ({ params, caller }, { db }) => {
  await tokens.revokeOwnToken(db, caller, 'pat', params.id);
  return { status: 204, body: undefined };
};

export const listUserSessions: Handler<'listUserSessions'> = async ({ query, caller }, { db }) => ({
  status: 200,
  body: await tokens.listSessions(db, caller, caller.tokenId, query),
});

export const revokeUserSession: Handler<'revokeUserSession'> = async ({ params, caller }, { db }) => {
  await tokens.revokeOwnToken(db, caller, 'session', params.id);
  return { status: 204, body: undefined };
};

export const revokeOtherUserSessions: Handler<'revokeOtherUserSessions'> = async ({ caller }, { db }) => ({
  status: 200,
  body: await tokens.revokeOtherSessions(db, caller, caller.tokenId),
});

export const logout: Handler<'logout'> = async ({ caller }, { db }) => {
  await tokens.revokeCallerToken(db, caller.tokenId);
  return { status: 204, body: undefined };
};

export const getCurrentUser: Handler<'getCurrentUser'> = async ({ caller, workspace }, { db }) => ({
  status: 200,
  body: await users.describeCaller(db, caller, workspace),
});
