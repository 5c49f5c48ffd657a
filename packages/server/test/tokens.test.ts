// Tokens end to end: shown once, never listed, expiry, revocation, session lifetime and refresh, the
// once-a-minute last_used_at write, scopes, JWTs against a JWKS, and no plaintext token anywhere in the database.
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createToken, LAST_USED_RESOLUTION_SECONDS, SESSION_LIFETIME_SECONDS } from '../src/resources/tokens.ts';
import { ALL_SCOPES } from '../src/services/scopes.ts';
import { call, newUser, startTestServer, type TestServer, type TestUser, useTestServer } from './support.ts';

const app = useTestServer();
const { clock } = app;
let alice: TestUser;

beforeAll(async () => {
  alice = await newUser(app.db, clock, 'free');
});

describe('personal access tokens', () => {
  it('shows the secret once; the list never does; revocation makes it 401', async () => {
    const created = await call(app.baseUrl, 'POST', '/v1/user/tokens', { token: alice.token, body: { name: 'deploy', scopes: ['*'] } });
    expect(created.status).toBe(201);
    const secret: string = created.body.token;
    const list = await call(app.baseUrl, 'GET', '/v1/user/tokens', { token: alice.token });
    expect(list.status).toBe(200);
    expect(JSON.stringify(list.body)).not.toContain(secret);
    expect(list.body.data.find((t: { id: string }) => t.id === created.body.id)).toMatchObject({
      name: 'deploy',
      prefix: secret.slice(0, 12),
      expires_at: null,
    });
    expect((await call(app.baseUrl, 'GET', '/v1/workspaces', { token: secret })).status).toBe(200);
    expect((await call(app.baseUrl, 'DELETE', `/v1/user/tokens/${created.body.id}`, { token: alice.token })).status).toBe(204);
    const after = await call(app.baseUrl, 'GET', '/v1/workspaces', { token: secret });
    expect(after.status).toBe(401);
    expect(after.headers.get('www-authenticate')).toBe('Bearer realm="platform", error="invalid_token"');
    expect(after.body).toMatchObject({ error: { code: 'unauthorized' } });
  });

  it('is created with scopes: shown on the record, `*` or none named for every scope of the caller, never more than the caller holds', async () => {
    const create = (token: string, body: Record<string, unknown>) => call(app.baseUrl, 'POST', '/v1/user/tokens', { token, body });
    const narrow = await create(alice.token, { name: 'narrow', scopes: ['installs:read', 'tokens:write', 'clusters:read'] });
    expect(narrow).toMatchObject({ status: 201, body: { scopes: ['clusters:read', 'installs:read', 'tokens:write'] } });
    const listed = await call(app.baseUrl, 'GET', '/v1/user/tokens', { token: alice.token });
    expect(listed.body.data.find((t: { id: string }) => t.id === narrow.body.id).scopes).toEqual(['clusters:read', 'installs:read', 'tokens:write']);
    // A token with tokens:write mints only what it holds itself (write includes read); `*` means its own scopes.
    const every = await create(narrow.body.token, { name: 'every', scopes: ['*'] });
    expect(every.body.scopes).toEqual(['clusters:read', 'installs:read', 'tokens:read', 'tokens:write']);
    const stronger = await create(narrow.body.token, { name: 'stronger', scopes: ['clusters:read', 'clusters:write'] });
    expect(stronger).toMatchObject({ status: 403, body: { error: { code: 'forbidden', details: { required_scope: 'clusters:write' } } } });
    expect((await create(alice.token, { name: 'none', scopes: [] })).body).toMatchObject({ error: { code: 'validation_error', param: 'scopes' } });
    expect((await create(alice.token, { name: 'unknown', scopes: ['clusters:admin'] })).body).toMatchObject({ error: { code: 'validation_error' } });
    // The seed's body, `{name, expires_at}`: the caller's own scopes, as `*` would give.
    const unscoped = await create(narrow.body.token, { name: 'unscoped', expires_at: clock.now() + 3600 });
    expect(unscoped).toMatchObject({ status: 201, body: { scopes: every.body.scopes, expires_at: clock.now() + 3600 } });
    // A session token holds every scope.
    const { secret: session } = await createToken(app.db, clock, { userId: alice.userId, kind: 'session', name: 'cli', expiresAt: null });
    expect((await create(session, { name: 'all', scopes: ['*'] })).body.scopes).toHaveLength(ALL_SCOPES.length);
  });

  it('refuses a PAT with a bad checksum, and a malformed token, without reading the database', async () => {
    const flipped = `${alice.token.slice(0, -1)}${alice.token.endsWith('A') ? 'B' : 'A'}`;
    expect((await call(app.baseUrl, 'GET', '/v1/workspaces', { token: flipped })).status).toBe(401);
    expect((await call(app.baseUrl, 'GET', '/v1/workspaces', { token: 'short' })).status).toBe(401);
    expect((await call(app.baseUrl, 'GET', '/v1/workspaces', { headers: { authorization: 'Basic abc' } })).status).toBe(401);
  });

  it('takes the token after one or more spaces, whatever the case of the scheme (RFC 6750 §2.1: "Bearer" 1*SP b64token)', async () => {
    for (const authorization of [`Bearer ${alice.token}`, `Bearer  ${alice.token}`, `bearer ${alice.token}`, `BEARER   ${alice.token}`]) {
      expect((await call(app.baseUrl, 'GET', '/v1/workspaces', { headers: { authorization } })).status, authorization.slice(0, 10)).toBe(200);
    }
    for (const authorization of [`Bearer${alice.token}`, `Bearer\t${alice.token}`, `Bearer ${alice.token} x`]) {
      expect((await call(app.baseUrl, 'GET', '/v1/workspaces', { headers: { authorization } })).status).toBe(401);
    }
  });

  it('takes neither of two Authorization headers: 401 (Node keeps the first; a proxy in front may have read the other)', async () => {
    const bob = await newUser(app.db, clock, 'free');
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const url = new URL('/v1/workspaces', app.baseUrl);
      request(url, { headers: ['Host', url.host, 'Authorization', `Bearer ${alice.token}`, 'Authorization', `Bearer ${bob.token}`] }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
        .on('error', reject)
        .end();
    });
    expect(answer.status).toBe(401);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: 'unauthorized', message: 'The request carries more than one Authorization header.' } });
  });

  it('tells a mistyped or cut token (never issued) from an unknown one, as the token format allows', async () => {
    const message = async (token: string) => (await call(app.baseUrl, 'GET', '/v1/workspaces', { token })).body.error.message as string;
    const flipped = `${alice.token.slice(0, -1)}${alice.token.endsWith('A') ? 'B' : 'A'}`;
    expect(await message(flipped)).toMatch(/checksum\) do not match the rest, so a character is wrong/);
    expect(await message(alice.token.slice(0, -3))).toBe(
      'The personal access token is malformed: it must be svc_pat_ and 38 letters and digits, and this one has 35 characters after svc_pat_.',
    );
    expect(await message('abc-def')).toMatch(/session token \(32 letters and digits; this one has 7 characters, some of them not letters or digits\)/);
    // Well-formed, with a right checksum, but never issued here (or revoked): unknown.
    const { secret } = await createToken(app.db, clock, { userId: alice.userId, kind: 'pat', name: 'gone', expiresAt: null });
    await app.db.deleteFrom('tokens').where('name', '=', 'gone').execute();
    expect(await message(secret)).toBe('The token is unknown, has expired or was revoked.');
  });

  it('writes last_used_at at most once a minute', async () => {
    const { row, secret } = await createToken(app.db, clock, { userId: alice.userId, kind: 'pat', name: 'clock', expiresAt: null });
    const lastUsed = async () => (await app.db.selectFrom('tokens').select('last_used_at').where('id', '=', row.id).executeTakeFirstOrThrow()).last_used_at;
    await call(app.baseUrl, 'GET', '/v1/workspaces', { token: secret });
    const first = await lastUsed();
    expect(first).toBe(clock.now());
    clock.advance(LAST_USED_RESOLUTION_SECONDS - 1);
    await call(app.baseUrl, 'GET', '/v1/workspaces', { token: secret });
    expect(await lastUsed()).toBe(first);
    clock.advance(1);
    await call(app.baseUrl, 'GET', '/v1/workspaces', { token: secret });
    expect(await lastUsed()).toBe(clock.now());
  });
});

describe('GET /v1/user', () => {
  it('says who the caller is and what the token of the request may do, never its secret', async () => {
    const { row, secret } = await createToken(app.db, clock, {
      userId: alice.userId,
      kind: 'pat',
      name: 'deploy',
      expiresAt: clock.now() + 3600,
      scopes: ['installs:read'],
      workspaceIds: [alice.workspaceId],
    });
    const me = await call(app.baseUrl, 'GET', '/v1/user', { token: secret });
    expect(me.status).toBe(200);
    expect(me.body).toEqual({
      id: alice.userId,
      email: expect.stringContaining('@'),
      plan: 'free',
      workspace_id: alice.workspaceId,
      token: {
        kind: 'personal_access_token',
        id: row.id,
        name: 'deploy',
        scopes: ['installs:read'],
        workspace_ids: [alice.workspaceId],
        expires_at: clock.now() + 3600,
      },
    });
    expect(JSON.stringify(me.body)).not.toContain(secret);
    const { secret: session } = await createToken(app.db, clock, { userId: alice.userId, kind: 'session', name: 'platform-cli', expiresAt: null });
    const asSession = await call(app.baseUrl, 'GET', '/v1/user', { token: session });
    expect(asSession.body.token).toMatchObject({
      kind: 'session',
      name: 'platform-cli',
      workspace_ids: null,
      expires_at: clock.now() + SESSION_LIFETIME_SECONDS,
    });
    expect(asSession.body.token.scopes).toEqual([...ALL_SCOPES]);
    // A workspace the caller may not act in is refused as everywhere else.
    expect((await call(app.baseUrl, 'GET', '/v1/user', { token: secret, headers: { 'x-workspace-id': 'ws_elsewhere' } })).status).toBe(403);
  });
});

describe('session tokens', () => {
  it('live one year from last use, are refreshed on use, and logout revokes them', async () => {
    const { secret } = await createToken(app.db, clock, { userId: alice.userId, kind: 'session', name: 'cli', expiresAt: null });
    expect(secret).toMatch(/^[A-Za-z0-9]{32}$/);
    clock.advance(SESSION_LIFETIME_SECONDS - 10);
    expect((await call(app.baseUrl, 'GET', '/v1/workspaces', { token: secret })).status).toBe(200);
    // That use refreshed it: another (almost) year later it still works.
    clock.advance(SESSION_LIFETIME_SECONDS - 10);
    expect((await call(app.baseUrl, 'GET', '/v1/workspaces', { token: secret })).status).toBe(200);
    clock.advance(SESSION_LIFETIME_SECONDS + 1);
    expect((await call(app.baseUrl, 'GET', '/v1/workspaces', { token: secret })).status).toBe(401);

    const { secret: other } = await createToken(app.db, clock, { userId: alice.userId, kind: 'session', name: 'cli', expiresAt: null });
    expect((await call(app.baseUrl, 'POST', '/v1/auth/logout', { token: other })).status).toBe(204);
    expect((await call(app.baseUrl, 'GET', '/v1/workspaces', { token: other })).status).toBe(401);
  });
});

describe('OAuth2 JWTs', () => {
  let jwks: Server;
  let jwtServer: TestServer;
  let sign: (claims: Record<string, unknown>, options?: { issuer?: string; audience?: string }) => Promise<string>;

  beforeAll(async () => {
    const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    jwks = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] })));
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
    const { port } = jwks.address() as AddressInfo;
    jwtServer = await startTestServer(app.db, clock, {
      JWT_JWKS_URL: `http://127.0.0.1:${port}/jwks.json`,
      JWT_ISSUER: 'https://id.example',
      JWT_AUDIENCE: 'platform-api',
    });
    sign = (claims, options = {}) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
        .setIssuer(options.issuer ?? 'https://id.example')
        .setAudience(options.audience ?? 'platform-api')
        .setIssuedAt(clock.now())
        .setExpirationTime(clock.now() + 300)
        .sign(privateKey);
  });
  afterAll(async () => {
    await jwtServer?.close();
    jwks?.close();
  });

  it('accepts a valid JWT whose sub is a user, within its scope claim when it has one', async () => {
    const token = await sign({ sub: alice.userId, scope: 'openid workspaces:read' });
    expect((await call(jwtServer.baseUrl, 'GET', '/v1/workspaces', { token })).status).toBe(200);
    const outside = await call(jwtServer.baseUrl, 'GET', '/v1/clusters', { token });
    expect(outside).toMatchObject({ status: 403, body: { error: { code: 'forbidden', details: { required_scope: 'clusters:read' } } } });
    // A scope claim naming none of ours grants none; no scope claim at all acts for the user in full, as a session.
    const foreign = await call(jwtServer.baseUrl, 'GET', '/v1/workspaces', { token: await sign({ sub: alice.userId, scope: 'openid email' }) });
    expect(foreign).toMatchObject({ status: 403, body: { error: { details: { required_scope: 'workspaces:read' } } } });
    const unscoped = await sign({ sub: alice.userId });
    expect((await call(jwtServer.baseUrl, 'GET', '/v1/workspaces', { token: unscoped })).status).toBe(200);
    expect((await call(jwtServer.baseUrl, 'GET', '/v1/clusters', { token: unscoped })).status).toBe(200);
  });

  it('refuses an unknown subject, a wrong issuer or audience, an expired token, alg none and HS256', async () => {
    const refused = async (token: string) => expect((await call(jwtServer.baseUrl, 'GET', '/v1/workspaces', { token })).status).toBe(401);
    await refused(await sign({ sub: 'usr_nobody' }));
    await refused(await sign({ sub: alice.userId }, { issuer: 'https://evil.example' }));
    await refused(await sign({ sub: alice.userId }, { audience: 'another-api' }));
    await refused(
      await new SignJWT({ sub: alice.userId })
        .setProtectedHeader({ alg: 'HS256' })
        .setIssuer('https://id.example')
        .setAudience('platform-api')
        .setExpirationTime(clock.now() + 60)
        .sign(new TextEncoder().encode('secret-secret-secret-secret-32by')),
    );
    const header = Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url');
    const payload = Buffer.from(JSON.stringify({ sub: alice.userId, iss: 'https://id.example', aud: 'platform-api', exp: clock.now() + 60 })).toString(
      'base64url',
    );
    await refused(`${header}.${payload}.`);
    const expiring = await sign({ sub: alice.userId });
    clock.advance(400);
    await refused(expiring);
  });

  it('is refused by a server without a JWKS', async () => {
    const token = await sign({ sub: alice.userId });
    expect((await call(app.baseUrl, 'GET', '/v1/workspaces', { token })).status).toBe(401);
  });
});

describe('the database', () => {
  it('holds no plaintext token or secret in any text column', async () => {
    const credential = await call(app.baseUrl, 'POST', '/v1/registry/credentials', {
      token: alice.token,
      body: { name: 'r', registry_url: 'ghcr.io', username: 'bot', password: 'registry-password-plaintext' },
    });
    expect(credential.status).toBe(201);
    const cloud = await call(app.baseUrl, 'POST', '/v1/compute/cloud_credentials', {
      token: alice.token,
      body: { name: 'c', provider: 'hcloud', secret: 'cloud-secret-plaintext' },
    });
    expect(cloud.status).toBe(201);
    expect(JSON.stringify([credential.body, cloud.body])).not.toMatch(/plaintext/);
    const created = await call(app.baseUrl, 'POST', '/v1/user/tokens', { token: alice.token, body: { name: 'search-me', scopes: ['*'] } });
    const secrets = [alice.token, created.body.token as string, 'registry-password-plaintext', 'cloud-secret-plaintext'];
    const columns = await sql<{ table_name: string; column_name: string; data_type: string }>`
      SELECT table_name, column_name, data_type FROM information_schema.columns
      WHERE table_schema = 'public' AND data_type IN ('text', 'character varying', 'jsonb', 'bytea')`.execute(app.db);
    expect(columns.rows.length).toBeGreaterThan(10);
    for (const { table_name, column_name, data_type } of columns.rows) {
      const text = data_type === 'bytea' ? sql`encode(${sql.ref(column_name)}, 'escape')` : sql`${sql.ref(column_name)}::text`;
      for (const secret of secrets) {
        const hits = await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.table(table_name)} WHERE position(${secret} in ${text}) > 0`.execute(app.db);
        expect(hits.rows[0]!.n, `${secret.slice(0, 12)}… found in ${table_name}.${column_name}`).toBe(0);
      }
    }
  });
});

describe('sessions', () => {
  it('lists the caller’s sessions with their last use (address and user agent, once a minute), revokes one and all others', async () => {
    const user = await newUser(app.db, clock, 'free');
    const session = async () => (await createToken(app.db, clock, { userId: user.userId, kind: 'session', name: 'platform-cli', expiresAt: null })).secret;
    const [laptop, desktop, phone] = [await session(), await session(), await session()];
    const get = (token: string, userAgent: string) => call(app.baseUrl, 'GET', '/v1/user/sessions', { token, headers: { 'user-agent': userAgent } });
    clock.advance(LAST_USED_RESOLUTION_SECONDS);
    expect((await get(desktop, 'platform-cli/2.0')).status).toBe(200);
    // Within the minute the use is not written again: the first user agent stays.
    const listed = await get(desktop, 'platform-cli/2.1');
    expect(listed.status).toBe(200);
    expect(listed.body.data).toHaveLength(3);
    const [current, ...others] = [...listed.body.data].sort((a: { current: boolean }, b: { current: boolean }) => Number(b.current) - Number(a.current));
    expect(current).toMatchObject({
      name: 'platform-cli',
      last_used_at: clock.now(),
      last_address: '127.0.0.1',
      user_agent: 'platform-cli/2.0',
      current: true,
    });
    expect(others[0]).toMatchObject({ last_used_at: null, last_address: null, user_agent: null, current: false });
    expect(JSON.stringify(listed.body)).not.toContain(desktop);
    // A PAT's use is no session's.
    expect((await call(app.baseUrl, 'GET', '/v1/user/sessions', { token: user.token })).body.data.every((s: { current: boolean }) => !s.current)).toBe(true);

    const revoked = await call(app.baseUrl, 'POST', '/v1/user/sessions/revoke_others', { token: desktop });
    expect(revoked).toMatchObject({ status: 200, body: { revoked: 2 } });
    expect((await get(laptop, 'x')).status).toBe(401);
    expect((await get(phone, 'x')).status).toBe(401);
    expect((await get(desktop, 'x')).body.data.map((s: { id: string }) => s.id)).toEqual([current.id]);
    // Personal access tokens are untouched; another user's session is not found; the last one can end itself.
    expect((await call(app.baseUrl, 'GET', '/v1/workspaces', { token: user.token })).status).toBe(200);
    expect((await call(app.baseUrl, 'DELETE', `/v1/user/sessions/${current.id}`, { token: alice.token })).status).toBe(404);
    expect((await call(app.baseUrl, 'DELETE', `/v1/user/sessions/${current.id}`, { token: desktop })).status).toBe(204);
    expect((await get(desktop, 'x')).status).toBe(401);
  });
});
