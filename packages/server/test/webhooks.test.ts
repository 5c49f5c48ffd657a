// Webhooks end to end: endpoints created through the API, the workflow engine and the webhook dispatcher running
// on a real PostgreSQL, and real receivers (node:http on loopback). Every delivery is verified with the Standard
// Webhooks reference package (standardwebhooks), not with our code, and every body is validated against the
// contract's webhooks entry of its type. The clock is injected: retries come when the test moves it. The last
// part kills worker processes (main.ts --role worker) with SIGKILL in the middle of a delivery.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { createPlatformClient } from '@platform/client';
import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadDocument, pointer, SchemaValidator } from '../../../test/support/openapi.ts';
import { systemClock } from '../src/clock.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/connect.ts';
import { nextAttemptAt, RETRY_WINDOW_SECONDS, WebhookDispatcher } from '../src/jobs/webhook-dispatcher.ts';
import { pruneEvents, recordEvent } from '../src/resources/events.ts';
import { tellExpiringTokens } from '../src/resources/tokens.ts';
import { DELIVERIES_WITH_EVENT, DELIVERY_SESSION } from '../src/resources/webhook-deliveries.ts';
import { createWebhookEndpoint, updateWebhookEndpoint } from '../src/resources/webhook-endpoints.ts';
import { secretBox } from '../src/services/secrets.ts';
import { ownKeyComputeConfig, runningCluster } from './fixtures.ts';
import {
  call,
  createTestDatabase,
  eventually,
  newUser,
  SIMULATED_WORKFLOWS_ENV,
  serverLogger,
  TestClock,
  type TestDatabase,
  type TestUser,
  useTestServer,
  workersSettled,
} from './support.ts';

const document = loadDocument();
const contract = new SchemaValidator(document);

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The injected clock's milliseconds when it arrived (the receiver's "now" for the timestamp check). */
  at: number;
}

/** A webhook receiver on loopback: records every request, answers what `answer` says (a status, or never). */
class Receiver {
  readonly received: Received[] = [];
  private readonly server: Server;
  answer: (request: Received, nth: number) => number | 'never' = () => 204;
  private readonly clockMs: () => number;
  constructor(clockMs: () => number) {
    this.clockMs = clockMs;
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const request = { path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: this.clockMs() };
        this.received.push(request);
        const answer = this.answer(request, this.received.filter((r) => r.path === request.path).length);
        if (answer !== 'never') res.writeHead(answer).end();
      });
    });
  }
  /** Its URL, listening from the first call on. */
  async start(): Promise<string> {
    if (!this.server.listening) {
      this.server.listen(0, '127.0.0.1');
      await once(this.server, 'listening');
    }
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }
  at(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }
  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * The Standard Webhooks package's verification of one request, as a receiver whose clock reads `at` (the
 * package checks the timestamp against Date.now()). Returns the parsed payload; throws when it does not verify.
 */
function verify(secret: string, request: Received): unknown {
  vi.useFakeTimers({ toFake: ['Date'], now: request.at });
  try {
    return new Webhook(secret).verify(request.body, request.headers as Record<string, string>);
  } finally {
    vi.useRealTimers();
  }
}

/** The body against the contract's webhooks entry of its type: the event narrowed to that type. */
function contractErrors(body: string): string[] {
  const event = JSON.parse(body) as { type: string };
  const at = pointer('webhooks', event.type, 'post', 'requestBody', 'content', 'application/json', 'schema');
  return contract.errors(at, event);
}

// The clock starts at the real time, so the first attempts' timestamps are also fresh by the real clock.
const clock = new TestClock(Math.floor(Date.now() / 1000));
/** Host names the SSRF checks resolve, by the test (the machines have no public DNS). */
const dns = new Map<string, string[]>();
const resolveHost = async (host: string) => dns.get(host) ?? [];
const WEBHOOK_ENV = { WEBHOOK_ALLOW_HTTP_LOOPBACK: 'true', WEBHOOK_TIMEOUT_MS: '500', WEBHOOK_DISABLE_AFTER_DAYS: '1' };

// Registered first: the receiver outlives the dispatcher's last attempts.
let receiver: Receiver;
let receiverUrl: string;
beforeAll(async () => {
  receiver = new Receiver(() => clock.nowMs());
  receiverUrl = await receiver.start();
});
afterAll(async () => {
  await receiver?.close();
});

const app = useTestServer({
  clock,
  env: {
    ...SIMULATED_WORKFLOWS_ENV,
    ...WEBHOOK_ENV,
  },
  resolveHost,
  runtime: { simulation: { followPollMs: 20 }, tickMs: 20, orphanAfterSeconds: 1, webhooks: true },
});
const { secretsKey } = app;

const client = (user: TestUser) => createPlatformClient({ baseUrl: app.baseUrl, token: user.token, retry: false });

async function createEndpoint(user: TestUser, body: { url: string; event_types?: string[]; enabled?: boolean }) {
  const reply = await call(app.baseUrl, 'POST', '/v1/webhook_endpoints', { token: user.token, body });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  secretsOf.set(`${user.userId}${new URL(body.url).pathname}`, reply.body.secret);
  return reply.body as { id: string; secret: string };
}

async function deliveriesOf(user: TestUser, endpointId: string) {
  const all = [];
  let cursor: string | undefined;
  for (;;) {
    const reply = await call(app.baseUrl, 'GET', `/v1/webhook_endpoints/${endpointId}/deliveries?limit=2${cursor ? `&cursor=${cursor}` : ''}`, {
      token: user.token,
    });
    expect(reply.status).toBe(200);
    all.push(...reply.body.data);
    if (!reply.body.pagination.has_more) return all;
    cursor = reply.body.pagination.cursor;
  }
}

async function feed(user: TestUser) {
  const events = [];
  let cursor: string | undefined;
  for (;;) {
    const reply = await call(app.baseUrl, 'GET', `/v1/events?limit=100${cursor ? `&cursor=${cursor}` : ''}`, { token: user.token });
    events.push(...reply.body.data);
    if (!reply.body.pagination.has_more) return events;
    cursor = reply.body.pagination.cursor;
  }
}

const settled = () => workersSettled(app.db, clock);

const secretsOf = new Map<string, string>();
/** The secret of the endpoint a user created for a receiver path. */
const secretFor = (user: TestUser, path: string) => secretsOf.get(`${user.userId}${path}`);

const createCluster = (user: TestUser, name: string) => client(user).POST('/v1/clusters', { body: { name, region_id: 'fsn1' } });

describe('deliveries of a workspace’s events', () => {
  let user: TestUser;
  let all: { id: string; secret: string };
  let installsOnly: { id: string; secret: string };

  beforeAll(async () => {
    user = await newUser(app.db, clock, 'pro');
    all = await createEndpoint(user, { url: `${receiverUrl}/all` });
    installsOnly = await createEndpoint(user, { url: `${receiverUrl}/installs`, event_types: ['install.running', 'install.failed'] });
    const api = client(user);
    const cluster = await runningCluster(app, user, 'hooks');
    const { config } = await ownKeyComputeConfig(app, user, { name: 'byom' });
    await api.POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: config.id } });
    await settled();
    clock.advance(20);
    await eventually(
      () => api.GET('/v1/compute/machines', { params: { query: { cluster_id: cluster.id } } }),
      (m) => m[0]?.status === 'ready',
      'ready',
    );
    const product = await api.POST('/v1/products', {
      body: {
        name: 'Shop',
        cluster_ids: [cluster.id],
        sources: [{ chart: { repo_url: 'https://charts.bitnami.com/bitnami', target_revision: '19.6.1', chart: 'wordpress' } }],
      },
    });
    const install = await api.POST('/v1/installs', { body: { product_id: product.id, region_id: 'fsn1' } });
    await eventually(
      () => api.GET('/v1/installs/{id}', { params: { path: { id: install.id } } }),
      (i) => i.status === 'installing',
      'installing',
    );
    await settled();
    clock.advance(8);
    await eventually(
      () => api.GET('/v1/installs/{id}', { params: { path: { id: install.id } } }),
      (i) => i.status === 'running',
      'running',
    );
    await eventually(
      () => deliveriesOf(user, all.id),
      (d) => d.length === 6 && d.every((x) => x.status === 'succeeded'),
      'every delivery to succeed',
    );
  });

  it('sends each event of the feed once, as the feed has it, signed per Standard Webhooks and valid against the contract', async () => {
    const events = await feed(user);
    expect(events.map((e) => e.type).sort()).toEqual(
      ['cluster.created', 'cluster.running', 'machine.ready', 'product.regeneration_succeeded', 'install.created', 'install.running'].sort(),
    );
    const received = receiver.at('/all');
    expect(received.map((r) => r.headers['webhook-id']).sort()).toEqual(events.map((e) => e.id).sort());
    for (const request of received) {
      const event = events.find((e) => e.id === request.headers['webhook-id']);
      expect(verify(all.secret, request)).toEqual(event);
      expect(contractErrors(request.body)).toEqual([]);
      expect(request.headers['content-type']).toBe('application/json');
      // One signature, made with this endpoint's secret only.
      expect(String(request.headers['webhook-signature']).split(' ')).toHaveLength(1);
      expect(() => verify(installsOnly.secret, request)).toThrow();
    }
  });

  it('sends an endpoint only the types it subscribes to', async () => {
    const received = receiver.at('/installs');
    expect(received.map((r) => JSON.parse(r.body).type)).toEqual(['install.running']);
    expect(verify(installsOnly.secret, received[0]!)).toMatchObject({ type: 'install.running', object: { status: 'running' } });
  });

  it('lists the deliveries as the feed has the events: one each, succeeded at the first attempt', async () => {
    const events = await feed(user);
    const deliveries = await deliveriesOf(user, all.id);
    expect(deliveries.map((d) => [d.event_id, d.event_type])).toEqual(events.map((e) => [e.id, e.type]));
    for (const delivery of deliveries) {
      expect(delivery).toMatchObject({
        endpoint_id: all.id,
        status: 'succeeded',
        attempts: 1,
        last_response_status: 204,
        last_error: null,
        next_attempt_at: null,
      });
      expect(delivery.last_duration_ms).toBeGreaterThanOrEqual(0);
    }
    const succeeded = await call(app.baseUrl, 'GET', `/v1/webhook_endpoints/${all.id}/deliveries?status=pending`, { token: user.token });
    expect(succeeded.body.data).toEqual([]);
  });
});

describe('the install lifecycle', () => {
  it('tells an update, a rollback and an uninstall', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const endpoint = await createEndpoint(user, {
      url: `${receiverUrl}/lifecycle`,
      event_types: ['install.updated', 'install.rolled_back', 'install.uninstalled', 'install.running'],
    });
    const api = client(user);
    const cluster = await runningCluster(app, user, 'lifecycle');
    const product = await api.POST('/v1/products', {
      body: {
        name: 'Blog',
        cluster_ids: [cluster.id],
        sources: [{ chart: { repo_url: 'https://charts.bitnami.com/bitnami', target_revision: '19.6.1', chart: 'wordpress' } }],
      },
    });
    const getInstall = (id: string) => () => api.GET('/v1/installs/{id}', { params: { path: { id } } });
    const untilRunning = async (id: string) => {
      await eventually(getInstall(id), (i) => i.status === 'installing', 'installing');
      await settled();
      clock.advance(8);
      await eventually(getInstall(id), (i) => i.status === 'running', 'running');
    };
    const install = await api.POST('/v1/installs', { body: { product_id: product.id, region_id: 'fsn1' } });
    await untilRunning(install.id);
    await api.PATCH('/v1/installs/{id}', {
      params: { path: { id: install.id } },
      body: { overrides: [{ template_helm_source_id: product.sources[0]!.id, values: { replicaCount: 2 } }] },
    });
    await untilRunning(install.id);
    await api.POST('/v1/installs/{id}/rollback', { params: { path: { id: install.id } }, body: { revision: 1 } });
    await untilRunning(install.id);
    await api.DELETE('/v1/installs/{id}', { params: { path: { id: install.id } } });
    await settled();
    clock.advance(8);
    await eventually(
      () => call(app.baseUrl, 'GET', `/v1/installs/${install.id}`, { token: user.token }),
      (r) => r.status === 404,
      'the install to be gone',
    );
    const types = ['install.running', 'install.updated', 'install.running', 'install.rolled_back', 'install.running', 'install.uninstalled'];
    const deliveries = await eventually(
      () => deliveriesOf(user, endpoint.id),
      (d) => d.length === types.length && d.every((x) => x.status === 'succeeded'),
      'the lifecycle’s deliveries',
    );
    expect(deliveries.map((d) => d.event_type)).toEqual(types);
    const bodies = receiver.at('/lifecycle').map((r) => JSON.parse(r.body));
    expect(bodies.find((b) => b.type === 'install.updated').object).toMatchObject({ id: install.id, overrides: [{ values: { replicaCount: 2 } }] });
    expect(bodies.find((b) => b.type === 'install.rolled_back').object).toMatchObject({ id: install.id, status: 'installing', overrides: [] });
    expect(bodies.find((b) => b.type === 'install.uninstalled').object).toMatchObject({ id: install.id, status: 'uninstalling' });
    for (const request of receiver.at('/lifecycle')) expect(contractErrors(request.body)).toEqual([]);
    // The feed has the same events.
    const feedIds = (await feed(user)).filter((e) => types.includes(e.type)).map((e) => e.id);
    expect(deliveries.map((d) => d.event_id)).toEqual(feedIds);
  });
});

describe('quotas and tokens', () => {
  it('tells a quota reached, with the quota entry', async () => {
    const user = await newUser(app.db, clock, 'free');
    await createEndpoint(user, { url: `${receiverUrl}/quota`, event_types: ['quota.reached'] });
    await createCluster(user, 'the-only-one');
    const [request] = await eventually(
      () => receiver.at('/quota'),
      (r) => r.length === 1,
      'quota.reached',
    );
    expect(verify(secretFor(user, '/quota')!, request!)).toMatchObject({
      type: 'quota.reached',
      object_type: 'quota',
      object_id: 'kaas/clusters',
      object: { metric: 'kaas/clusters', limit: 1, usage: 1, remaining: 0 },
    });
    expect(contractErrors(request!.body)).toEqual([]);
  });

  it('tells once that a personal access token expires within 7 days', async () => {
    const user = await newUser(app.db, clock, 'pro');
    await createEndpoint(user, { url: `${receiverUrl}/tokens`, event_types: ['token.expiring_soon'] });
    const soon = await client(user).POST('/v1/user/tokens', { body: { name: 'ci', expires_at: clock.now() + 3 * 86_400, scopes: ['clusters:read'] } });
    await client(user).POST('/v1/user/tokens', { body: { name: 'later', expires_at: clock.now() + 30 * 86_400, scopes: ['clusters:read'] } });
    await tellExpiringTokens(app.db, clock.now());
    await tellExpiringTokens(app.db, clock.now());
    const [request] = await eventually(
      () => receiver.at('/tokens'),
      (r) => r.length === 1,
      'token.expiring_soon',
    );
    expect(JSON.parse(request!.body)).toMatchObject({ type: 'token.expiring_soon', object_type: 'token', object_id: soon.id, object: { name: 'ci' } });
    expect(request!.body).not.toContain(soon.token);
    expect(contractErrors(request!.body)).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(receiver.at('/tokens')).toHaveLength(1);
    const notifications = await client(user).GET('/v1/notifications', {});
    expect(notifications.data.filter((n) => n.type === 'token.expiring_soon').map((n) => n.resource_id)).toEqual([soon.id]);
  });
});

describe('retries', () => {
  it('retries after a 500, with the same webhook-id, and succeeds', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const endpoint = await createEndpoint(user, { url: `${receiverUrl}/flaky`, event_types: ['cluster.created'] });
    receiver.answer = (request, nth) => (request.path === '/flaky' && nth === 1 ? 500 : 204);
    const cluster = await createCluster(user, 'flaky');
    const [first] = await eventually(
      () => deliveriesOf(user, endpoint.id),
      (d) => d[0]?.attempts === 1 && d[0].last_duration_ms !== null,
      'the first attempt',
    );
    expect(first).toMatchObject({ status: 'pending', last_response_status: 500, last_error: 'The endpoint answered HTTP 500.' });
    // 5 s later, ±10 %.
    expect(first.next_attempt_at - first.last_attempt_at).toBeGreaterThanOrEqual(4);
    expect(first.next_attempt_at - first.last_attempt_at).toBeLessThanOrEqual(6);
    clock.advance(6);
    const [second] = await eventually(
      () => deliveriesOf(user, endpoint.id),
      (d) => d[0]?.status === 'succeeded',
      'the retry',
    );
    expect(second).toMatchObject({ attempts: 2, last_response_status: 204, last_error: null });
    const received = receiver.at('/flaky');
    expect(received).toHaveLength(2);
    for (const request of received) {
      expect(request.headers['webhook-id']).toBe(first.event_id);
      expect(verify(endpoint.secret, request)).toMatchObject({ type: 'cluster.created', object_id: cluster.id });
    }
    // Each attempt is signed when it is made.
    expect(received.map((r) => Number(r.headers['webhook-timestamp']))).toEqual([received[0]!.at / 1000, received[1]!.at / 1000]);
  });

  it('retries an attempt that got no answer within the timeout', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const endpoint = await createEndpoint(user, { url: `${receiverUrl}/slow`, event_types: ['cluster.created'] });
    receiver.answer = (request, nth) => (request.path === '/slow' && nth === 1 ? 'never' : 204);
    await createCluster(user, 'slow');
    const [first] = await eventually(
      () => deliveriesOf(user, endpoint.id),
      (d) => d[0]?.attempts === 1 && d[0].last_duration_ms !== null,
      'the first attempt to time out',
    );
    expect(first).toMatchObject({ status: 'pending', last_response_status: null, last_error: 'No answer: no answer within 500 ms.' });
    expect(first.last_duration_ms).toBeGreaterThanOrEqual(450);
    clock.advance(6);
    await eventually(
      () => deliveriesOf(user, endpoint.id),
      (d) => d[0]?.status === 'succeeded',
      'the retry',
    );
    expect(receiver.at('/slow')).toHaveLength(2);
  });

  it('counts a failed attempt on its endpoint once, when settling it failed and it is sent again after its lease', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const endpoint = await createEndpoint(user, { url: `${receiverUrl}/settle-refused`, event_types: ['cluster.created'] });
    receiver.answer = (request) => (request.path === '/settle-refused' ? 500 : 204);
    // The first settling of this endpoint's delivery fails (an outage as it is written); a sequence, not a row,
    // counts it, since the failure rolls back what the statement wrote.
    await sql`CREATE SEQUENCE settle_refusals`.execute(app.db);
    await sql`CREATE FUNCTION refuse_first_settle() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF nextval('settle_refusals') = 1 THEN RAISE EXCEPTION 'connection lost while settling'; END IF;
        RETURN NEW;
      END $$`.execute(app.db);
    await sql`CREATE TRIGGER refuse_first_settle BEFORE UPDATE ON webhook_deliveries FOR EACH ROW
      WHEN (NEW.endpoint_id = ${sql.lit(endpoint.id)} AND NEW.last_duration_ms IS NOT NULL AND OLD.last_duration_ms IS NULL)
      EXECUTE FUNCTION refuse_first_settle()`.execute(app.db);
    try {
      await createCluster(user, 'settle-refused');
      // Sent again once the first attempt's lease runs out (its timeout and 5 s), and settled this time.
      const [delivery] = await eventually(
        () => deliveriesOf(user, endpoint.id),
        (d) => d[0]?.attempts === 2 && d[0].last_duration_ms !== null,
        'the attempt after the lease',
        20_000,
      );
      expect(delivery.status).toBe('pending');
      // Two attempts were made (the delivery counts them); the second failed either way: the endpoint's 500, or no
      // answer within WEBHOOK_TIMEOUT_MS (500 ms) on a busy machine, before or after the endpoint read it. What is
      // checked is that each failure counts once.
      expect(receiver.at('/settle-refused').length).toBeGreaterThanOrEqual(1);
      expect([500, null]).toContain(delivery.last_response_status);
      // The unsettled attempt's failure was not kept on the endpoint: two attempts settled as one failure each would
      // have opened its circuit early.
      const row = await app.db.selectFrom('webhook_endpoints').select('consecutive_failures').where('id', '=', endpoint.id).executeTakeFirstOrThrow();
      expect(row.consecutive_failures).toBe(1);
    } finally {
      await sql`DROP TRIGGER refuse_first_settle ON webhook_deliveries`.execute(app.db);
      await sql`DROP FUNCTION refuse_first_settle`.execute(app.db);
      await sql`DROP SEQUENCE settle_refusals`.execute(app.db);
    }
  });

  it('follows the schedule to 3 days after the first attempt, then fails; an endpoint failing for a day (this server’s setting) is disabled and its workspace told', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const endpoint = await createEndpoint(user, { url: `${receiverUrl}/down`, event_types: ['cluster.created'] });
    const watcher = await createEndpoint(user, { url: `${receiverUrl}/watch`, event_types: ['webhook_endpoint.disabled'] });
    receiver.answer = (request) => (request.path === '/down' ? 503 : 204);
    await createCluster(user, 'down');
    const attemptsMade = async () => (await deliveriesOf(user, endpoint.id))[0];
    // An attempt under way is counted, its outcome empty until it ends.
    const ended = (d: Awaited<ReturnType<typeof attemptsMade>>) => d?.last_duration_ms !== null;
    let delivery = await eventually(attemptsMade, (d) => d?.attempts === 1 && ended(d), 'the first attempt');
    const gaps: number[] = [];
    const failingSince = async () => (await call(app.baseUrl, 'GET', `/v1/webhook_endpoints/${endpoint.id}`, { token: user.token })).body.failing_since;
    while (delivery.status === 'pending') {
      // Failing for a day at this attempt: it is disabled right after the attempt is settled. The clock stays until
      // then, so that the watcher's delivery of the disabling is received at the time it was sent.
      if (clock.now() - (await failingSince()) >= 86_400) {
        delivery = await eventually(attemptsMade, (d) => d.status !== 'pending', 'the endpoint to be disabled');
        break;
      }
      gaps.push(delivery.next_attempt_at - delivery.last_attempt_at);
      clock.advance(delivery.next_attempt_at - clock.now());
      const attempts = delivery.attempts;
      delivery = await eventually(attemptsMade, (d) => (d.attempts > attempts && ended(d)) || d.status !== 'pending', `attempt ${attempts + 1}`);
    }
    // 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, …, each ±10 %: the 7th attempt is ~17.6 h after the first, the 8th ~27.6 h, past a day.
    expect(gaps.slice(0, 6).map((g, i) => Math.abs(g / [5, 300, 1800, 7200, 18_000, 36_000][i]! - 1) <= 0.1 + 0.5 / g)).toEqual(Array(6).fill(true));
    // The endpoint failed for a day: disabled, and the delivery cancelled with it.
    expect(delivery.status).toBe('cancelled');
    const got = await call(app.baseUrl, 'GET', `/v1/webhook_endpoints/${endpoint.id}`, { token: user.token });
    expect(got.body).toMatchObject({ enabled: false, disabled_reason: expect.stringMatching(/^Every delivery failed for 1 days/) });
    const notifications = await client(user).GET('/v1/notifications', {});
    const notice = notifications.data.find((n) => n.type === 'webhook_endpoint.disabled');
    expect(notice).toMatchObject({ resource_type: 'webhook_endpoint', resource_id: endpoint.id, title: 'Webhook endpoint disabled', severity: 'warning' });
    // The same change is an event of the same type, written with the notification: in the feed, and sent to the
    // workspace's other endpoints that subscribe to it, with the endpoint as it is now.
    const disabled = (await feed(user)).filter((e) => e.type === 'webhook_endpoint.disabled');
    expect(disabled).toEqual([
      expect.objectContaining({ object_type: 'webhook_endpoint', object_id: endpoint.id, object: got.body, created_at: notice!.created_at }),
    ]);
    const [told] = await eventually(
      async () => receiver.at('/watch'),
      (received) => received.length > 0,
      'the watcher to be told',
    );
    expect(verify(watcher.secret, told!)).toEqual(disabled[0]);
    expect(contractErrors(told!.body)).toEqual([]);
    expect(receiver.at('/watch')).toHaveLength(1);
    // Nothing more is sent to it.
    const sent = receiver.at('/down').length;
    clock.advance(36_000);
    await createCluster(user, 'down-2');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.at('/down')).toHaveLength(sent);
    expect(await deliveriesOf(user, endpoint.id)).toHaveLength(1);
  });

  it('gives up 3 days after the first attempt', () => {
    const first = 1_000_000;
    // 5 s, 5 min, 30 min, 2 h, 5 h, then every 10 h: the 12th attempt is 67.6 h after the first, a 13th would be at 77.6 h.
    let at = first;
    let attempts = 1;
    for (;;) {
      const next = nextAttemptAt(attempts, first, at, () => 0.5);
      if (next === undefined) break;
      at = next;
      attempts++;
    }
    expect(attempts).toBe(12);
    expect(at - first).toBeLessThanOrEqual(RETRY_WINDOW_SECONDS);
    // The jitter's bounds: 90 % and 110 % of the step.
    expect(nextAttemptAt(6, first, first, () => 0)).toBe(first + 32_400);
    expect(nextAttemptAt(9, first, first, () => 1)).toBe(first + 39_600);
  });
});

describe('a disabled endpoint', () => {
  it('gets nothing: no delivery is written for it, and disabling it cancels what was pending; enabled again, a delivery can be redelivered', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const off = await createEndpoint(user, { url: `${receiverUrl}/off`, enabled: false });
    const retrying = await createEndpoint(user, { url: `${receiverUrl}/retrying`, event_types: ['cluster.created'] });
    const on = await createEndpoint(user, { url: `${receiverUrl}/on`, event_types: ['cluster.created'] });
    receiver.answer = (request, nth) => (request.path === '/retrying' && nth === 1 ? 500 : 204);
    await createCluster(user, 'off');
    await eventually(
      () => receiver.at('/on'),
      (r) => r.length === 1,
      'the enabled endpoint’s delivery',
    );
    const [pending] = await eventually(
      () => deliveriesOf(user, retrying.id),
      (d) => d[0]?.attempts === 1,
      'the failed attempt',
    );
    expect(pending.status).toBe('pending');
    expect(await deliveriesOf(user, off.id)).toEqual([]);

    const disabled = await call(app.baseUrl, 'PATCH', `/v1/webhook_endpoints/${retrying.id}`, { token: user.token, body: { enabled: false } });
    expect(disabled.body).toMatchObject({ enabled: false, disabled_reason: 'Disabled through the API.' });
    expect((await deliveriesOf(user, retrying.id))[0]).toMatchObject({ status: 'cancelled', next_attempt_at: null });
    clock.advance(10);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.at('/retrying')).toHaveLength(1);
    expect(receiver.at('/off')).toEqual([]);

    const refused = await call(app.baseUrl, 'POST', `/v1/webhook_endpoints/${retrying.id}/deliveries/${pending.id}/redeliver`, { token: user.token });
    expect(refused.status).toBe(409);
    await call(app.baseUrl, 'PATCH', `/v1/webhook_endpoints/${retrying.id}`, { token: user.token, body: { enabled: true } });
    const redelivered = await call(app.baseUrl, 'POST', `/v1/webhook_endpoints/${retrying.id}/deliveries/${pending.id}/redeliver`, { token: user.token });
    expect(redelivered.status).toBe(202);
    expect(redelivered.body).toMatchObject({ id: pending.id, status: 'pending', next_attempt_at: clock.now() });
    await eventually(
      () => deliveriesOf(user, retrying.id),
      (d) => d[0]?.status === 'succeeded',
      'the redelivery',
    );
    const received = receiver.at('/retrying');
    expect(received).toHaveLength(2);
    expect(received[1]!.headers['webhook-id']).toBe(pending.event_id);
    expect(verify(retrying.secret, received[1]!)).toMatchObject({ id: pending.event_id });
    // A succeeded delivery can be sent again too.
    const again = await call(app.baseUrl, 'POST', `/v1/webhook_endpoints/${on.id}/deliveries/${(await deliveriesOf(user, on.id))[0].id}/redeliver`, {
      token: user.token,
    });
    expect(again.status).toBe(202);
    await eventually(
      () => receiver.at('/on'),
      (r) => r.length === 2,
      'the second delivery',
    );
  });
});

describe('secret rotation', () => {
  it('signs with both secrets during the overlap, then with the new one only', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const endpoint = await createEndpoint(user, { url: `${receiverUrl}/rotated`, event_types: ['cluster.created'] });
    const rotated = await call(app.baseUrl, 'POST', `/v1/webhook_endpoints/${endpoint.id}/rotate_secret`, {
      token: user.token,
      body: { overlap_seconds: 3600 },
    });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(rotated.body.secret).not.toBe(endpoint.secret);
    expect(rotated.body.previous_secret_expires_at).toBe(clock.now() + 3600);
    // The secret is not shown again.
    const got = await call(app.baseUrl, 'GET', `/v1/webhook_endpoints/${endpoint.id}`, { token: user.token });
    expect(got.body).not.toHaveProperty('secret');

    await createCluster(user, 'rotated-1');
    const [during] = await eventually(
      () => receiver.at('/rotated'),
      (r) => r.length === 1,
      'a delivery during the overlap',
    );
    expect(String(during!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verify(endpoint.secret, during!)).toMatchObject({ type: 'cluster.created' });
    expect(verify(rotated.body.secret, during!)).toMatchObject({ type: 'cluster.created' });

    clock.advance(3601);
    await createCluster(user, 'rotated-2');
    const [, after] = await eventually(
      () => receiver.at('/rotated'),
      (r) => r.length === 2,
      'a delivery after the overlap',
    );
    expect(String(after!.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verify(rotated.body.secret, after!)).toMatchObject({ type: 'cluster.created' });
    expect(() => verify(endpoint.secret, after!)).toThrow(/No matching signature/);
  });
});

describe('SSRF', () => {
  it('refuses at creation what must not be connected to, naming url', async () => {
    const user = await newUser(app.db, clock, 'pro');
    dns.set('intranet.example.com', ['10.1.2.3']);
    dns.set('public.example.com', ['93.184.216.34']);
    for (const url of [
      'http://10.0.0.1/hook',
      'https://10.0.0.1/hook',
      'https://169.254.169.254/latest/meta-data',
      'https://[::ffff:169.254.169.254]/',
      'https://metadata.google.internal/',
      'https://intranet.example.com/hook',
      'http://public.example.com/hook',
      'https://user:pass@public.example.com/hook',
      'ftp://public.example.com/hook',
    ]) {
      const reply = await call(app.baseUrl, 'POST', '/v1/webhook_endpoints', { token: user.token, body: { url } });
      expect(reply.status, url).toBe(422);
      expect(reply.body.error, url).toMatchObject({ code: 'validation_error', param: 'url' });
    }
    const patched = await createEndpoint(user, { url: 'https://public.example.com/hook' });
    const reply = await call(app.baseUrl, 'PATCH', `/v1/webhook_endpoints/${patched.id}`, {
      token: user.token,
      body: { url: 'https://intranet.example.com/' },
    });
    expect(reply.status).toBe(422);
    expect(reply.body.error.param).toBe('url');
  });

  it('checks again at every connection: a host that now resolves to a refused address is not connected to', async () => {
    const user = await newUser(app.db, clock, 'pro');
    dns.set('rebinding.example.com', ['93.184.216.34']);
    const endpoint = await createEndpoint(user, { url: 'https://rebinding.example.com/hook', event_types: ['cluster.created'] });
    dns.set('rebinding.example.com', ['93.184.216.34', '10.9.8.7']);
    await createCluster(user, 'rebinding');
    const [delivery] = await eventually(
      () => deliveriesOf(user, endpoint.id),
      (d) => d[0]?.attempts === 1 && d[0].last_duration_ms !== null,
      'the refused attempt',
    );
    expect(delivery).toMatchObject({ status: 'pending', last_response_status: null, last_duration_ms: 0 });
    expect(delivery.last_error).toBe(
      'Not sent: the URL rebinding.example.com is or resolves to 10.9.8.7, a loopback, private, link-local or metadata address.',
    );
  });

  it('connects to the address it checked, never resolving the name again', async () => {
    const user = await newUser(app.db, clock, 'pro');
    // The name exists only in the test's resolver: the connection can only have used the address checked.
    dns.set('receiver.test', ['127.0.0.1']);
    await createEndpoint(user, { url: `http://receiver.test:${receiver.port}/pinned`, event_types: ['cluster.created'] });
    await createCluster(user, 'pinned');
    const [request] = await eventually(
      () => receiver.at('/pinned'),
      (r) => r.length === 1,
      'the delivery',
    );
    expect(request!.headers.host).toBe(`receiver.test:${receiver.port}`);
  });
});

describe('endpoints', () => {
  it('are the workspace admins’: a member gets 403, another user 404', async () => {
    const owner = await newUser(app.db, clock, 'pro');
    const member = await newUser(app.db, clock);
    await app.db
      .insertInto('workspace_members')
      .values({ workspace_id: owner.workspaceId, user_id: member.userId, role: 'member', created_at: clock.now() })
      .execute();
    const endpoint = await createEndpoint(owner, { url: `${receiverUrl}/x` });
    const asMember = await call(app.baseUrl, 'GET', `/v1/webhook_endpoints/${endpoint.id}`, { token: member.token });
    expect(asMember.status).toBe(403);
    const stranger = await newUser(app.db, clock);
    expect((await call(app.baseUrl, 'GET', `/v1/webhook_endpoints/${endpoint.id}`, { token: stranger.token })).status).toBe(404);
    expect((await call(app.baseUrl, 'DELETE', `/v1/webhook_endpoints/${endpoint.id}`, { token: owner.token })).status).toBe(204);
    expect((await call(app.baseUrl, 'GET', `/v1/webhook_endpoints/${endpoint.id}`, { token: owner.token })).status).toBe(404);
  });
});

/** A user of `db` with one endpoint for every event type at `url` (made by the resource, no server involved). */
async function userWithEndpoint(db: TestDatabase['db'], url: string): Promise<TestUser> {
  const user = await newUser(db, systemClock, 'pro');
  await createWebhookEndpoint(
    db,
    { id: user.workspaceId, owner_id: user.userId },
    { url, event_types: [], description: '', enabled: true },
    { now: systemClock.now(), secrets: secretBox(secretsKey), perWorkspace: 16 },
  );
  return user;
}

/** A quota.reached event of the workspace, as the quota service records it. */
const quotaReached = (workspaceId: string) => ({
  type: 'quota.reached' as const,
  workspace_id: workspaceId,
  object_type: 'quota' as const,
  object_id: 'kaas/clusters',
  object: {
    metric: 'kaas/clusters' as const,
    type: 'allocation' as const,
    displayName: 'Managed clusters',
    unit: 'count' as const,
    limit: 3,
    usage: 3,
    remaining: 0,
  },
});

describe('a worker killed with SIGKILL in the middle of a delivery', { timeout: 60_000 }, () => {
  const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
  const workers = new Set<ChildProcess>();
  let own: TestDatabase;
  let crashReceiver: Receiver;

  const startWorker = () => {
    const child = spawn(process.execPath, [main, '--role', 'worker'], {
      env: {
        ...process.env,
        DATABASE_URL: own.url,
        SECRETS_KEY: secretsKey.toString('base64'),
        LOG_LEVEL: 'silent',
        WORKFLOW_ORPHAN_SECONDS: '1',
        WEBHOOK_ALLOW_HTTP_LOOPBACK: 'true',
        WEBHOOK_TIMEOUT_MS: '1000',
      },
      stdio: 'ignore',
    });
    workers.add(child);
    child.once('exit', () => workers.delete(child));
    return child;
  };
  const kill = async (child: ChildProcess) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  };

  beforeAll(async () => {
    own = await createTestDatabase();
    crashReceiver = new Receiver(() => Date.now());
  });
  afterAll(async () => {
    await Promise.all([...workers].map(kill));
    await crashReceiver?.close();
    await own?.drop();
  });

  it('loses no delivery: what the killed worker was sending is sent again by the next', async () => {
    const url = await crashReceiver.start();
    const user = await userWithEndpoint(own.db, `${url}/crash`);
    // The first worker's requests are never answered: it is killed while it waits for them.
    let killing = true;
    crashReceiver.answer = () => (killing ? 'never' : 204);
    const events = 5;
    for (let i = 0; i < events; i++) {
      await recordEvent(own.db, quotaReached(user.workspaceId), systemClock.now());
    }
    const first = startWorker();
    // Killed once each attempt it started has reached the receiver: an attempt is counted when it starts, so one
    // killed before its request left would be counted and never received.
    const started = async () => {
      const rows = await own.db.selectFrom('webhook_deliveries').select('attempts').execute();
      return { started: rows.reduce((sum, row) => sum + row.attempts, 0), received: crashReceiver.received.length };
    };
    await eventually(started, (n) => n.received >= 1 && n.received === n.started, 'the first worker to be sending what it started', 20_000);
    await kill(first);
    const sentBeforeTheKill = new Set(crashReceiver.received.map((r) => r.headers['webhook-id']));
    killing = false;
    startWorker();
    const rows = () => own.db.selectFrom('webhook_deliveries').select(['event_id', 'status', 'attempts']).execute();
    const done = await eventually(rows, (r) => r.length === events && r.every((d) => d.status === 'succeeded'), 'every delivery to succeed', 30_000);
    // Each attempt is counted, the killed worker's too: as many as the receiver got of each event.
    const received = (id: string) => crashReceiver.received.filter((r) => r.headers['webhook-id'] === id).length;
    expect(done.map((d) => d.attempts)).toEqual(done.map((d) => received(d.event_id)));
    const delivered = new Set(crashReceiver.received.map((r) => r.headers['webhook-id']));
    expect([...delivered].sort()).toEqual(done.map((d) => d.event_id).sort());
    // What the killed worker had sent came again, with the same webhook-id: receivers de-duplicate by it.
    for (const id of sentBeforeTheKill) expect(crashReceiver.received.filter((r) => r.headers['webhook-id'] === id).length).toBeGreaterThanOrEqual(2);
    for (const request of crashReceiver.received) expect(contractErrors(request.body)).toEqual([]);
  });
});

describe('a committed event reaches the dispatcher at once', () => {
  let own: TestDatabase;
  let dispatcher: WebhookDispatcher | undefined;
  let quick: Receiver;
  beforeAll(async () => {
    own = await createTestDatabase();
    quick = new Receiver(() => Date.now());
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await quick?.close();
    await own?.drop();
  });

  /** A dispatcher whose ticker is an hour away: what it sends in a test's seconds came by NOTIFY. */
  async function listeningDispatcher(): Promise<void> {
    if (dispatcher) return;
    dispatcher = new WebhookDispatcher({
      db: own.db,
      leases: openDatabase(own.url, 2, DELIVERY_SESSION),
      connectionString: own.url,
      clock: systemClock,
      logger: serverLogger(),
      secrets: secretBox(secretsKey),
      resolve: resolveHost,
      config: loadConfig(WEBHOOK_ENV).webhooks,
      tickMs: 3_600_000,
    });
    await dispatcher.run();
  }

  it('is sent on the NOTIFY of its commit, not at the next tick (an hour away here); a rolled-back one never', async () => {
    const url = await quick.start();
    const user = await userWithEndpoint(own.db, `${url}/notify`);
    await listeningDispatcher();
    const quota = quotaReached(user.workspaceId);
    const rolledBack = new Error('rolled back');
    await expect(
      own.db.transaction().execute(async (trx) => {
        await recordEvent(trx, quota, systemClock.now());
        throw rolledBack;
      }),
    ).rejects.toBe(rolledBack);
    const id = await recordEvent(own.db, quota, systemClock.now());
    const [arrived] = await eventually(
      () => quick.at('/notify'),
      (r) => r.length >= 1,
      'the delivery',
      10_000,
    );
    expect(arrived?.headers['webhook-id']).toBe(id);
    // Nothing of the rolled-back event: it has no row, and its NOTIFY was never sent.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(quick.at('/notify')).toHaveLength(1);
  });

  // The first DELIVERIES_WITH_EVENT deliveries are written by the statement that writes the event; the rest by one more.
  it('reaches each endpoint of its workspace once, beyond those written with the event', async () => {
    const url = await quick.start();
    const user = await newUser(own.db, systemClock, 'pro');
    const endpoints = DELIVERIES_WITH_EVENT + 4;
    const paths = Array.from({ length: endpoints }, (_, i) => `/many-${i}`);
    for (const path of paths) {
      await createWebhookEndpoint(
        own.db,
        { id: user.workspaceId, owner_id: user.userId },
        { url: `${url}${path}`, event_types: ['quota.reached'], description: '', enabled: true },
        { now: systemClock.now(), secrets: secretBox(secretsKey), perWorkspace: endpoints },
      );
    }
    await listeningDispatcher();
    const id = await recordEvent(own.db, quotaReached(user.workspaceId), systemClock.now());
    const arrived = await eventually(
      async () => paths.flatMap((path) => quick.at(path)),
      (r) => r.length >= endpoints,
      'a delivery at each endpoint',
      10_000,
    );
    expect(arrived.map((request) => request.headers['webhook-id'])).toEqual(paths.map(() => id));
    const deliveries = await own.db.selectFrom('webhook_deliveries').select(['endpoint_id', 'id']).where('event_id', '=', id).execute();
    expect(new Set(deliveries.map((d) => d.endpoint_id)).size).toBe(endpoints);
    expect(new Set(deliveries.map((d) => d.id)).size).toBe(endpoints);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(paths.map((path) => quick.at(path).length)).toEqual(paths.map(() => 1));
  });
});

// The deliveries' rows beside their event's and their endpoint's, on a database of their own.
describe('deliveries, their event and their endpoint', () => {
  let own: TestDatabase;
  beforeAll(async () => {
    own = await createTestDatabase();
  });
  afterAll(async () => {
    await own?.drop();
  });

  // A delivery holds no foreign key to its event (migration 20261126_2200): pruning events deletes their deliveries.
  it('deletes an expired event’s deliveries with it, and keeps the others', async () => {
    const user = await userWithEndpoint(own.db, 'https://hooks.example.com/kept');
    const now = systemClock.now();
    const expired = await recordEvent(own.db, quotaReached(user.workspaceId), now - 31 * 86_400);
    const kept = await recordEvent(own.db, quotaReached(user.workspaceId), now);
    const deliveriesOf = async (eventId: string) =>
      (await own.db.selectFrom('webhook_deliveries').select('id').where('event_id', '=', eventId).execute()).length;
    expect([await deliveriesOf(expired), await deliveriesOf(kept)]).toEqual([1, 1]);
    expect(await pruneEvents(own.db, now - 30 * 86_400)).toBe(1);
    expect([await deliveriesOf(expired), await deliveriesOf(kept)]).toEqual([0, 1]);
    expect(await own.db.selectFrom('events').select('id').where('id', 'in', [expired, kept]).execute()).toEqual([{ id: kept }]);
  });

  it('an endpoint deleted while an event of its workspace is written is waited for and left out; the event and its other deliveries are written', async () => {
    const user = await newUser(own.db, systemClock, 'pro');
    const endpoint = (url: string) =>
      createWebhookEndpoint(
        own.db,
        { id: user.workspaceId, owner_id: user.userId },
        { url, event_types: [], description: '', enabled: true },
        { now: systemClock.now(), secrets: secretBox(secretsKey), perWorkspace: 16 },
      );
    const gone = await endpoint('https://hooks.example.com/gone');
    const kept = await endpoint('https://hooks.example.com/kept');
    let recorded: Promise<string> | undefined;
    await own.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('webhook_endpoints').where('id', '=', gone.id).execute();
      // Written on another connection while the deletion holds the endpoint's row: it waits for the deletion.
      recorded = recordEvent(own.db, quotaReached(user.workspaceId), systemClock.now());
      const meanwhile = await Promise.race([
        recorded.then(
          () => 'written',
          () => 'failed',
        ),
        new Promise((resolve) => setTimeout(() => resolve('waiting'), 300)),
      ]);
      expect(meanwhile).toBe('waiting');
    });
    // With the deletion committed, the event is written with a delivery for the endpoint that is left (the key check
    // of a delivery for the deleted one failed the whole event before: 23503).
    const id = await recorded!;
    const deliveries = await own.db.selectFrom('webhook_deliveries').select('endpoint_id').where('event_id', '=', id).execute();
    expect(deliveries).toEqual([{ endpoint_id: kept.id }]);
  });
  it('a delivery written in the instant its endpoint is disabled is cancelled when the endpoint is enabled again, never sent', async () => {
    const user = await newUser(own.db, systemClock, 'pro');
    const caller = { userId: user.userId, workspaceIds: null };
    const endpoint = await createWebhookEndpoint(
      own.db,
      { id: user.workspaceId, owner_id: user.userId },
      { url: 'https://hooks.example.com/toggled', event_types: [], description: '', enabled: true },
      { now: systemClock.now(), secrets: secretBox(secretsKey), perWorkspace: 16 },
    );
    const statusOf = async (eventId: string) =>
      (await own.db.selectFrom('webhook_deliveries').select('status').where('event_id', '=', eventId).executeTakeFirstOrThrow()).status;
    let eventId = '';
    await own.db.transaction().execute(async (trx) => {
      // The event reads the endpoint as enabled and writes its delivery; before it commits, the endpoint is disabled
      // on another connection, whose cancellation cannot see the uncommitted delivery.
      eventId = await recordEvent(trx, quotaReached(user.workspaceId), systemClock.now());
      await updateWebhookEndpoint(own.db, caller, endpoint.id, { enabled: false }, { now: systemClock.now() });
    });
    expect(await statusOf(eventId)).toBe('pending');
    await updateWebhookEndpoint(own.db, caller, endpoint.id, { enabled: true }, { now: systemClock.now() });
    expect(await statusOf(eventId)).toBe('cancelled');
  });
});
