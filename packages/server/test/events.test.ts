// The events feed: every transition a workflow or an operation makes writes its event in the same transaction,
// with the object as the API returns it; GET /v1/events lists them oldest first, per workspace, filtered by type or
// object. With pg-boss workers on a real PostgreSQL, the simulated cloud and an injected clock.
import { createPlatformClient } from '@platform/client';
import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';
import { recordEvent } from '../src/resources/events.ts';
import { ownKeyComputeConfig, runningCluster } from './fixtures.ts';
import { call, eventually, newUser, SIMULATED_WORKFLOWS_ENV, type TestUser, useTestServer, workersSettled } from './support.ts';

const app = useTestServer({
  env: {
    ...SIMULATED_WORKFLOWS_ENV,
    EVENT_POLL_MS: '20',
  },
  runtime: { simulation: { followPollMs: 20, logLinesPerSecond: 2 }, tickMs: 20, orphanAfterSeconds: 1, eventPruneEveryMs: 50, retention: true },
});
const { clock } = app;

const client = (user: TestUser) => createPlatformClient({ baseUrl: app.baseUrl, token: user.token, retry: false });

const settled = () => workersSettled(app.db, clock);

/** Every event of the caller's default workspace, page by page. */
async function allEvents(user: TestUser, query: { type?: string; object_id?: string; limit?: number } = {}) {
  const events = [];
  let cursor: string | undefined;
  for (;;) {
    const params = new URLSearchParams(Object.entries({ ...query, ...(cursor ? { cursor } : {}) }).map(([k, v]) => [k, String(v)]));
    const reply = await call(app.baseUrl, 'GET', `/v1/events?${params}`, { token: user.token });
    expect(reply.status).toBe(200);
    events.push(...reply.body.data);
    if (!reply.body.pagination.has_more) return events;
    cursor = reply.body.pagination.cursor;
  }
}

describe('events of a workspace', () => {
  let user: TestUser;
  const ids = { cluster: '', machine: '', suspension: '', product: '', install: '', failedInstall: '' };

  beforeAll(async () => {
    user = await newUser(app.db, clock, 'pro');
    const api = client(user);
    const cluster = await runningCluster(app, user, 'events');
    ids.cluster = cluster.id;
    const { config } = await ownKeyComputeConfig(app, user, { name: 'byom' });
    const machine = await api.POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: config.id } });
    ids.machine = machine.provider_id;
    await settled();
    clock.advance(20);
    const machines = () => api.GET('/v1/compute/machines', { params: { query: { cluster_id: cluster.id } } });
    await eventually(machines, (m) => m[0]?.status === 'ready', 'ready');

    const suspension = await api.POST('/v1/compute/machines/{providerId}/suspend', { params: { path: { providerId: machine.provider_id } } });
    ids.suspension = suspension.id;
    const getSuspension = () => api.GET('/v1/compute/suspensions/{id}', { params: { path: { id: suspension.id } } });
    await settled();
    clock.advance(15);
    await eventually(getSuspension, (s) => s.status === 'suspended', 'suspended');
    await api.POST('/v1/compute/suspensions/{id}/resume', { params: { path: { id: suspension.id } } });
    await settled();
    clock.advance(20);
    await eventually(getSuspension, (s) => s.status === 'resumed', 'resumed');

    const product = await api.POST('/v1/products', {
      body: {
        name: 'Shop',
        cluster_ids: [cluster.id],
        sources: [{ chart: { repo_url: 'https://charts.bitnami.com/bitnami', target_revision: '19.6.1', chart: 'wordpress' } }],
      },
    });
    ids.product = product.id;
    const install = await api.POST('/v1/installs', { body: { product_id: product.id, region_id: 'fsn1' } });
    ids.install = install.id;
    const getInstall = (id: string) => () => api.GET('/v1/installs/{id}', { params: { path: { id } } });
    await eventually(getInstall(install.id), (i) => i.status === 'installing', 'installing');
    await settled();
    clock.advance(8);
    await eventually(getInstall(install.id), (i) => i.status === 'running', 'running');
    // No running cluster in hel1: this one fails.
    const failing = await api.POST('/v1/installs', { body: { product_id: product.id, region_id: 'hel1' } });
    ids.failedInstall = failing.id;
    await eventually(getInstall(failing.id), (i) => i.status === 'failed', 'failed');
    await settled();
  });

  it('lists each transition once, oldest first, with the object as the API returns it', async () => {
    const all = await allEvents(user);
    // The product's regeneration runs beside the installs: its event's place among theirs varies.
    const regenerations = all.filter((e) => e.object_type === 'product');
    expect(regenerations.map((e) => [e.type, e.object_id])).toEqual([['product.regeneration_succeeded', ids.product]]);
    expect(regenerations[0].object).toEqual(await client(user).GET('/v1/products/{id}', { params: { path: { id: ids.product } } }));
    const events = all.filter((e) => e.object_type !== 'product');
    expect(events.map((e) => [e.type, e.object_id])).toEqual([
      ['cluster.created', ids.cluster],
      ['cluster.running', ids.cluster],
      ['machine.ready', ids.machine],
      ['suspension.suspended', ids.suspension],
      ['suspension.resumed', ids.suspension],
      ['machine.ready', ids.machine],
      ['install.created', ids.install],
      ['install.running', ids.install],
      ['install.created', ids.failedInstall],
      ['install.failed', ids.failedInstall],
    ]);
    expect(events.every((e) => e.workspace_id === user.workspaceId && /^evt_[0-9a-z]{26}$/.test(e.id))).toBe(true);
    const api = client(user);
    // The latest event of each object holds the object as it is now.
    expect(events.findLast((e) => e.object_id === ids.cluster).object).toEqual(
      await api.GET('/v1/clusters/{clusterId}', { params: { path: { clusterId: ids.cluster } } }),
    );
    expect(events.findLast((e) => e.object_id === ids.install).object).toEqual(await api.GET('/v1/installs/{id}', { params: { path: { id: ids.install } } }));
    expect(events.findLast((e) => e.object_id === ids.suspension).object).toEqual(
      await api.GET('/v1/compute/suspensions/{id}', { params: { path: { id: ids.suspension } } }),
    );
    expect(events.findLast((e) => e.object_id === ids.failedInstall).object).toMatchObject({ status: 'failed', status_message: expect.any(String) });
    // The snapshot is of its moment: the created cluster was still provisioning.
    expect(events[0].object.kaas.status).toBe('PROVISIONING');
    expect(events.find((e) => e.type === 'machine.ready').object).toMatchObject({ provider_id: ids.machine, status: 'ready' });
  });

  it('a notified change is told once, with one type: its notification names the event’s type, object and moment', async () => {
    const notifications = (await client(user).GET('/v1/notifications')).data;
    expect(notifications.map((n) => [n.type, n.resource_id]).sort()).toEqual(
      [
        ['cluster.running', ids.cluster],
        ['suspension.resumed', ids.suspension],
        ['install.running', ids.install],
        ['install.failed', ids.failedInstall],
      ].sort(),
    );
    const events = await allEvents(user);
    for (const notice of notifications) {
      const same = events.filter((e) => e.type === notice.type && e.object_id === notice.resource_id && e.object_type === notice.resource_type);
      expect(
        same.map((e) => e.created_at),
        `${notice.type} ${notice.resource_id}`,
      ).toEqual([notice.created_at]);
    }
    expect(notifications.find((n) => n.type === 'cluster.running')).toMatchObject({ title: 'Cluster events is running', severity: 'info' });
  });

  it('pages without repeats or gaps, and filters by type and by object', async () => {
    const all = await allEvents(user);
    expect((await allEvents(user, { limit: 3 })).map((e) => e.id)).toEqual(all.map((e) => e.id));
    expect((await allEvents(user, { type: 'machine.ready' })).map((e) => e.object_id)).toEqual([ids.machine, ids.machine]);
    expect((await allEvents(user, { object_id: ids.install })).map((e) => e.type)).toEqual(['install.created', 'install.running']);
    expect(await allEvents(user, { type: 'cluster.failed' })).toEqual([]);
  });

  it('are the workspace’s own: another user sees none, and naming a foreign workspace is 403', async () => {
    const other = await newUser(app.db, clock, 'pro');
    expect(await allEvents(other)).toEqual([]);
    const foreign = await call(app.baseUrl, 'GET', '/v1/events', { token: other.token, headers: { 'X-Workspace-Id': user.workspaceId } });
    expect(foreign.status).toBe(403);
    const member = await call(app.baseUrl, 'GET', '/v1/events', { token: user.token, headers: { 'X-Workspace-Id': user.workspaceId } });
    expect(member.body.data.length).toBeGreaterThan(0);
  });

  it('rejects an unknown type with the contract’s 422', async () => {
    const reply = await call(app.baseUrl, 'GET', '/v1/events?type=cluster.exploded', { token: user.token });
    expect(reply.status).toBe(422);
    expect(reply.body.error).toMatchObject({ code: 'validation_error', param: 'type' });
  });
});

describe('the event and its change', () => {
  it('commit together: when the event cannot be written, the change is rolled back and retried', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const api = client(user);
    // Every event write fails while the trigger exists.
    await sql`
      CREATE FUNCTION refuse_events() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'events refused'; END $$;
      CREATE TRIGGER refuse_events BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION refuse_events();`.execute(app.db);
    try {
      const refused = await call(app.baseUrl, 'POST', '/v1/clusters', { token: user.token, body: { name: 'atomic', region_id: 'fsn1' } });
      expect(refused.status).toBe(500);
      expect(await api.GET('/v1/clusters')).toMatchObject({ data: [] });
    } finally {
      await sql`DROP TRIGGER refuse_events ON events; DROP FUNCTION refuse_events();`.execute(app.db);
    }
    const cluster = await api.POST('/v1/clusters', { body: { name: 'atomic', region_id: 'fsn1' } });
    await settled();
    // The control plane is up; the step that marks the cluster running cannot write its event.
    await sql`
      CREATE FUNCTION refuse_events() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'events refused'; END $$;
      CREATE TRIGGER refuse_events BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION refuse_events();`.execute(app.db);
    const getCluster = () => api.GET('/v1/clusters/{clusterId}', { params: { path: { clusterId: cluster.id } } });
    try {
      clock.advance(30);
      await eventually(
        () => app.db.selectFrom('workflows').select('step').where('subject_id', '=', cluster.id).executeTakeFirstOrThrow(),
        (w) => w.step === 'running',
        'the running step',
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await getCluster()).kaas.status).toBe('PROVISIONING');
    } finally {
      await sql`DROP TRIGGER refuse_events ON events; DROP FUNCTION refuse_events();`.execute(app.db);
    }
    clock.advance(60); // past the step's retry delay
    await eventually(getCluster, (c) => c.kaas.status === 'RUNNING', 'the cluster to run');
    expect((await allEvents(user, { object_id: cluster.id })).map((e) => e.type)).toEqual(['cluster.created', 'cluster.running']);
    // Its notification went with the event: none from the refused attempts, one from the one that committed.
    const notices = (await api.GET('/v1/notifications')).data.filter((n) => n.resource_id === cluster.id);
    expect(notices.map((n) => n.type)).toEqual(['cluster.running']);
  });
});

describe('retention', () => {
  it('the worker deletes events older than EVENT_RETENTION_DAYS (30 by default), and keeps the others', async () => {
    expect(loadConfig({}).eventRetentionDays).toBe(30);
    expect(loadConfig({ EVENT_RETENTION_DAYS: '7' }).eventRetentionDays).toBe(7);
    expect(() => loadConfig({ EVENT_RETENTION_DAYS: '0' })).toThrow(ConfigError);
    const user = await newUser(app.db, clock, 'pro');
    const api = client(user);
    const cluster = await api.POST('/v1/clusters', { body: { name: 'old-news', region_id: 'fsn1' } });
    const event = (type: 'cluster.running' | 'cluster.failed', secondsAgo: number) =>
      recordEvent(app.db, { type, workspace_id: user.workspaceId, object_type: 'cluster', object_id: cluster.id, object: cluster }, clock.now() - secondsAgo);
    await event('cluster.failed', 30 * 86_400 + 60);
    await event('cluster.running', 30 * 86_400 - 60);
    await eventually(
      () => allEvents(user, { object_id: cluster.id }),
      (events) => events.length === 2,
      'the expired event to go',
    );
    expect((await allEvents(user, { object_id: cluster.id })).map((e) => e.type).sort()).toEqual(['cluster.created', 'cluster.running']);
  });
});

/** Reads an events stream until `count` events came (or `ms` passed), then closes it. */
async function readStream(user: TestUser, count: number, options: { query?: string; lastEventId?: string; ms?: number } = {}) {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), options.ms ?? 5000);
  const response = await fetch(`${app.baseUrl}/v1/events/stream${options.query ? `?${options.query}` : ''}`, {
    headers: { authorization: `Bearer ${user.token}`, accept: 'text/event-stream', ...(options.lastEventId ? { 'last-event-id': options.lastEventId } : {}) },
    signal: abort.signal,
  });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toContain('text/event-stream');
  const events: { id: string; type: string; object_id: string }[] = [];
  const decoder = new TextDecoder();
  let text = '';
  const reader = response.body!.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      const blocks = text.split('\n\n');
      text = blocks.pop()!;
      for (const block of blocks) {
        const fields = Object.fromEntries(block.split('\n').map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)]));
        if (fields.event !== 'event') continue;
        const data = JSON.parse(fields.data!);
        expect(fields.id).toBe(data.id);
        events.push(data);
      }
      if (events.length >= count) break;
    }
  } catch (error) {
    if (!abort.signal.aborted) throw error;
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
  return events;
}

describe('following events', () => {
  it('sends what was recorded, then each new event as it is recorded; resumes after Last-Event-ID', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const api = client(user);
    const first = await api.POST('/v1/clusters', { body: { name: 'followed-1', region_id: 'fsn1' } });
    const following = readStream(user, 3, { query: 'type=cluster.created' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const second = await api.POST('/v1/clusters', { body: { name: 'followed-2', region_id: 'fsn1' } });
    const third = await api.POST('/v1/clusters', { body: { name: 'followed-3', region_id: 'fsn1' } });
    const events = await following;
    expect(events.map((e) => [e.type, e.object_id])).toEqual([
      ['cluster.created', first.id],
      ['cluster.created', second.id],
      ['cluster.created', third.id],
    ]);
    expect(events).toEqual((await allEvents(user, { type: 'cluster.created' })).slice(0, 3));
    const resumed = await readStream(user, 2, { query: 'type=cluster.created', lastEventId: events[0]!.id });
    expect(resumed.map((e) => e.object_id)).toEqual([second.id, third.id]);
  });

  it('sends an event committed late (after a newer one was sent) once', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const api = client(user);
    const cluster = await api.POST('/v1/clusters', { body: { name: 'late', region_id: 'fsn1' } });
    const following = readStream(user, 3, { query: `object_id=${cluster.id}` });
    await new Promise((resolve) => setTimeout(resolve, 200));
    // A transaction that made its event earlier than the next one, and commits after it was sent.
    const late = app.db.transaction().execute(async (trx) => {
      await recordEvent(
        trx,
        { type: 'cluster.failed', workspace_id: user.workspaceId, object_type: 'cluster', object_id: cluster.id, object: cluster },
        clock.now(),
      );
      await new Promise((resolve) => setTimeout(resolve, 400));
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    await recordEvent(
      app.db,
      { type: 'cluster.running', workspace_id: user.workspaceId, object_type: 'cluster', object_id: cluster.id, object: cluster },
      clock.now(),
    );
    await late;
    const events = await following;
    expect(events.map((e) => e.type)).toEqual(['cluster.created', 'cluster.running', 'cluster.failed']);
  });

  it('refuses a Last-Event-ID that is not an event of the workspace with the contract’s 422', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const reply = await call(app.baseUrl, 'GET', '/v1/events/stream', {
      token: user.token,
      headers: { accept: 'text/event-stream', 'last-event-id': 'evt_01jd2xd7h9k1n3q5s7v9x1z3b5' },
    });
    expect(reply.status).toBe(422);
    expect(reply.body.error).toMatchObject({ code: 'validation_error', param: 'Last-Event-ID' });
  });
});
