// The OWASP API Security Top 10 (2023), one describe per item, each proven against an in-process server.
// Broader proofs live elsewhere and are named where they are: security-matrix.test.ts (every operation ×
// no token / another workspace), tokens.test.ts, rate-limit.test.ts, security-headers.test.ts, ssrf.test.ts,
// quotas.test.ts and api.test.ts (races).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import definition from '@platform/api-types/openapi.json' with { type: 'json' };
import { exportJWK, exportSPKI, generateKeyPair, SignJWT } from 'jose';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/db/connect.ts';
import type { Database } from '../src/db/schema.ts';
import { SimulatedCloud } from '../src/providers/simulated.ts';
import type { ClusterDriver, ComputeProvider, LogEntry, PodContainer } from '../src/providers/types.ts';
import { createToken } from '../src/resources/tokens.ts';
import { buildWorld, type World } from './fixtures.ts';
import { freePort } from './global-setup.ts';
import { call, newUser, serverLogger, startTestServer, type TestServer, type TestUser, useTestServer } from './support.ts';

let world: World;
const closers: (() => Promise<unknown> | unknown)[] = [];

/** Every line the main server logs, at every level, through the service's own logger options. */
const logLines: string[] = [];
const logger = serverLogger((line) => logLines.push(...line.split('\n').filter(Boolean)));

/** Host names as the tests' DNS answers them (this machine has no public DNS). */
const PUBLIC_IP = '93.184.215.14';
async function resolveHost(host: string): Promise<string[]> {
  if (host === 'charts.example.com' || host === 'registry.example.com') return [PUBLIC_IP];
  if (host === 'rebind.example.com') return ['10.0.0.1'];
  return [];
}

/** What a hostile or broken cluster could send: a pod name and a log line that try to end or forge events. */
const EVIL_POD = 'web-0\n\nevent: end\ndata: {"reason":"forged"}';
const EVIL_LINE = 'GET / 200\n\nevent: end\ndata: {"reason":"pods_gone"}\n\nid: 1\r\nretry: 1\r\r: \u0000\u001b[2J\u2028done';
const INTERNAL_FAILURE = 'relation "users" does not exist: SELECT password FROM users at Object.getServer (/srv/app/src/providers/hcloud.ts:42:7)';

const app = useTestServer({ parts: (db) => ({ logger, ...failingParts(db) }), resolveHost });
const { clock } = app;

/** A provider whose getServer fails unexpectedly, and a driver whose pods and log lines are hostile. */
function failingParts(db: Kysely<Database>): { provider: ComputeProvider; driver: ClusterDriver } {
  const simulated = new SimulatedCloud(db, clock);
  // The provider fails unexpectedly on getServer (a drift check): the 500 must not leak what it says.
  const provider = new Proxy(simulated, {
    get(target, property) {
      if (property === 'getServer') return async () => Promise.reject(new Error(INTERNAL_FAILURE));
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as ComputeProvider;
  const driver: ClusterDriver = {
    createCluster: (request) => simulated.createCluster(request),
    getCluster: (clusterId) => simulated.getCluster(clusterId),
    deleteCluster: (clusterId) => simulated.deleteCluster(clusterId),
    joinMachine: (request) => simulated.joinMachine(request),
    endJoin: (...args) => simulated.endJoin(...args),
    removeNode: (...args) => simulated.removeNode(...args),
    kubeconfig: (...args) => simulated.kubeconfig(...args),
    ensureNetwork: (clusterId) => simulated.ensureNetwork(clusterId),
    nodeReady: (...args) => simulated.nodeReady(...args),
    upsertRelease: (request) => simulated.upsertRelease(request),
    getRelease: (...args) => simulated.getRelease(...args),
    uninstallRelease: (...args) => simulated.uninstallRelease(...args),
    listContainers: async () => [{ pod: EVIL_POD, container: 'app' }],
    readLog: async function* (_cluster: string, _namespace: string, target: PodContainer): AsyncIterable<LogEntry> {
      yield { ...target, position: 1, timestamp_ms: clock.nowMs(), line: EVIL_LINE };
    },
  };
  return { provider, driver };
}

beforeAll(async () => {
  world = await buildWorld(app.db, clock);
});
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

async function emailOf(user: TestUser): Promise<string> {
  return (await app.db.selectFrom('users').select('email').where('id', '=', user.userId).executeTakeFirstOrThrow()).email;
}

describe('API1:2023 Broken Object Level Authorization', () => {
  it("another user's cluster, install and install log stream are 404, as if they did not exist", async () => {
    const { bob } = world;
    for (const path of [`/v1/clusters/${world.ids.cluster}`, `/v1/installs/${world.ids.install}`, `/v1/clusters/${world.ids.cluster}/compute_status`]) {
      const reply = await call(app.baseUrl, 'GET', path, { token: bob.token });
      expect(reply.status, path).toBe(404);
      expect(reply.body.error.code).toBe('not_found');
    }
    const stream = await call(app.baseUrl, 'GET', `/v1/installs/${world.ids.install}/logs?follow=false`, {
      token: bob.token,
      headers: { accept: 'text/event-stream' },
    });
    expect(stream.status).toBe(404);
    expect(stream.headers.get('content-type')).toMatch(/^application\/json/);
    expect(stream.body.error.code).toBe('not_found');
    // The owner sees them: the 404s are about visibility, not about missing rows.
    expect((await call(app.baseUrl, 'GET', `/v1/clusters/${world.ids.cluster}`, { token: world.alice.token })).status).toBe(200);
  });

  it("naming another user's workspace in X-Workspace-Id is 403", async () => {
    const reply = await call(app.baseUrl, 'GET', '/v1/clusters', { token: world.bob.token, headers: { 'x-workspace-id': world.alice.workspaceId } });
    expect(reply.status).toBe(403);
    expect(reply.body.error.code).toBe('forbidden');
    const own = await call(app.baseUrl, 'GET', '/v1/clusters', { token: world.bob.token, headers: { 'x-workspace-id': world.bob.workspaceId } });
    expect(own.status).toBe(200);
  });
});

describe('API2:2023 Broken Authentication', () => {
  it('refuses a PAT with a wrong checksum without touching the database', async () => {
    // An app whose database cannot be reached: any query would make the answer 503.
    const unreachable = openDatabase(`postgres://postgres@127.0.0.1:${await freePort()}/none`, 1);
    const offline = await startTestServer(unreachable.db, clock);
    closers.push(
      () => unreachable.close(),
      () => offline.close(),
    );
    const good = world.alice.token;
    expect(good.startsWith('svc_pat_')).toBe(true);
    const last = good.at(-1)!;
    const badChecksum = `${good.slice(0, -1)}${last === 'A' ? 'B' : 'A'}`;
    const refused = await call(offline.baseUrl, 'GET', '/v1/workspaces', { token: badChecksum });
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('unauthorized');
    expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer /);
    // The control: a well-formed token does query, and that app has no database.
    const control = await call(offline.baseUrl, 'GET', '/v1/workspaces', { token: good });
    expect(control.status).toBe(503);
  });

  it('refuses expired and revoked tokens', async () => {
    const { alice } = world;
    const expired = await createToken(app.db, clock, { userId: alice.userId, kind: 'pat', name: 'expired', expiresAt: clock.now() - 1 });
    expect((await call(app.baseUrl, 'GET', '/v1/workspaces', { token: expired.secret })).status).toBe(401);

    const created = await call(app.baseUrl, 'POST', '/v1/user/tokens', { token: alice.token, body: { name: 'to revoke', scopes: ['*'] } });
    expect(created.status).toBe(201);
    expect((await call(app.baseUrl, 'GET', '/v1/workspaces', { token: created.body.token })).status).toBe(200);
    expect((await call(app.baseUrl, 'DELETE', `/v1/user/tokens/${created.body.id}`, { token: alice.token })).status).toBe(204);
    const revoked = await call(app.baseUrl, 'GET', '/v1/workspaces', { token: created.body.token });
    expect(revoked.status).toBe(401);
    expect(revoked.body.error.code).toBe('unauthorized');
  });

  describe('OAuth2 JWTs', () => {
    let jwtServer: TestServer;
    let sign: (alg?: string) => Promise<string>;
    let publicPem: string;
    let privateKeyOf: () => CryptoKey;
    const claims = () => ({ sub: world.alice.userId, scope: 'workspaces:read' });

    beforeAll(async () => {
      const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
      publicPem = await exportSPKI(publicKey);
      privateKeyOf = () => privateKey;
      const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
      const jwks: Server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] })));
      await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
      closers.push(() => new Promise((resolve) => jwks.close(resolve)));
      jwtServer = await startTestServer(app.db, clock, {
        JWT_JWKS_URL: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`,
        JWT_ISSUER: 'https://id.example',
        JWT_AUDIENCE: 'platform-api',
      });
      closers.push(() => jwtServer.close());
      sign = () =>
        new SignJWT(claims())
          .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
          .setIssuer('https://id.example')
          .setAudience('platform-api')
          .setIssuedAt(clock.now())
          .setExpirationTime(clock.now() + 300)
          .sign(privateKey);
    });

    const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

    it('accepts a properly signed token (the control for the refusals below)', async () => {
      expect((await call(jwtServer.baseUrl, 'GET', '/v1/workspaces', { token: await sign() })).status).toBe(200);
    });

    it('refuses alg "none"', async () => {
      const payload = { ...claims(), iss: 'https://id.example', aud: 'platform-api', iat: clock.now(), exp: clock.now() + 300 };
      for (const token of [
        `${base64url({ alg: 'none', typ: 'JWT' })}.${base64url(payload)}.`,
        `${base64url({ alg: 'none', kid: 'k1' })}.${base64url(payload)}.${base64url('x')}`,
      ]) {
        const reply = await call(jwtServer.baseUrl, 'GET', '/v1/workspaces', { token });
        expect(reply.status).toBe(401);
        expect(reply.body.error.code).toBe('unauthorized');
      }
    });

    it('refuses a token without exp, and one whose lifetime exceeds JWT_MAX_LIFETIME_SECONDS (default a day)', async () => {
      const base = () => new SignJWT(claims()).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).setIssuer('https://id.example').setAudience('platform-api');
      const noExp = await base().setIssuedAt(clock.now()).sign(privateKeyOf());
      const forAYear = await base()
        .setIssuedAt(clock.now())
        .setExpirationTime(clock.now() + 365 * 86_400)
        .sign(privateKeyOf());
      const noIatFarExp = await base()
        .setExpirationTime(clock.now() + 2 * 86_400)
        .sign(privateKeyOf());
      const withinADay = await base()
        .setIssuedAt(clock.now())
        .setExpirationTime(clock.now() + 86_000)
        .sign(privateKeyOf());
      for (const token of [noExp, forAYear, noIatFarExp]) {
        const reply = await call(jwtServer.baseUrl, 'GET', '/v1/workspaces', { token });
        expect(reply.status).toBe(401);
        expect(reply.body.error.code).toBe('unauthorized');
      }
      expect((await call(jwtServer.baseUrl, 'GET', '/v1/workspaces', { token: withinADay })).status).toBe(200);
    });

    it('refuses HS256 signed with the RSA public key (algorithm confusion)', async () => {
      for (const secret of [publicPem, publicPem.trim()]) {
        const token = await new SignJWT(claims())
          .setProtectedHeader({ alg: 'HS256', kid: 'k1' })
          .setIssuer('https://id.example')
          .setAudience('platform-api')
          .setExpirationTime(clock.now() + 300)
          .sign(new TextEncoder().encode(secret));
        const reply = await call(jwtServer.baseUrl, 'GET', '/v1/workspaces', { token });
        expect(reply.status).toBe(401);
      }
    });

    it('answers 401 (not a hang, not a 500) when the JWKS cannot be reached or never answers', async () => {
      const silent: Server = createServer(() => {
        // accepts the connection and never answers
      });
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      closers.push(
        () =>
          new Promise((resolve) => {
            silent.closeAllConnections();
            silent.close(resolve);
          }),
      );
      const token = await sign();
      for (const jwksUrl of [`http://127.0.0.1:${await freePort()}/jwks.json`, `http://127.0.0.1:${(silent.address() as AddressInfo).port}/jwks.json`]) {
        const verifier = await startTestServer(app.db, clock, { JWT_JWKS_URL: jwksUrl, JWT_ISSUER: 'https://id.example', JWT_AUDIENCE: 'platform-api' });
        closers.push(() => verifier.close());
        const reply = await call(verifier.baseUrl, 'GET', '/v1/workspaces', { token });
        expect(reply.status, jwksUrl).toBe(401);
        expect(reply.body.error.code).toBe('unauthorized');
      }
    });
  });
});

describe('API3:2023 Broken Object Property Level Authorization', () => {
  const secrets = { registry: `reg-pw-${Math.random().toString(36).slice(2)}`, cloud: `cc-secret-${Math.random().toString(36).slice(2)}`, pat: '' };

  it.each([
    ['POST', '/v1/workspaces', { name: 'mine', owner_id: 'usr_someone_else' }, 'owner_id'],
    ['POST', '/v1/workspaces', { name: 'mine', plan: 'pro' }, 'plan'],
    ['POST', '/v1/clusters', { name: 'c1', region_id: 'fsn1', workspace_id: 'ws_other' }, 'workspace_id'],
    ['POST', '/v1/user/tokens', { name: 't', scopes: ['*'], id: 'tok_chosen' }, 'id'],
    ['POST', '/v1/compute/cloud_credentials', { name: 'cc', provider: 'hcloud', secret: 's', created_at: 1 }, 'created_at'],
  ] as const)('%s %s with a property the caller may not set is 422 naming it', async (method, path, body, param) => {
    const reply = await call(app.baseUrl, method, path, { token: world.bob.token, body });
    expect(reply.status).toBe(422);
    expect(reply.body.error).toMatchObject({ code: 'validation_error', param });
  });

  it('never returns a registry password, a cloud credential secret, or a PAT after its creation', async () => {
    const { alice } = world;
    const registry = await call(app.baseUrl, 'POST', '/v1/registry/credentials', {
      token: alice.token,
      body: { name: 'r', registry_url: 'registry.example.com', username: 'u', password: secrets.registry },
    });
    expect(registry.status).toBe(201);
    const cloud = await call(app.baseUrl, 'POST', '/v1/compute/cloud_credentials', {
      token: alice.token,
      body: { name: 'c', provider: 'hcloud', secret: secrets.cloud },
    });
    expect(cloud.status).toBe(201);
    const pat = await call(app.baseUrl, 'POST', '/v1/user/tokens', { token: alice.token, body: { name: 'shown once', scopes: ['*'] } });
    expect(pat.status).toBe(201);
    secrets.pat = pat.body.token;
    expect(secrets.pat).toMatch(/^svc_pat_/);

    const replies = [
      registry,
      cloud,
      await call(app.baseUrl, 'GET', '/v1/registry/credentials', { token: alice.token }),
      await call(app.baseUrl, 'GET', '/v1/compute/cloud_credentials', { token: alice.token }),
      await call(app.baseUrl, 'GET', '/v1/user/tokens', { token: alice.token }),
      await call(app.baseUrl, 'GET', '/v1/user/tokens', { token: secrets.pat }),
    ];
    for (const reply of replies) {
      expect(reply.status).toBeLessThan(300);
      const text = JSON.stringify(reply.body);
      expect(text).not.toContain(secrets.registry);
      expect(text).not.toContain(secrets.cloud);
      expect(text).not.toContain(secrets.pat);
      expect(text).not.toMatch(/svc_pat_[A-Za-z0-9]{8}/);
      expect(text).not.toMatch(/"(password|secret|token)"\s*:/);
    }
    expect(replies[4]!.body.data.some((t: { id: string }) => t.id === pat.body.id)).toBe(true);
  });

  it('logs no token and no secret, on success or on failure', async () => {
    const { alice } = world;
    // Some failures that log more than a request line: an unhandled error, bad bodies carrying secrets.
    expect((await call(app.baseUrl, 'GET', `/v1/compute/machines/${encodeURIComponent(world.ids.machine)}/drift`, { token: secrets.pat })).status).toBe(200);
    await app.db.updateTable('machines').set({ server_id: 'srv_broken' }).where('provider_id', '=', world.ids.machine).execute();
    expect((await call(app.baseUrl, 'GET', `/v1/compute/machines/${encodeURIComponent(world.ids.machine)}/drift`, { token: secrets.pat })).status).toBe(500);
    await app.db.updateTable('machines').set({ server_id: null }).where('provider_id', '=', world.ids.machine).execute();
    await call(app.baseUrl, 'POST', '/v1/registry/credentials', {
      token: alice.token,
      body: { name: 'r', registry_url: '127.0.0.1', username: 'u', password: secrets.registry },
    });
    await call(app.baseUrl, 'POST', '/v1/compute/cloud_credentials', { token: alice.token, body: { name: 'c', provider: 'nope', secret: secrets.cloud } });
    await call(app.baseUrl, 'GET', '/v1/workspaces', { token: `${secrets.pat.slice(0, -1)}x` });
    await call(app.baseUrl, 'GET', '/v1/workspaces', { token: secrets.pat, headers: { 'x-request-id': 'owasp-log-check' } });

    expect(logLines.some((line) => line.includes('owasp-log-check'))).toBe(true);
    expect(logLines.some((line) => JSON.parse(line).level === 50)).toBe(true); // the unhandled error was logged
    for (const line of logLines) {
      expect(line).not.toContain('svc_pat_');
      expect(line).not.toContain(secrets.pat.slice(8, 20));
      expect(line).not.toContain(alice.token.slice(8, 20));
      expect(line).not.toContain(secrets.registry);
      expect(line).not.toContain(secrets.cloud);
    }
  });
});

describe('API4:2023 Unrestricted Resource Consumption', () => {
  let limited: TestServer;
  beforeAll(async () => {
    limited = await startTestServer(app.db, clock, { BODY_LIMIT_BYTES: '1024', RATE_LIMIT_PER_MINUTE: '3' });
    closers.push(() => limited.close());
  });

  it('refuses a body over BODY_LIMIT_BYTES with 413', async () => {
    const user = await newUser(app.db, clock);
    const reply = await call(limited.baseUrl, 'POST', '/v1/workspaces', { token: user.token, body: { name: 'x', icon: 'a'.repeat(2000) } });
    expect(reply.status).toBe(413);
    expect(reply.body.error.code).toBe('payload_too_large');
  });

  it('refuses request N+1 of a token in a window with 429 and Retry-After', async () => {
    const user = await newUser(app.db, clock);
    for (let i = 0; i < 3; i++) expect((await call(limited.baseUrl, 'GET', '/v1/regions', { token: user.token })).status).toBe(200);
    const refused = await call(limited.baseUrl, 'GET', '/v1/regions', { token: user.token });
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.headers.get('ratelimit-policy')).toBe('"default";q=3;w=60');
    expect(refused.headers.get('ratelimit')).toMatch(/^"default";r=0;t=\d+$/);
  });

  it('caps the log streams a user holds open, over every process and every token of theirs (LOG_STREAMS_PER_USER)', async () => {
    const capped = await startTestServer(app.db, clock, { LOG_STREAMS_PER_USER: '2' });
    closers.push(() => capped.close());
    // A second process on the same database, and a second token of the same user, made before any stream opens:
    // the streams' slots are then held only for the few requests below.
    const other = await startTestServer(app.db, clock, { LOG_STREAMS_PER_USER: '2' });
    closers.push(() => other.close());
    const own = await buildWorld(app.db, clock);
    const minted = await call(other.baseUrl, 'POST', '/v1/user/tokens', { token: own.alice.token, body: { name: 'second', scopes: ['*'] } });
    expect(minted.status).toBe(201);
    const logs = `/v1/installs/${own.ids.install}/logs`;
    // Every request has a deadline: a stream wrongly admitted fails the test here instead of hanging it.
    const open = (baseUrl: string, controller: AbortController, token = own.alice.token) =>
      fetch(`${baseUrl}${logs}`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.any([controller.signal, AbortSignal.timeout(10_000)]) });
    const refusal = async (query: string) => {
      const response = await fetch(`${other.baseUrl}${logs}${query}`, {
        headers: { authorization: `Bearer ${minted.body.token}` },
        signal: AbortSignal.timeout(10_000),
      });
      if (response.status !== 429) {
        await response.body?.cancel();
        return { status: response.status, retryAfter: 0, code: undefined };
      }
      const body = (await response.json()) as { error: { code: string } };
      return { status: response.status, retryAfter: Number(response.headers.get('retry-after')), code: body.error.code };
    };
    const first = new AbortController();
    const second = new AbortController();
    expect((await open(capped.baseUrl, first)).status).toBe(200);
    expect((await open(capped.baseUrl, second)).status).toBe(200);
    // A third, with the other token of the same user and through the other process: 429 before the stream starts.
    // Minting tokens multiplies nothing.
    const refused = await refusal('');
    expect(refused.status).toBe(429);
    expect(refused.code).toBe('rate_limited');
    expect(refused.retryAfter).toBeGreaterThan(0);
    // A backlog read (follow=false) holds a slot too while it is open.
    expect((await refusal('?follow=false')).status).toBe(429);
    // Closing a stream frees its slot.
    first.abort();
    let reopened = 0;
    for (let i = 0; i < 100 && reopened !== 200; i++) {
      const again = new AbortController();
      const response = await open(other.baseUrl, again, minted.body.token).catch(() => undefined);
      reopened = response?.status ?? 0;
      if (reopened !== 200) await new Promise((resolve) => setTimeout(resolve, 20));
      else again.abort();
    }
    expect(reopened).toBe(200);
    second.abort();
  }, 90_000); // it starts two more servers, each compiling the contract's validators

  it('bounds page sizes', async () => {
    const reply = await call(app.baseUrl, 'GET', '/v1/clusters?limit=101', { token: world.alice.token });
    expect(reply.status).toBe(422);
    expect(reply.body.error.param).toBe('limit');
  });

  it('names a parameter sent twice as such, not as a wrong type', async () => {
    const reply = await call(app.baseUrl, 'GET', '/v1/compute/machines?cluster_id=cl_a&cluster_id=cl_b', { token: world.alice.token });
    expect(reply.status).toBe(422);
    expect(reply.body.error).toMatchObject({
      code: 'validation_error',
      param: 'cluster_id',
      message: 'Parameter cluster_id was sent 2 times; it takes one value.',
      suggestion: 'Send cluster_id once.',
    });
    expect((await call(app.baseUrl, 'GET', '/v1/clusters?limit=5&limit=6', { token: world.alice.token })).body.error.param).toBe('limit');
  });
});

describe('API5:2023 Broken Function Level Authorization', () => {
  it('a member cannot invite or remove members (403); a non-member does not see the workspace (404); the owner can', async () => {
    const owner = await newUser(app.db, clock);
    const member = await newUser(app.db, clock);
    const outsider = await newUser(app.db, clock);
    const members = `/v1/workspaces/${owner.workspaceId}/members`;
    const invitations = `/v1/workspaces/${owner.workspaceId}/invitations`;
    const invited = await call(app.baseUrl, 'POST', invitations, { token: owner.token, body: { email: await emailOf(member) } });
    expect(invited.status).toBe(201);
    expect((await call(app.baseUrl, 'POST', `/v1/user/invitations/${invited.body.id}/accept`, { token: member.token })).status).toBe(200);

    const add = await call(app.baseUrl, 'POST', invitations, { token: member.token, body: { email: await emailOf(outsider) } });
    expect(add.status).toBe(403);
    expect(add.body.error.code).toBe('forbidden');
    const remove = await call(app.baseUrl, 'DELETE', `${members}/${owner.userId}`, { token: member.token });
    expect(remove.status).toBe(403);
    const removeSelf = await call(app.baseUrl, 'DELETE', `${members}/${member.userId}`, { token: member.token });
    expect(removeSelf.status).toBe(403);
    // Reading is a member's right.
    expect((await call(app.baseUrl, 'GET', members, { token: member.token })).status).toBe(200);

    expect((await call(app.baseUrl, 'POST', invitations, { token: outsider.token, body: { email: await emailOf(outsider) } })).status).toBe(404);
    expect((await call(app.baseUrl, 'DELETE', `${members}/${member.userId}`, { token: outsider.token })).status).toBe(404);
    expect((await call(app.baseUrl, 'GET', members, { token: outsider.token })).status).toBe(404);

    const listed = await call(app.baseUrl, 'GET', members, { token: owner.token });
    expect(listed.body.data.map((m: { user_id: string }) => m.user_id).sort()).toEqual([owner.userId, member.userId].sort());
    expect((await call(app.baseUrl, 'DELETE', `${members}/${member.userId}`, { token: owner.token })).status).toBe(204);
  });
});

describe('API6:2023 Unrestricted Access to Sensitive Business Flows', () => {
  // The full races: quotas.test.ts (20 parallel creations, machines, BYOM) and api.test.ts (50 calls, one key).
  it('parallel cluster creations cannot pass the last free slot', async () => {
    const user = await newUser(app.db, clock, 'free');
    const replies = await Promise.all(
      Array.from({ length: 8 }, (_, i) => call(app.baseUrl, 'POST', '/v1/clusters', { token: user.token, body: { name: `race-${i}`, region_id: 'fsn1' } })),
    );
    expect(replies.filter((r) => r.status === 202)).toHaveLength(1);
    expect(replies.filter((r) => r.status === 403 && r.body.error.code === 'quota_exceeded')).toHaveLength(7);
    const rows = await app.db.selectFrom('clusters').select('id').where('workspace_id', '=', user.workspaceId).execute();
    expect(rows).toHaveLength(1);
  });

  it('parallel installs with one idempotency key make one install', async () => {
    const key = `owasp-${Math.random().toString(36).slice(2)}`;
    const body = { product_id: world.ids.product, region_id: 'fsn1' };
    const before = (await app.db.selectFrom('installs').select('id').where('product_id', '=', world.ids.product).execute()).length;
    const replies = await Promise.all(
      Array.from({ length: 8 }, () => call(app.baseUrl, 'POST', '/v1/installs', { token: world.alice.token, body, headers: { 'idempotency-key': key } })),
    );
    // One does the work; each other one replays it, or is 409 naming the key while it still runs (the decisions).
    const made = replies.filter((r) => r.status === 202 && r.headers.get('idempotent-replayed') !== 'true');
    expect(made).toHaveLength(1);
    for (const r of replies.filter((reply) => reply !== made[0])) {
      if (r.status === 202) expect(r.body.id).toBe(made[0]!.body.id);
      else expect(r).toMatchObject({ status: 409, body: { error: { code: 'conflict', param: 'idempotency-key' } } });
    }
    const after = (await app.db.selectFrom('installs').select('id').where('product_id', '=', world.ids.product).execute()).length;
    expect(after - before).toBe(1);
  });
});

describe('API7:2023 Server Side Request Forgery', () => {
  // Every class of address, and names resolving to them: ssrf.test.ts.
  it.each(['127.0.0.1', '169.254.169.254', '10.1.2.3', '172.16.0.1', '192.168.1.1', '100.64.0.1', '224.0.0.1', '0.0.0.0', 'localhost', 'rebind.example.com'])(
    'refuses registry_url %s',
    async (host) => {
      const reply = await call(app.baseUrl, 'POST', '/v1/registry/credentials', {
        token: world.alice.token,
        body: { name: 'r', registry_url: host, username: 'u', password: 'p' },
      });
      expect(reply.status).toBe(422);
      expect(reply.body.error).toMatchObject({ code: 'validation_error', param: 'registry_url' });
      expect(reply.body.error.suggestion).toBeTruthy();
    },
  );

  const product = (repoUrl: string) => ({
    name: 'p',
    sources: [{ chart: { repo_url: repoUrl, chart: 'app', target_revision: '1.0.0' } }],
    cluster_ids: [world.ids.cluster],
  });
  it.each([
    'http://169.254.169.254/latest/meta-data/',
    'https://[::1]/charts',
    'file:///etc/passwd',
    'gopher://charts.example.com/',
    'https://rebind.example.com/charts',
    'http://2130706433/',
  ])('refuses repo_url %s', async (url) => {
    const reply = await call(app.baseUrl, 'POST', '/v1/products', { token: world.alice.token, body: product(url) });
    expect(reply.status).toBe(422);
    expect(reply.body.error).toMatchObject({ code: 'validation_error', param: 'sources[0].chart.repo_url' });
  });

  it('accepts public names', async () => {
    expect((await call(app.baseUrl, 'POST', '/v1/products', { token: world.alice.token, body: product('https://charts.example.com/stable') })).status).toBe(
      201,
    );
    expect(
      (
        await call(app.baseUrl, 'POST', '/v1/registry/credentials', {
          token: world.alice.token,
          body: { name: 'r', registry_url: 'registry.example.com:5000', username: 'u', password: 'p' },
        })
      ).status,
    ).toBe(201);
  });
});

describe('API8:2023 Security Misconfiguration', () => {
  const LEAKS = /\bat [\w.<>]+ \(|node_modules|\.ts:\d+|\bSELECT\b|\bINSERT\b|syntax error|relation "|pg_|stack/i;
  const malformed: [string, string, string | undefined, Record<string, string>?][] = [
    ['POST', '/v1/workspaces', '{"name":'],
    ['POST', '/v1/workspaces', '{"name": "x"}}'],
    ['POST', '/v1/workspaces', '{"name": {"$gt": ""}}'],
    ['POST', '/v1/workspaces', '["name"]'],
    ['POST', '/v1/workspaces', 'name=x', { 'content-type': 'application/x-www-form-urlencoded' }],
    ['POST', '/v1/user/tokens', '{"name": "t", "expires_at": 1e400}'],
    ['GET', "/v1/clusters/' OR '1'='1", undefined],
    ['GET', '/v1/clusters/%00%27%3B%20DROP%20TABLE%20users%3B--', undefined],
    ['GET', '/v1/clusters?cursor=%27%20OR%201%3D1--', undefined],
    ['GET', '/v1/clusters?cursor=%00', undefined],
    ['POST', '/v1/workspaces', '{"name": "a\\u0000b"}'],
    ['POST', '/v1/workspaces', '{"name": "ok", "icon": "\\u0000"}'],
    ['PATCH', '/v1/notifications/%00/read', undefined],
    ['POST', '/v1/auth/device/code', 'client_id=%00', { 'content-type': 'application/x-www-form-urlencoded' }],
    [
      'POST',
      '/v1/auth/device/token',
      'grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code&device_code=%00',
      { 'content-type': 'application/x-www-form-urlencoded' },
    ],
    ['GET', '/v1/clusters?limit=1;DROP', undefined],
    ['GET', '/v1/quotas/%E0%A4%A', undefined],
    ['GET', `/v1/installs/x/logs?follow=false`, undefined, { 'last-event-id': "'; SELECT 1" }],
  ];
  it.each(malformed)('%s %s with %s: a contract error body, no stack trace or SQL', async (method, path, body, headers) => {
    const reply = await call(app.baseUrl, method, path, {
      token: world.alice.token,
      ...(body === undefined ? {} : { body }),
      ...(headers ? { headers } : {}),
    });
    expect(reply.status).toBeGreaterThanOrEqual(400);
    expect(reply.status).toBeLessThan(500);
    if (path === '/v1/auth/device/token') {
      expect(reply.body).toMatchObject({ error: expect.any(String), error_description: expect.any(String) }); // RFC 6749 §5.2
    } else {
      expect(Object.keys(reply.body.error)).toEqual(expect.arrayContaining(['code', 'message']));
    }
    if (path.includes('%00') || body?.includes('\\u0000') || body?.includes('%00')) expect(reply.status).toBe(path === '/v1/auth/device/token' ? 400 : 422);
    expect(JSON.stringify(reply.body)).not.toMatch(LEAKS);
    expect(reply.headers.get('x-content-type-options')).toBe('nosniff');
    expect(reply.headers.get('content-security-policy')).toBe("default-src 'none'; frame-ancestors 'none'");
  });

  it('an unexpected failure is a bare 500 with a request id, whatever the failure said', async () => {
    await app.db.updateTable('machines').set({ server_id: 'srv_broken' }).where('provider_id', '=', world.ids.machine).execute();
    const reply = await call(app.baseUrl, 'GET', `/v1/compute/machines/${encodeURIComponent(world.ids.machine)}/drift`, { token: world.alice.token });
    await app.db.updateTable('machines').set({ server_id: null }).where('provider_id', '=', world.ids.machine).execute();
    expect(reply.status).toBe(500);
    expect(reply.body).toEqual({
      error: {
        code: 'internal_error',
        message: 'Something went wrong on our side.',
        suggestion: 'Retry later; if it persists, contact support with the request id.',
        details: { request_id: reply.headers.get('x-request-id') },
      },
    });
    expect(JSON.stringify(reply.body)).not.toMatch(LEAKS);
    // The operators still learn what happened: the log has it, under the same request id.
    const logged = logLines.map((line) => JSON.parse(line)).find((entry) => entry.requestId === reply.headers.get('x-request-id') && entry.level === 50);
    expect(logged?.err?.message).toBe(INTERNAL_FAILURE);
  });
});

describe('API9:2023 Improper Inventory Management', () => {
  const doc = definition as unknown as { paths: Record<string, Record<string, { operationId?: string; security?: unknown[] }>> };
  const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
  const routes = Object.entries(doc.paths).map(([path, item]) => ({
    path,
    concrete: path.replace(/\{[^}]+\}/g, 'x1'),
    methods: METHODS.filter((m) => item[m.toLowerCase()]?.operationId),
    // `security: []`: the device flow's two public steps and the health probes.
    open: METHODS.filter((m) => item[m.toLowerCase()]?.security?.length === 0),
  }));

  it('the server answers exactly the documented methods of every documented path', async () => {
    expect(routes.length).toBeGreaterThan(30);
    for (const route of routes) {
      for (const method of METHODS) {
        const reply = await call(app.baseUrl, method, route.concrete, method === 'GET' || method === 'DELETE' ? {} : { body: {} });
        if (route.methods.includes(method)) {
          // Reached the operation: authentication refuses it (the public operations answer).
          expect([200, 400, 401, 422], `${method} ${route.path}`).toContain(reply.status);
          expect(reply.status === 401 || route.open.includes(method), `${method} ${route.path}`).toBe(true);
        } else {
          expect(reply.status, `${method} ${route.path}`).toBe(405);
          expect(reply.headers.get('allow')!.split(', ').sort()).toEqual([...route.methods].sort());
        }
      }
    }
  });

  it.each(['/', '/v2/workspaces', '/v1', '/v1/admin', '/v1/users', '/v1/workspaces/x1/members/x2/extra', '/.env', '/debug/vars', '/metrics'])(
    'an undocumented path %s is 404',
    async (path) => {
      const reply = await call(app.baseUrl, 'GET', path, { token: world.alice.token });
      expect(reply.status).toBe(404);
      expect(reply.body.error.code).toBe('not_found');
    },
  );

  it('the only non-API pages are /docs, /openapi.json (the document itself) and /device', async () => {
    const openapi = await call(app.baseUrl, 'GET', '/openapi.json');
    expect(openapi.status).toBe(200);
    expect(openapi.body).toEqual(definition);
    for (const page of ['/docs', '/device']) {
      const reply = await call(app.baseUrl, 'GET', page);
      expect(reply.status, page).toBe(200);
      expect(reply.headers.get('content-type')).toMatch(/^text\/html/);
    }
  });
});

describe('API10:2023 Unsafe Consumption of APIs', () => {
  it('a pod name or log line from the cluster cannot end the stream or forge an event', async () => {
    await app.db.updateTable('installs').set({ cluster_id: world.ids.cluster }).where('id', '=', world.ids.install).execute();
    const reply = await fetch(`${app.baseUrl}/v1/installs/${world.ids.install}/logs?follow=false`, {
      headers: { authorization: `Bearer ${world.alice.token}`, accept: 'text/event-stream' },
    });
    expect(reply.status).toBe(200);
    const text = await reply.text();
    const events = text.split('\n\n').filter(Boolean);
    expect(events).toHaveLength(2);
    for (const event of events) {
      for (const line of event.split('\n')) expect(line).toMatch(/^(id|event|data): /);
      expect(event).not.toContain('\r');
    }
    const fields = events.map((event) =>
      Object.fromEntries(event.split('\n').map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)])),
    );
    expect(fields.map((f) => f.event)).toEqual(['log', 'end']);
    expect(JSON.parse(fields[0]!.data!)).toMatchObject({ pod: EVIL_POD, container: 'app', line: EVIL_LINE });
    expect(JSON.parse(fields[1]!.data!)).toEqual({ reason: 'backlog_sent' });
    expect(fields[0]!.id).toMatch(/^\d+-[A-Za-z0-9_-]{6}:1$/);
  });
});
