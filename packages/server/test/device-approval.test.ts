// Who may decide a device sign-in: both decisions need tokens:write, the scope the contract names; approving
// issues a session token (every scope, every workspace), so it also needs a token of every scope, and says so.
import { beforeAll, describe, expect, it } from 'vitest';
import { call, newUser, type TestUser, useTestServer } from './support.ts';

const app = useTestServer();
let user: TestUser;

beforeAll(async () => {
  user = await newUser(app.db, app.clock);
});

async function newCode(): Promise<string> {
  const reply = await call(app.baseUrl, 'POST', '/v1/auth/device/code', { body: { client_id: 'platform-cli' } });
  expect(reply.status).toBe(200);
  return reply.body.user_code;
}

const decide = (token: string, userCode: string, action: 'approve' | 'deny') =>
  call(app.baseUrl, 'POST', '/v1/auth/device/approve', { token, body: { user_code: userCode, action } });

describe('approveDeviceCode and its scope', () => {
  it('a tokens:write PAT may deny; approving is refused with the reason, naming a scope it lacks', async () => {
    const pat = await call(app.baseUrl, 'POST', '/v1/user/tokens', { token: user.token, body: { name: 'tokens only', scopes: ['tokens:write'] } });
    expect(pat.status).toBe(201);
    expect((await decide(pat.body.token, await newCode(), 'deny')).status).toBe(200);
    const refused = await decide(pat.body.token, await newCode(), 'approve');
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: 'forbidden', param: 'Authorization', details: { required_scope: 'workspaces:read' } });
    expect(refused.body.error.message).toContain('Approving issues a session token, which holds every scope');
    expect(refused.body.error.suggestion).toContain('scopes ["*"]');
  });

  it('a PAT without tokens:write is refused by the contract’s scope for either decision', async () => {
    const pat = await call(app.baseUrl, 'POST', '/v1/user/tokens', { token: user.token, body: { name: 'clusters', scopes: ['clusters:write'] } });
    const refused = await decide(pat.body.token, await newCode(), 'deny');
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ details: { required_scope: 'tokens:write' } });
  });

  it('a PAT of every scope approves', async () => {
    const pat = await call(app.baseUrl, 'POST', '/v1/user/tokens', { token: user.token, body: { name: 'all', scopes: ['*'] } });
    expect((await decide(pat.body.token, await newCode(), 'approve')).status).toBe(200);
  });
});

// The /device page shows the waiting request (who asked and when) before the user confirms and approves it.
describe('getDeviceSignInRequest', () => {
  const lookUp = (token: string, userCode: string) => call(app.baseUrl, 'GET', `/v1/auth/device/requests/${encodeURIComponent(userCode)}`, { token });

  it('shows a waiting request: its code, the client that asked and when; typed in any case, with or without the dash', async () => {
    const asked = app.clock.now();
    const code = await newCode();
    app.clock.advance(20);
    const reply = await lookUp(user.token, code.replace('-', '').toLowerCase());
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ user_code: code, client_id: 'platform-cli', requested_at: asked, expires_at: expect.any(Number) });
    expect(reply.body.expires_at).toBeGreaterThan(app.clock.now());
    // A device that gave no client_id is shown as such.
    const anonymous = await call(app.baseUrl, 'POST', '/v1/auth/device/code', {});
    expect((await lookUp(user.token, anonymous.body.user_code)).body.client_id).toBeNull();
    // A tokens:read PAT may look; reading decides nothing.
    const reader = await call(app.baseUrl, 'POST', '/v1/user/tokens', { token: user.token, body: { name: 'reader', scopes: ['tokens:read'] } });
    expect((await lookUp(reader.body.token, code)).status).toBe(200);
    const grant = await app.db
      .selectFrom('device_grants')
      .select(['status', 'user_id'])
      .where('user_code', '=', code.replace('-', ''))
      .executeTakeFirstOrThrow();
    expect(grant).toEqual({ status: 'pending', user_id: null });
  });

  it('an unknown, expired, approved or denied code is 404, as a decision answers it', async () => {
    const approved = await newCode();
    expect((await decide(user.token, approved, 'approve')).status).toBe(200);
    const denied = await newCode();
    expect((await decide(user.token, denied, 'deny')).status).toBe(200);
    const expired = await newCode();
    app.clock.advance(24 * 3600);
    for (const code of ['BCDF-GHJK', approved, denied, expired]) {
      const reply = await lookUp(user.token, code);
      expect(reply.status).toBe(404);
      expect(reply.body).toEqual({
        error: {
          code: 'not_found',
          message: `Device code ${code} not found.`,
          param: 'user_code',
          suggestion: 'Check the code your terminal shows; if it expired, start the sign-in again there.',
        },
      });
      expect(reply.body).toEqual((await decide(user.token, code, 'deny')).body);
    }
  });

  it('unknown codes looked up count against a limit of their own, apart from decisions: links to unknown codes never stop the user approving their own', async () => {
    const guesser = await newUser(app.db, app.clock);
    const code = await newCode();
    for (let i = 0; i < 12; i++) expect((await lookUp(guesser.token, code)).status).toBe(200);
    for (let i = 0; i < 10; i++) expect((await lookUp(guesser.token, `BCDF-GH${'JKLMNPQRST'[i]}K`)).status).toBe(404);
    const limited = await lookUp(guesser.token, 'BCDF-GHZK');
    expect(limited.status).toBe(429);
    expect(limited.body.error).toMatchObject({ code: 'rate_limited', param: 'user_code' });
    expect(limited.body.error.suggestion).toContain('without looking it up');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // Ten links to unknown codes spent the look-ups only: the user's own code is still decided.
    expect((await decide(guesser.token, code, 'deny')).status).toBe(200);
    // And guessing by decisions is limited as before: 10 unknown codes, then 429.
    for (let i = 0; i < 10; i++) expect((await decide(guesser.token, `BCDF-GJ${'JKLMNPQRST'[i]}K`, 'deny')).status).toBe(404);
    expect((await decide(guesser.token, 'BCDF-GJZK', 'deny')).status).toBe(429);
  });
});
