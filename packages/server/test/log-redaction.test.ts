// Logs carry no credential: the access log masks path segments that look like a PAT, session token, JWT or
// webhook secret, an X-Request-Id that is not a short safe token is replaced by a generated one (which the
// response names), and every other line's fields, bindings and message text pass the same check. Everything the
// test servers log is scanned at the end of each test file (support/server-logs.ts); the scan is tested here.
import pino from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import { redactLogFields } from '../src/services/redaction.ts';
import { logCapture, takeLoggedSecrets } from './support/server-logs.ts';
import { call, newUser, serverLogger, type TestUser, useTestServer } from './support.ts';

const lines: string[] = [];
// The service's own logger options (app.ts and main.ts use them), writing into the file's capture and where the
// test reads.
const logger = serverLogger((line) => lines.push(line));
const app = useTestServer({ parts: { logger } });
let user: TestUser;

beforeAll(async () => {
  user = await newUser(app.db, app.clock);
});

const PAT = `svc_pat_${'A1b2C3d4E5'.repeat(3)}abcdefgh`;
const SESSION = 'Zq8Lm3Np5Rt7Vx9Bc2Df4Gh6Jk1Mn0Pq';
const JWT = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c3JfMSJ9.c2lnbmF0dXJl';
const WHSEC = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw8mQ0Y1cjZ3c=';

describe('the logs', () => {
  it('mask credential-looking path segments, and replace a request id that is one (the response says which id was used)', async () => {
    for (const secret of [PAT, SESSION, JWT, WHSEC]) {
      const reply = await call(app.baseUrl, 'DELETE', `/v1/user/tokens/${encodeURIComponent(secret)}`, {
        token: user.token,
        headers: { 'x-request-id': secret },
      });
      expect(reply.status).toBe(404);
      expect(reply.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
      // Nor does the error body repeat it (its message names the id it did not find).
      expect(JSON.stringify(reply.body)).not.toContain(secret);
      expect(reply.body.error.message).toContain('[REDACTED]');
    }
    // A malformed body is not quoted back: its values may be secrets that match no pattern.
    const malformed = await call(app.baseUrl, 'POST', '/v1/registry/credentials', {
      token: user.token,
      body: '{"name":"r","registry_url":"ghcr.io","username":"u","password":s3cretPW}',
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe('bad_request');
    expect(JSON.stringify(malformed.body)).not.toContain('s3cretPW');
    // The contract's bounds: 1 to 128 characters.
    const longest = await call(app.baseUrl, 'GET', '/v1/regions', { token: user.token, headers: { 'x-request-id': 'a.'.repeat(64) } });
    expect(longest.headers.get('x-request-id')).toBe('a.'.repeat(64));
    const long = await call(app.baseUrl, 'GET', '/v1/regions', { token: user.token, headers: { 'x-request-id': 'a'.repeat(129) } });
    expect(long.headers.get('x-request-id')).toMatch(/^req_/);
    const safe = await call(app.baseUrl, 'GET', '/v1/regions', { token: user.token, headers: { 'x-request-id': 'trace-42.abc' } });
    expect(safe.headers.get('x-request-id')).toBe('trace-42.abc');
    const logged = lines.join('');
    expect(logged).toContain('/v1/user/tokens/[REDACTED]');
    for (const secret of [PAT, SESSION, JWT, WHSEC, encodeURIComponent(WHSEC), user.token]) expect(logged).not.toContain(secret);
  });

  it('mask such values in any line’s fields, however nested', () => {
    expect(
      redactLogFields({ err: { url: `https://x.example/hook/${WHSEC}`, path: `/v1/user/tokens/${SESSION}` }, token: PAT, ids: ['ws_01jd', JWT], n: 3 }),
    ).toEqual({
      err: { url: 'https://x.example/hook/[REDACTED]', path: '/v1/user/tokens/[REDACTED]' },
      token: '[REDACTED]',
      ids: ['ws_01jd', '[REDACTED]'],
      n: 3,
    });
  });

  it('mask them in a line’s message text, its interpolated values, and an error’s message and stack', () => {
    const start = lines.length;
    logger.warn(`delivery to https://hooks.example/${WHSEC} failed with token ${PAT}`);
    logger.info('signed in with %s, then %o', SESSION, { token: JWT });
    logger.error({ err: new Error(`the provider refused ${PAT}`) }, 'a step failed');
    const logged = lines.slice(start).map((line) => JSON.parse(line));
    expect(logged.map((line) => line.msg)).toEqual([
      'delivery to https://hooks.example/[REDACTED] failed with token [REDACTED]',
      'signed in with [REDACTED], then {"token":"[REDACTED]"}',
      'a step failed',
    ]);
    expect(logged[2].err).toMatchObject({ type: 'Error', message: 'the provider refused [REDACTED]' });
    expect(logged[2].err.stack).toContain('the provider refused [REDACTED]');
    const text = lines.slice(start).join('');
    for (const secret of [PAT, SESSION, JWT, WHSEC]) expect(text).not.toContain(secret);
    // Ordinary text stays as it is: ids, hex request ids and digests, host names, versions.
    logger.info('cluster cl_01jd2x8m5r7t9v1w3y5a7c9e1g at api.platform.example, contract 1.2.0, req_0123456789abcdef0123456789abcdef');
    expect(JSON.parse(lines.at(-1)!).msg).toBe(
      'cluster cl_01jd2x8m5r7t9v1w3y5a7c9e1g at api.platform.example, contract 1.2.0, req_0123456789abcdef0123456789abcdef',
    );
  });
});

describe('the scan of what the test servers log', () => {
  it('finds a credential that reaches the capture unmasked, each kind, and keeps nothing else', () => {
    expect(takeLoggedSecrets()).toEqual([]);
    // A logger without the service's options, as a server made without them would log.
    const unmasked = pino({ level: 'info' }, logCapture);
    unmasked.info('an ordinary line');
    for (const secret of [PAT, SESSION, JWT, WHSEC]) unmasked.info({ value: secret }, 'leaked');
    // What the service's logger leaves unmasked: a child's bindings (pino formats only the root's), meant for ids.
    logger.child({ workflow: SESSION }).info('a child logger given a token');
    const found = takeLoggedSecrets();
    expect(found).toHaveLength(5);
    for (const [index, secret] of [PAT, SESSION, JWT, WHSEC, SESSION].entries()) expect(found[index]).toContain(secret);
    // Taken: the file's own scan at its end finds nothing more.
    expect(takeLoggedSecrets()).toEqual([]);
  });
});
