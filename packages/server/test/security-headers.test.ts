// Security headers on every answer: nosniff, no referrer, no framing, a CSP that forbids everything on JSON,
// HSTS only when configured, and no X-Powered-By. /docs (a page with inline scripts) carries no CSP of ours;
// /device carries its own, with hashes of its script and style.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { call, createTestDatabase, newUser, startTestServer, TestClock, type TestDatabase, type TestServer, type TestUser } from './support.ts';

const JSON_CSP = "default-src 'none'; frame-ancestors 'none'";
let database: TestDatabase;
let plain: TestServer;
let hsts: TestServer;
let user: TestUser;
const clock = new TestClock();

beforeAll(async () => {
  database = await createTestDatabase();
  plain = await startTestServer(database.db, clock);
  hsts = await startTestServer(database.db, clock, { HSTS_MAX_AGE: '31536000' });
  user = await newUser(database.db, clock);
});
afterAll(async () => {
  await plain?.close();
  await hsts?.close();
  await database?.drop();
});

function expectCommon(headers: Headers): void {
  expect(headers.get('x-content-type-options')).toBe('nosniff');
  expect(headers.get('referrer-policy')).toBe('no-referrer');
  expect(headers.get('x-frame-options')).toBe('DENY');
  expect(headers.get('x-powered-by')).toBeNull();
}

describe('JSON answers', () => {
  const cases: [string, string, string, () => { token?: string; body?: unknown }, number][] = [
    ['a success', 'GET', '/v1/workspaces', () => ({ token: user.token }), 200],
    ['a creation', 'POST', '/v1/workspaces', () => ({ token: user.token, body: { name: 'headers' } }), 201],
    ['a missing resource', 'GET', '/v1/clusters/cl_nope', () => ({ token: user.token }), 404],
    ['no token', 'GET', '/v1/workspaces', () => ({}), 401],
    ['malformed JSON', 'POST', '/v1/workspaces', () => ({ token: user.token, body: '{"name":' }), 400],
    ['an unknown path', 'GET', '/nope', () => ({}), 404],
    ['an unknown method', 'PUT', '/v1/workspaces', () => ({ token: user.token }), 405],
    ['the OpenAPI document', 'GET', '/openapi.json', () => ({}), 200],
  ];
  it.each(cases)('%s carries the security headers and the strict CSP', async (_, method, path, options, status) => {
    const reply = await call(plain.baseUrl, method, path, options());
    expect(reply.status).toBe(status);
    expectCommon(reply.headers);
    expect(reply.headers.get('content-security-policy')).toBe(JSON_CSP);
    expect(reply.headers.get('strict-transport-security')).toBeNull();
  });

  it("the device flow's token endpoint, in its OAuth error body, too", async () => {
    const reply = await call(plain.baseUrl, 'POST', '/v1/auth/device/token', {
      body: 'grant_type=nope',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(reply.status).toBe(400);
    expectCommon(reply.headers);
    expect(reply.headers.get('content-security-policy')).toBe(JSON_CSP);
  });
});

describe('pages', () => {
  it('/docs has no CSP of ours (its page runs inline scripts) but the other headers', async () => {
    const reply = await call(plain.baseUrl, 'GET', '/docs');
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toMatch(/^text\/html/);
    expectCommon(reply.headers);
    expect(reply.headers.get('content-security-policy')).toBeNull();
  });

  it('/device sends its own CSP, which allows exactly its script by hash', async () => {
    const reply = await call(plain.baseUrl, 'GET', '/device');
    expect(reply.status).toBe(200);
    expectCommon(reply.headers);
    const csp = reply.headers.get('content-security-policy')!;
    expect(csp).toMatch(/^default-src 'none'; script-src 'sha256-[A-Za-z0-9+/=]+'; /);
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
  });
});

describe('Strict-Transport-Security', () => {
  it('is off by default and sent on every answer when HSTS_MAX_AGE is set', async () => {
    expect(loadConfig({}).hstsMaxAge).toBe(0);
    expect(() => loadConfig({ HSTS_MAX_AGE: 'year' })).toThrow(/HSTS_MAX_AGE/);
    for (const [path, status] of [
      ['/v1/workspaces', 200],
      ['/v1/nope', 404],
      ['/device', 200],
    ] as const) {
      const reply = await call(hsts.baseUrl, 'GET', path, { token: user.token });
      expect(reply.status).toBe(status);
      expect(reply.headers.get('strict-transport-security')).toBe('max-age=31536000');
      expectCommon(reply.headers);
    }
  });
});
