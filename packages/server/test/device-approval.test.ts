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
