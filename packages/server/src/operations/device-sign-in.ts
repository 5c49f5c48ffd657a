// Device sign-in, the OAuth 2.0 Device Authorization Grant (RFC 8628): the command-line client asks for a device
// code, the user approves it in a browser (GET /device shows the request with getDeviceSignInRequest and calls
// approveDeviceCode once the user confirms the code), and the client's poll receives a
// session token. The token endpoint answers errors in the OAuth 2.0 body (OAuthError in errors.ts).
import type { Config } from '../config.ts';
import * as deviceSignIn from '../resources/device-sign-in.ts';
import { type Handler, staged } from './types.ts';

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
  const settings = { ttlSeconds: config.deviceCodeTtlSeconds, intervalSeconds: config.devicePollIntervalSeconds };
  return { status: 200, body: await deviceSignIn.requestDeviceCode(db, clock, settings, body, `${publicBase(config, origin)}/device`) };
};

export const pollDeviceToken: Handler<'pollDeviceToken'> = async ({ body }, { db, clock }) => ({
  status: 200,
  body: await deviceSignIn.pollDeviceToken(db, clock, body),
});

export const approveDeviceCode = staged<'approveDeviceCode'>({
  before: ({ body, caller }, { db, clock }) => deviceSignIn.admitDeviceDecision(db, clock, caller, body),
  change: async ({ body, caller }, { db, clock }) => ({ status: 200, body: await deviceSignIn.approveDeviceCode(db, clock, caller, body) }),
});

export const getDeviceSignInRequest = staged<'getDeviceSignInRequest'>({
  before: ({ caller }, { db, clock }) => deviceSignIn.admitCodeLookup(db, clock, caller.userId),
  change: async ({ params, caller }, { db, clock }) => ({
    status: 200,
    body: await deviceSignIn.getDeviceSignInRequest(db, clock, caller.userId, params.userCode),
  }),
});
