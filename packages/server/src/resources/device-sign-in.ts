// Device sign-in: the OAuth 2.0 Device Authorization Grant (RFC 8628), the only writer of `device_grants` and
// `device_code_attempts` (authentication of requests is http/auth.ts). Every piece of state is a row: the grant (its device
// code stored as a SHA-256 digest, its user code normalised, its poll interval and last poll), and the
// per-user count of unknown user codes entered. So any server process can answer any request, and a device
// code is exchanged for a token exactly once: the poll locks the grant's row (SELECT … FOR UPDATE), so two
// racing polls run one after the other and the second sees `issued`.
import { createHash, randomBytes, randomInt } from 'node:crypto';
import type { Schema } from '@platform/api-types';
import { type InsertQueryBuilder, type InsertResult, type Kysely, sql, type UpdateQueryBuilder, type UpdateResult } from 'kysely';
import { ulid } from 'ulid';
import type { Clock } from '../clock.ts';
import type { Database, Row } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { ApiError, OAuthError } from '../errors.ts';
import { ALL_SCOPES, holds, type Scopes } from '../services/scopes.ts';
import { requireUnrestricted, type WorkspaceCaller } from '../services/tenancy.ts';
import { createToken, SESSION_LIFETIME_SECONDS } from './tokens.ts';

export const DEVICE_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:device_code';
/** RFC 8628 §6.1's alphabet: no vowels (so no words) and no digits (nothing to confuse with O, I or S). */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
/** RFC 8628 §3.5: each slow_down adds 5 seconds to the interval, for this and every later poll. */
export const SLOW_DOWN_STEP_SECONDS = 5;
/** The approval's brute-force limit: unknown user codes one user may enter per window. */
export const APPROVAL_ATTEMPT_LIMIT = 10;
export const APPROVAL_WINDOW_SECONDS = 600;
/** Grants this long past their expiry are deleted when new ones are made. */
const RETENTION_SECONDS = 24 * 3600;

export function newUserCode(): string {
  let code = '';
  for (let i = 0; i < 8; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return code;
}

/** `wdjb-mjht`, `WDJBMJHT`, ` WDJB MJHT ` → `WDJBMJHT`; undefined when it cannot be a user code. */
export function normaliseUserCode(input: string): string | undefined {
  const code = input.replace(/[\s-]/g, '').toUpperCase();
  return /^[A-Z]{8}$/.test(code) ? code : undefined;
}

/** `WDJBMJHT` → `WDJB-MJHT`, as it is shown. */
export const formatUserCode = (code: string): string => `${code.slice(0, 4)}-${code.slice(4)}`;

const digest = (deviceCode: string): Buffer => createHash('sha256').update(deviceCode).digest();

export interface DeviceSettings {
  ttlSeconds: number;
  intervalSeconds: number;
}

/** Creates a pending grant; returns its device code (shown once) and user code. */
export async function startDeviceSignIn(
  db: Kysely<Database>,
  clock: Clock,
  settings: DeviceSettings,
  request: { clientId: string | null; scope: string | null },
): Promise<{ deviceCode: string; userCode: string; row: Row<'device_grants'> }> {
  const now = clock.now();
  // Long-expired grants go, so the unique user codes stay free for new grants.
  await db
    .deleteFrom('device_grants')
    .where('expires_at', '<', now - RETENTION_SECONDS)
    .execute();
  for (let attempt = 0; ; attempt++) {
    const deviceCode = randomBytes(32).toString('base64url');
    const userCode = newUserCode();
    // A user code already taken (20^8 codes, so rarely) is drawn again; the unique index decides.
    const row = await db
      .insertInto('device_grants')
      .values({
        id: `dgr_${ulid().toLowerCase()}`,
        device_code_digest: digest(deviceCode),
        user_code: userCode,
        client_id: request.clientId,
        scope: request.scope,
        status: 'pending',
        user_id: null,
        interval_seconds: settings.intervalSeconds,
        last_polled_at: null,
        decided_at: null,
        token_id: null,
        created_at: now,
        expires_at: now + settings.ttlSeconds,
      })
      .onConflict((oc) => oc.doNothing())
      .returningAll()
      .executeTakeFirst();
    if (row) return { deviceCode, userCode, row };
    if (attempt >= 5) throw new Error('could not draw a free user code');
  }
}

export type PollResult =
  | { kind: 'token'; accessToken: string; expiresIn: number }
  | { kind: 'authorization_pending'; interval: number }
  | { kind: 'slow_down'; interval: number; previousInterval: number }
  | { kind: 'access_denied' }
  | { kind: 'expired_token' }
  | { kind: 'invalid_grant'; reason: 'unknown' | 'used' | 'client_mismatch' };

/**
 * One poll of the token endpoint. The grant's row is locked for the poll, so the poll-interval bookkeeping
 * and the one-time token issue are decided one poll at a time, across every process.
 */
export async function pollDeviceSignIn(db: Kysely<Database>, clock: Clock, deviceCode: string, clientId: string | null): Promise<PollResult> {
  return inTransaction(db, async (trx): Promise<PollResult> => {
    const grant = await trx.selectFrom('device_grants').selectAll().where('device_code_digest', '=', digest(deviceCode)).forUpdate().executeTakeFirst();
    if (!grant) return { kind: 'invalid_grant', reason: 'unknown' };
    if (clientId !== null && grant.client_id !== null && clientId !== grant.client_id) return { kind: 'invalid_grant', reason: 'client_mismatch' };
    if (grant.status === 'issued') return { kind: 'invalid_grant', reason: 'used' };
    const now = clock.now();
    if (grant.expires_at <= now) return { kind: 'expired_token' };
    if (grant.status === 'denied') return { kind: 'access_denied' };
    if (grant.status === 'approved' && grant.user_id !== null) {
      const { row, secret } = await createToken(trx, clock, {
        userId: grant.user_id,
        kind: 'session',
        name: grant.client_id ?? 'device-flow',
        expiresAt: null,
      });
      await trx.updateTable('device_grants').set({ status: 'issued', token_id: row.id, last_polled_at: now }).where('id', '=', grant.id).execute();
      return { kind: 'token', accessToken: secret, expiresIn: SESSION_LIFETIME_SECONDS };
    }
    // Pending: a poll sooner than the interval after the previous one slows the device down for good.
    const tooSoon = grant.last_polled_at !== null && now - grant.last_polled_at < grant.interval_seconds;
    const interval = tooSoon ? grant.interval_seconds + SLOW_DOWN_STEP_SECONDS : grant.interval_seconds;
    await trx.updateTable('device_grants').set({ last_polled_at: now, interval_seconds: interval }).where('id', '=', grant.id).execute();
    return tooSoon ? { kind: 'slow_down', interval, previousInterval: grant.interval_seconds } : { kind: 'authorization_pending', interval };
  });
}

export type DecisionResult = { kind: 'decided'; row: Row<'device_grants'> } | { kind: 'not_found' };

/**
 * Where entered codes are counted: decisions (approve, deny) in `device_code_attempts`, look-ups in
 * `device_code_lookups`. Apart, so that links to unknown codes someone sends the user (the /device page looks a
 * link's code up at once) spend look-ups only, never the decisions that approve the user's own code.
 */
type AttemptCounter = 'device_code_attempts' | 'device_code_lookups';

/**
 * Counts one attempt of the user against the window (fixed, APPROVAL_WINDOW_SECONDS long) before the code is
 * looked up, in one statement, so concurrent guesses cannot slip past the limit; attempts that name a real
 * code are given back afterwards. Returns the attempts in the window, this one included, and when it ends.
 */
async function countAttempt(db: Kysely<Database>, counter: AttemptCounter, userId: string, now: number): Promise<{ attempts: number; windowEndsAt: number }> {
  const windowStart = now - APPROVAL_WINDOW_SECONDS;
  // The two tables have the same columns.
  const insert = (counter === 'device_code_lookups' ? db.insertInto('device_code_lookups') : db.insertInto('device_code_attempts')) as InsertQueryBuilder<
    Database,
    'device_code_attempts',
    InsertResult
  >;
  const started = sql.ref(`${counter}.window_started_at`);
  const row = await insert
    .values({ user_id: userId, window_started_at: now, attempts: 1 })
    .onConflict((oc) =>
      oc.column('user_id').doUpdateSet({
        attempts: sql<number>`CASE WHEN ${started} <= ${windowStart} THEN 1 ELSE ${sql.ref(`${counter}.attempts`)} + 1 END`,
        window_started_at: sql<number>`CASE WHEN ${started} <= ${windowStart} THEN ${now}::bigint ELSE ${started} END`,
      }),
    )
    .returning(['attempts', 'window_started_at'])
    .executeTakeFirstOrThrow();
  return { attempts: row.attempts, windowEndsAt: row.window_started_at + APPROVAL_WINDOW_SECONDS };
}

async function refundAttempt(db: Kysely<Database>, counter: AttemptCounter, userId: string): Promise<void> {
  const update = (counter === 'device_code_lookups' ? db.updateTable('device_code_lookups') : db.updateTable('device_code_attempts')) as UpdateQueryBuilder<
    Database,
    'device_code_attempts',
    'device_code_attempts',
    UpdateResult
  >;
  await update.set({ attempts: sql<number>`greatest(attempts - 1, 0)` }).where('user_id', '=', userId).execute();
}

/**
 * The signed-in user's approval or denial of the grant showing `userCode` (as typed), once countAttempt has
 * counted it.
 */
async function decideDeviceSignIn(db: Kysely<Database>, clock: Clock, userId: string, userCode: string, action: 'approve' | 'deny'): Promise<DecisionResult> {
  const now = clock.now();
  const code = normaliseUserCode(userCode);
  const result = code === undefined ? ({ kind: 'not_found' } as const) : await decide(db, now, userId, code, action);
  if (result.kind !== 'not_found') await refundAttempt(db, 'device_code_attempts', userId);
  return result;
}

async function decide(db: Kysely<Database>, now: number, userId: string, code: string, action: 'approve' | 'deny'): Promise<DecisionResult> {
  return inTransaction(db, async (trx): Promise<DecisionResult> => {
    const grant = await trx.selectFrom('device_grants').selectAll().where('user_code', '=', code).forUpdate().executeTakeFirst();
    // A code already decided is answered (and counted) as an unknown one: nobody learns which codes exist.
    if (!grant || grant.expires_at <= now || grant.status !== 'pending') return { kind: 'not_found' };
    const row = await trx
      .updateTable('device_grants')
      .set({ status: action === 'approve' ? 'approved' : 'denied', user_id: userId, decided_at: now })
      .where('id', '=', grant.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    return { kind: 'decided', row };
  });
}

// The answers of the four operations: contract records, or the errors the contract names for each outcome.

/** A new sign-in request: the codes, and where the user approves it (`verificationUri`, the /device page). */
export async function requestDeviceCode(
  db: Kysely<Database>,
  clock: Clock,
  settings: DeviceSettings,
  request: Schema<'DeviceCodeRequest'> | undefined,
  verificationUri: string,
): Promise<Schema<'DeviceAuthorization'>> {
  const { deviceCode, userCode, row } = await startDeviceSignIn(db, clock, settings, { clientId: request?.client_id ?? null, scope: request?.scope ?? null });
  const shown = formatUserCode(userCode);
  return {
    device_code: deviceCode,
    user_code: shown,
    verification_uri: verificationUri,
    verification_uri_complete: `${verificationUri}?user_code=${shown}`,
    expires_in: row.expires_at - row.created_at,
    interval: row.interval_seconds,
  };
}

/** The token endpoint: a session token once the user approved, else the OAuth 2.0 error of RFC 8628 §3.5. */
export async function pollDeviceToken(db: Kysely<Database>, clock: Clock, request: Schema<'DeviceTokenRequest'>): Promise<Schema<'DeviceToken'>> {
  if (request.grant_type !== DEVICE_GRANT_TYPE) {
    throw new OAuthError('unsupported_grant_type', `This endpoint accepts grant_type ${DEVICE_GRANT_TYPE} only.`);
  }
  const result = await pollDeviceSignIn(db, clock, request.device_code, request.client_id ?? null);
  switch (result.kind) {
    case 'token':
      return { access_token: result.accessToken, token_type: 'Bearer', expires_in: result.expiresIn };
    case 'authorization_pending':
      throw new OAuthError('authorization_pending', `The user has not approved or denied this request yet; poll again in ${result.interval} seconds.`);
    case 'slow_down':
      throw new OAuthError(
        'slow_down',
        `Polled sooner than ${result.previousInterval} seconds after the previous poll; wait ${result.interval} seconds between polls from now on.`,
      );
    case 'access_denied':
      throw new OAuthError('access_denied', 'The user denied this sign-in request.');
    case 'expired_token':
      throw new OAuthError('expired_token', 'The device code expired before a token was issued; request a new one.');
    case 'invalid_grant':
      throw new OAuthError(
        'invalid_grant',
        result.reason === 'client_mismatch'
          ? 'The device code was issued to another client_id.'
          : 'The device code is unknown or was already exchanged for a token.',
      );
  }
}

/**
 * Admits an approval or denial: approving issues a session token, which holds every scope and acts in every
 * workspace, so it takes a caller that holds every scope and whose token is not restricted to workspaces (403
 * otherwise); and the attempt is counted (admitCodeAttempt).
 */
export async function admitDeviceDecision(
  db: Kysely<Database>,
  clock: Clock,
  caller: WorkspaceCaller & { scopes: Scopes },
  approval: Schema<'DeviceApproval'>,
): Promise<void> {
  if (approval.action === 'approve') {
    const lacking = ALL_SCOPES.find((scope) => !holds(caller.scopes, scope));
    if (lacking !== undefined) {
      throw new ApiError(
        'forbidden',
        `Approving issues a session token, which holds every scope, so approveDeviceCode needs a token of every scope besides tokens:write; this one lacks ${lacking}.`,
        {
          param: 'Authorization',
          suggestion: 'Approve from the /device page signed in with a session, or with a personal access token made with scopes ["*"].',
          details: { required_scope: lacking },
        },
      );
    }
    requireUnrestricted(caller, 'approveDeviceCode', 'would issue a session token, which acts in every workspace');
  }
  await admitCodeAttempt(db, clock, caller.userId, 'device_code_attempts');
}

/** Admits a look-up of a code (getDeviceSignInRequest), counted apart from decisions (AttemptCounter). */
export const admitCodeLookup = (db: Kysely<Database>, clock: Clock, userId: string) => admitCodeAttempt(db, clock, userId, 'device_code_lookups');

/**
 * Counts one entered code against the user's limit of unknown codes (429 beyond it), of decisions or of look-ups.
 * The count must stand whatever becomes of the request, so it is not made in the request's transaction (the
 * operation's `before` stage): a refused guess rolled back with its 404 would count nothing.
 */
async function admitCodeAttempt(db: Kysely<Database>, clock: Clock, userId: string, counter: AttemptCounter): Promise<void> {
  const now = clock.now();
  const { attempts, windowEndsAt } = await countAttempt(db, counter, userId, now);
  if (attempts > APPROVAL_ATTEMPT_LIMIT) {
    const lookups = counter === 'device_code_lookups';
    throw new ApiError(
      'rate_limited',
      `Too many unknown device codes ${lookups ? 'looked up' : 'entered'}; you may ${lookups ? 'look up' : 'enter'} ${APPROVAL_ATTEMPT_LIMIT} in ${APPROVAL_WINDOW_SECONDS / 60} minutes.`,
      {
        param: 'user_code',
        suggestion: lookups
          ? 'Approve the code your terminal shows without looking it up (POST /v1/auth/device/approve; the /device page offers it), or wait for the number of seconds in Retry-After.'
          : 'Wait for the number of seconds in Retry-After, then check the code your terminal shows.',
        details: { limit: APPROVAL_ATTEMPT_LIMIT, window_seconds: APPROVAL_WINDOW_SECONDS },
        headers: { 'Retry-After': String(Math.max(1, windowEndsAt - now)) },
      },
    );
  }
}

const codeNotFound = (shown: string) =>
  new ApiError('not_found', `Device code ${shown} not found.`, {
    param: 'user_code',
    suggestion: 'Check the code your terminal shows; if it expired, start the sign-in again there.',
  });

/**
 * The request showing `userCode` (as typed) while it waits for a decision, admitted by admitCodeLookup: who asked
 * and when, for the /device page to show before the user confirms. Unknown, expired and decided codes are 404, as
 * a decision answers them; a code found gives its attempt back.
 */
export async function getDeviceSignInRequest(db: Kysely<Database>, clock: Clock, userId: string, userCode: string): Promise<Schema<'DeviceSignInRequest'>> {
  const code = normaliseUserCode(userCode);
  const grant =
    code === undefined
      ? undefined
      : await db
          .selectFrom('device_grants')
          .select(['user_code', 'client_id', 'created_at', 'expires_at'])
          .where('user_code', '=', code)
          .where('status', '=', 'pending')
          .where('expires_at', '>', clock.now())
          .executeTakeFirst();
  if (!grant) throw codeNotFound(code === undefined ? userCode : formatUserCode(code));
  await refundAttempt(db, 'device_code_lookups', userId);
  return { user_code: formatUserCode(grant.user_code), client_id: grant.client_id, requested_at: grant.created_at, expires_at: grant.expires_at };
}

/** The signed-in user approves or denies the request showing `userCode`, admitted by admitDeviceDecision; 404 when no such request waits. */
export async function approveDeviceCode(
  db: Kysely<Database>,
  clock: Clock,
  caller: { userId: string },
  approval: Schema<'DeviceApproval'>,
): Promise<Schema<'DeviceApprovalResult'>> {
  const result = await decideDeviceSignIn(db, clock, caller.userId, approval.user_code, approval.action);
  const code = normaliseUserCode(approval.user_code);
  const shown = code === undefined ? approval.user_code : formatUserCode(code);
  switch (result.kind) {
    case 'decided':
      return {
        user_code: formatUserCode(result.row.user_code),
        status: result.row.status === 'denied' ? 'denied' : 'approved',
        decided_at: result.row.decided_at ?? clock.now(),
        expires_at: result.row.expires_at,
      };
    case 'not_found':
      throw codeNotFound(shown);
  }
}
