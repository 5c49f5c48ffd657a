// The API's rate limit: per user (every token of theirs together), in PostgreSQL (so two app instances on one database share the count), with
// the IETF RateLimit headers (draft-ietf-httpapi-ratelimit-headers-09) on every answer and 429 rate_limited with
// Retry-After beyond the limit; per client address for the unauthenticated device-flow steps.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { createToken } from '../src/resources/tokens.ts';
import { call, createTestDatabase, newUser, startTestServer, TestClock, type TestDatabase, type TestServer } from './support.ts';

const LIMIT = 3;
let database: TestDatabase;
let first: TestServer;
let second: TestServer;
const clock = new TestClock(1_800_000_000 - (1_800_000_000 % 60) + 10);

beforeAll(async () => {
  database = await createTestDatabase();
  const env = { RATE_LIMIT_PER_MINUTE: String(LIMIT), RATE_LIMIT_DEVICE_PER_MINUTE: '2' };
  first = await startTestServer(database.db, clock, env);
  second = await startTestServer(database.db, clock, env);
});
afterAll(async () => {
  await first?.close();
  await second?.close();
  await database?.drop();
});

describe('configuration', () => {
  it('is off per user unless set (a write per request; see config.ts), 120 per address for the device flow; 0 disables', () => {
    expect(loadConfig({}).rateLimitPerMinute).toBe(0);
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: '600' }).rateLimitPerMinute).toBe(600);
    expect(loadConfig({}).rateLimitDevicePerMinute).toBe(120);
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: '0' }).rateLimitPerMinute).toBe(0);
    expect(() => loadConfig({ RATE_LIMIT_PER_MINUTE: '-1' })).toThrow(/RATE_LIMIT_PER_MINUTE/);
  });
});

describe('per user', () => {
  it('answers with RateLimit headers, refuses request N+1 with 429 and Retry-After, across two instances', async () => {
    const user = await newUser(database.db, clock);
    const seen: string[] = [];
    for (let i = 0; i < LIMIT; i++) {
      // Alternate the instances: the count lives in the database, not in a process.
      const reply = await call(i % 2 === 0 ? first.baseUrl : second.baseUrl, 'GET', '/v1/workspaces', { token: user.token });
      expect(reply.status).toBe(200);
      expect(reply.headers.get('ratelimit-policy')).toBe(`"default";q=${LIMIT};w=60`);
      seen.push(reply.headers.get('ratelimit')!);
    }
    expect(seen).toEqual([`"default";r=2;t=50`, `"default";r=1;t=50`, `"default";r=0;t=50`]);

    const refused = await call(second.baseUrl, 'GET', '/v1/workspaces', { token: user.token });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      error: {
        code: 'rate_limited',
        message: `Too many requests; you may make ${LIMIT} requests a minute.`,
        suggestion: 'Wait for the number of seconds in Retry-After, then retry.',
        details: { limit: LIMIT, window_seconds: 60 },
      },
    });
    expect(refused.headers.get('retry-after')).toBe('50');
    expect(refused.headers.get('ratelimit')).toBe('"default";r=0;t=50');
    expect(refused.headers.get('ratelimit-policy')).toBe(`"default";q=${LIMIT};w=60`);
    expect(refused.headers.get('x-request-id')).toBeTruthy();
    expect((await call(first.baseUrl, 'GET', '/v1/workspaces', { token: user.token })).status).toBe(429);

    // Another token of another user is unaffected.
    const other = await newUser(database.db, clock);
    const fine = await call(first.baseUrl, 'GET', '/v1/workspaces', { token: other.token });
    expect(fine.status).toBe(200);
    expect(fine.headers.get('ratelimit')).toBe('"default";r=2;t=50');

    // The next window starts over.
    clock.advance(50);
    const next = await call(first.baseUrl, 'GET', '/v1/workspaces', { token: user.token });
    expect(next.status).toBe(200);
    expect(next.headers.get('ratelimit')).toBe('"default";r=2;t=60');
    clock.advance(10);
  });

  it('counts errors of a limited operation too, and they carry the headers', async () => {
    const user = await newUser(database.db, clock);
    const missing = await call(first.baseUrl, 'GET', '/v1/clusters/cl_missing', { token: user.token });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('ratelimit')).toMatch(/^"default";r=2;t=\d+$/);
    expect(missing.headers.get('ratelimit-policy')).toBe(`"default";q=${LIMIT};w=60`);
  });

  it('does not count requests that fail authentication', async () => {
    const reply = await call(first.baseUrl, 'GET', '/v1/workspaces', { token: 'svc_pat_nope' });
    expect(reply.status).toBe(401);
    expect(reply.headers.get('ratelimit')).toBeNull();
  });
});

describe('the key', () => {
  it('is the user, whatever the token: PATs, session tokens and OAuth2 JWTs of a user share one count', async () => {
    const user = await newUser(database.db, clock);
    const another = await createToken(database.db, clock, { userId: user.userId, kind: 'pat', name: 'second', expiresAt: null });
    const session = await createToken(database.db, clock, { userId: user.userId, kind: 'session', name: 'cli', expiresAt: null });
    for (let i = 0; i < LIMIT; i++) expect((await call(first.baseUrl, 'GET', '/v1/regions', { token: user.token })).status).toBe(200);
    expect((await call(first.baseUrl, 'GET', '/v1/regions', { token: user.token })).status).toBe(429);
    // Minting another token walks around nothing.
    expect((await call(first.baseUrl, 'GET', '/v1/regions', { token: another.secret })).status).toBe(429);
    expect((await call(second.baseUrl, 'GET', '/v1/regions', { token: session.secret })).status).toBe(429);

    const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256' };
    const jwks: Server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] })));
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
    const env = {
      RATE_LIMIT_PER_MINUTE: String(LIMIT),
      JWT_JWKS_URL: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/`,
      JWT_ISSUER: 'https://id.example',
      JWT_AUDIENCE: 'platform-api',
    };
    const jwtServer = await startTestServer(database.db, clock, env);
    try {
      const other = await newUser(database.db, clock);
      const sign = (jti: string) =>
        new SignJWT({ sub: other.userId, jti, scope: 'clusters:read' })
          .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
          .setIssuer('https://id.example')
          .setAudience('platform-api')
          .setExpirationTime(clock.now() + 300)
          .sign(privateKey);
      for (let i = 0; i < LIMIT; i++) expect((await call(jwtServer.baseUrl, 'GET', '/v1/regions', { token: await sign(`t${i}`) })).status).toBe(200);
      const refused = await call(jwtServer.baseUrl, 'GET', '/v1/regions', { token: await sign('fresh') });
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe('rate_limited');
    } finally {
      await jwtServer.close();
      jwks.close();
    }
  });
});

describe('per address, for the device flow', () => {
  it('limits requestDeviceCode and pollDeviceToken by client address', async () => {
    const start = clock.now() - (clock.now() % 60);
    clock.advance(start + 60 - clock.now());
    const code = await call(first.baseUrl, 'POST', '/v1/auth/device/code', {
      body: 'client_id=cli',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(code.status).toBe(200);
    expect(code.headers.get('ratelimit-policy')).toBe('"device";q=2;w=60');
    expect(code.headers.get('ratelimit')).toBe('"device";r=1;t=60');
    const poll = await call(second.baseUrl, 'POST', '/v1/auth/device/token', {
      body: `grant_type=${encodeURIComponent('urn:ietf:params:oauth:grant-type:device_code')}&device_code=${code.body.device_code}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(poll.status).toBe(400);
    expect(poll.body.error).toBe('authorization_pending');
    expect(poll.headers.get('ratelimit')).toBe('"device";r=0;t=60');
    const refused = await call(first.baseUrl, 'POST', '/v1/auth/device/code', {
      body: 'client_id=cli',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('rate_limited');
    expect(refused.body.error.message).toBe('Too many requests; this address may make 2 requests a minute.');
    expect(refused.headers.get('retry-after')).toBe('60');
  });
});

describe('behind a proxy (TRUST_PROXY)', () => {
  it('counts each client named by X-Forwarded-For of a trusted peer apart, and ignores the header from anyone else', async () => {
    const start = clock.now() - (clock.now() % 60);
    clock.advance(start + 60 - clock.now());
    const requestCode = (baseUrl: string, forwardedFor: string) =>
      call(baseUrl, 'POST', '/v1/auth/device/code', {
        body: 'client_id=cli',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': forwardedFor },
      });
    const proxied = await startTestServer(database.db, clock, { RATE_LIMIT_DEVICE_PER_MINUTE: '2', TRUST_PROXY: '127.0.0.1/8,::1' });
    try {
      // Two clients behind the balancer: each has its own bucket (the left-most hop is what the client claims).
      for (const client of ['203.0.113.7', '198.51.100.9']) {
        expect((await requestCode(proxied.baseUrl, `10.9.9.9, ${client}`)).status).toBe(200);
        expect((await requestCode(proxied.baseUrl, client)).status).toBe(200);
        expect((await requestCode(proxied.baseUrl, `1.1.1.1, ${client}`)).status).toBe(429);
      }
    } finally {
      await proxied.close();
    }
    // Without TRUST_PROXY the header names nobody: every request counts for the peer itself.
    clock.advance(60);
    expect((await requestCode(first.baseUrl, '203.0.113.1')).status).toBe(200);
    expect((await requestCode(first.baseUrl, '203.0.113.2')).status).toBe(200);
    expect((await requestCode(first.baseUrl, '203.0.113.3')).status).toBe(429);
  });
});
