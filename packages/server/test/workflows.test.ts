// The workflows from request to final state, through the generated client, with pg-boss workers on a real
// PostgreSQL, the simulated cloud, and an injected clock: the test moves time instead of sleeping for it.
import { once } from 'node:events';
import { connect } from 'node:net';
import { createPlatformClient, PlatformApiError } from '@platform/client';
import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { atChartVersion, ownKeyComputeConfig, runningCluster as runningClusterOf } from './fixtures.ts';
import { call, eventually, newUser, SIMULATED_WORKFLOWS_ENV, type TestUser, useTestServer, workersSettled } from './support.ts';

const app = useTestServer({
  env: {
    ...SIMULATED_WORKFLOWS_ENV,
    LOG_POLL_MS: '20',
    STREAM_STALL_MS: '300',
    LOG_KEEP_ALIVE_MS: '300',
  },
  runtime: { simulation: { followPollMs: 20, logLinesPerSecond: 2 }, tickMs: 20, orphanAfterSeconds: 1 },
});
const { clock } = app;

const client = (user: TestUser) => createPlatformClient({ baseUrl: app.baseUrl, token: user.token, retry: false });

const settled = () => workersSettled(app.db, clock);

const runningCluster = (user: TestUser, name: string) => runningClusterOf(app, user, name);

async function byomConfig(user: TestUser, image = 'ubuntu-24.04') {
  return (await ownKeyComputeConfig(app, user, { name: `byom-${Math.random().toString(36).slice(2, 6)}`, image })).config;
}

const machinesOf = (user: TestUser, clusterId: string) => client(user).GET('/v1/compute/machines', { params: { query: { cluster_id: clusterId } } });

const computeStatus = (user: TestUser, clusterId: string) => client(user).GET('/v1/clusters/{clusterId}/compute_status', { params: { path: { clusterId } } });

/** Runs `work` while every server and release creation at the simulated cloud fails. */
async function whileCloudFails(work: () => Promise<void>): Promise<void> {
  app.runtime.cloud.options.failureRate = 1;
  try {
    await work();
  } finally {
    app.runtime.cloud.options.failureRate = 0;
  }
}

/** The next backoff of the cluster after `previous` (its until), and how long it waits from now. */
async function nextBackoff(user: TestUser, clusterId: string, previous: number | null): Promise<{ until: number; wait: number }> {
  const status = await eventually(
    () => computeStatus(user, clusterId),
    (s) => s.autoscaling.state === 'backoff' && s.autoscaling.backoff_until !== null && s.autoscaling.backoff_until !== previous,
    'a backoff',
  );
  const until = status.autoscaling.backoff_until!;
  return { until, wait: until - clock.now() };
}

/** Fails the cluster's provisioning twice (30 s, then 60 s) with a machine of `config`: the count stands at 2. */
async function failTwice(user: TestUser, clusterId: string, configId: string): Promise<{ until: number }> {
  await client(user).POST('/v1/compute/machines', { body: { cluster_id: clusterId, compute_config_id: configId } });
  const first = await nextBackoff(user, clusterId, null);
  expect(first.wait).toBe(30);
  await settled();
  clock.advance(30);
  const second = await nextBackoff(user, clusterId, first.until);
  expect(second.wait).toBe(60);
  await settled();
  return second;
}

/** A running cluster with one ready BYOM machine. */
async function readyMachine(user: TestUser, clusterName: string) {
  const cluster = await runningCluster(user, clusterName);
  const config = await byomConfig(user);
  const api = client(user);
  const machine = await api.POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: config.id } });
  await settled();
  clock.advance(20);
  await eventually(
    () => machinesOf(user, cluster.id),
    (m) => m[0]?.status === 'ready',
    'ready',
  );
  return { api, cluster, config, machine };
}

/** A running cluster with one BYOM machine, suspended (its snapshot made), and a reader of its suspension. */
async function suspendedMachine(user: TestUser, clusterName: string) {
  const { api, machine } = await readyMachine(user, clusterName);
  const { id } = await api.POST('/v1/compute/machines/{providerId}/suspend', { params: { path: { providerId: machine.provider_id } } });
  await settled();
  clock.advance(15);
  const getSuspension = () => api.GET('/v1/compute/suspensions/{id}', { params: { path: { id } } });
  const suspension = await eventually(getSuspension, (s) => s.status === 'suspended', 'suspended');
  return { api, machine, suspension, getSuspension };
}

/** How many servers of the machine the simulated cloud runs. */
const liveServers = async (providerId: string) =>
  (await sql`SELECT id FROM simulated_cloud.servers WHERE labels->>'machine' = ${providerId} AND deleted_at IS NULL`.execute(app.db)).rows.length;

describe('cluster creation', () => {
  it('goes PROVISIONING → RUNNING and tells the workspace', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const cluster = await runningCluster(user, 'prod-eu');
    expect(cluster.kaas.status_message).toBeNull();
    const notifications = await client(user).GET('/v1/notifications');
    expect(notifications.data.map((n) => n.type)).toContain('cluster.running');
  });
});

describe('machine provisioning', () => {
  for (const [plan, limit] of [
    ['free', 1],
    ['pro', 3],
  ] as const) {
    it(`never has more than ${limit} provisioning at once on a ${plan} cluster, and another cluster is not held up`, async () => {
      const user = await newUser(app.db, clock, plan === 'free' ? 'pro' : 'pro');
      // The limit is the owner's plan; a free owner gets one cluster, so the second cluster is a pro user's.
      await app.db.updateTable('users').set({ plan }).where('id', '=', user.userId).execute();
      await app.db.insertInto('quota_overrides').values({ user_id: user.userId, workspace_id: null, metric: 'kaas/clusters', limit: 2 }).execute();
      const cluster = await runningCluster(user, `c-${plan}`);
      const other = await runningCluster(user, `o-${plan}`);
      const config = await byomConfig(user);
      const api = client(user);
      for (let i = 0; i < 10; i++) await api.POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: config.id } });
      const single = await api.POST('/v1/compute/machines', { body: { cluster_id: other.id, compute_config_id: config.id } });
      expect(single.status).toBe('provisioning');
      let most = 0;
      for (let round = 0; round < 12; round++) {
        await settled();
        const machines = await machinesOf(user, cluster.id);
        const provisioning = machines.filter((m) => m.status === 'provisioning').length;
        most = Math.max(most, provisioning);
        expect(provisioning).toBeLessThanOrEqual(limit);
        const status = await computeStatus(user, cluster.id);
        expect(status.autoscaling.provisioning).toBe(provisioning);
        expect(status.autoscaling.provisioning_limit).toBe(limit);
        if (machines.every((m) => m.status === 'ready')) break;
        clock.advance(20);
      }
      expect(most).toBe(limit);
      expect((await machinesOf(user, cluster.id)).every((m) => m.status === 'ready')).toBe(true);
      expect((await machinesOf(user, other.id))[0]?.status).toBe('ready');
      const quota = await api.GET('/v1/quotas', { params: { query: { cluster_id: cluster.id } } });
      expect(quota.find((q) => q.metric === 'compute/provisioning')).toMatchObject({ type: 'concurrency', limit, usage: 0 });
    });
  }

  it('backs off 30, 60, 120, 240, 300, 300 s after consecutive failures; a success resets it', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const cluster = await runningCluster(user, 'flaky');
    const config = await byomConfig(user);
    const api = client(user);
    const status = () => computeStatus(user, cluster.id);
    await whileCloudFails(async () => {
      await api.POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: config.id } });
      const waits: number[] = [];
      for (let attempt = 0; attempt < 6; attempt++) {
        const failedAt = clock.now();
        const backoff = await eventually(
          status,
          (s) => s.autoscaling.state === 'backoff' && s.autoscaling.backoff_until !== null && s.autoscaling.backoff_until > failedAt - 1,
          'a backoff',
        );
        waits.push(backoff.autoscaling.backoff_until! - failedAt);
        await settled();
        // Just before the wait ends nothing is tried; at its end the next attempt runs.
        clock.advance(backoff.autoscaling.backoff_until! - clock.now() - 1);
        await settled();
        expect((await status()).autoscaling.state).toBe('backoff');
        clock.advance(1);
        if (attempt < 5) await eventually(status, (s) => s.autoscaling.backoff_until !== backoff.autoscaling.backoff_until, 'the next attempt');
      }
      expect(waits).toEqual([30, 60, 120, 240, 300, 300]);
      const notifications = await api.GET('/v1/notifications');
      expect(notifications.data.filter((n) => n.type === 'machine.provision_failed').length).toBeGreaterThanOrEqual(6);
    });
    clock.advance(300);
    await eventually(
      () => machinesOf(user, cluster.id),
      (m) => m[0]?.status === 'provisioning',
      'a retry',
    );
    await settled();
    clock.advance(20);
    await eventually(
      () => machinesOf(user, cluster.id),
      (m) => m[0]?.status === 'ready',
      'the machine to be ready',
    );
    expect((await status()).autoscaling).toMatchObject({ state: 'idle', backoff_until: null });
  });

  it('when a backoff ends, as many queued machines start as there are free slots, not one at a time', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const cluster = await runningCluster(user, 'refill');
    const config = await byomConfig(user);
    const api = client(user);
    const request = () => api.POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: config.id } });
    let until = 0;
    await whileCloudFails(async () => {
      await request();
      until = (await nextBackoff(user, cluster.id, null)).until;
      await settled();
    });
    // Two more wait in the queue while the cluster backs off, their next look long after the backoff's end (as
    // after many looks); only the failed machine's workflow is due when it ends.
    const waiting = [await request(), await request()];
    await settled();
    await app.db
      .updateTable('workflows')
      .set({ run_after: until + 3600 })
      .where('kind', '=', 'requestMachine')
      .where(
        'subject_id',
        'in',
        waiting.map((m) => m.provider_id),
      )
      .execute();
    clock.advance(until - clock.now());
    await settled();
    const machines = await machinesOf(user, cluster.id);
    expect(machines.map((m) => m.status)).toEqual(['provisioning', 'provisioning', 'provisioning']);
    expect((await computeStatus(user, cluster.id)).autoscaling).toMatchObject({ state: 'scaling', provisioning: 3, queued: 0 });
  });

  it('a queued request looks for a slot again after 2, 4, 8 s: exponential backoff, not a constant wait', async () => {
    const user = await newUser(app.db, clock, 'free');
    const cluster = await runningCluster(user, 'one-slot');
    const config = await byomConfig(user);
    const api = client(user);
    await api.POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: config.id } });
    await settled();
    const queued = await api.POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: config.id } });
    await settled();
    const waits: number[] = [];
    // The first machine boots for 20 s: three looks (2 + 4 + 8 s) all find its slot taken.
    for (let look = 0; look < 3; look++) {
      const { run_after } = await app.db
        .selectFrom('workflows')
        .select('run_after')
        .where('kind', '=', 'requestMachine')
        .where('subject_id', '=', queued.provider_id)
        .executeTakeFirstOrThrow();
      waits.push(run_after! - clock.now());
      clock.advance(run_after! - clock.now());
      await settled();
      expect((await machinesOf(user, cluster.id)).find((m) => m.provider_id === queued.provider_id)?.status).toBe('queued');
    }
    expect(waits).toEqual([2, 4, 8]);
  });

  it('a success resets the count: the next failure waits 30 s again', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const cluster = await runningCluster(user, 'reset');
    const config = await byomConfig(user);
    let backoff = { until: 0 };
    await whileCloudFails(async () => {
      backoff = await failTwice(user, cluster.id, config.id);
    });
    clock.advance(60);
    await settled();
    clock.advance(20);
    await eventually(
      () => machinesOf(user, cluster.id),
      (m) => m[0]?.status === 'ready',
      'the machine to be ready',
    );
    await whileCloudFails(async () => {
      await client(user).POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: config.id } });
      expect((await nextBackoff(user, cluster.id, backoff.until)).wait).toBe(30);
      await settled();
    });
  });

  it('a changed offering restarts the count at 30 s: a plan upgrade', async () => {
    const user = await newUser(app.db, clock, 'free');
    const cluster = await runningCluster(user, 'upgraded');
    const config = await byomConfig(user);
    await whileCloudFails(async () => {
      const second = await failTwice(user, cluster.id, config.id);
      await app.db.updateTable('users').set({ plan: 'pro' }).where('id', '=', user.userId).execute();
      expect((await computeStatus(user, cluster.id)).autoscaling).toMatchObject({ backoff_until: null, provisioning_limit: 3 });
      // The queued machine tries again at the end of its wait and fails: the first wait of a new count.
      clock.advance(60);
      expect((await nextBackoff(user, cluster.id, second.until)).wait).toBe(30);
      await settled();
    });
  });

  it('a changed offering restarts the count at 30 s: a machine of another image (or server type) requested', async () => {
    // One slot (free plan): the changed offering voids the backoff for the queued machine too, and with a second slot
    // it would try in the same instant and fail as well, the count's second failure (60 s, the old backoff's end).
    const user = await newUser(app.db, clock, 'free');
    const cluster = await runningCluster(user, 'other-image');
    const first = await byomConfig(user);
    const other = await byomConfig(user, 'debian-12');
    await whileCloudFails(async () => {
      const second = await failTwice(user, cluster.id, first.id);
      await client(user).POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: other.id } });
      // What the provider is asked for changed: no backoff holds the new machine, whose failure starts a new count.
      expect((await computeStatus(user, cluster.id)).autoscaling.backoff_until).toBeNull();
      expect((await nextBackoff(user, cluster.id, second.until)).wait).toBe(30);
      await settled();
    });
  });

  it('an offering change (plan upgrade) resets the backoff', async () => {
    const user = await newUser(app.db, clock, 'free');
    const cluster = await runningCluster(user, 'upgrade');
    const config = await byomConfig(user);
    const api = client(user);
    const status = () => computeStatus(user, cluster.id);
    await whileCloudFails(async () => {
      await api.POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: config.id } });
      await eventually(status, (s) => s.autoscaling.state === 'backoff', 'a backoff');
    });
    await app.db.updateTable('users').set({ plan: 'pro' }).where('id', '=', user.userId).execute();
    expect((await status()).autoscaling).toMatchObject({ backoff_until: null, provisioning_limit: 3 });
    // The free user's one cluster took the whole kaas/clusters quota, which they were told.
    expect((await api.GET('/v1/notifications')).data).toContainEqual(expect.objectContaining({ type: 'quota.reached', resource_id: 'kaas/clusters' }));
  });
});

describe('a machine requested while its cluster or compute config is being deleted', () => {
  /** The request's answer, made while `deletion` runs in a transaction of its own that commits once the request waits. */
  async function racing(deletion: string, request: () => Promise<Awaited<ReturnType<typeof call>>>) {
    return app.db.connection().execute(async (conn) => {
      await sql`BEGIN`.execute(conn);
      await sql.raw(deletion).execute(conn);
      const answer = request();
      await new Promise((resolve) => setTimeout(resolve, 300)); // the request now waits for the deleting transaction
      await sql`COMMIT`.execute(conn);
      return answer;
    });
  }

  for (const [what, table, param] of [
    ['config', 'compute_configs', 'compute_config_id'],
    ['cluster', 'clusters', 'cluster_id'],
  ] as const) {
    it(`the ${what} deleted first: 404 naming ${param}, not a foreign-key error`, async () => {
      const user = await newUser(app.db, clock, 'pro');
      const cluster = await runningCluster(user, `race-${param.replace('_id', '').replace('_', '-')}`);
      const config = await byomConfig(user);
      const doomed = table === 'clusters' ? cluster.id : config.id;
      const answer = await racing(`DELETE FROM ${table} WHERE id = '${doomed}'`, () =>
        call(app.baseUrl, 'POST', '/v1/compute/machines', { token: user.token, body: { cluster_id: cluster.id, compute_config_id: config.id } }),
      );
      expect(answer.status).toBe(404);
      expect(answer.body.error).toMatchObject({ code: 'not_found', param });
      expect(await app.db.selectFrom('machines').select('provider_id').where('cluster_id', '=', cluster.id).execute()).toEqual([]);
    });
  }
});

describe('machine deletion', () => {
  it('removes the server at the provider, also for a machine deleted while its server boots', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const { api, cluster, config, machine: ready } = await readyMachine(user, 'short-lived');
    const booting = await api.POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: config.id } });
    await settled();
    for (const machine of [ready, booting]) {
      await api.DELETE('/v1/compute/machines/{providerId}', { params: { path: { providerId: machine.provider_id } } });
    }
    // A second delete of a machine being deleted is the same outcome.
    await api.DELETE('/v1/compute/machines/{providerId}', { params: { path: { providerId: booting.provider_id } } });
    await eventually(
      () => machinesOf(user, cluster.id),
      (m) => m.length === 0,
      'the machines to go',
    );
    const { rows } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM simulated_cloud.servers
      WHERE labels->>'machine' IN (${ready.provider_id}, ${booting.provider_id}) AND deleted_at IS NULL`.execute(app.db);
    expect(rows[0]!.n).toBe(0);
  });
});

describe('installs', () => {
  let user: TestUser;
  let install: Awaited<ReturnType<ReturnType<typeof client>['POST']>> & { id: string };

  beforeAll(async () => {
    user = await newUser(app.db, clock, 'pro');
    const cluster = await runningCluster(user, 'apps');
    const api = client(user);
    const product = await api.POST('/v1/products', {
      body: {
        name: 'Shop',
        cluster_ids: [cluster.id],
        sources: [{ chart: { repo_url: 'https://charts.bitnami.com/bitnami', target_revision: '19.6.1', chart: 'wordpress' }, values: { replicaCount: 1 } }],
      },
    });
    const created = await api.POST('/v1/installs', {
      body: { product_id: product.id, region_id: 'fsn1', overrides: [{ template_helm_source_id: product.sources[0]!.id, values: { replicaCount: 2 } }] },
    });
    expect(created.status).toBe('pending');
    install = created as typeof install;
  });

  const getInstall = () => client(user).GET('/v1/installs/{id}', { params: { path: { id: install.id } } });

  /** A running install of a product of two charts (two pods of one container each), on the first install's cluster. */
  async function twoChartInstall(name: string) {
    const api = client(user);
    const first = await getInstall();
    const product = await api.POST('/v1/products', {
      body: {
        name,
        cluster_ids: [first.cluster_id!],
        sources: [
          { chart: { repo_url: 'https://charts.bitnami.com/bitnami', target_revision: '19.6.1', chart: 'wordpress' } },
          { chart: { repo_url: 'https://charts.bitnami.com/bitnami', target_revision: '16.2.0', chart: 'redis' } },
        ],
      },
    });
    const created = await api.POST('/v1/installs', { body: { product_id: product.id, region_id: 'fsn1' } });
    await settled();
    clock.advance(8);
    await eventually(
      () => api.GET('/v1/installs/{id}', { params: { path: { id: created.id } } }),
      (i) => i.status === 'running',
      'running',
    );
    return created;
  }

  it('goes pending → installing (placed on the region’s cluster) → running, and tells the workspace', async () => {
    const installing = await eventually(getInstall, (i) => i.status === 'installing', 'installing');
    expect(installing.cluster_id).not.toBeNull();
    await settled();
    clock.advance(8);
    await eventually(getInstall, (i) => i.status === 'running', 'running');
    const notifications = await client(user).GET('/v1/notifications');
    expect(notifications.data.map((n) => n.type)).toContain('install.running');
    // One release per source, with the override applied.
    const { rows } = await sql<{ values: Record<string, unknown> }>`SELECT values FROM simulated_cloud.releases WHERE namespace = ${install.id}`.execute(
      app.db,
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.values).toEqual({ replicaCount: 2 });
  });

  it('streams the logs: tail gives exactly that many lines, then end', async () => {
    clock.advance(30);
    const reply = await call(app.baseUrl, 'GET', `/v1/installs/${install.id}/logs?follow=false&tail=5`, {
      token: user.token,
      headers: { accept: 'text/event-stream' },
    });
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = String(reply.body).split('\n\n').filter(Boolean);
    expect(events.filter((e) => e.includes('event: log'))).toHaveLength(5);
    expect(events.at(-1)).toBe('event: end\ndata: {"reason":"backlog_sent"}');
  });

  it('since_seconds keeps only recent lines; Last-Event-ID resumes after the last line with no gap or repeat', async () => {
    const read = async (query: string, headers: Record<string, string> = {}) => {
      const reply = await call(app.baseUrl, 'GET', `/v1/installs/${install.id}/logs?follow=false${query}`, {
        token: user.token,
        headers: { accept: 'text/event-stream', ...headers },
      });
      return String(reply.body)
        .split('\n\n')
        .filter((e) => e.includes('event: log'))
        .map((e) => ({ id: /^id: (.+)$/m.exec(e)![1]!, data: JSON.parse(/^data: (.+)$/m.exec(e)![1]!) as { timestamp: string; line: string } }));
    };
    const all = await read('');
    const recent = await read('&since_seconds=10');
    expect(recent.length).toBeGreaterThan(0);
    expect(recent.length).toBeLessThan(all.length);
    expect(recent.every((e) => Date.parse(e.data.timestamp) >= clock.nowMs() - 10_000)).toBe(true);
    const resumed = await read('', { 'last-event-id': all[9]!.id });
    expect(resumed.map((e) => e.data)).toEqual(all.slice(10).map((e) => e.data));
    const malformed = await call(app.baseUrl, 'GET', `/v1/installs/${install.id}/logs?follow=false`, {
      token: user.token,
      headers: { 'last-event-id': 'nonsense' },
    });
    expect(malformed.status).toBe(422);
    expect(malformed.body.error.param).toBe('Last-Event-ID');
  });

  it('follows through the generated client, resuming a dropped stream, and is 404 for another workspace', async () => {
    const controller = new AbortController();
    const lines: string[] = [];
    const stream = client(user).streamInstallLogs(install.id, { signal: controller.signal, tail: 1 });
    const ticker = setInterval(() => clock.advance(1), 20);
    try {
      for await (const event of stream) {
        if (event.type === 'log') lines.push(event.data.line);
        if (lines.length >= 6) controller.abort();
      }
    } catch (error) {
      if (!controller.signal.aborted) throw error;
    } finally {
      clearInterval(ticker);
    }
    expect(lines.length).toBeGreaterThanOrEqual(6);
    const stranger = await newUser(app.db, clock, 'pro');
    const denied = await call(app.baseUrl, 'GET', `/v1/installs/${install.id}/logs`, { token: stranger.token });
    expect(denied.status).toBe(404);
  });

  it('feeds many followers of one install the same lines, with the same ids', async () => {
    const follow = async (controller: AbortController) => {
      const response = await fetch(`${app.baseUrl}/v1/installs/${install.id}/logs?tail=1`, {
        headers: { authorization: `Bearer ${user.token}` },
        signal: controller.signal,
      });
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
      let text = '';
      return {
        async until(count: number) {
          while ((text.match(/event: log/g) ?? []).length < count) text += (await reader.read()).value ?? '';
          return text
            .split('\n\n')
            .filter((e) => e.includes('event: log'))
            .slice(0, count);
        },
      };
    };
    const controllers = Array.from({ length: 5 }, () => new AbortController());
    const followers = await Promise.all(controllers.map(follow));
    const ticker = setInterval(() => clock.advance(1), 20);
    try {
      const seen = await Promise.all(followers.map((f) => f.until(8)));
      // Every follower got consecutive lines (no gap, no repeat), and an id means the same line for all.
      const byId = new Map<string, string>();
      for (const events of seen) {
        const positions = events.map((e) => Number(/^id: .*:(\d+)$/m.exec(e)![1]));
        expect(positions).toEqual(positions.map((_, i) => positions[0]! + i));
        for (const event of events) {
          const id = /^id: (.+)$/m.exec(event)![1]!;
          expect(byId.get(id) ?? event).toBe(event);
          byId.set(id, event);
        }
      }
    } finally {
      clearInterval(ticker);
      for (const controller of controllers) controller.abort();
    }
  });

  it('with tail=1 on an install of two containers, follows on from now: nothing the tail left out comes later', async () => {
    const created = await twoChartInstall('Two charts');
    clock.advance(60); // a minute of history in each container
    const startedMs = clock.nowMs();
    const controller = new AbortController();
    const response = await fetch(`${app.baseUrl}/v1/installs/${created.id}/logs?tail=1`, {
      headers: { authorization: `Bearer ${user.token}` },
      signal: controller.signal,
    });
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    const ticker = setInterval(() => clock.advance(1), 20);
    const timestamps: number[] = [];
    try {
      let text = '';
      while (timestamps.length < 8) {
        text += (await reader.read()).value ?? '';
        const events = text.split('\n\n');
        text = events.pop() ?? '';
        for (const event of events) {
          const at = /"timestamp":"([^"]+)"/.exec(event)?.[1];
          if (at) timestamps.push(Date.parse(at));
        }
      }
    } finally {
      clearInterval(ticker);
      controller.abort();
    }
    // The backlog's one line, then only lines written after the stream began.
    expect(timestamps.slice(1).every((at) => at >= startedMs - 1000)).toBe(true);
  });

  it('resumes from any id of a tail or since_seconds backlog of two containers: just after that event, nothing the cut left out', async () => {
    const created = await twoChartInstall('Two charts, resumed');
    clock.advance(60); // a minute of history in each container
    const read = async (query: string, lastEventId?: string) => {
      const reply = await call(app.baseUrl, 'GET', `/v1/installs/${created.id}/logs?follow=false${query}`, {
        token: user.token,
        headers: { accept: 'text/event-stream', ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
      });
      expect(reply.status).toBe(200);
      return String(reply.body)
        .split('\n\n')
        .filter((e) => e.includes('event: log'))
        .map((e) => ({ id: /^id: (.+)$/m.exec(e)![1]!, data: JSON.parse(/^data: (.+)$/m.exec(e)![1]!) as { container: string; timestamp: string } }));
    };
    const backlogs = new Map<string, Awaited<ReturnType<typeof read>>>();
    for (const query of ['&tail=3', '&since_seconds=2']) {
      const backlog = await read(query);
      // Both containers are in the cut: a line of the other one comes after the first event.
      expect(new Set(backlog.map((e) => e.data.container)).size).toBe(2);
      backlogs.set(query, backlog);
      for (const [i, event] of backlog.entries()) {
        // Reconnecting as EventSource does (the same query) or with the id alone: the rest of the backlog, exactly.
        for (const again of [query, '']) {
          expect((await read(again, event.id)).map((e) => e.data)).toEqual(backlog.slice(i + 1).map((e) => e.data));
        }
      }
    }
    // Lines written while the client was away, from both containers, come after the rest of the backlog, however
    // long it was away (longer than since_seconds here): the cut is not taken again.
    clock.advance(10);
    const everything = (await read('')).map((e) => JSON.stringify(e.data));
    for (const [query, backlog] of backlogs) {
      const last = everything.indexOf(JSON.stringify(backlog.at(-1)!.data));
      expect(last).toBeGreaterThanOrEqual(0);
      const resumed = (await read(query, backlog[0]!.id)).map((e) => JSON.stringify(e.data));
      expect(resumed).toEqual([...backlog.slice(1).map((e) => JSON.stringify(e.data)), ...everything.slice(last + 1)]);
      expect(everything.length - last - 1).toBeGreaterThan(30); // 10 s of two containers at 2 lines a second
    }
  });

  it('sends a follower a keep-alive when nothing was written to it for LOG_KEEP_ALIVE_MS, though other pods print', async () => {
    /** What a stream of the install sends within `ms` of real time. */
    const receive = async (query: string, ms: number) => {
      const controller = new AbortController();
      const response = await fetch(`${app.baseUrl}/v1/installs/${install.id}/logs${query}`, {
        headers: { authorization: `Bearer ${user.token}` },
        signal: controller.signal,
      });
      expect(response.status).toBe(200);
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
      const timeUp = new Promise<'time up'>((resolve) => setTimeout(() => resolve('time up'), ms));
      let text = '';
      try {
        for (;;) {
          const next = reader.read();
          const read = await Promise.race([next, timeUp]);
          if (read === 'time up') {
            next.catch(() => {}); // ends with the abort below
            return text;
          }
          if (read.done) return text;
          text += read.value;
        }
      } finally {
        controller.abort();
      }
    };
    // The clock runs at 50 s a second: the install's tail finds new lines at every poll, each waking its followers.
    const ticker = setInterval(() => clock.advance(1), 20);
    try {
      const [unfiltered, filtered] = await Promise.all([receive('?tail=1', 3000), receive('?pod=nopod', 3000)]);
      expect((unfiltered.match(/event: log/g) ?? []).length).toBeGreaterThan(20);
      // A keep-alive every 300 ms would be 10 in 3 s; without one for 300 ms, the filtered stream would get none.
      expect(filtered).not.toContain('event: log');
      expect((filtered.match(/^: keep-alive$/gm) ?? []).length).toBeGreaterThanOrEqual(3);
    } finally {
      clearInterval(ticker);
    }
  });

  it('filters by pod and container', async () => {
    const events = async (query: string) => {
      const reply = await call(app.baseUrl, 'GET', `/v1/installs/${install.id}/logs?follow=false&tail=3${query}`, { token: user.token });
      return String(reply.body)
        .split('\n\n')
        .filter((e) => e.includes('event: log'))
        .map((e) => JSON.parse(/^data: (.+)$/m.exec(e)![1]!) as { pod: string; container: string });
    };
    const [first] = await events('');
    expect(first).toBeDefined();
    expect(await events(`&pod=${first!.pod}&container=${first!.container}`)).toHaveLength(3);
    expect(await events('&pod=no-such-pod')).toEqual([]);
    expect(await events(`&pod=${first!.pod}&container=sidecar`)).toEqual([]);
  });

  it('drops a client that stops reading, instead of buffering for it', async () => {
    clock.advance(36_000); // ten hours of lines: far more than the socket buffers hold
    const openStreams = async () =>
      (
        await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM stream_slots WHERE key = ${`user:${user.userId}`}`.execute(app.db)
      ).rows[0]!.n;
    const socket = connect(Number(new URL(app.baseUrl).port), '127.0.0.1');
    await once(socket, 'connect');
    socket.write(`GET /v1/installs/${install.id}/logs HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${user.token}\r\nAccept: text/event-stream\r\n\r\n`);
    socket.pause(); // read nothing while the server writes
    // The open stream holds a slot; the server frees it when it drops the stream (STREAM_STALL_MS after the
    // socket stopped draining), all while this client still reads nothing.
    await eventually(openStreams, (n) => n === 1, 'the stream to open');
    await eventually(openStreams, (n) => n === 0, 'the server to drop the stalled stream');
    // A followed stream of a running install never ends by itself: the connection ends because it was dropped.
    let received = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => (received += chunk));
    socket.resume();
    await once(socket, 'close');
    expect(received).toContain('event: log');
    expect(received).not.toContain('event: end');
  });

  it('a product update regenerates the charts and upgrades the running install', async () => {
    const api = client(user);
    const before = await getInstall();
    const product = await api.GET('/v1/products/{id}', { params: { path: { id: before.product_id } } });
    const updated = await api.PATCH('/v1/products/{id}', {
      params: { path: { id: product.id } },
      body: atChartVersion(product, '19.7.0'),
    });
    expect(updated.template_id).not.toBe(product.template_id);
    await eventually(
      () => api.GET('/v1/products/{id}', { params: { path: { id: product.id } } }),
      (p) => p.regeneration_status === 'succeeded',
      'regeneration',
    );
    const { rows } = await sql<{ revision: number; template_id: string; chart: { target_revision: string } }>`
      SELECT revision, template_id, chart FROM simulated_cloud.releases WHERE namespace = ${install.id}`.execute(app.db);
    expect(rows).toEqual([{ revision: 2, template_id: updated.template_id, chart: expect.objectContaining({ target_revision: '19.7.0' }) }]);
    const revisions = await api.GET('/v1/installs/{id}/revisions', { params: { path: { id: install.id } } });
    expect(revisions.data.map((r) => [r.revision, r.template_id, r.status])).toEqual([
      [1, product.template_id, 'deployed'],
      [2, updated.template_id, 'deployed'],
    ]);
  });

  it('a regeneration that fails between moving an install and recording its revision records it when it runs again', async () => {
    const created = await twoChartInstall('Revision with its template');
    const api = client(user);
    const product = await api.GET('/v1/products/{id}', { params: { path: { id: created.product_id } } });
    // The first revision written for this install fails (a sequence, not rolled back with the failed statement).
    await sql`
      CREATE SEQUENCE failing_revision;
      CREATE FUNCTION fail_first_revision() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.install_id = ${sql.lit(created.id)} AND nextval('failing_revision') = 1 THEN RAISE EXCEPTION 'injected'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER fail_first_revision BEFORE INSERT ON install_revisions FOR EACH ROW EXECUTE FUNCTION fail_first_revision();
    `.execute(app.db);
    try {
      const updated = await api.PATCH('/v1/products/{id}', {
        params: { path: { id: product.id } },
        body: atChartVersion(product, '20.0.0'),
      });
      // The step is retried after its backoff (2 s of the clock).
      await eventually(
        async () => {
          await settled();
          clock.advance(3);
          return api.GET('/v1/products/{id}', { params: { path: { id: product.id } } });
        },
        (p) => p.regeneration_status === 'succeeded',
        'the regeneration, retried',
      );
      const revisions = await api.GET('/v1/installs/{id}/revisions', { params: { path: { id: created.id } } });
      expect(revisions.data.map((r) => [r.revision, r.template_id])).toEqual([
        [1, product.template_id],
        [2, updated.template_id],
      ]);
    } finally {
      await sql`DROP TRIGGER fail_first_revision ON install_revisions; DROP FUNCTION fail_first_revision(); DROP SEQUENCE failing_revision`.execute(app.db);
    }
  });

  it('an install still installing when its product regenerates ends on the new template', async () => {
    const owner = await newUser(app.db, clock, 'pro');
    const cluster = await runningCluster(owner, 'mid-install');
    const api = client(owner);
    const product = await api.POST('/v1/products', {
      body: {
        name: 'Blog',
        cluster_ids: [cluster.id],
        sources: [{ chart: { repo_url: 'https://charts.bitnami.com/bitnami', target_revision: '19.6.1', chart: 'wordpress' }, values: {} }],
      },
    });
    const created = await api.POST('/v1/installs', { body: { product_id: product.id, region_id: 'fsn1' } });
    const getOne = () => api.GET('/v1/installs/{id}', { params: { path: { id: created.id } } });
    await eventually(getOne, (i) => i.status === 'installing', 'installing');
    await settled(); // its releases of the first template are deploying
    const updated = await api.PATCH('/v1/products/{id}', {
      params: { path: { id: product.id } },
      body: atChartVersion(product, '19.7.0'),
    });
    await eventually(
      () => api.GET('/v1/products/{id}', { params: { path: { id: product.id } } }),
      (p) => p.regeneration_status === 'succeeded',
      'regeneration',
    );
    for (let tries = 0; tries < 4 && (await getOne()).status !== 'running'; tries++) {
      await settled();
      clock.advance(8);
      await settled();
    }
    expect((await getOne()).status).toBe('running');
    const stored = await app.db.selectFrom('installs').select('template_id').where('id', '=', created.id).executeTakeFirstOrThrow();
    expect(stored.template_id).toBe(updated.template_id);
    const { rows } = await sql<{ template_id: string; chart: { target_revision: string } }>`
      SELECT template_id, chart FROM simulated_cloud.releases WHERE namespace = ${created.id}`.execute(app.db);
    expect(rows).toEqual([{ template_id: updated.template_id, chart: expect.objectContaining({ target_revision: '19.7.0' }) }]);
  });

  it('fails with a status_message when the region has no running cluster of the product', async () => {
    const api = client(user);
    const product = await api.GET('/v1/products/{id}', { params: { path: { id: (await getInstall()).product_id } } });
    const created = await api.POST('/v1/installs', { body: { product_id: product.id, region_id: 'hel1' } });
    const failed = await eventually(
      () => api.GET('/v1/installs/{id}', { params: { path: { id: created.id } } }),
      (i) => i.status === 'failed',
      'failure',
    );
    expect(failed.status_message).toMatch(/No running cluster/);
    expect((await api.GET('/v1/notifications')).data.map((n) => n.type)).toContain('install.failed');
  });

  it('a followed log stream of an install whose pods are gone already ends at once with pods_gone', async () => {
    const api = client(user);
    const product = await api.GET('/v1/products/{id}', { params: { path: { id: (await getInstall()).product_id } } });
    const created = await api.POST('/v1/installs', { body: { product_id: product.id, region_id: 'hel1' } });
    await eventually(
      () => api.GET('/v1/installs/{id}', { params: { path: { id: created.id } } }),
      (i) => i.status === 'failed',
      'failure',
    );
    // follow defaults to true: the stream must end by itself, not wait for keep-alives for ever.
    const reply = await fetch(`${app.baseUrl}/v1/installs/${created.id}/logs`, {
      headers: { authorization: `Bearer ${user.token}` },
      signal: AbortSignal.timeout(10_000),
    });
    expect(reply.status).toBe(200);
    expect(await reply.text()).toBe('event: end\ndata: {"reason":"pods_gone"}\n\n');
  });
});

describe('install lifecycle', () => {
  let user: TestUser;
  let cluster: Awaited<ReturnType<typeof runningCluster>>;
  let product: { id: string; template_id: string; sources: { id: string }[] };

  beforeAll(async () => {
    user = await newUser(app.db, clock, 'pro');
    cluster = await runningCluster(user, 'lifecycle');
    product = await client(user).POST('/v1/products', {
      body: {
        name: 'Blog',
        cluster_ids: [cluster.id],
        sources: [{ chart: { repo_url: 'https://charts.bitnami.com/bitnami', target_revision: '19.6.1', chart: 'wordpress' }, values: { replicaCount: 1 } }],
      },
    });
  });

  const readInstall = (id: string) => client(user).GET('/v1/installs/{id}', { params: { path: { id } } });
  const uninstall = (id: string) => client(user).DELETE('/v1/installs/{id}', { params: { path: { id } } });
  const status = (id: string) =>
    readInstall(id).then(
      (i) => i.status,
      (error: unknown) => (error instanceof PlatformApiError ? error.status : Promise.reject(error)),
    );

  async function runningInstall() {
    const created = await client(user).POST('/v1/installs', { body: { product_id: product.id, region_id: 'fsn1' } });
    await eventually(
      () => status(created.id),
      (s) => s === 'installing',
      'installing',
    );
    await settled();
    clock.advance(8);
    return eventually(
      () => readInstall(created.id),
      (i) => i.status === 'running',
      'running',
    );
  }

  it('an update re-renders the releases with the new overrides; one change at a time; idempotent with a key', async () => {
    const install = await runningInstall();
    const path = `/v1/installs/${install.id}`;
    const body = { overrides: [{ template_helm_source_id: product.sources[0]!.id, values: { replicaCount: 3 } }] };
    const headers = { 'idempotency-key': `upgrade-${install.id}` };
    const first = await call(app.baseUrl, 'PATCH', path, { token: user.token, body, headers });
    expect(first.status).toBe(202);
    expect(first.body).toMatchObject({ status: 'installing', overrides: body.overrides });
    const replayed = await call(app.baseUrl, 'PATCH', path, { token: user.token, body, headers });
    expect(replayed.status).toBe(202);
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.body).toEqual(first.body);
    // Another change while this one is in flight: 409.
    const again = await call(app.baseUrl, 'PATCH', path, { token: user.token, body: { overrides: [] } });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error: { code: 'conflict', details: { status: 'installing' } } });

    await settled();
    clock.advance(8);
    await eventually(
      () => readInstall(install.id),
      (i) => i.status === 'running',
      'running again',
    );
    const { rows } = await sql<{ revision: number; values: Record<string, unknown> }>`
      SELECT revision, values FROM simulated_cloud.releases WHERE namespace = ${install.id}`.execute(app.db);
    expect(rows).toEqual([{ revision: 2, values: expect.objectContaining({ replicaCount: 3 }) }]);
    // Each deploy is a revision: the template and overrides it rendered, and how it ended.
    const revisions = await client(user).GET('/v1/installs/{id}/revisions', { params: { path: { id: install.id } } });
    expect(revisions.data).toEqual([
      expect.objectContaining({ revision: 1, template_id: product.template_id, overrides: [], status: 'deployed' }),
      expect.objectContaining({ revision: 2, template_id: product.template_id, overrides: body.overrides, status: 'deployed' }),
    ]);
    const firstPage = await client(user).GET('/v1/installs/{id}/revisions', { params: { path: { id: install.id }, query: { limit: 1 } } });
    expect(firstPage.data.map((r) => r.revision)).toEqual([1]);
    const next = await client(user).GET('/v1/installs/{id}/revisions', {
      params: { path: { id: install.id }, query: { limit: 1, cursor: firstPage.pagination.cursor } },
    });
    expect(next.data.map((r) => r.revision)).toEqual([2]);

    // The product moves on (a regeneration is revision 3); a rollback redeploys exactly what revision 1 rendered.
    const api = client(user);
    const current = await api.GET('/v1/products/{id}', { params: { path: { id: product.id } } });
    await api.PATCH('/v1/products/{id}', {
      params: { path: { id: product.id } },
      body: atChartVersion(current, '19.7.0'),
    });
    await eventually(
      () => api.GET('/v1/installs/{id}/revisions', { params: { path: { id: install.id } } }),
      (r) => r.data.length === 3,
      'the regeneration',
    );
    const rollback = (revision: number) => call(app.baseUrl, 'POST', `${path}/rollback`, { token: user.token, body: { revision } });
    const unknownRevision = await rollback(99);
    expect(unknownRevision.status).toBe(422);
    expect(unknownRevision.body).toMatchObject({ error: { code: 'validation_error', param: 'revision' } });
    const rolling = await rollback(1);
    expect(rolling.status).toBe(202);
    expect(rolling.body).toMatchObject({ status: 'installing', overrides: [] });
    expect((await rollback(1)).status).toBe(409);
    await settled();
    clock.advance(8);
    await eventually(
      () => readInstall(install.id),
      (i) => i.status === 'running',
      'rolled back',
    );
    const { rows: after } = await sql<{ template_id: string; values: Record<string, unknown>; chart: { target_revision: string } }>`
      SELECT template_id, values, chart FROM simulated_cloud.releases WHERE namespace = ${install.id}`.execute(app.db);
    expect(after).toEqual([{ template_id: product.template_id, values: { replicaCount: 1 }, chart: expect.objectContaining({ target_revision: '19.6.1' }) }]);
    const history = await api.GET('/v1/installs/{id}/revisions', { params: { path: { id: install.id } } });
    expect(history.data.map((r) => [r.revision, r.template_id === product.template_id, r.overrides.length, r.status])).toEqual([
      [1, true, 0, 'deployed'],
      [2, true, 1, 'deployed'],
      [3, false, 1, 'deployed'],
      [4, true, 0, 'deployed'],
    ]);

    const unknown = await call(app.baseUrl, 'PATCH', path, {
      token: user.token,
      body: { overrides: [{ template_helm_source_id: 'src_unknown', values: {} }] },
    });
    expect(unknown.status).toBe(422);
    expect(unknown.body).toMatchObject({ error: { param: 'overrides[0].template_helm_source_id' } });

    await uninstall(install.id);
    await eventually(
      () => status(install.id),
      (s) => s === 404,
      'the install to go',
    );
  });

  it('uninstalls the releases, then the install is gone and its cluster can be deleted', async () => {
    const install = await runningInstall();
    const api = client(user);
    await expect(api.DELETE('/v1/clusters/{clusterId}', { params: { path: { clusterId: cluster.id } } })).rejects.toMatchObject({ status: 409 });
    const deleteProduct = () => api.DELETE('/v1/products/{id}', { params: { path: { id: product.id } } });
    await expect(deleteProduct()).rejects.toMatchObject({ status: 409, code: 'conflict', details: { installs: [install.id] } });

    const uninstalling = await uninstall(install.id);
    expect(uninstalling).toMatchObject({ id: install.id, status: 'uninstalling' });
    expect(uninstalling.workflow_id).not.toBe(install.workflow_id);
    // Uninstalling again is the same outcome.
    expect((await uninstall(install.id)).workflow_id).toBe(uninstalling.workflow_id);

    await eventually(
      () => status(install.id),
      (s) => s === 404,
      'the install to go',
    );
    expect((await api.GET('/v1/installs')).data.map((i) => i.id)).not.toContain(install.id);
    const { rows } = await sql<{ uninstalled_ms: string | null }>`
      SELECT uninstalled_ms FROM simulated_cloud.releases WHERE namespace = ${install.id}`.execute(app.db);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.uninstalled_ms).not.toBeNull();
    await expect(uninstall(install.id)).rejects.toMatchObject({ status: 404 });
    await deleteProduct();
    await expect(api.GET('/v1/products/{id}', { params: { path: { id: product.id } } })).rejects.toMatchObject({ status: 404 });
    await api.DELETE('/v1/clusters/{clusterId}', { params: { path: { clusterId: cluster.id } } });
    await expect(api.GET('/v1/clusters/{clusterId}', { params: { path: { clusterId: cluster.id } } })).rejects.toMatchObject({ status: 404 });
  });

  it('an install of a product deleted while it is created: 404, not a foreign-key error', async () => {
    const api = client(user);
    const somewhere = await api.POST('/v1/clusters', { body: { name: 'lifecycle-doomed', region_id: 'nbg1' } });
    const doomed = await api.POST('/v1/products', {
      body: {
        name: 'Doomed',
        cluster_ids: [somewhere.id],
        sources: [{ chart: { repo_url: 'https://charts.bitnami.com/bitnami', target_revision: '1.0.0', chart: 'nginx' } }],
      },
    });
    await app.db.connection().execute(async (conn) => {
      await sql`BEGIN`.execute(conn);
      await sql`DELETE FROM products WHERE id = ${doomed.id}`.execute(conn);
      const created = call(app.baseUrl, 'POST', '/v1/installs', { token: user.token, body: { product_id: doomed.id, region_id: 'fsn1' } });
      await new Promise((resolve) => setTimeout(resolve, 300)); // the request now waits for the deleting transaction
      await sql`COMMIT`.execute(conn);
      expect((await created).status).toBe(404);
    });
  });

  it('an install waiting for its cluster: its install workflow is cancelled and the install goes', async () => {
    const api = client(user);
    const provisioning = await api.POST('/v1/clusters', { body: { name: 'lifecycle-later', region_id: 'nbg1' } });
    const later = await api.POST('/v1/products', {
      body: {
        name: 'Wiki',
        cluster_ids: [provisioning.id],
        sources: [{ chart: { repo_url: 'https://charts.bitnami.com/bitnami', target_revision: '1.0.0', chart: 'mediawiki' } }],
      },
    });
    const created = await api.POST('/v1/installs', { body: { product_id: later.id, region_id: 'nbg1' } });
    await settled(); // the install workflow waits for the cluster to run
    expect(await status(created.id)).toBe('pending');

    expect((await uninstall(created.id)).status).toBe('uninstalling');
    await eventually(
      () => status(created.id),
      (s) => s === 404,
      'the install to go',
    );
    const workflow = await app.db.selectFrom('workflows').select(['status', 'error']).where('id', '=', created.workflow_id).executeTakeFirstOrThrow();
    expect(workflow).toEqual({ status: 'failed', error: 'cancelled: the install was uninstalled' });
  });
});

describe("a deploy at sources that lack some of the install's earlier ones", () => {
  let user: TestUser;
  let cluster: Awaited<ReturnType<typeof runningCluster>>;

  beforeAll(async () => {
    user = await newUser(app.db, clock, 'pro');
    cluster = await runningCluster(user, 'replaced');
  });

  const wordpress = { repo_url: 'https://charts.bitnami.com/bitnami', target_revision: '19.6.1', chart: 'wordpress' };
  const ghost = { repo_url: 'https://charts.bitnami.com/bitnami', target_revision: '21.1.0', chart: 'ghost' };

  const newProduct = () =>
    client(user).POST('/v1/products', { body: { name: 'Blog', cluster_ids: [cluster.id], sources: [{ chart: wordpress, values: {} }] } });
  const readInstall = (id: string) => client(user).GET('/v1/installs/{id}', { params: { path: { id } } });

  /** Brings the install to running: the clock moves on each look, as its releases start. */
  const untilRunning = (id: string, what: string) =>
    eventually(
      async () => {
        await settled();
        clock.advance(8);
        return readInstall(id);
      },
      (i) => i.status === 'running',
      what,
    );

  /** The product's only source replaced by one of another chart (no id: a new source), and its regeneration done. */
  async function replaceSource(productId: string) {
    const api = client(user);
    const product = await api.GET('/v1/products/{id}', { params: { path: { id: productId } } });
    const updated = await api.PATCH('/v1/products/{id}', {
      params: { path: { id: productId } },
      body: { name: product.name, cluster_ids: product.cluster_ids, sources: [{ chart: ghost, values: {} }] },
    });
    await eventually(
      () => api.GET('/v1/products/{id}', { params: { path: { id: productId } } }),
      (p) => p.regeneration_status === 'succeeded',
      'the regeneration',
    );
    return updated;
  }

  /** The install's releases at the simulated cloud: chart, and whether it is still installed. */
  async function releasesOf(installId: string) {
    const { rows } = await sql<{ chart: { chart: string }; uninstalled_ms: string | null }>`
      SELECT chart, uninstalled_ms FROM simulated_cloud.releases WHERE namespace = ${installId} ORDER BY release`.execute(app.db);
    return rows.map((r) => ({ chart: r.chart.chart, installed: r.uninstalled_ms === null })).sort((a, b) => a.chart.localeCompare(b.chart));
  }

  const containersOf = (installId: string) => app.runtime.cloud.listContainers(cluster.id, installId);

  it("a product update that replaces the running install's source uninstalls the old source's release", async () => {
    const product = await newProduct();
    const created = await client(user).POST('/v1/installs', { body: { product_id: product.id, region_id: 'fsn1' } });
    await untilRunning(created.id, 'running');
    const updated = await replaceSource(product.id);
    expect(await readInstall(created.id)).toMatchObject({ status: 'running' });
    expect(await releasesOf(created.id)).toEqual([
      { chart: 'ghost', installed: true },
      { chart: 'wordpress', installed: false },
    ]);
    expect((await containersOf(created.id)).map((c) => c.container)).toEqual(['ghost']);
    const revisions = await client(user).GET('/v1/installs/{id}/revisions', { params: { path: { id: created.id } } });
    expect(revisions.data.map((r) => [r.template_id, r.status])).toEqual([
      [product.template_id, 'deployed'],
      [updated.template_id, 'deployed'],
    ]);
  });

  it("a rollback to a revision before the replacement uninstalls the replacing source's release", async () => {
    const product = await newProduct();
    const created = await client(user).POST('/v1/installs', { body: { product_id: product.id, region_id: 'fsn1' } });
    await untilRunning(created.id, 'running');
    await replaceSource(product.id);
    const rolling = await call(app.baseUrl, 'POST', `/v1/installs/${created.id}/rollback`, { token: user.token, body: { revision: 1 } });
    expect(rolling.status).toBe(202);
    await untilRunning(created.id, 'rolled back');
    expect(await releasesOf(created.id)).toEqual([
      { chart: 'ghost', installed: false },
      { chart: 'wordpress', installed: true },
    ]);
    expect((await containersOf(created.id)).map((c) => c.container)).toEqual(['wordpress']);
  });

  it('an install still installing when its source is replaced ends with only the new source released', async () => {
    const product = await newProduct();
    const created = await client(user).POST('/v1/installs', { body: { product_id: product.id, region_id: 'fsn1' } });
    await eventually(
      () => readInstall(created.id),
      (i) => i.status === 'installing',
      'installing',
    );
    await settled(); // its release of the first template is deploying; the regeneration passes it over
    const updated = await replaceSource(product.id);
    await untilRunning(created.id, 'running on the new template');
    expect(await app.db.selectFrom('installs').select('template_id').where('id', '=', created.id).executeTakeFirstOrThrow()).toEqual({
      template_id: updated.template_id,
    });
    expect(await releasesOf(created.id)).toEqual([
      { chart: 'ghost', installed: true },
      { chart: 'wordpress', installed: false },
    ]);
  });
});

describe('suspend and resume', () => {
  it('suspends (snapshot, server deleted), resumes from the snapshot on a new server with the same node name; a second resume is 409', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const { api, cluster, machine } = await readyMachine(user, 'sleepy');
    const drift = await api.GET('/v1/compute/machines/{providerId}/drift', { params: { path: { providerId: machine.provider_id } } });
    expect(drift).toMatchObject({ drifted: false, differences: [] });
    // Someone resizes the server in the provider's console, out of band: the check reports it.
    await sql`UPDATE simulated_cloud.servers SET server_type = 'cpx31' WHERE labels->>'machine' = ${machine.provider_id}`.execute(app.db);
    const drifted = await api.GET('/v1/compute/machines/{providerId}/drift', { params: { path: { providerId: machine.provider_id } } });
    expect(drifted).toMatchObject({ drifted: true, differences: [{ field: 'server_type', desired: 'cx2*', actual: 'cpx31' }] });
    expect(drifted.reason).toBe('server_type is cpx31, the compute config wants cx2*.');
    await sql`UPDATE simulated_cloud.servers SET server_type = 'cx22' WHERE labels->>'machine' = ${machine.provider_id}`.execute(app.db);
    expect(drift.reason).toBe('The machine matches its compute config.');
    // A server deleted out of band: said as such.
    await sql`UPDATE simulated_cloud.servers SET deleted_at = 1 WHERE labels->>'machine' = ${machine.provider_id}`.execute(app.db);
    const vanished = await api.GET('/v1/compute/machines/{providerId}/drift', { params: { path: { providerId: machine.provider_id } } });
    const { server_id } = (await sql<{ server_id: string }>`SELECT server_id FROM machines WHERE provider_id = ${machine.provider_id}`.execute(app.db))
      .rows[0]!;
    expect(vanished).toMatchObject({ drifted: true, reason: `server ${server_id} is gone at the provider.` });
    await sql`UPDATE simulated_cloud.servers SET deleted_at = NULL WHERE labels->>'machine' = ${machine.provider_id}`.execute(app.db);

    const suspension = await api.POST('/v1/compute/machines/{providerId}/suspend', { params: { path: { providerId: machine.provider_id } } });
    expect(suspension.status).toBe('suspending');
    await settled();
    clock.advance(15);
    const suspended = await eventually(
      () => api.GET('/v1/compute/suspensions/{id}', { params: { path: { id: suspension.id } } }),
      (s) => s.status === 'suspended',
      'suspended',
    );
    expect(suspended.snapshot_id).toMatch(/^snap-/);
    expect((await machinesOf(user, cluster.id))[0]?.status).toBe('suspended');
    // No server to compare: the answer says the record was compared, not that a server matches.
    expect(await api.GET('/v1/compute/machines/{providerId}/drift', { params: { path: { providerId: machine.provider_id } } })).toMatchObject({
      drifted: false,
      reason: 'The machine has no server now (it is suspended); its record matches its compute config.',
    });

    const resuming = await api.POST('/v1/compute/suspensions/{id}/resume', { params: { path: { id: suspension.id } } });
    expect(resuming.status).toBe('resuming');
    const second = await api.POST('/v1/compute/suspensions/{id}/resume', { params: { path: { id: suspension.id } } }).catch((e: unknown) => e);
    expect(second).toBeInstanceOf(PlatformApiError);
    expect(second).toMatchObject({ status: 409, code: 'conflict' });
    await settled();
    clock.advance(20);
    const done = await eventually(
      () => api.GET('/v1/compute/suspensions/{id}', { params: { path: { id: suspension.id } } }),
      (s) => s.status === 'resumed',
      'resumed',
    );
    // The contract: `snapshot_id` is null once a resume has deleted the snapshot.
    expect(done.snapshot_id).toBeNull();
    const [resumed] = await machinesOf(user, cluster.id);
    expect(resumed).toMatchObject({ status: 'ready', node_name: machine.node_name, provider_id: machine.provider_id });
    // Exactly one live server for the machine, and the snapshot is gone.
    const { rows: servers } = await sql<{ image: string }>`
      SELECT image FROM simulated_cloud.servers WHERE labels->>'machine' = ${machine.provider_id} AND deleted_at IS NULL`.execute(app.db);
    expect(servers).toEqual([{ image: suspended.snapshot_id }]);
    const { rows: snapshots } = await sql`SELECT 1 FROM simulated_cloud.snapshots WHERE id = ${suspended.snapshot_id} AND deleted_at IS NULL`.execute(app.db);
    expect(snapshots).toHaveLength(0);
    expect((await api.GET('/v1/notifications')).data.map((n) => n.type)).toContain('suspension.resumed');
  });
});

describe('machine boot deadline', () => {
  it('a machine not Ready within MACHINE_BOOT_TIMEOUT_SECONDS fails: its server is deleted, its slot goes to the next queued machine, the cluster backs off', async () => {
    const user = await newUser(app.db, clock, 'free');
    const cluster = await runningCluster(user, 'stuck');
    const config = await byomConfig(user);
    const api = client(user);
    const { bootSeconds } = app.runtime.cloud.options;
    // The first machine's server takes longer to come up than the deadline (600 s by default); the second waits for the one slot.
    app.runtime.cloud.options.bootSeconds = 100_000;
    const first = await api.POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: config.id } });
    await settled();
    app.runtime.cloud.options.bootSeconds = bootSeconds;
    const second = await api.POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: config.id } });
    const statusOf = async (providerId: string) => (await machinesOf(user, cluster.id)).find((m) => m.provider_id === providerId)?.status;
    expect(await liveServers(first.provider_id)).toBe(1);
    for (let waited = 0; waited < 590; waited += 118) {
      clock.advance(118);
      await settled();
      expect(await statusOf(first.provider_id)).toBe('provisioning');
      expect(await statusOf(second.provider_id)).toBe('queued');
    }
    clock.advance(20);
    await eventually(
      () => statusOf(first.provider_id),
      (s) => s === 'failed',
      'the first machine to fail',
    );
    expect(await liveServers(first.provider_id)).toBe(0);
    const failed = (await api.GET('/v1/notifications')).data.find((n) => n.type === 'machine.failed' && n.resource_id === first.provider_id);
    expect(failed?.body).toBe(
      `${first.node_name} was not Ready 600 s after its server was created (its server is still initializing); the server was deleted.`,
    );
    // Counted toward the backoff (30 s after one failure). The freed slot woke the queued machine, which found the
    // cluster backing off and looks again within its longest queued wait (60 s).
    const status = await computeStatus(user, cluster.id);
    expect(status.autoscaling).toMatchObject({ state: 'backoff', backoff_until: clock.now() + 30 });
    await settled();
    clock.advance(30);
    await settled();
    expect(await statusOf(second.provider_id)).toBe('queued');
    clock.advance(30);
    await eventually(
      () => statusOf(second.provider_id),
      (s) => s === 'provisioning',
      'the queued machine to take the slot',
    );
    await settled();
    clock.advance(20);
    await eventually(
      () => statusOf(second.provider_id),
      (s) => s === 'ready',
      'the second machine to be ready',
    );
  });

  it('a resumed machine not Ready within the deadline: its new server is deleted, the resume fails, the snapshot is kept, and it resumes when asked again', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const { api, machine, suspension, getSuspension } = await suspendedMachine(user, 'drowsy');
    const { snapshot_id } = suspension;
    const { bootSeconds } = app.runtime.cloud.options;
    app.runtime.cloud.options.bootSeconds = 100_000;
    try {
      await api.POST('/v1/compute/suspensions/{id}/resume', { params: { path: { id: suspension.id } } });
      await settled();
    } finally {
      app.runtime.cloud.options.bootSeconds = bootSeconds;
    }
    expect(await liveServers(machine.provider_id)).toBe(1);
    for (let waited = 0; waited < 590; waited += 118) {
      clock.advance(118);
      await settled();
      expect((await getSuspension()).status).toBe('resuming');
    }
    clock.advance(20);
    // Nothing is lost and nothing is left: the machine is suspended as before the resume, and can be resumed again.
    await eventually(getSuspension, (s) => s.status === 'suspended', 'the resume to fail back to suspended');
    expect(await liveServers(machine.provider_id)).toBe(0);
    const snapshots = await sql`SELECT id FROM simulated_cloud.snapshots WHERE id = ${snapshot_id} AND deleted_at IS NULL`.execute(app.db);
    expect(snapshots.rows).toHaveLength(1);
    const failed = (await api.GET('/v1/notifications')).data.find((n) => n.type === 'suspension.resume_failed' && n.resource_id === suspension.id);
    expect(failed?.body).toBe(
      `${machine.node_name} was not Ready 600 s after its server was created from snapshot ${snapshot_id} (its server is still initializing); the server was deleted and the snapshot kept. The machine is suspended as before: resume it again, or delete it.`,
    );
    expect(failed?.severity).toBe('warning');
    const machineNow = () => api.GET('/v1/compute/machines/{providerId}', { params: { path: { providerId: machine.provider_id } } });
    expect((await machineNow()).status).toBe('suspended');

    expect((await api.POST('/v1/compute/suspensions/{id}/resume', { params: { path: { id: suspension.id } } })).status).toBe('resuming');
    await settled();
    clock.advance(20);
    await eventually(getSuspension, (s) => s.status === 'resumed', 'the second resume');
    expect((await machineNow()).status).toBe('ready');
    expect(await liveServers(machine.provider_id)).toBe(1);
  });

  it('a suspended machine being deleted is not resumed: 409, and no server is made for it', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const { api, machine, suspension, getSuspension } = await suspendedMachine(user, 'parting');
    // The machine is `deleting` until its deletion's workflow has run (settled() runs it).
    await api.DELETE('/v1/compute/machines/{providerId}', { params: { path: { providerId: machine.provider_id } } });
    expect((await getSuspension()).status).toBe('suspended');
    await expect(api.POST('/v1/compute/suspensions/{id}/resume', { params: { path: { id: suspension.id } } })).rejects.toMatchObject({
      status: 409,
      code: 'conflict',
      message: `Machine ${machine.provider_id} of suspension ${suspension.id} is deleting; only a suspended machine can be resumed.`,
    });
    await settled();
    expect(await liveServers(machine.provider_id)).toBe(0);
  });
});
