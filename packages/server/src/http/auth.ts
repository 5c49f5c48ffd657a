// Bearer authentication for the three token kinds. Every refusal is the same 401, so a caller learns nothing
// about which tokens exist.
import { createRemoteJWKSet, jwtVerify } from 'jose';
import type { Kysely } from 'kysely';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Database } from '../db/schema.ts';
import { unauthorized } from '../errors.ts';
import type { Caller } from '../operations/types.ts';
import { findLiveToken, type KnownTokens, patChecksumValid, type RequestClient, tokenKind } from '../resources/tokens.ts';
import { AccessCache } from '../services/access-cache.ts';
import type { AccessChanges } from '../services/access-changes.ts';
import { scopesOfClaim } from '../services/scopes.ts';

const SUGGESTION = 'Send Authorization: Bearer <token> with a valid session token, personal access token or OAuth2 JWT.';

/**
 * `workspaceId`: the request's X-Workspace-Id, looked up with a PAT or session token (Caller.namedWorkspace);
 * `client`: where the request comes from, recorded with a session's last use; `fresh`: read from the database even
 * when an earlier request's reading is kept (an open stream's periodic check, the net for changes nobody announced).
 */
export type Authenticator = (authorization: string | undefined, workspaceId?: string, client?: RequestClient, fresh?: boolean) => Promise<Caller>;

/** What is wrong with a PAT that was never issued (wrong length, characters or checksum); undefined for a well-formed one. */
function patProblem(token: string): string | undefined {
  if (!/^svc_pat_[A-Za-z0-9]{38}$/.test(token)) {
    return `The personal access token is malformed: it must be svc_pat_ and 38 letters and digits, and this one has ${token.length - 'svc_pat_'.length} characters after svc_pat_${/^svc_pat_[A-Za-z0-9]*$/.test(token) ? '' : ', some of them not letters or digits'}.`;
  }
  if (!patChecksumValid(token))
    return 'The personal access token is malformed: its last 6 characters (a checksum) do not match the rest, so a character is wrong.';
  return undefined;
}

const sessionProblem = (token: string) =>
  `The token is malformed: neither a personal access token (svc_pat_…), a JWT (three dot-separated parts) nor a session token (32 letters and digits; this one has ${token.length} characters${/^[A-Za-z0-9]*$/.test(token) ? '' : ', some of them not letters or digits'}).`;

/** With `accessChanges`, what a request reads of its PAT or session is kept for the next ones (services/access-cache.ts). */
export function createAuthenticator(db: Kysely<Database>, clock: Clock, config: Config, accessChanges?: AccessChanges): Authenticator {
  const jwt = config.jwt;
  const known: KnownTokens | undefined = accessChanges && new AccessCache(accessChanges);
  // The JWKS is cached in memory by jose; staleness is harmless (keys rotate with overlap).
  const jwks = jwt ? createRemoteJWKSet(new URL(jwt.jwksUrl), { timeoutDuration: 3000 }) : undefined;

  return async (authorization, workspaceId, client, fresh = false) => {
    // RFC 6750 §2.1: the scheme, one or more spaces, the token (the scheme's case does not matter: RFC 9110 §11.1).
    const match = authorization === undefined ? null : /^Bearer +([\x21-\x7e]{1,4096})$/i.exec(authorization);
    if (!match?.[1]) throw unauthorized('Authentication is required.', SUGGESTION, { tokenSent: authorization !== undefined });
    const token = match[1];
    const kind = tokenKind(token);
    if (kind === 'jwt') {
      if (!jwt || !jwks) throw unauthorized('This service accepts no OAuth2 JWTs.', SUGGESTION);
      try {
        const { payload } = await jwtVerify(token, jwks, {
          issuer: jwt.issuer,
          audience: jwt.audience,
          algorithms: jwt.algorithms,
          clockTolerance: 30,
          currentDate: new Date(clock.now() * 1000),
          requiredClaims: ['exp'],
        });
        // A JWT must end, and not far in the future: a leaked one is not good forever.
        const issued = typeof payload.iat === 'number' ? Math.min(payload.iat, clock.now()) : clock.now();
        if (payload.exp! - issued > jwt.maxLifetimeSeconds) throw new Error('lifetime too long');
        const user = payload.sub ? await db.selectFrom('users').select('id').where('id', '=', payload.sub).executeTakeFirst() : undefined;
        if (!user) throw new Error('unknown subject');
        // The named workspace, if any, is looked up when an operation needs it.
        // Scoped by its `scope` claim when it has one; without it, a token the identity provider issued for this API
        // acts for its user in full, as a session token does (the decisions map `sub` to a user and say no more).
        const scopes = payload.scope === undefined ? 'all' : scopesOfClaim(payload.scope);
        return { userId: user.id, kind, tokenId: null, scopes, workspaceIds: null };
      } catch {
        throw unauthorized('The token is invalid or has expired.', SUGGESTION);
      }
    }
    // A PAT with a wrong checksum, or a session token of the wrong form, costs no database query, and says what
    // is wrong with it: such a token was mistyped or cut, never issued.
    const malformed = kind === 'pat' ? patProblem(token) : /^[A-Za-z0-9]{32}$/.test(token) ? undefined : sessionProblem(token);
    if (malformed) throw unauthorized(malformed, 'Copy the token again in full (it was never issued in this form), or create a new one.');
    const row = await findLiveToken(db, clock, token, kind, workspaceId, client, fresh ? undefined : known);
    if (!row) {
      throw unauthorized(
        'The token is unknown, has expired or was revoked.',
        'Create a new personal access token, or log in again with the command-line client.',
      );
    }
    const namedWorkspace =
      workspaceId === undefined
        ? undefined
        : {
            id: workspaceId,
            ref: row.workspace_id === null || row.workspace_owner_id === null ? null : { id: row.workspace_id, owner_id: row.workspace_owner_id },
          };
    return { userId: row.user_id, kind, tokenId: row.id, scopes: row.scopes ?? 'all', workspaceIds: row.workspace_ids, namedWorkspace };
  };
}
