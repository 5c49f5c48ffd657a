// Device sign-in, the OAuth 2.0 Device Authorization Grant (RFC 8628): the command-line client asks for a device code, the
// user approves it in a browser (GET /device calls approveDeviceCode), and the client's poll receives a
// session token. The token endpoint answers errors in the OAuth 2.0 body (see http/oauth.ts).
import { ApiError, conflict } from '../http/errors.ts';
import { OAuthError } from '../http/oauth.ts';
import {
  APPROVAL_ATTEMPT_LIMIT,
  APPROVAL_WINDOW_SECONDS,
  startDeviceSignIn,
  DEVICE_GRANT_TYPE,
  decideDeviceSignIn,
  formatUserCode,
  normaliseUserCode,
  pollDeviceSignIn,
} from '../resources/device-sign-in.ts';
import type { Config } from '../config.ts';
import type { Handler } from './types.ts';

/** PUBLIC_URL, else the scheme and Host the request came to (a Host that is no host name gets the listen address). */
function publicBase(config: Config, origin: string): string {
  if (config.publicUrl) return config.publicUrl;
  try {
    return new URL(origin).origin;
  } catch {
    return `http://${config.host}:${config.port}`;
  }
}

export const requestDeviceCode: Handler<'requestDeviceCode'> = async ({ body, origin }, { db, clock, config }) => {
  const { deviceCode, userCode, row } = await startDeviceSignIn(
    db,
    clock,
    { ttlSeconds: config.deviceCodeTtlSeconds, intervalSeconds: config.devicePollIntervalSeconds },
    { clientId: body?.client_id ?? null, scope: body?.scope ?? null },
  );
  const verificationUri = `${publicBase(config, origin)}/device`;
  const shown = formatUserCode(userCode);
  return {
    status: 200,
    body: {
      device_code: deviceCode,
      user_code: shown,
      verification_uri: verificationUri,
      verification_uri_complete: `${verificationUri}?user_code=${shown}`,
      expires_in: row.expires_at - row.created_at,
      interval: row.interval_seconds,
    },
  };
};

export const pollDeviceToken: Handler<'pollDeviceToken'> = async ({ body }, { db, clock }) => {
  if (body.grant_type !== DEVICE_GRANT_TYPE) {
    throw new OAuthError('unsupported_grant_type', `This endpoint accepts grant_type ${DEVICE_GRANT_TYPE} only.`);
  }
  const result = await pollDeviceSignIn(db, clock, body.device_code, body.client_id ?? null);
  switch (result.kind) {
    case 'token':
      return { status: 200, body: { access_token: result.accessToken, token_type: 'Bearer', expires_in: result.expiresIn } };
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
};

export const approveDeviceCode: Handler<'approveDeviceCode'> = async ({ body, caller }, { db, clock }) => {
  const result = await decideDeviceSignIn(db, clock, caller.userId, body.user_code, body.action);
  const shown = (() => {
    const code = normaliseUserCode(body.user_code);
    return code === undefined ? body.user_code : formatUserCode(code);
  })();
  switch (result.kind) {
    case 'decided':
      return {
        status: 200,
        body: {
          user_code: formatUserCode(result.row.user_code),
          status: result.row.status === 'denied' ? 'denied' : 'approved',
          decided_at: result.row.decided_at ?? clock.now(),
          expires_at: result.row.expires_at,
        },
      };
    case 'not_found':
      throw new ApiError(404, 'not_found', `Device code ${shown} not found.`, {
        param: 'user_code',
        suggestion: 'Check the code your terminal shows; if it expired, start the sign-in again there.',
      });
    case 'already_decided':
      throw conflict(
        `Device code ${shown} was already ${result.status}.`,
        'Nothing to do; to sign in again, start a new sign-in in your terminal.',
        { status: result.status },
        'user_code',
      );
    case 'rate_limited':
      throw new ApiError(429, 'rate_limited', `Too many unknown device codes entered; you may enter ${APPROVAL_ATTEMPT_LIMIT} in ${APPROVAL_WINDOW_SECONDS / 60} minutes.`, {
        param: 'user_code',
        suggestion: 'Wait for the number of seconds in Retry-After, then check the code your terminal shows.',
        details: { limit: APPROVAL_ATTEMPT_LIMIT, window_seconds: APPROVAL_WINDOW_SECONDS },
        headers: { 'Retry-After': String(result.retryAfter) },
      });
  }
};
