// Logs carry no credential: the access log masks path segments that look like a PAT, session token, JWT or
// webhook secret, an X-Request-Id that is not a short safe token is replaced by a generated one (which the
// response names), and every other line's fields pass the same check. Everything this server logs is scanned.
import { Writable } from 'node:stream';
import pino from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import { loggerOptions, redactLogFields } from '../src/services/redaction.ts';
import { call, newUser, type TestUser, useTestServer } from './support.ts';

const lines: string[] = [];
const sink = new Writable({
  write(chunk, _encoding, done) {
    lines.push(String(chunk));
    done();
  },
});
// The service's own logger options (app.ts and main.ts use them), writing where the test reads.
const logger = pino(loggerOptions('info'), sink);
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
    }
    const long = await call(app.baseUrl, 'GET', '/v1/regions', { token: user.token, headers: { 'x-request-id': 'a'.repeat(65) } });
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
      err: { url: '[REDACTED]', path: '/v1/user/tokens/[REDACTED]' },
      token: '[REDACTED]',
      ids: ['ws_01jd', '[REDACTED]'],
      n: 3,
    });
  });
});
