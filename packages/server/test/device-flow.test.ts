// The OAuth 2.0 Device Authorization Grant (RFC 8628) end to end over HTTP: device code, pending polls,
// slow_down growing the interval, approval and the one-time token (also when two polls race), denial, expiry
// (on the test clock), user-code matching, the approval's brute-force limit, the issued session token at work
// and revoked by logout, and the OAuth error body of the token endpoint.
import { beforeAll, describe, expect, it } from 'vitest';
import { digest } from '../src/resources/tokens.ts';
import { call, newUser, type Reply, startTestServer, type TestUser, useTestServer } from './support.ts';

const GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

let alice: TestUser;

const app = useTestServer();
const { clock } = app;

beforeAll(async () => {
  alice = await newUser(app.db, clock, 'free');
});

interface DeviceAuthorization {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

async function start(body: unknown = { client_id: 'platform-cli' }): Promise<DeviceAuthorization> {
  const reply = await call(app.baseUrl, 'POST', '/v1/auth/device/code', { body });
  expect(reply.status).toBe(200);
  return reply.body as DeviceAuthorization;
}

/** A poll as standard OAuth clients send it: form-encoded. */
async function poll(deviceCode: string, extra: Record<string, string> = {}): Promise<Reply> {
  const form = new URLSearchParams({ grant_type: GRANT, device_code: deviceCode, ...extra });
  return call(app.baseUrl, 'POST', '/v1/auth/device/token', {
    body: form.toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
}

const approve = (userCode: string, action: 'approve' | 'deny' = 'approve', token = alice.token) =>
  call(app.baseUrl, 'POST', '/v1/auth/device/approve', { token, body: { user_code: userCode, action } });

function expectOAuthError(reply: Reply, error: string): void {
  expect(reply.status, JSON.stringify(reply.body)).toBe(400);
  expect(reply.body).toEqual({ error, error_description: expect.any(String) });
  expect(reply.headers.get('cache-control')).toBe('no-store');
}

describe('requestDeviceCode', () => {
  it('answers a device code, a user code to show, the verification URIs, the lifetime and the interval', async () => {
    const grant = await start();
    expect(grant.device_code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(grant.user_code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(grant.verification_uri).toBe(`${app.baseUrl}/device`);
    expect(grant.verification_uri_complete).toBe(`${app.baseUrl}/device?user_code=${grant.user_code}`);
    expect(grant.expires_in).toBe(600);
    expect(grant.interval).toBe(5);
  });

  it('needs no body, takes a form-encoded one, and keeps only digests of device codes', async () => {
    const bare = await call(app.baseUrl, 'POST', '/v1/auth/device/code');
    expect(bare.status).toBe(200);
    const form = await call(app.baseUrl, 'POST', '/v1/auth/device/code', {
      body: 'client_id=platform-cli&scope=platform',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.status).toBe(200);
    const row = await app.db.selectFrom('device_grants').selectAll().where('device_code_digest', '=', digest(form.body.device_code)).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ client_id: 'platform-cli', scope: 'platform', status: 'pending', user_code: form.body.user_code.replace('-', '') });
    const plaintext = await app.db.selectFrom('device_grants').select('id').where('user_code', '=', form.body.device_code).execute();
    expect(plaintext).toEqual([]);
  });

  it('refuses unknown fields and other content types with the shared error body', async () => {
    const unknown = await call(app.baseUrl, 'POST', '/v1/auth/device/code', { body: { client: 'x' } });
    expect(unknown.status).toBe(422);
    expect(unknown.body).toMatchObject({ error: { code: 'validation_error', param: 'client' } });
    const text = await call(app.baseUrl, 'POST', '/v1/auth/device/code', { body: 'client_id=x', headers: { 'content-type': 'text/plain' } });
    expect(text.status).toBe(400);
    expect(text.body).toMatchObject({ error: { code: 'bad_request' } });
  });

  it('takes the host from the request, and ignores a Host header that is no host name', async () => {
    const { request } = await import('node:http');
    const withHost = (host: string) =>
      new Promise<{ status: number; body: DeviceAuthorization }>((resolve, reject) => {
        const url = new URL('/v1/auth/device/code', app.baseUrl);
        const req = request(url, { method: 'POST', headers: { host } }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as DeviceAuthorization }));
        });
        req.on('error', reject);
        req.end();
      });
    const named = await withHost('api.platform.example:8443');
    expect(named.status).toBe(200);
    expect(named.body.verification_uri).toBe('http://api.platform.example:8443/device');
    const odd = await withHost('not a host');
    expect(odd.status).toBe(200);
    expect(odd.body.verification_uri).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/device$/);
  });

  it('uses PUBLIC_URL for the verification URI when it is set', async () => {
    const configured = await startTestServer(app.db, clock, { PUBLIC_URL: 'https://api.platform.example/' });
    try {
      const reply = await call(configured.baseUrl, 'POST', '/v1/auth/device/code');
      expect(reply.body.verification_uri).toBe('https://api.platform.example/device');
      expect(reply.body.verification_uri_complete).toBe(`https://api.platform.example/device?user_code=${reply.body.user_code}`);
    } finally {
      await configured.close();
    }
  });
});

describe('the flow', () => {
  it('pending, slow_down growing the interval by 5 s, approval, one token that works until logout', async () => {
    const grant = await start();
    expectOAuthError(await poll(grant.device_code), 'authorization_pending');
    // Polled again at once: slow down, and the interval is now 10 s.
    const fast = await poll(grant.device_code);
    expectOAuthError(fast, 'slow_down');
    expect(fast.body.error_description).toContain('10 seconds');
    const interval = async () =>
      (
        await app.db
          .selectFrom('device_grants')
          .select('interval_seconds')
          .where('device_code_digest', '=', digest(grant.device_code))
          .executeTakeFirstOrThrow()
      ).interval_seconds;
    expect(await interval()).toBe(10);
    // 5 s (the old interval) is not enough any more: slow down again, 15 s.
    clock.advance(5);
    expectOAuthError(await poll(grant.device_code), 'slow_down');
    expect(await interval()).toBe(15);
    clock.advance(15);
    expectOAuthError(await poll(grant.device_code), 'authorization_pending');
    expect(await interval()).toBe(15);

    const approved = await approve(grant.user_code);
    expect(approved.status).toBe(200);
    expect(approved.body).toEqual({ user_code: grant.user_code, status: 'approved', decided_at: clock.now(), expires_at: expect.any(Number) });

    clock.advance(15);
    const issued = await poll(grant.device_code);
    expect(issued.status).toBe(200);
    expect(issued.body).toEqual({ access_token: expect.stringMatching(/^[A-Za-z0-9]{32}$/), token_type: 'Bearer', expires_in: 365 * 24 * 3600 });
    const token: string = issued.body.access_token;
    const row = await app.db.selectFrom('tokens').selectAll().where('digest', '=', digest(token)).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ kind: 'session', user_id: alice.userId, name: 'platform-cli' });

    // Exchanged once: the next poll gets invalid_grant.
    clock.advance(15);
    expectOAuthError(await poll(grant.device_code), 'invalid_grant');

    // The token works, as the user who approved.
    const workspaces = await call(app.baseUrl, 'GET', '/v1/workspaces', { token });
    expect(workspaces.status).toBe(200);
    expect(workspaces.body.data.map((w: { id: string }) => w.id)).toContain(alice.workspaceId);
    // Logout revokes it: the next request with it is 401.
    expect((await call(app.baseUrl, 'POST', '/v1/auth/logout', { token })).status).toBe(204);
    const after = await call(app.baseUrl, 'GET', '/v1/workspaces', { token });
    expect(after.status).toBe(401);
    expect(after.body).toMatchObject({ error: { code: 'unauthorized' } });
    expect(await app.db.selectFrom('tokens').select('id').where('id', '=', row.id).execute()).toEqual([]);
  });

  it('issues the token exactly once when polls race', async () => {
    const grant = await start();
    expect((await approve(grant.user_code)).status).toBe(200);
    const replies = await Promise.all(Array.from({ length: 8 }, () => poll(grant.device_code)));
    const issued = replies.filter((reply) => reply.status === 200);
    expect(issued).toHaveLength(1);
    for (const reply of replies.filter((r) => r.status !== 200)) {
      expect(reply.status).toBe(400);
      expect(['invalid_grant', 'expired_token']).toContain(reply.body.error);
    }
    const sessions = await app.db
      .selectFrom('tokens')
      .select('id')
      .where('user_id', '=', alice.userId)
      .where('kind', '=', 'session')
      .where('digest', '=', digest(issued[0]!.body.access_token))
      .execute();
    expect(sessions).toHaveLength(1);
    const row = await app.db
      .selectFrom('device_grants')
      .select(['status', 'token_id'])
      .where('device_code_digest', '=', digest(grant.device_code))
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ status: 'issued', token_id: sessions[0]!.id });
  });

  it('a denied code polls access_denied, and cannot be approved afterwards (404, as an unknown code)', async () => {
    const grant = await start();
    const denied = await approve(grant.user_code, 'deny');
    expect(denied.status).toBe(200);
    expect(denied.body).toMatchObject({ user_code: grant.user_code, status: 'denied' });
    expectOAuthError(await poll(grant.device_code), 'access_denied');
    const again = await approve(grant.user_code, 'approve');
    expect(again.status).toBe(404);
    expect(again.body).toEqual({
      error: {
        code: 'not_found',
        message: `Device code ${grant.user_code} not found.`,
        param: 'user_code',
        suggestion: 'Check the code your terminal shows; if it expired, start the sign-in again there.',
      },
    });
    clock.advance(10);
    expectOAuthError(await poll(grant.device_code), 'access_denied');
  });

  it('an approved code cannot be decided again, and is answered exactly as an unknown code is', async () => {
    const grant = await start();
    expect((await approve(grant.user_code)).status).toBe(200);
    const again = await approve(grant.user_code, 'deny');
    const unknown = await approve('BCDF-GHJK', 'deny');
    expect(again.status).toBe(404);
    const shape = (reply: Reply) => ({ ...reply.body, error: { ...reply.body.error, message: reply.body.error.message.replace(/[A-Z]{4}-[A-Z]{4}/, 'CODE') } });
    expect(shape(again)).toEqual(shape(unknown));
  });

  it('expires: the poll gets expired_token, approval 404; an approved code that was not picked up in time issues nothing', async () => {
    const pending = await start();
    const approvedLate = await start();
    expect((await approve(approvedLate.user_code)).status).toBe(200);
    clock.advance(pending.expires_in);
    expectOAuthError(await poll(pending.device_code), 'expired_token');
    expectOAuthError(await poll(approvedLate.device_code), 'expired_token');
    const late = await approve(pending.user_code);
    expect(late.status).toBe(404);
    expect(late.body).toMatchObject({ error: { code: 'not_found', param: 'user_code' } });
  });

  it('matches the user code in any case, with or without the dash', async () => {
    for (const variant of [(c: string) => c.toLowerCase(), (c: string) => c.replace('-', ''), (c: string) => c.replace('-', '').toLowerCase()]) {
      const grant = await start();
      const reply = await approve(variant(grant.user_code));
      expect(reply.status, variant(grant.user_code)).toBe(200);
      expect(reply.body.user_code).toBe(grant.user_code);
      clock.advance(5);
      expect((await poll(grant.device_code)).status).toBe(200);
    }
  });

  it('accepts the token request as JSON too, and checks client_id when both name one', async () => {
    const grant = await start({ client_id: 'platform-cli' });
    expect((await approve(grant.user_code)).status).toBe(200);
    const other = await poll(grant.device_code, { client_id: 'someone-else' });
    expectOAuthError(other, 'invalid_grant');
    const json = await call(app.baseUrl, 'POST', '/v1/auth/device/token', {
      body: { grant_type: GRANT, device_code: grant.device_code, client_id: 'platform-cli' },
    });
    expect(json.status).toBe(200);
    expect(json.body.token_type).toBe('Bearer');
  });
});

describe('the token endpoint answers every error in the OAuth 2.0 body', () => {
  it('unknown device code → invalid_grant; another grant type → unsupported_grant_type', async () => {
    expectOAuthError(await poll('no-such-device-code'), 'invalid_grant');
    const grant = await start();
    const reply = await call(app.baseUrl, 'POST', '/v1/auth/device/token', {
      body: new URLSearchParams({ grant_type: 'authorization_code', device_code: grant.device_code }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expectOAuthError(reply, 'unsupported_grant_type');
  });

  it('a missing or repeated parameter, malformed JSON or another content type → invalid_request', async () => {
    const form = (body: string) =>
      call(app.baseUrl, 'POST', '/v1/auth/device/token', { body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    const missing = await form(`grant_type=${encodeURIComponent(GRANT)}`);
    expectOAuthError(missing, 'invalid_request');
    expect(missing.body.error_description).toContain('device_code');
    expectOAuthError(await form(`grant_type=${encodeURIComponent(GRANT)}&device_code=a&device_code=b`), 'invalid_request');
    expectOAuthError(
      await call(app.baseUrl, 'POST', '/v1/auth/device/token', { body: '{"grant_type":', headers: { 'content-type': 'application/json' } }),
      'invalid_request',
    );
    expectOAuthError(await call(app.baseUrl, 'POST', '/v1/auth/device/token', { body: 'x', headers: { 'content-type': 'text/plain' } }), 'invalid_request');
    expectOAuthError(await call(app.baseUrl, 'POST', '/v1/auth/device/token'), 'invalid_request');
  });

  it('ignores parameters it does not know, as RFC 6749 asks', async () => {
    const grant = await start();
    expectOAuthError(await poll(grant.device_code, { scope: 'platform', client_secret: 'unused' }), 'authorization_pending');
  });
});

describe('approveDeviceCode', () => {
  it('needs a token', async () => {
    const reply = await call(app.baseUrl, 'POST', '/v1/auth/device/approve', { body: { user_code: 'WDJB-MJHT', action: 'approve' } });
    expect(reply.status).toBe(401);
  });

  it('rejects a malformed code or action with 422', async () => {
    const reply = await call(app.baseUrl, 'POST', '/v1/auth/device/approve', { token: alice.token, body: { user_code: 'WDJB-MJHT', action: 'maybe' } });
    expect(reply.status).toBe(422);
    expect(reply.body).toMatchObject({ error: { code: 'validation_error', param: 'action' } });
  });

  it('limits unknown codes to 10 per user in 10 minutes (429 with Retry-After), without touching other users', async () => {
    const mallory = await newUser(app.db, clock, 'free');
    const guess = (token = mallory.token) => approve('BCDF-GHJK', 'approve', token);
    // A real code does not count against the limit.
    const real = await start();
    expect((await approve(real.user_code, 'approve', mallory.token)).status).toBe(200);
    for (let i = 0; i < 10; i++) {
      const reply = await guess();
      expect(reply.status, `guess ${i + 1}`).toBe(404);
    }
    clock.advance(60);
    const limited = await guess();
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ error: { code: 'rate_limited', param: 'user_code', details: { limit: 10, window_seconds: 600 } } });
    expect(Number(limited.headers.get('retry-after'))).toBe(600 - 60);
    // Even a real code is refused while limited: the limit is on entering codes.
    const another = await start();
    expect((await approve(another.user_code, 'approve', mallory.token)).status).toBe(429);
    // Other users are not affected.
    expect((await approve(another.user_code, 'approve', alice.token)).status).toBe(200);
    // The window ends: guessing may resume.
    clock.advance(540);
    expect((await guess()).status).toBe(404);
  });

  it('the limit holds when guesses race', async () => {
    const eve = await newUser(app.db, clock, 'free');
    const replies = await Promise.all(Array.from({ length: 20 }, () => approve('ZZZZ-ZZZZ', 'approve', eve.token)));
    const statuses = replies.map((reply) => reply.status);
    expect(statuses.filter((s) => s === 404)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(10);
  });
});
