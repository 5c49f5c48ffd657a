// Every operation through the generated client against the real server and a real PostgreSQL, with
// response validation on: the success path and each documented error.
import { createPlatformClient, PlatformApiError } from '@platform/client';
import { beforeAll, describe, expect, it } from 'vitest';
import { seedSampleResources } from '../src/db/seed.ts';
import { newId } from '../src/ids.ts';
import { apiError, call, newUser, type TestUser, useTestServer } from './support.ts';

const app = useTestServer();
const { clock } = app;
let alice: TestUser;
let bob: TestUser;

const client = (user: TestUser, workspaceId?: string) =>
  createPlatformClient({ baseUrl: app.baseUrl, token: user.token, retry: false, ...(workspaceId ? { workspaceId } : {}) });

const seedCompute = (user: TestUser) => seedSampleResources(app.db, clock, user, `c-${user.userId.slice(-6)}`);

let a: Awaited<ReturnType<typeof seedCompute>>;

beforeAll(async () => {
  alice = await newUser(app.db, clock, 'pro');
  bob = await newUser(app.db, clock, 'free');
  a = await seedCompute(alice);
});

describe('listWorkspaces', () => {
  it('lists the caller’s workspaces only', async () => {
    const page = await client(alice).GET('/v1/workspaces', {});
    expect(page.data.map((w) => w.id)).toEqual([alice.workspaceId]);
    // A new user's first workspace has a name that reads well whatever the email is.
    expect(page.data[0]?.name).toBe('Personal workspace');
    expect(page.pagination.has_more).toBe(false);
  });
  it('rejects a limit out of range with param limit', async () => {
    const error = await apiError(client(alice).GET('/v1/workspaces', { params: { query: { limit: 0 } } }));
    expect(error).toMatchObject({ status: 422, code: 'validation_error', param: 'limit' });
  });
  it('rejects an unreadable cursor with param cursor', async () => {
    const error = await apiError(client(alice).GET('/v1/workspaces', { params: { query: { cursor: 'not-a-cursor' } } }));
    expect(error).toMatchObject({ status: 422, code: 'validation_error', param: 'cursor' });
  });
});

describe('listClusters', () => {
  it('uses the default workspace without X-Workspace-Id, and the named one with it', async () => {
    expect((await client(alice).GET('/v1/clusters', {})).data.map((c) => c.id)).toEqual([a.clusterId]);
    expect((await client(alice, alice.workspaceId).GET('/v1/clusters', {})).data).toHaveLength(1);
  });
  it('is 403 forbidden for a workspace the caller is not a member of', async () => {
    const error = await apiError(client(bob, alice.workspaceId).GET('/v1/clusters', {}));
    expect(error).toMatchObject({ status: 403, code: 'forbidden', param: 'X-Workspace-Id' });
  });
  it('is 403 for a non-member whatever else is wrong with the request: where it acts is checked before what it asks', async () => {
    const asBob = (path: string, init: RequestInit = {}) =>
      fetch(`${app.baseUrl}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${bob.token}`, 'x-workspace-id': alice.workspaceId, 'content-type': 'application/json' },
      });
    for (const answer of [
      await asBob('/v1/clusters?limit=0'),
      await asBob('/v1/clusters', { method: 'POST', body: '{}' }),
      await asBob('/v1/installs', { method: 'POST', body: JSON.stringify({ product_id: a.productId, typo: 1 }) }),
    ]) {
      expect({ status: answer.status, body: await answer.json() }).toMatchObject({
        status: 403,
        body: { error: { code: 'forbidden', param: 'X-Workspace-Id' } },
      });
    }
  });
  it('is 403 forbidden for an X-Workspace-Id that is no workspace id at all (the spec: an invalid workspace id)', async () => {
    for (const invalid of ['ws_nope', 'x'.repeat(65), ' ']) {
      const answer = await fetch(`${app.baseUrl}/v1/clusters`, { headers: { authorization: `Bearer ${alice.token}`, 'x-workspace-id': invalid } });
      expect({ invalid, status: answer.status, body: await answer.json() }).toMatchObject({
        invalid,
        status: 403,
        body: { error: { code: 'forbidden', param: 'X-Workspace-Id' } },
      });
    }
  });
  it('pages with a cursor that never repeats or skips', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const id = newId('cl');
      ids.push(id);
      // Same created_at for several rows: the id breaks the tie.
      await app.db
        .insertInto('clusters')
        .values({
          id,
          workspace_id: user.workspaceId,
          name: `c${i}`,
          region_id: 'fsn1',
          kaas_version: 'v1.31',
          kaas_release: 'v1.31.13',
          status: 'RUNNING',
          status_message: null,
          created_at: clock.now() + Math.floor(i / 3),
        })
        .execute();
    }
    const seen: string[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await client(user).GET('/v1/clusters', { params: { query: { limit: 3, ...(cursor ? { cursor } : {}) } } });
      seen.push(...page.data.map((c) => c.id));
      cursor = page.pagination.cursor;
      if (!page.pagination.has_more) break;
    }
    // Order is (created_at, id): ids made in the same millisecond are not in the order they were made.
    const byCreatedThenId = ids.map((id, i) => ({ id, at: Math.floor(i / 3) })).sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : 1));
    expect(seen).toEqual(byCreatedThenId.map((r) => r.id));
    // The last cursor, kept, later returns only what was added since.
    const later = newId('cl');
    await app.db
      .insertInto('clusters')
      .values({
        id: later,
        workspace_id: user.workspaceId,
        name: 'later',
        region_id: 'fsn1',
        kaas_version: 'v1.31',
        kaas_release: 'v1.31.13',
        status: 'RUNNING',
        status_message: null,
        created_at: clock.now() + 10,
      })
      .execute();
    const next = await client(user).GET('/v1/clusters', { params: { query: { cursor } } });
    expect(next.data.map((c) => c.id)).toEqual([later]);
    const empty = await client(user).GET('/v1/clusters', { params: { query: { cursor: next.pagination.cursor } } });
    expect(empty).toEqual({ data: [], pagination: { cursor: next.pagination.cursor, has_more: false } });
  });
});

describe('compute', () => {
  it('getClusterComputeStatus reports machines and limits', async () => {
    const status = await client(alice).GET('/v1/clusters/{clusterId}/compute_status', { params: { path: { clusterId: a.clusterId } } });
    expect(status).toEqual({
      machines: 2,
      max_machines: 3,
      autoscaling: { state: 'idle', provisioning: 0, queued: 0, provisioning_limit: 3, backoff_until: null },
    });
  });
  it('getClusterComputeStatus is 404 for another workspace’s cluster', async () => {
    const error = await apiError(client(bob).GET('/v1/clusters/{clusterId}/compute_status', { params: { path: { clusterId: a.clusterId } } }));
    expect(error).toMatchObject({ status: 404, code: 'not_found' });
  });
  it('listComputeConfigs lists the workspace’s configs', async () => {
    const page = await client(alice).GET('/v1/compute/configs', {});
    expect(page.data.map((c) => c.id)).toEqual([a.configId]);
    expect(page.data[0]).toMatchObject({ provider: 'hcloud', cloud_credential_id: null });
  });
  it('listMachines returns a bare array, and needs cluster_id', async () => {
    const machines = await client(alice).GET('/v1/compute/machines', { params: { query: { cluster_id: a.clusterId } } });
    expect(machines.map((m) => m.provider_id)).toEqual([a.providerId, a.suspendedId]);
    const missing = await apiError(client(alice).GET('/v1/compute/machines', { params: { query: {} as { cluster_id: string } } }));
    expect(missing).toMatchObject({ status: 422, param: 'cluster_id' });
    const foreign = await apiError(client(bob).GET('/v1/compute/machines', { params: { query: { cluster_id: a.clusterId } } }));
    expect(foreign).toMatchObject({ status: 404, param: 'cluster_id' });
  });
  it('checkMachineDrift decodes the provider id and compares with the config', async () => {
    const inSync = await client(alice).GET('/v1/compute/machines/{providerId}/drift', { params: { path: { providerId: a.providerId } } });
    expect(inSync).toMatchObject({ drifted: false, differences: [] });
    // Someone resized the server outside the platform.
    await app.db.updateTable('machines').set({ server_type: 'cx32' }).where('provider_id', '=', a.suspendedId).execute();
    const drifted = await client(alice).GET('/v1/compute/machines/{providerId}/drift', { params: { path: { providerId: a.suspendedId } } });
    expect(drifted).toMatchObject({ drifted: true, differences: [{ field: 'server_type', desired: 'cx2*', actual: 'cx32' }] });
    const foreign = await apiError(client(bob).GET('/v1/compute/machines/{providerId}/drift', { params: { path: { providerId: a.providerId } } }));
    expect(foreign.status).toBe(404);
  });
  it('deleteComputeConfig: 409 while machines use it, 404 when missing, 204 when free', async () => {
    const inUse = await apiError(client(alice).DELETE('/v1/compute/configs/{id}', { params: { path: { id: a.configId } } }));
    expect(inUse).toMatchObject({ status: 409, code: 'conflict' });
    const missing = await apiError(client(alice).DELETE('/v1/compute/configs/{id}', { params: { path: { id: 'cc_missing' } } }));
    expect(missing).toMatchObject({ status: 404, code: 'not_found' });
    const free = newId('cc');
    await app.db
      .insertInto('compute_configs')
      .values({
        id: free,
        workspace_id: alice.workspaceId,
        name: 'spare',
        provider: 'hcloud',
        provider_config: JSON.stringify({ provider: 'hcloud', region: 'fsn1', image: 'x', machine_type_filter: '*' }),
        cloud_credential_id: null,
        created_at: clock.now(),
      })
      .execute();
    const foreign = await apiError(client(bob).DELETE('/v1/compute/configs/{id}', { params: { path: { id: free } } }));
    expect(foreign.status).toBe(404);
    await expect(client(alice).DELETE('/v1/compute/configs/{id}', { params: { path: { id: free } } })).resolves.toBeUndefined();
    expect(await app.db.selectFrom('compute_configs').select('id').where('id', '=', free).execute()).toEqual([]);
  });
  it('resumeSuspension: 202 resuming, then 409 on a second resume, 404 for others', async () => {
    const foreign = await apiError(client(bob).POST('/v1/compute/suspensions/{id}/resume', { params: { path: { id: a.suspensionId } } }));
    expect(foreign.status).toBe(404);
    const resumed = await client(alice).POST('/v1/compute/suspensions/{id}/resume', { params: { path: { id: a.suspensionId } } });
    expect(resumed).toMatchObject({ id: a.suspensionId, status: 'resuming' });
    const again = await apiError(client(alice).POST('/v1/compute/suspensions/{id}/resume', { params: { path: { id: a.suspensionId } } }));
    expect(again).toMatchObject({ status: 409, code: 'conflict' });
    const workflows = await app.db.selectFrom('workflows').selectAll().where('subject_id', '=', a.suspensionId).execute();
    expect(workflows).toHaveLength(1);
  });
});

describe('listRegistryCredentials', () => {
  it('lists credentials without secrets', async () => {
    await app.db
      .insertInto('registry_credentials')
      .values({
        id: newId('rc'),
        workspace_id: alice.workspaceId,
        name: 'ghcr',
        registry_url: 'ghcr.io',
        username: 'bot',
        password_ciphertext: null,
        is_active: true,
        created_at: clock.now(),
        last_used_at: null,
      })
      .execute();
    const page = await client(alice).GET('/v1/registry/credentials', {});
    expect(page.data).toHaveLength(1);
    expect(page.data[0]).toMatchObject({ registry_url: 'ghcr.io', last_used_at: null });
  });
});

describe('updateProduct', () => {
  const body = (clusterId: string, sourceId?: string) => ({
    name: 'Shop v2',
    sources: [{ ...(sourceId ? { id: sourceId } : {}), chart: { repo_url: 'https://charts.example.com', target_revision: '2.0.0', chart: 'shop' } }],
    cluster_ids: [clusterId],
  });
  it('replaces the configuration, keeps a sent source id and makes a new template', async () => {
    const before = await app.db.selectFrom('products').selectAll().where('id', '=', a.productId).executeTakeFirstOrThrow();
    const result = await client(alice).PATCH('/v1/products/{id}', { params: { path: { id: a.productId } }, body: body(a.clusterId, a.sourceId) });
    expect(result.product_id).toBe(a.productId);
    expect(result.template_id).not.toBe(before.template_id);
    const after = await app.db.selectFrom('products').selectAll().where('id', '=', a.productId).executeTakeFirstOrThrow();
    expect(after).toMatchObject({ name: 'Shop v2', regeneration_status: 'pending', stripe_price_ids: [], settings: {} });
    expect(after.sources.map((s) => s.id)).toEqual([a.sourceId]);
  });
  it('rejects missing required fields, unknown fields, invisible clusters and unknown source ids', async () => {
    const api = client(alice);
    const path = { path: { id: a.productId } };
    const missing = await apiError(api.PATCH('/v1/products/{id}', { params: path, body: { name: 'x', cluster_ids: [a.clusterId] } as never }));
    expect(missing).toMatchObject({ status: 422, param: 'sources' });
    const unknownField = await apiError(api.PATCH('/v1/products/{id}', { params: path, body: { ...body(a.clusterId), colour: 'red' } as never }));
    expect(unknownField).toMatchObject({ status: 422, param: 'colour' });
    const foreignCluster = await seedCompute(bob);
    const invisible = await apiError(api.PATCH('/v1/products/{id}', { params: path, body: body(foreignCluster.clusterId) }));
    expect(invisible).toMatchObject({ status: 422, param: 'cluster_ids[0]' });
    const unknownSource = await apiError(api.PATCH('/v1/products/{id}', { params: path, body: body(a.clusterId, 'src_nope') }));
    expect(unknownSource).toMatchObject({ status: 422, param: 'sources[0].id' });
    const notFound = await apiError(client(bob).PATCH('/v1/products/{id}', { params: path, body: body(foreignCluster.clusterId) }));
    expect(notFound.status).toBe(404);
  });
});

describe('createInstall', () => {
  it('starts an install workflow: 202 pending with a workflow id', async () => {
    const install = await client(alice).POST('/v1/installs', {
      body: { product_id: a.productId, region_id: 'fsn1', overrides: [{ template_helm_source_id: a.sourceId, values: { replicas: 2 } }] },
    });
    expect(install).toMatchObject({ status: 'pending', product_id: a.productId, cluster_id: null, workspace_id: alice.workspaceId });
    const workflow = await app.db.selectFrom('workflows').selectAll().where('id', '=', install.workflow_id).executeTakeFirstOrThrow();
    expect(workflow).toMatchObject({ kind: 'createInstall', subject_id: install.id, status: 'pending' });
  });
  it('404 with param for an unknown product or region; 422 for an unknown source', async () => {
    const api = client(alice);
    expect(await apiError(api.POST('/v1/installs', { body: { product_id: 'prd_nope', region_id: 'fsn1' } }))).toMatchObject({
      status: 404,
      param: 'product_id',
    });
    expect(await apiError(api.POST('/v1/installs', { body: { product_id: a.productId, region_id: 'mars1' } }))).toMatchObject({
      status: 404,
      param: 'region_id',
    });
    expect(
      await apiError(
        api.POST('/v1/installs', { body: { product_id: a.productId, region_id: 'fsn1', overrides: [{ template_helm_source_id: 'src_x', values: {} }] } }),
      ),
    ).toMatchObject({
      status: 422,
      param: 'overrides[0].template_helm_source_id',
    });
    expect(await apiError(client(bob).POST('/v1/installs', { body: { product_id: a.productId, region_id: 'fsn1' } }))).toMatchObject({
      status: 404,
      param: 'product_id',
    });
  });
  it('50 concurrent calls with one idempotency key create one install: the rest get 409 while it runs, then its answer', async () => {
    const body = { product_id: a.productId, region_id: 'fsn1' };
    const at = (key: string) => ({ body, idempotencyKey: key });
    // Without retries: the install, or 409 naming the key while the first request with it is still running.
    const bare = client(alice);
    const key = `key-${newId('wf')}`;
    const answers = await Promise.all(Array.from({ length: 50 }, () => bare.POST('/v1/installs', at(key)).catch((error: unknown) => error)));
    const installs = answers.filter((answer): answer is { id: string } => !(answer instanceof PlatformApiError));
    expect(installs.length).toBeGreaterThanOrEqual(1);
    expect(new Set(installs.map((install) => install.id)).size).toBe(1);
    for (const refused of answers.filter((answer) => answer instanceof PlatformApiError)) {
      expect(refused).toMatchObject({ status: 409, code: 'conflict', param: 'idempotency-key' });
    }
    expect(await bare.POST('/v1/installs', at(key))).toMatchObject({ id: installs[0]!.id });
    // The client retries such a 409: every call gets the one install.
    const retrying = createPlatformClient({ baseUrl: app.baseUrl, token: alice.token, retry: { maxRetries: 10, baseDelayMs: 20, maxDelayMs: 500 } });
    const other = `key-${newId('wf')}`;
    const results = await Promise.all(Array.from({ length: 50 }, () => retrying.POST('/v1/installs', at(other))));
    const ids = new Set(results.map((install) => install.id));
    expect(ids.size).toBe(1);
    expect(
      await app.db
        .selectFrom('installs')
        .select('id')
        .where('id', 'in', [...ids, installs[0]!.id])
        .execute(),
    ).toHaveLength(2);
    const reused = await apiError(bare.POST('/v1/installs', { body: { ...body, region_id: 'nbg1' }, idempotencyKey: key }));
    expect(reused).toMatchObject({ status: 422, code: 'idempotency_key_reused' });
  });

  it('a request that failed keeps nothing under its key: sent again it runs anew, and a corrected body is taken', async () => {
    const key = `key-${newId('wf')}`;
    const send = (product_id: string) =>
      call(app.baseUrl, 'POST', '/v1/installs', { token: alice.token, body: { product_id, region_id: 'fsn1' }, headers: { 'idempotency-key': key } });
    for (let i = 0; i < 2; i++) {
      const failed = await send('prd_nope');
      expect(failed).toMatchObject({ status: 404, body: { error: { code: 'not_found', param: 'product_id' } } });
      expect(failed.headers.get('idempotent-replayed')).toBeNull();
    }
    const corrected = await send(a.productId);
    expect(corrected.status).toBe(202);
    const replayed = await send(a.productId);
    expect(replayed).toMatchObject({ status: 202, body: { id: corrected.body.id } });
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
  });
});

describe('streamInstallLogs', () => {
  it('is 404 for another user’s install and 422 for a bad tail', async () => {
    const install = await client(alice).POST('/v1/installs', { body: { product_id: a.productId, region_id: 'fsn1' } });
    const foreign = await fetch(`${app.baseUrl}/v1/installs/${install.id}/logs`, {
      headers: { authorization: `Bearer ${bob.token}`, accept: 'text/event-stream' },
    });
    expect(foreign.status).toBe(404);
    const bad = await fetch(`${app.baseUrl}/v1/installs/${install.id}/logs?tail=0`, { headers: { authorization: `Bearer ${alice.token}` } });
    expect(bad.status).toBe(422);
    expect((await bad.json()) as unknown).toMatchObject({ error: { param: 'tail' } });
    const ok = await fetch(`${app.baseUrl}/v1/installs/${install.id}/logs?follow=false`, {
      headers: { authorization: `Bearer ${alice.token}`, accept: 'text/event-stream' },
    });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(await ok.text()).toBe('event: end\ndata: {"reason":"backlog_sent"}\n\n');
  });

  it('takes back the Last-Event-ID it sends for an install of many containers (an id grows by each container)', async () => {
    const install = await client(alice).POST('/v1/installs', { body: { product_id: a.productId, region_id: 'fsn1' } });
    const positions = Array.from({ length: 40 }, (_, i) => `c${String(i).padStart(5, '0')}:${1000 + i}`).join('.');
    const id = `1732272662087-${positions}`;
    expect(id.length).toBeGreaterThan(256);
    const resumed = await fetch(`${app.baseUrl}/v1/installs/${install.id}/logs?follow=false`, {
      headers: { authorization: `Bearer ${alice.token}`, accept: 'text/event-stream', 'last-event-id': id },
    });
    expect(resumed.status).toBe(200);
    expect(await resumed.text()).toBe('event: end\ndata: {"reason":"backlog_sent"}\n\n');
  });
});

describe('markNotificationRead', () => {
  it('sets read_at once and keeps it', async () => {
    const first = await client(alice).PATCH('/v1/notifications/{id}/read', { params: { path: { id: a.notificationId } } });
    expect(first.read_at).toBe(clock.now());
    clock.advance(60);
    const second = await client(alice).PATCH('/v1/notifications/{id}/read', { params: { path: { id: a.notificationId } } });
    expect(second.read_at).toBe(first.read_at);
    const foreign = await apiError(client(bob).PATCH('/v1/notifications/{id}/read', { params: { path: { id: a.notificationId } } }));
    expect(foreign).toMatchObject({ status: 404, code: 'not_found' });
    // A notification is its user's, not a workspace's: the hint says so.
    expect(foreign.suggestion).toBe('Check the id with GET /v1/notifications; only your own notifications are visible.');
  });
});

describe('createUserToken', () => {
  it('creates a working token shown once; expiry must be in the future', async () => {
    const created = await client(alice).POST('/v1/user/tokens', { body: { name: 'ci', expires_at: clock.now() + 3600, scopes: ['*'] } });
    expect(created.token).toMatch(/^svc_pat_[A-Za-z0-9]{38}$/);
    expect(created.expires_at).toBe(clock.now() + 3600);
    const withNew = createPlatformClient({ baseUrl: app.baseUrl, token: created.token, retry: false });
    expect((await withNew.GET('/v1/workspaces', {})).data).toHaveLength(1);
    clock.advance(3600);
    expect(await apiError(withNew.GET('/v1/workspaces', {}))).toMatchObject({ status: 401, code: 'unauthorized' });
    const past = await apiError(client(alice).POST('/v1/user/tokens', { body: { name: 'old', expires_at: clock.now() - 1, scopes: ['*'] } }));
    expect(past).toMatchObject({ status: 422, param: 'expires_at' });
    const never = await client(alice).POST('/v1/user/tokens', { body: { name: 'forever', scopes: ['*'] } });
    expect(never.expires_at).toBeNull();
  });
});

describe('quotas', () => {
  it('listQuotas reports plan limits and usage across owned workspaces', async () => {
    const entries = await client(alice).GET('/v1/quotas', {});
    expect(entries.map((e) => e.metric)).toEqual(['kaas/clusters', 'compute/machines', 'compute/cpu', 'compute/memory']);
    expect(entries.find((e) => e.metric === 'kaas/clusters')).toMatchObject({ limit: 3, usage: 1, remaining: 2 });
    // A suspended machine is still owned (its snapshot keeps its place): it counts.
    expect(entries.find((e) => e.metric === 'compute/machines')).toMatchObject({ limit: 3, usage: 2 });
    const withCluster = await client(alice).GET('/v1/quotas', { params: { query: { cluster_id: a.clusterId } } });
    expect(withCluster.at(-1)).toMatchObject({ metric: 'compute/provisioning', type: 'concurrency', limit: 3, usage: 0 });
  });
  it('getQuota decodes %2F, honours overrides and 404s an unknown metric', async () => {
    const entry = await client(bob).GET('/v1/quotas/{metric}', { params: { path: { metric: 'kaas/clusters' } } });
    expect(entry).toMatchObject({ metric: 'kaas/clusters', limit: 1 });
    await app.db.insertInto('quota_overrides').values({ user_id: bob.userId, workspace_id: null, metric: 'kaas/clusters', limit: 5 }).execute();
    expect(await client(bob).GET('/v1/quotas/{metric}', { params: { path: { metric: 'kaas/clusters' } } })).toMatchObject({ limit: 5 });
    await app.db.insertInto('quota_overrides').values({ user_id: null, workspace_id: bob.workspaceId, metric: 'kaas/clusters', limit: 7 }).execute();
    expect(await client(bob).GET('/v1/quotas/{metric}', { params: { path: { metric: 'kaas/clusters' } } })).toMatchObject({ limit: 7 });
    const raw = await fetch(`${app.baseUrl}/v1/quotas/kaas%2Fclusters`, { headers: { authorization: `Bearer ${bob.token}` } });
    expect(raw.status).toBe(200);
    expect((await apiError(client(bob).GET('/v1/quotas/{metric}', { params: { path: { metric: 'gpu/cards' } } }))).status).toBe(404);
  });
});

describe('workspaces and members', () => {
  it('creates a workspace owned by the caller, gets it, and manages members (admins only)', async () => {
    const carol = await newUser(app.db, clock, 'free');
    const created = await client(alice).POST('/v1/workspaces', { body: { name: 'Team', icon: '🚀' } });
    expect(created).toMatchObject({ name: 'Team', icon: '🚀' });
    expect(await client(alice).GET('/v1/workspaces/{workspaceId}', { params: { path: { workspaceId: created.id } } })).toEqual(created);
    const carolEmail = (await app.db.selectFrom('users').select('email').where('id', '=', carol.userId).executeTakeFirstOrThrow()).email;
    const invitation = await client(alice).POST('/v1/workspaces/{workspaceId}/invitations', {
      params: { path: { workspaceId: created.id } },
      body: { email: carolEmail.toUpperCase() },
    });
    expect(invitation).toMatchObject({ workspace_id: created.id, workspace_name: 'Team', email: carolEmail, role: 'member' });
    expect((await client(carol).GET('/v1/user/invitations', {})).data.map((i) => i.id)).toEqual([invitation.id]);
    expect(await client(carol).POST('/v1/user/invitations/{id}/accept', { params: { path: { id: invitation.id } } })).toMatchObject({
      user_id: carol.userId,
      role: 'member',
    });
    expect(await apiError(client(carol).POST('/v1/user/invitations/{id}/accept', { params: { path: { id: invitation.id } } }))).toMatchObject({ status: 404 });
    const members = await client(carol).GET('/v1/workspaces/{workspaceId}/members', { params: { path: { workspaceId: created.id } } });
    expect(members.data.map((m) => m.role)).toEqual(['owner', 'member']);
    // Carol now sees the workspace and may act in it, but may not manage members.
    expect((await client(carol, created.id).GET('/v1/clusters', {})).data).toEqual([]);
    expect(
      await apiError(
        client(carol).DELETE('/v1/workspaces/{workspaceId}/members/{userId}', { params: { path: { workspaceId: created.id, userId: alice.userId } } }),
      ),
    ).toMatchObject({ status: 403, code: 'forbidden' });
    expect(
      await apiError(
        client(alice).DELETE('/v1/workspaces/{workspaceId}/members/{userId}', { params: { path: { workspaceId: created.id, userId: alice.userId } } }),
      ),
    ).toMatchObject({ status: 409 });
    await client(alice).DELETE('/v1/workspaces/{workspaceId}/members/{userId}', { params: { path: { workspaceId: created.id, userId: carol.userId } } });
    expect(await apiError(client(carol).GET('/v1/workspaces/{workspaceId}', { params: { path: { workspaceId: created.id } } }))).toMatchObject({ status: 404 });
  });
});

describe('regions and clusters', () => {
  it('lists the seeded regions', async () => {
    const regions = await client(alice).GET('/v1/regions', {});
    expect(regions.data.map((r) => r.id)).toEqual(expect.arrayContaining(['fsn1', 'nbg1', 'hel1', 'ash', 'hil', 'sin']));
  });
  it('creates a cluster (202 PROVISIONING), gets it, refuses a duplicate name, deletes it', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const cluster = await client(user).POST('/v1/clusters', { body: { name: 'edge', region_id: 'hel1' } });
    expect(cluster).toMatchObject({ name: 'edge', region_id: 'hel1', workspace_id: user.workspaceId, kaas: { version: 'v1.31', status: 'PROVISIONING' } });
    expect(await client(user).GET('/v1/clusters/{clusterId}', { params: { path: { clusterId: cluster.id } } })).toEqual(cluster);
    expect(await apiError(client(user).POST('/v1/clusters', { body: { name: 'edge', region_id: 'hel1' } }))).toMatchObject({ status: 409, param: 'name' });
    expect(await apiError(client(user).POST('/v1/clusters', { body: { name: 'x', region_id: 'mars1' } }))).toMatchObject({
      status: 404,
      param: 'region_id',
      suggestion: 'List the regions with GET /v1/regions and use one of their ids.',
    });
    expect(await apiError(client(user).POST('/v1/clusters', { body: { name: 'Not A Label', region_id: 'hel1' } }))).toMatchObject({
      status: 422,
      param: 'name',
    });
    await client(user).DELETE('/v1/clusters/{clusterId}', { params: { path: { clusterId: cluster.id } } });
    expect(await apiError(client(user).GET('/v1/clusters/{clusterId}', { params: { path: { clusterId: cluster.id } } }))).toMatchObject({ status: 404 });
  });
  it('refuses to delete a cluster that still has machines, saying what it holds', async () => {
    const refused = await apiError(client(alice).DELETE('/v1/clusters/{clusterId}', { params: { path: { clusterId: a.clusterId } } }));
    expect(refused).toMatchObject({
      status: 409,
      code: 'conflict',
      message: `Cluster ${a.clusterId} still has 2 machines.`,
      suggestion: 'Delete its machines first.',
      details: { machines: 2, installs: 0 },
    });
  });
});

describe('compute configs, cloud credentials, machines and suspensions', () => {
  it('creates a BYOM config from a cloud credential whose secret never comes back', async () => {
    const user = await newUser(app.db, clock, 'free');
    const credential = await client(user).POST('/v1/compute/cloud_credentials', { body: { name: 'mine', provider: 'hcloud', secret: 'hc-secret-value' } });
    expect(JSON.stringify(credential)).not.toContain('hc-secret-value');
    expect((await client(user).GET('/v1/compute/cloud_credentials', {})).data).toEqual([credential]);
    const config = await client(user).POST('/v1/compute/configs', {
      body: {
        name: 'byom',
        provider: 'hcloud',
        provider_config: { provider: 'hcloud', region: 'fsn1', image: 'ubuntu-24.04', machine_type_filter: 'cax*' },
        cloud_credential_id: credential.id,
      },
    });
    expect(config.cloud_credential_id).toBe(credential.id);
    expect(await apiError(client(user).DELETE('/v1/compute/cloud_credentials/{id}', { params: { path: { id: credential.id } } }))).toMatchObject({
      status: 409,
    });
    const unknown = await apiError(
      client(user).POST('/v1/compute/configs', {
        body: {
          name: 'x',
          provider: 'hcloud',
          provider_config: { provider: 'hcloud', region: 'fsn1', image: 'i', machine_type_filter: 'cx*' },
          cloud_credential_id: 'ccr_nope',
        },
      }),
    );
    expect(unknown).toMatchObject({ status: 422, param: 'cloud_credential_id' });
    const nowhere = await apiError(
      client(user).POST('/v1/compute/configs', {
        body: { name: 'x', provider: 'hcloud', provider_config: { provider: 'hcloud', region: 'mars', image: 'i', machine_type_filter: 'cx*' } },
      }),
    );
    expect(nowhere).toMatchObject({ status: 422, param: 'provider_config.region', message: 'Region mars is not one where machines are made.' });
    expect(nowhere.suggestion).toBe('Use one of the regions GET /v1/regions lists: ash, fsn1, hel1, hil, nbg1, sin.');
    await client(user).DELETE('/v1/compute/configs/{id}', { params: { path: { id: config.id } } });
    await client(user).DELETE('/v1/compute/cloud_credentials/{id}', { params: { path: { id: credential.id } } });
  });

  it('requests, suspends and deletes a machine; lists and gets suspensions', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const world = await seedCompute(user);
    const machine = await client(user).POST('/v1/compute/machines', { body: { cluster_id: world.clusterId, compute_config_id: world.configId } });
    expect(machine).toMatchObject({ status: 'provisioning', server_type: 'cx22', cpu: 2, byom: false, cluster_id: world.clusterId });
    // Only a ready machine can be suspended.
    expect(
      await apiError(client(user).POST('/v1/compute/machines/{providerId}/suspend', { params: { path: { providerId: machine.provider_id } } })),
    ).toMatchObject({ status: 409 });
    const suspension = await client(user).POST('/v1/compute/machines/{providerId}/suspend', { params: { path: { providerId: world.providerId } } });
    expect(suspension).toMatchObject({ status: 'suspending', provider_id: world.providerId, reason: 'manual' });
    expect(await client(user).GET('/v1/compute/suspensions/{id}', { params: { path: { id: suspension.id } } })).toEqual(suspension);
    const listed = await client(user).GET('/v1/compute/suspensions', {});
    expect(listed.data.map((s) => s.id)).toContain(suspension.id);
    await client(user).DELETE('/v1/compute/machines/{providerId}', { params: { path: { providerId: machine.provider_id } } });
    // Deletion is carried out by a workflow (no workers run here): until then the machine lists as deleting.
    const machines = await client(user).GET('/v1/compute/machines', { params: { query: { cluster_id: world.clusterId } } });
    expect(machines.find((m) => m.provider_id === machine.provider_id)?.status).toBe('deleting');
  });

  it("says whether a refused server type is outside the config's filter or not offered at all", async () => {
    const user = await newUser(app.db, clock, 'pro');
    const world = await seedCompute(user);
    const request = (server_type: string) =>
      apiError(client(user).POST('/v1/compute/machines', { body: { cluster_id: world.clusterId, compute_config_id: world.configId, server_type } }));
    expect(await request('cx32')).toMatchObject({
      status: 422,
      param: 'server_type',
      message: "Server type cx32 does not match the compute config's filter cx2*.",
    });
    expect(await request('cx99')).toMatchObject({ status: 422, param: 'server_type', message: 'Server type cx99 is not one the provider offers.' });
    expect((await request('cx99')).suggestion).toMatch(/^Choose one of: cx22/);
  });
});

describe('registry credentials', () => {
  it('creates one without ever returning the password, refuses private hosts, deletes it', async () => {
    const user = await newUser(app.db, clock, 'free');
    const created = await client(user).POST('/v1/registry/credentials', {
      body: { name: 'ghcr', registry_url: 'ghcr.io', username: 'bot', password: 'p4ssw0rd-value' },
    });
    expect(created).toMatchObject({ name: 'ghcr', registry_url: 'ghcr.io', is_active: true, last_used_at: null });
    expect(JSON.stringify(created)).not.toContain('p4ssw0rd-value');
    for (const host of ['localhost', '127.0.0.1', '10.1.2.3', '169.254.169.254', '192.168.0.10:5000', 'metadata.google.internal']) {
      expect(
        await apiError(client(user).POST('/v1/registry/credentials', { body: { name: 'x', registry_url: host, username: 'u', password: 'p' } })),
        host,
      ).toMatchObject({ status: 422, param: 'registry_url' });
    }
    await client(user).DELETE('/v1/registry/credentials/{id}', { params: { path: { id: created.id } } });
    expect((await client(user).GET('/v1/registry/credentials', {})).data).toEqual([]);
  });
});

describe('products, installs and notifications', () => {
  it('creates, lists and gets a product', async () => {
    const product = await client(alice).POST('/v1/products', {
      body: {
        name: 'Blog',
        sources: [{ chart: { repo_url: 'https://github.com/acme/charts.git', target_revision: 'main', path: 'charts/blog' } }],
        cluster_ids: [a.clusterId],
      },
    });
    expect(product).toMatchObject({ name: 'Blog', regeneration_status: 'pending', stripe_price_ids: [], settings: {} });
    expect(product.sources[0]!.id).toMatch(/^src_/);
    expect(await client(alice).GET('/v1/products/{id}', { params: { path: { id: product.id } } })).toEqual(product);
    expect((await client(alice).GET('/v1/products', {})).data.map((p) => p.id)).toContain(product.id);
    // The seed's source names all four fields: both a chart and a path are taken (the chart is used), as sent.
    const seedShape = { repo_url: 'https://charts.example.com/stable', target_revision: '1.2.0', chart: 'shop', path: '' };
    const both = await client(alice).POST('/v1/products', { body: { name: 'Shop', sources: [{ chart: seedShape }], cluster_ids: [a.clusterId] } });
    expect(both.sources[0]!.chart).toEqual(seedShape);
    const neither = await apiError(
      client(alice).POST('/v1/products', {
        body: { name: 'Bad', sources: [{ chart: { repo_url: 'https://x.example', target_revision: '1', chart: '', path: '' } }], cluster_ids: [a.clusterId] },
      }),
    );
    expect(neither).toMatchObject({ status: 422, param: 'sources[0].chart' });
    expect(
      await apiError(
        client(alice).POST('/v1/products', {
          body: { name: 'Bad', sources: [{ chart: { repo_url: 'https://x.example', target_revision: '1' } }], cluster_ids: [a.clusterId] },
        }),
      ),
    ).toMatchObject({ status: 422, param: 'sources[0].chart' });
  });
  it('lists and gets installs', async () => {
    const install = await client(alice).POST('/v1/installs', { body: { product_id: a.productId, region_id: 'fsn1' } });
    expect(await client(alice).GET('/v1/installs/{id}', { params: { path: { id: install.id } } })).toEqual(install);
    expect((await client(alice).GET('/v1/installs', {})).data.map((i) => i.id)).toContain(install.id);
  });
  it('lists notifications, optionally only unread ones', async () => {
    const fresh = await newUser(app.db, clock, 'free');
    const world = await seedCompute(fresh);
    expect((await client(fresh).GET('/v1/notifications', {})).data.map((n) => n.id)).toEqual([world.notificationId]);
    await client(fresh).PATCH('/v1/notifications/{id}/read', { params: { path: { id: world.notificationId } } });
    expect((await client(fresh).GET('/v1/notifications', { params: { query: { unread: true } } })).data).toEqual([]);
    expect((await client(fresh).GET('/v1/notifications', { params: { query: { unread: false } } })).data).toHaveLength(1);
  });
});

describe('tokens and logout', () => {
  it('lists tokens without secrets, revokes one, and logout revokes the calling token', async () => {
    const user = await newUser(app.db, clock, 'free');
    const extra = await client(user).POST('/v1/user/tokens', { body: { name: 'extra', scopes: ['*'] } });
    const list = await client(user).GET('/v1/user/tokens', {});
    expect(list.data.map((t) => t.name)).toEqual(['initial', 'extra']);
    expect(JSON.stringify(list)).not.toContain(extra.token);
    expect(await apiError(client(bob).DELETE('/v1/user/tokens/{id}', { params: { path: { id: extra.id } } }))).toMatchObject({ status: 404 });
    await client(user).DELETE('/v1/user/tokens/{id}', { params: { path: { id: extra.id } } });
    const viaExtra = createPlatformClient({ baseUrl: app.baseUrl, token: extra.token, retry: false });
    expect(await apiError(viaExtra.GET('/v1/workspaces', {}))).toMatchObject({ status: 401 });
    await client(user).POST('/v1/auth/logout', {});
    expect(await apiError(client(user).GET('/v1/workspaces', {}))).toMatchObject({ status: 401 });
  });
});

describe('the wire', () => {
  it('answers unknown paths 404, wrong methods 405 with Allow, malformed JSON 400, and echoes X-Request-Id', async () => {
    const headers = { authorization: `Bearer ${alice.token}` };
    const unknown = await fetch(`${app.baseUrl}/v2/clusters`, { headers });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { code: 'not_found' } });
    const wrongMethod = await fetch(`${app.baseUrl}/v1/quotas`, { method: 'POST', headers });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('GET');
    const malformed = await fetch(`${app.baseUrl}/v1/user/tokens`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: '{"name": ',
    });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ error: { code: 'bad_request' } });
    const notJson = await fetch(`${app.baseUrl}/v1/user/tokens`, { method: 'POST', headers: { ...headers, 'content-type': 'text/plain' }, body: 'name=x' });
    expect(notJson.status).toBe(400);
    const echoed = await fetch(`${app.baseUrl}/v1/workspaces`, { headers: { ...headers, 'x-request-id': 'trace-123' } });
    expect(echoed.headers.get('x-request-id')).toBe('trace-123');
    const made = await fetch(`${app.baseUrl}/v1/workspaces`, { headers: { ...headers, 'x-request-id': 'bad id with spaces' } });
    expect(made.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
    expect(made.headers.get('x-powered-by')).toBeNull();
  });
  it('rejects unknown query parameters and a too-large body', async () => {
    const headers = { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json' };
    const typo = await fetch(`${app.baseUrl}/v1/clusters?limt=5`, { headers });
    expect(typo.status).toBe(422);
    const refused = (await typo.json()) as { error: { param: string; suggestion: string } };
    expect(refused.error.param).toBe('limt');
    expect(refused.error.suggestion).toContain('Remove the parameter');
    const huge = await fetch(`${app.baseUrl}/v1/user/tokens`, { method: 'POST', headers, body: JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) }) });
    expect(huge.status).toBe(413);
  });
});
