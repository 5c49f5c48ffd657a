// Personal access tokens restricted to workspaces, through the API: the record, minting (never beyond the calling
// token), the default workspace, lists, a membership ended later, what a restricted token may not do at all, and
// idempotency keys. The matrix over every operation is in security-matrix.test.ts.
import { describe, expect, it } from 'vitest';
import { seedSampleResources } from '../src/db/seed.ts';
import { createToken } from '../src/resources/tokens.ts';
import { call, newUser, type TestUser, useTestServer } from './support.ts';

const app = useTestServer();
const { clock } = app;

const api = (method: string, path: string, token: string, options: { body?: unknown; workspace?: string; headers?: Record<string, string> } = {}) =>
  call(app.baseUrl, method, path, {
    token,
    body: options.body,
    headers: { ...options.headers, ...(options.workspace ? { 'x-workspace-id': options.workspace } : {}) },
  });

/** A new workspace of the user's (newer than their default), through the API. */
async function workspaceOf(user: TestUser, name: string): Promise<string> {
  clock.advance(1);
  const reply = await api('POST', '/v1/workspaces', user.token, { body: { name } });
  expect(reply.status).toBe(201);
  return reply.body.id;
}

/** A PAT of the user with every scope, minted through the API by `maker` (the user's first token by default). */
async function mint(user: TestUser, workspaceIds?: string[], maker = user.token) {
  const reply = await api('POST', '/v1/user/tokens', maker, {
    body: { name: 'restricted', scopes: ['*'], ...(workspaceIds ? { workspace_ids: workspaceIds } : {}) },
  });
  return reply;
}

async function join(user: TestUser, workspaceId: string, role: 'admin' | 'member' | 'viewer' = 'member') {
  await app.db.insertInto('workspace_members').values({ workspace_id: workspaceId, user_id: user.userId, role, created_at: clock.now() }).execute();
}

describe('the record', () => {
  it('shows workspace_ids on creation, in the list and alone; null for a token of every workspace', async () => {
    const alice = await newUser(app.db, clock);
    const second = await workspaceOf(alice, 'second');
    const created = await mint(alice, [second]);
    expect(created).toMatchObject({ status: 201, body: { workspace_ids: [second] } });
    const listed = await api('GET', '/v1/user/tokens', alice.token);
    expect(listed.body.data.find((t: { id: string }) => t.id === created.body.id)).toMatchObject({ workspace_ids: [second] });
    expect(listed.body.data.find((t: { name: string }) => t.name !== 'restricted')).toMatchObject({ workspace_ids: null });
    const one = await api('GET', `/v1/user/tokens/${created.body.id}`, alice.token);
    expect(one).toMatchObject({ status: 200, body: { id: created.body.id, name: 'restricted', workspace_ids: [second] } });
    expect(JSON.stringify(one.body)).not.toContain(created.body.token);
    // Another user's token, and a session, are not there.
    const bob = await newUser(app.db, clock);
    expect((await api('GET', `/v1/user/tokens/${created.body.id}`, bob.token)).status).toBe(404);
    const session = await createToken(app.db, clock, { userId: alice.userId, kind: 'session', name: 'cli', expiresAt: null });
    expect((await api('GET', `/v1/user/tokens/${session.row.id}`, alice.token)).status).toBe(404);
  });
});

describe('minting', () => {
  it('names only workspaces the caller is a member of: 422 naming workspace_ids[i]', async () => {
    const alice = await newUser(app.db, clock);
    const bob = await newUser(app.db, clock);
    const refused = await mint(alice, [alice.workspaceId, bob.workspaceId]);
    expect(refused).toMatchObject({ status: 422, body: { error: { code: 'validation_error', param: 'workspace_ids[1]' } } });
    expect((await mint(alice, [alice.workspaceId, 'ws_missing'])).body.error.param).toBe('workspace_ids[1]');
    expect((await mint(alice, [])).body.error).toMatchObject({ code: 'validation_error', param: 'workspace_ids' });
    // A workspace of which the user is a member (not owner) is fine.
    await join(alice, bob.workspaceId, 'viewer');
    expect((await mint(alice, [bob.workspaceId])).body.workspace_ids).toEqual([bob.workspaceId]);
  });

  it('a restricted token mints only within its restriction, and without workspace_ids its own', async () => {
    const alice = await newUser(app.db, clock);
    const second = await workspaceOf(alice, 'second');
    const third = await workspaceOf(alice, 'third');
    const narrow = (await mint(alice, [second, third])).body.token;
    expect((await mint(alice, [third], narrow)).body.workspace_ids).toEqual([third]);
    expect((await mint(alice, undefined, narrow)).body.workspace_ids).toEqual([second, third]);
    const stronger = await mint(alice, [second, alice.workspaceId], narrow);
    expect(stronger).toMatchObject({
      status: 403,
      body: { error: { code: 'forbidden', param: 'workspace_ids[1]', details: { workspace_ids: [second, third] } } },
    });
  });
});

describe('acting', () => {
  it('lists only its workspaces, and acts by default in the oldest it may that the user owns', async () => {
    const alice = await newUser(app.db, clock, 'pro');
    const { clusterId } = await seedSampleResources(app.db, clock, alice);
    const second = await workspaceOf(alice, 'second');
    const token = (await mint(alice, [second])).body.token;
    const workspaces = await api('GET', '/v1/workspaces', token);
    expect(workspaces.body.data.map((w: { id: string }) => w.id)).toEqual([second]);
    // Her default workspace (the first, with the cluster) is out of reach: the second is the default.
    expect((await api('GET', '/v1/clusters', token)).body.data).toEqual([]);
    const created = await api('POST', '/v1/registry/credentials', token, { body: { name: 'r', registry_url: 'ghcr.io', username: 'u', password: 'p' } });
    expect(created.status).toBe(201);
    const row = await app.db.selectFrom('registry_credentials').select('workspace_id').where('id', '=', created.body.id).executeTakeFirstOrThrow();
    expect(row.workspace_id).toBe(second);
    expect((await api('GET', `/v1/clusters/${clusterId}`, token)).status).toBe(404);
    // A token that may act in the default acts there.
    const both = (await mint(alice, [alice.workspaceId, second])).body.token;
    expect((await api('GET', '/v1/clusters', both)).body.data.map((c: { id: string }) => c.id)).toEqual([clusterId]);
  });

  it('restricted to a workspace the user does not own, it acts in none without X-Workspace-Id', async () => {
    const alice = await newUser(app.db, clock);
    const bob = await newUser(app.db, clock);
    await join(alice, bob.workspaceId, 'admin');
    const token = (await mint(alice, [bob.workspaceId])).body.token;
    expect((await api('GET', '/v1/registry/credentials', token)).body.data).toEqual([]);
    const body = { name: 'r', registry_url: 'ghcr.io', username: 'u', password: 'p' };
    expect((await api('POST', '/v1/registry/credentials', token, { body })).body.error).toMatchObject({ code: 'validation_error', param: 'X-Workspace-Id' });
    expect((await api('POST', '/v1/registry/credentials', token, { body, workspace: bob.workspaceId })).status).toBe(201);
  });

  it('grants nothing the user does not have: a membership ended later ends the access', async () => {
    const alice = await newUser(app.db, clock);
    const bob = await newUser(app.db, clock, 'pro');
    const { clusterId } = await seedSampleResources(app.db, clock, bob);
    await join(alice, bob.workspaceId, 'admin');
    const token = (await mint(alice, [bob.workspaceId])).body.token;
    expect((await api('GET', `/v1/clusters/${clusterId}`, token)).status).toBe(200);
    expect((await api('DELETE', `/v1/workspaces/${bob.workspaceId}/members/${alice.userId}`, bob.token)).status).toBe(204);
    expect((await api('GET', `/v1/clusters/${clusterId}`, token)).status).toBe(404);
    expect((await api('GET', '/v1/clusters', token, { workspace: bob.workspaceId })).body.error).toMatchObject({ code: 'forbidden', param: 'X-Workspace-Id' });
    expect((await api('GET', `/v1/workspaces/${bob.workspaceId}`, token)).status).toBe(404);
    expect((await api('GET', '/v1/workspaces', token)).body.data).toEqual([]);
    // Nor does it mint a token for the workspace it named.
    expect((await mint(alice, [bob.workspaceId], token)).body.error).toMatchObject({ code: 'validation_error', param: 'workspace_ids[0]' });
  });

  it('sees only the notifications and invitations of its workspaces', async () => {
    const alice = await newUser(app.db, clock, 'pro');
    await seedSampleResources(app.db, clock, alice); // an unread notification of her default workspace
    const second = await workspaceOf(alice, 'second');
    const bob = await newUser(app.db, clock);
    const email = (await app.db.selectFrom('users').select('email').where('id', '=', alice.userId).executeTakeFirstOrThrow()).email;
    const invitation = await api('POST', `/v1/workspaces/${bob.workspaceId}/invitations`, bob.token, { body: { email } });
    const token = (await mint(alice, [second])).body.token;
    const all = await api('GET', '/v1/notifications', alice.token);
    expect(all.body.data).toHaveLength(1);
    expect((await api('GET', '/v1/notifications', token)).body.data).toEqual([]);
    expect((await api('PATCH', `/v1/notifications/${all.body.data[0].id}/read`, token)).status).toBe(404);
    expect((await api('GET', '/v1/user/invitations', token)).body.data).toEqual([]);
    expect((await api('POST', `/v1/user/invitations/${invitation.body.id}/accept`, token)).status).toBe(404);
    expect((await api('POST', `/v1/user/invitations/${invitation.body.id}/decline`, token)).status).toBe(404);
    expect((await api('GET', '/v1/user/invitations', alice.token)).body.data).toHaveLength(1);
  });

  it('creates no workspace and approves no device sign-in', async () => {
    const alice = await newUser(app.db, clock);
    const token = (await mint(alice, [alice.workspaceId])).body.token;
    const workspace = await api('POST', '/v1/workspaces', token, { body: { name: 'elsewhere' } });
    expect(workspace).toMatchObject({ status: 403, body: { error: { code: 'forbidden', details: { workspace_ids: [alice.workspaceId] } } } });
    const code = await call(app.baseUrl, 'POST', '/v1/auth/device/code', { body: { client_id: 'platform-cli' } });
    const approve = await api('POST', '/v1/auth/device/approve', token, { body: { user_code: code.body.user_code, action: 'approve' } });
    expect(approve).toMatchObject({ status: 403, body: { error: { code: 'forbidden', details: { workspace_ids: [alice.workspaceId] } } } });
    // Unrestricted, both work.
    expect((await api('POST', '/v1/auth/device/approve', alice.token, { body: { user_code: code.body.user_code, action: 'approve' } })).status).toBe(200);
    expect((await api('POST', '/v1/workspaces', alice.token, { body: { name: 'elsewhere' } })).status).toBe(201);
  });

  it('never replays an idempotent answer given in another workspace', async () => {
    const alice = await newUser(app.db, clock, 'pro');
    const { productId } = await seedSampleResources(app.db, clock, alice);
    const second = await workspaceOf(alice, 'second');
    const token = (await mint(alice, [second])).body.token;
    const key = { 'idempotency-key': `key-${Math.random().toString(36).slice(2)}` };
    const body = { product_id: productId, region_id: 'fsn1' };
    const first = await api('POST', '/v1/installs', alice.token, { body, headers: key });
    expect(first.status).toBe(202);
    const again = await api('POST', '/v1/installs', token, { body, headers: key });
    expect(again.body.error).toMatchObject({ code: 'idempotency_key_reused' });
    expect(JSON.stringify(again.body)).not.toContain(first.body.id);
  });
});
