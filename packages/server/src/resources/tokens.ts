// Personal access tokens and session tokens: the only writer of `tokens`. Only a SHA-256 digest is stored;
// look-up is by digest (a unique index), so comparing is an equality on a hash and leaks nothing about the secret.
import { hash, randomBytes } from 'node:crypto';
import type { Schema } from '@platform/api-types';
import { type Kysely, sql } from 'kysely';
import type { Clock } from '../clock.ts';
import { rawRows } from '../db/raw-query.ts';
import type { Database, Row } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { notFound, validationError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { AccessCache } from '../services/access-cache.ts';
import { changingAccess } from '../services/access-changes.ts';
import { afterCursor } from '../services/lists.ts';
import { decodeCursor, page } from '../services/pagination.ts';
import { ALL_SCOPES, grantableScopes, type Scope, type Scopes } from '../services/scopes.ts';
import { grantableWorkspaces, type WorkspaceCaller } from '../services/tenancy.ts';
import { recordEventAndNotify } from './events.ts';
import { notifyUser } from './notifications.ts';

/** Row → record, typed on both ends: a drift between the database and the contract fails the type check. */
const toToken = (row: Row<'tokens'>): Schema<'Token'> => ({
  id: row.id,
  name: row.name,
  prefix: row.prefix,
  created_at: row.created_at,
  last_used_at: row.last_used_at,
  expires_at: row.expires_at,
  scopes: (row.scopes ?? ALL_SCOPES) as Scope[],
  workspace_ids: row.workspace_ids,
});

export const PAT_PREFIX = 'svc_pat_';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** Session tokens live one year from their last use. */
export const SESSION_LIFETIME_SECONDS = 365 * 24 * 3600;
/** last_used_at (and a session's expiry) is written at most once a minute, so reads do not become writes. */
export const LAST_USED_RESOLUTION_SECONDS = 60;

function base62(length: number): string {
  // Rejection sampling keeps every character equally likely.
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

/** A checksum over the body (6 base62 characters), so a mistyped PAT is refused without a database query. */
function checksum(body: string): string {
  const digest = hash('sha256', body, 'buffer');
  let value = digest.readUIntBE(0, 6);
  let out = '';
  for (let i = 0; i < 6; i++) {
    out += BASE62[value % 62];
    value = Math.floor(value / 62);
  }
  return out;
}

export function newPatSecret(): string {
  const body = base62(32);
  return `${PAT_PREFIX}${body}${checksum(body)}`;
}

export function patChecksumValid(token: string): boolean {
  if (!/^svc_pat_[A-Za-z0-9]{38}$/.test(token)) return false;
  const body = token.slice(PAT_PREFIX.length, -6);
  return checksum(body) === token.slice(-6);
}

export function newSessionSecret(): string {
  return base62(32);
}

export function digest(token: string): Buffer {
  return hash('sha256', token, 'buffer');
}

export type TokenKind = 'pat' | 'session' | 'jwt';

/** The decisions' rule: `svc_pat_` prefix → PAT; three dot-separated base64url parts → JWT; else session. */
export function tokenKind(token: string): TokenKind {
  if (token.startsWith(PAT_PREFIX)) return 'pat';
  if (/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token)) return 'jwt';
  return 'session';
}

export async function createToken(
  db: Kysely<Database>,
  clock: Clock,
  init: {
    userId: string;
    kind: 'pat' | 'session';
    name: string;
    expiresAt: number | null;
    scopes?: readonly Scope[];
    /** A PAT's workspaces; omitted: every workspace of the user. */
    workspaceIds?: readonly string[] | null;
  },
): Promise<{ row: Row<'tokens'>; secret: string }> {
  const secret = init.kind === 'pat' ? newPatSecret() : newSessionSecret();
  const now = clock.now();
  const row = await db
    .insertInto('tokens')
    .values({
      id: newId('tok'),
      user_id: init.userId,
      kind: init.kind,
      name: init.name,
      digest: digest(secret),
      prefix: init.kind === 'pat' ? secret.slice(0, PAT_PREFIX.length + 4) : secret.slice(0, 4),
      expires_at: init.kind === 'session' ? now + SESSION_LIFETIME_SECONDS : init.expiresAt,
      last_used_at: null,
      created_at: now,
      // A PAT made without a choice (a new user's first token) holds every scope; a session always does.
      scopes: init.kind === 'pat' ? [...(init.scopes ?? ALL_SCOPES)] : null,
      workspace_ids: init.kind === 'pat' && init.workspaceIds ? [...init.workspaceIds] : null,
      last_address: null,
      user_agent: null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return { row, secret };
}

/** What a request reads of its token (and the workspace it names) once, and may keep: services/access-cache.ts. */
export type KnownTokens = AccessCache<LiveTokenRow>;

interface LiveTokenRow {
  id: string;
  user_id: string;
  expires_at: number | null;
  last_used_at: number | null;
  workspace_id: string | null;
  workspace_owner_id: string | null;
  /** The arrays as space-separated words (neither scopes nor ids hold a space), or null. */
  scopes: string | null;
  workspace_ids: string | null;
}

const words = (text: string | null): string[] | null => (text === null ? null : text === '' ? [] : text.split(' '));

/** Where a request comes from: recorded for sessions, so their owner can recognise them. */
export interface RequestClient {
  address: string;
  userAgent: string | undefined;
}

const LIVE_TOKEN = `
  SELECT t.id, t.user_id, t.expires_at, t.last_used_at, array_to_string(t.scopes, ' ') AS scopes,
    array_to_string(t.workspace_ids, ' ') AS workspace_ids, w.id AS workspace_id, w.owner_id AS workspace_owner_id
  FROM tokens t
  LEFT JOIN workspace_members m ON m.user_id = t.user_id AND m.workspace_id = $1
  LEFT JOIN workspaces w ON w.id = m.workspace_id
  WHERE t.digest = $2 AND t.kind = $3`;

/**
 * Finds a live PAT or session token; records its use (and refreshes a session) at most once a minute. With
 * `workspaceId` (the request's X-Workspace-Id), the same query also finds that workspace when the token's
 * user is a member of it (`workspace_id` and `workspace_owner_id` are null otherwise). With `known`, what an
 * earlier request read is used while it is kept (services/access-cache.ts).
 */
export async function findLiveToken(
  db: Kysely<Database>,
  clock: Clock,
  secret: string,
  kind: 'pat' | 'session',
  workspaceId?: string,
  client?: RequestClient,
  known?: KnownTokens,
) {
  const tokenDigest = digest(secret);
  const now = clock.now();
  const live = (found: LiveTokenRow) => found.expires_at === null || found.expires_at > now;
  // Every authenticated request runs this, so it is written as SQL: building and compiling it with Kysely's
  // query builder took the server's CPU per list request from about 215 to 240 µs (three paired runs), and it
  // runs past Kysely's query path (raw-query.ts). The two arrays come back as text, split here: pg's array parser
  // took 1.7 % of the server's CPU under the list benchmark (a PAT holds about twenty scopes).
  const query = async () => (await rawRows<LiveTokenRow>(db, LIVE_TOKEN, [workspaceId ?? null, tokenDigest, kind]))[0];
  const row = known
    ? await known.read(
        `${kind} ${workspaceId ?? ''} ${tokenDigest.toString('base64')}`,
        query,
        // Expired as it was kept: read again (another process may have extended a session since).
        live,
        // Not kept when the user is no member of the named workspace: becoming one is announced to nobody.
        (read) => live(read) && (workspaceId === undefined || read.workspace_id !== null),
      )
    : await query();
  if (!row || !live(row)) return undefined;
  if (row.last_used_at === null || now - row.last_used_at >= LAST_USED_RESOLUTION_SECONDS) {
    // On the kept row first, so that the other requests of this second do not write it too.
    row.last_used_at = now;
    if (kind === 'session') row.expires_at = now + SESSION_LIFETIME_SECONDS;
    await db
      .updateTable('tokens')
      .set({
        last_used_at: now,
        ...(kind === 'session'
          ? { expires_at: now + SESSION_LIFETIME_SECONDS, last_address: client?.address ?? null, user_agent: client?.userAgent?.slice(0, 200) ?? null }
          : {}),
      })
      .where('id', '=', row.id)
      .execute();
  }
  return { ...row, scopes: words(row.scopes), workspace_ids: words(row.workspace_ids) };
}

/**
 * The user's tokens a caller may see and revoke: all of them for a token of every workspace; for a token
 * restricted to workspaces, only personal access tokens restricted to some of those (never a session or a token
 * of every workspace), so a restricted token never reaches a wider one.
 */
function manageableBy(caller: WorkspaceCaller) {
  return caller.workspaceIds === null
    ? sql<boolean>`true`
    : sql<boolean>`tokens.workspace_ids IS NOT NULL AND tokens.workspace_ids <@ ${[...caller.workspaceIds]}::text[]`;
}

export async function listPersonalTokens(db: Kysely<Database>, caller: WorkspaceCaller, { cursor, limit }: { cursor?: string; limit: number }) {
  const base = db.selectFrom('tokens').selectAll().where('user_id', '=', caller.userId).where('kind', '=', 'pat').where(manageableBy(caller));
  const rows = await afterCursor(base, 'tokens', decodeCursor(cursor, 'tokens'), limit).execute();
  return page(rows, limit, cursor, toToken);
}

/** One of the user's PATs; 404 for another user's, a session, or one wider than the calling token's restriction. */
export async function getPersonalToken(db: Kysely<Database>, caller: WorkspaceCaller, tokenId: string): Promise<Schema<'Token'>> {
  const row = await db
    .selectFrom('tokens')
    .selectAll()
    .where('id', '=', tokenId)
    .where('user_id', '=', caller.userId)
    .where('kind', '=', 'pat')
    .where(manageableBy(caller))
    .executeTakeFirst();
  if (!row) throw notFound('Token', tokenId);
  return toToken(row);
}

/** A new personal access token, never stronger than the calling one (scopes, workspaces); its secret is in the answer only. */
export async function createPersonalToken(
  db: Kysely<Database>,
  clock: Clock,
  caller: WorkspaceCaller & { scopes: Scopes },
  input: Schema<'TokenCreate'>,
): Promise<Schema<'TokenCreated'>> {
  const expiresAt = input.expires_at ?? null;
  if (expiresAt !== null && expiresAt <= clock.now()) {
    throw validationError(
      'expires_at',
      'expires_at must be in the future.',
      'Send Unix seconds later than now, or omit expires_at for a token that never expires.',
    );
  }
  // Scopes left out are the caller's own, as workspaces left out are (the seed's body has neither).
  const scopes = grantableScopes(input.scopes ?? ['*'], caller.scopes, 'createUserToken');
  const workspaceIds = await grantableWorkspaces(db, caller, input.workspace_ids);
  const { row, secret } = await createToken(db, clock, { userId: caller.userId, kind: 'pat', name: input.name, expiresAt, scopes, workspaceIds });
  return { id: row.id, name: row.name, token: secret, expires_at: row.expires_at, scopes, workspace_ids: row.workspace_ids };
}

/**
 * A deleted workspace leaves every token's restriction (ids are never reused, so this only keeps the records
 * tidy); a token restricted to it alone is left with none, and acts in no workspace.
 */
export async function forgetWorkspace(db: Kysely<Database>, workspaceId: string): Promise<void> {
  await db
    .updateTable('tokens')
    .set({ workspace_ids: sql<string[]>`array_remove(workspace_ids, ${workspaceId})` })
    .where(sql<boolean>`${workspaceId} = any(workspace_ids)`)
    .execute();
}

/** A token's name and expiry (never its secret or digest), for the caller's own description; undefined when it is gone. */
export const describeToken = (db: Kysely<Database>, tokenId: string) =>
  db.selectFrom('tokens').select(['name', 'expires_at']).where('id', '=', tokenId).executeTakeFirst();

/**
 * Revokes one of the caller's own tokens of `kind` (a PAT, or a session: the calling one too) by deleting its row:
 * it cannot be recovered and its next use gets 401. Another user's, one of the other kind, and one the caller may
 * not manage (wider than a restricted caller) are 404 like a missing one.
 */
export async function revokeOwnToken(db: Kysely<Database>, caller: WorkspaceCaller, kind: 'pat' | 'session', id: string): Promise<void> {
  const result = await db
    .deleteFrom('tokens')
    .where('id', '=', id)
    .where('user_id', '=', caller.userId)
    .where('kind', '=', kind)
    .where(manageableBy(caller))
    .executeTakeFirst();
  if (result.numDeletedRows === 0n) throw notFound(kind === 'pat' ? 'Token' : 'Session', id);
  changingAccess();
}

const toSession = (row: Row<'tokens'>, currentTokenId: string | null): Schema<'Session'> => ({
  id: row.id,
  name: row.name,
  created_at: row.created_at,
  last_used_at: row.last_used_at,
  last_address: row.last_address,
  user_agent: row.user_agent,
  current: row.id === currentTokenId,
});

/** The user's sessions; none for a token restricted to workspaces (a session acts in every workspace). */
export async function listSessions(
  db: Kysely<Database>,
  caller: WorkspaceCaller,
  currentTokenId: string | null,
  { cursor, limit = 50 }: { cursor?: string; limit?: number },
) {
  const base = db.selectFrom('tokens').selectAll().where('user_id', '=', caller.userId).where('kind', '=', 'session').where(manageableBy(caller));
  const rows = await afterCursor(base, 'tokens', decodeCursor(cursor, 'tokens'), limit).execute();
  return page(rows, limit, cursor, (row) => toSession(row, currentTokenId));
}

/** Ends every session of the user but the calling one (`currentTokenId`: a PAT's or null ends them all); none for a restricted token. */
export async function revokeOtherSessions(db: Kysely<Database>, caller: WorkspaceCaller, currentTokenId: string | null): Promise<Schema<'SessionsRevoked'>> {
  const result = await db
    .deleteFrom('tokens')
    .where('user_id', '=', caller.userId)
    .where('kind', '=', 'session')
    .where(manageableBy(caller))
    .$if(currentTokenId !== null, (q) => q.where('id', '!=', currentTokenId!))
    .executeTakeFirst();
  changingAccess();
  return { revoked: Number(result.numDeletedRows) };
}

/** Ends the session (or revokes the PAT) a request was made with; OAuth2 JWTs have no row to delete. */
export async function revokeCallerToken(db: Kysely<Database>, tokenId: string | null): Promise<void> {
  if (tokenId === null) {
    throw validationError('Authorization', 'An OAuth2 JWT cannot be revoked by this service.', 'Revoke the token at the identity provider that issued it.');
  }
  await db.deleteFrom('tokens').where('id', '=', tokenId).execute();
  changingAccess();
}

/** How long before its expiry a personal access token's owner is told (token.expiring_soon). */
export const EXPIRY_NOTICE_SECONDS = 7 * 86_400;

/**
 * Tells the owners of personal access tokens expiring within EXPIRY_NOTICE_SECONDS, once per token: a
 * token.expiring_soon event in the owner's default workspace (the oldest they own; none when they own none) and a
 * notification. Safe to run in every worker at once: each token is claimed once. Returns how many were told.
 */
export async function tellExpiringTokens(db: Kysely<Database>, now: number): Promise<number> {
  return inTransaction(db, async (trx) => {
    const rows = await trx
      .updateTable('tokens')
      .set({ expiry_told_at: now })
      .where(
        'id',
        'in',
        trx
          .selectFrom('tokens')
          .select('id')
          .where('kind', '=', 'pat')
          .where('expiry_told_at', 'is', null)
          .where('expires_at', '>', now)
          .where('expires_at', '<=', now + EXPIRY_NOTICE_SECONDS)
          .limit(500)
          .forUpdate()
          .skipLocked(),
      )
      .returningAll()
      .execute();
    for (const row of rows) {
      const days = Math.max(1, Math.ceil((row.expires_at! - now) / 86_400));
      const notice = {
        title: `Token ${row.name} expires soon`,
        body: `Your personal access token ${row.name} (${row.prefix}…) stops working in ${days} day${days === 1 ? '' : 's'}. Create a new one (POST /v1/user/tokens) and replace it where it is used.`,
        severity: 'warning' as const,
      };
      const home = await trx
        .selectFrom('workspaces')
        .select('id')
        .where('owner_id', '=', row.user_id)
        .orderBy('created_at')
        .orderBy('id')
        .limit(1)
        .executeTakeFirst();
      const event = { type: 'token.expiring_soon', object_type: 'token', object_id: row.id, object: toToken(row) } as const;
      if (home) await recordEventAndNotify(trx, { ...event, workspace_id: home.id }, now, { ...notice, userId: row.user_id });
      // An owner of no workspace has no feed to record the event in: the notification alone.
      else await notifyUser(trx, row.user_id, now, { type: event.type, resource_type: event.object_type, resource_id: event.object_id, ...notice });
    }
    return rows.length;
  });
}
