// How the dispatcher shares itself out and keeps connections: a workspace's hanging endpoints hold no more than
// their share of its slots and each endpoint no more than its concurrency; an endpoint that keeps failing cools
// (its circuit open) and is probed; a kept-alive connection's host is checked again when a new connection is made.
// The server runs with its dispatcher on a real PostgreSQL, the clock injected, the receivers on loopback.
import { once } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Schema } from '@platform/api-types';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordEvent } from '../src/resources/events.ts';
import { call, eventually, newUser, TestClock, type TestUser, useTestServer } from './support.ts';

/** A receiver on loopback: answers each request as `answer` says (a status, or never), and counts what is open. */
class Receiver {
  readonly received: { path: string; id: string }[] = [];
  /** Requests not answered yet, by path, and the most ever open at once. */
  readonly open = new Map<string, number>();
  maxOpen = 0;
  answer: (path: string) => number | 'never' = () => 204;
  private readonly unanswered = new Set<ServerResponse>();
  readonly server: Server;
  constructor() {
    this.server = createServer((req, res) => {
      const path = req.url ?? '';
      this.received.push({ path, id: String(req.headers['webhook-id']) });
      this.open.set(path, (this.open.get(path) ?? 0) + 1);
      this.maxOpen = Math.max(this.maxOpen, this.openCount());
      res.on('close', () => this.open.set(path, this.open.get(path)! - 1));
      req.resume();
      req.on('end', () => {
        const answer = this.answer(path);
        if (answer !== 'never') res.writeHead(answer).end();
        else this.unanswered.add(res);
      });
    });
  }
  async start(): Promise<number> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    return (this.server.address() as AddressInfo).port;
  }
  openCount(prefix = ''): number {
    return [...this.open].filter(([path]) => path.startsWith(prefix)).reduce((sum, [, n]) => sum + n, 0);
  }
  /** Answers every request left unanswered so far (204), and returns once the dispatcher has seen them end. */
  async release(): Promise<void> {
    for (const res of this.unanswered) if (!res.writableEnded) res.writeHead(204).end();
    this.unanswered.clear();
    await eventually(
      () => this.openCount(),
      (n) => n === 0,
      'the unanswered requests to end',
    );
  }
  at(path: string) {
    return this.received.filter((r) => r.path === path);
  }
  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const clock = new TestClock(Math.floor(Date.now() / 1000));
const dns = new Map<string, string[]>();
const resolved: string[] = [];
const resolveHost = async (host: string) => {
  resolved.push(host);
  return dns.get(host) ?? [];
};

let receiver: Receiver;
let base: string;
beforeAll(async () => {
  receiver = new Receiver();
  base = `http://127.0.0.1:${await receiver.start()}`;
});
afterAll(async () => {
  await receiver?.close();
});

const SLOTS = 8;
const app = useTestServer({
  clock,
  env: {
    WEBHOOK_ALLOW_HTTP_LOOPBACK: 'true',
    WEBHOOK_TIMEOUT_MS: '5000',
    WEBHOOK_CONCURRENCY: String(SLOTS),
    WEBHOOK_ENDPOINT_CONCURRENCY: '2',
    WEBHOOK_CIRCUIT_FAILURES: '3',
  },
  resolveHost,
  runtime: { tickMs: 20, webhooks: true },
});

async function createEndpoint(user: TestUser, url: string, eventTypes?: Schema<'EventType'>[]): Promise<string> {
  const reply = await call(app.baseUrl, 'POST', '/v1/webhook_endpoints', { token: user.token, body: { url, event_types: eventTypes } });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body.id;
}

/** An event of the user's workspace: quota.reached, or `type` (with the same object) for endpoints told apart by type. */
const workspaceEvent = (user: TestUser, db: Parameters<typeof recordEvent>[0] = app.db, type: Schema<'EventType'> = 'quota.reached') =>
  recordEvent(
    db,
    {
      type,
      workspace_id: user.workspaceId,
      object_type: 'quota',
      object_id: 'kaas/clusters',
      object: { metric: 'kaas/clusters', type: 'allocation', displayName: 'Managed clusters', unit: 'count', limit: 3, usage: 3, remaining: 0 },
    },
    clock.now(),
  );

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * What the tests before left waiting, out of the way. Locked in id order, as the dispatcher's settlings lock theirs:
 * in the table's order this met a settling and PostgreSQL aborted it as a deadlock.
 */
const cancelEverythingPending = () =>
  sql`UPDATE webhook_deliveries SET status = 'cancelled', next_attempt_at = NULL
    WHERE id IN (SELECT id FROM webhook_deliveries WHERE status = 'pending' ORDER BY id FOR UPDATE)`.execute(app.db);

describe('fair scheduling', () => {
  it('a workspace whose endpoints hang holds no more than its share of the slots, each endpoint no more than its concurrency; another workspace is served meanwhile', async () => {
    const hanging = await newUser(app.db, clock, 'pro');
    const healthy = await newUser(app.db, clock, 'pro');
    for (const n of [1, 2, 3]) await createEndpoint(hanging, `${base}/hang-${n}`);
    await createEndpoint(healthy, `${base}/healthy`);
    receiver.answer = (path) => (path.startsWith('/hang') ? 'never' : 204);
    for (let i = 0; i < 10; i++) await workspaceEvent(hanging);
    // Alone, it gets the slots ÷ 2 (one share kept for the next workspace): 4 of 8, where its 3 endpoints × 2 would take 6.
    await eventually(
      () => receiver.openCount('/hang'),
      (n) => n === SLOTS / 2,
      'the hanging workspace to hold its share',
    );
    await sleep(300);
    expect(receiver.openCount('/hang')).toBe(SLOTS / 2);
    for (const n of [1, 2, 3]) expect(receiver.open.get(`/hang-${n}`) ?? 0).toBeLessThanOrEqual(2);
    // The other workspace's event is sent at once, not after the hanging attempts' 5 s timeout.
    const started = Date.now();
    const id = await workspaceEvent(healthy);
    await eventually(
      () => receiver.at('/healthy'),
      (r) => r.some((request) => request.id === id),
      'the healthy workspace’s delivery',
      3000,
    );
    expect(Date.now() - started).toBeLessThan(2000);
    expect(receiver.openCount('/hang')).toBe(SLOTS / 2);
    expect(receiver.maxOpen).toBeLessThanOrEqual(SLOTS / 2 + 1);
    receiver.answer = () => 204;
  });
});

describe('endpoints that fail', () => {
  it('have one attempt at a time until one succeeds, and leave the slots they cannot use to a workspace that can', async () => {
    await receiver.release();
    await cancelEverythingPending();
    const failing = await newUser(app.db, clock, 'pro');
    const busy = await newUser(app.db, clock, 'pro');
    const failingEndpoint = await createEndpoint(failing, `${base}/failing`);
    for (const n of [1, 2]) await createEndpoint(busy, `${base}/busy-${n}`);
    const endpoint = async () => (await call(app.baseUrl, 'GET', `/v1/webhook_endpoints/${failingEndpoint}`, { token: failing.token })).body;
    // One failed attempt (a 503; the circuit opens only after 3).
    receiver.answer = (path) => (path === '/failing' ? 503 : 'never');
    await workspaceEvent(failing);
    await eventually(endpoint, (e) => e.consecutive_failures === 1 && e.delivery_state === 'active', 'a failed attempt settled');
    // Now it hangs: one attempt under way, not its concurrency of 2.
    receiver.answer = () => 'never';
    for (let i = 0; i < 4; i++) await workspaceEvent(failing);
    await eventually(
      () => receiver.openCount('/failing'),
      (n) => n === 1,
      'an attempt at the failing endpoint',
    );
    // The other workspace's two endpoints may have 2 each. With the failing endpoint's 1 and a share kept for the
    // next workspace, that fits the 8 slots; were the failing endpoint counted at its concurrency, the share would
    // be 8 ÷ (2 workspaces + 1) = 3.
    for (let i = 0; i < 4; i++) await workspaceEvent(busy);
    await eventually(
      () => receiver.openCount('/busy'),
      (n) => n === 4,
      'two attempts at each of the busy workspace’s endpoints',
    );
    await sleep(300);
    expect(receiver.openCount('/failing')).toBe(1);
    expect(receiver.openCount('/busy')).toBe(4);
    // A success ends the run of failures: the endpoint has its concurrency again.
    receiver.answer = () => 204;
    await receiver.release();
    await eventually(endpoint, (e) => e.consecutive_failures === 0, 'the run of failures ended');
  });
});

describe('the endpoints of one workspace', () => {
  it('take turns in its share: endpoints with a backlog do not keep a sibling waiting', async () => {
    await receiver.release();
    await cancelEverythingPending();
    const user = await newUser(app.db, clock, 'pro');
    for (const n of [1, 2]) await createEndpoint(user, `${base}/backlog-${n}`, ['quota.reached']);
    await createEndpoint(user, `${base}/sibling`, ['token.expiring_soon']);
    receiver.answer = (path) => (path.startsWith('/backlog') ? 'never' : 204);
    // Committed together, so that one claim sees them all: 10 deliveries to each backlog endpoint, older than the
    // sibling's one. The workspace's share, alone, is 4: what the backlog endpoints (2 each) could take by themselves.
    await app.db.transaction().execute(async (trx) => {
      for (let i = 0; i < 10; i++) await workspaceEvent(user, trx);
      await workspaceEvent(user, trx, 'token.expiring_soon');
    });
    await eventually(
      () => receiver.at('/sibling'),
      (r) => r.length === 1,
      'the sibling’s delivery',
    );
    // Sent beside the backlog's first attempts, not after them: each of those still hangs (until the 5 s timeout).
    const backlogReceived = receiver.received.filter((r) => r.path.startsWith('/backlog')).length;
    expect(backlogReceived).toBeGreaterThan(0);
    expect(receiver.openCount('/backlog')).toBe(backlogReceived);
    receiver.answer = () => 204;
    await receiver.release();
  });
});

describe('the circuit breaker', () => {
  it('opens after consecutive failures: deliveries wait for the next probe; a failed probe cools it longer; the first success closes it and sends what waited', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const endpointId = await createEndpoint(user, `${base}/circuit`);
    const endpoint = async () => (await call(app.baseUrl, 'GET', `/v1/webhook_endpoints/${endpointId}`, { token: user.token })).body;
    const deliveries = async () =>
      (await call(app.baseUrl, 'GET', `/v1/webhook_endpoints/${endpointId}/deliveries?limit=100`, { token: user.token })).body.data as {
        status: string;
        attempts: number;
        last_duration_ms: number | null;
      }[];
    expect(await endpoint()).toMatchObject({ delivery_state: 'active', consecutive_failures: 0, cooling_until: null });
    receiver.answer = (path) => (path === '/circuit' ? 503 : 204);
    for (let i = 0; i < 3; i++) await workspaceEvent(user);
    await eventually(endpoint, (e) => e.consecutive_failures === 3, 'three failed attempts');
    const opened = await endpoint();
    expect(opened).toMatchObject({ delivery_state: 'cooling', cooling_until: clock.now() + 30 });
    expect(opened.failing_since).toBe(clock.now());

    // Cooling: new deliveries wait, and the failed ones' retries (due in 5 s) too.
    for (let i = 0; i < 2; i++) await workspaceEvent(user);
    clock.advance(10);
    await sleep(400);
    expect(receiver.at('/circuit')).toHaveLength(3);

    // The cooling is over: one probe, which fails; it cools for twice as long.
    clock.advance(21);
    await eventually(endpoint, (e) => e.consecutive_failures === 4, 'the probe');
    await sleep(400);
    expect(receiver.at('/circuit')).toHaveLength(4);
    expect(await endpoint()).toMatchObject({ delivery_state: 'cooling', cooling_until: clock.now() + 60 });

    // The next probe succeeds: the circuit closes and everything that waited is sent.
    receiver.answer = () => 204;
    clock.advance(61);
    const done = await eventually(deliveries, (d) => d.length === 5 && d.every((x) => x.status === 'succeeded'), 'every delivery to succeed');
    expect(await endpoint()).toMatchObject({ delivery_state: 'active', consecutive_failures: 0, cooling_until: null, failing_since: null });
    // Attempts: 5 deliveries, 3 failed attempts and 1 failed probe before them, each counted once.
    expect(done.reduce((sum, d) => sum + d.attempts, 0)).toBe(receiver.at('/circuit').length);
    expect(receiver.at('/circuit')).toHaveLength(9);
  });
});

describe('kept-alive connections and the SSRF rules', () => {
  it('reuses a connection without resolving again, and checks the name again on a new connection: one that now resolves to a refused address is not made', async () => {
    const user = await newUser(app.db, clock, 'pro');
    dns.set('pooled.test', ['127.0.0.1']);
    const endpointId = await createEndpoint(user, `http://pooled.test:${receiver.server.address() && (receiver.server.address() as AddressInfo).port}/pooled`);
    receiver.answer = () => 204;
    const lookups = () => resolved.filter((host) => host === 'pooled.test').length;
    const atCreation = lookups();
    await workspaceEvent(user);
    await eventually(
      () => receiver.at('/pooled'),
      (r) => r.length === 1,
      'the first delivery',
    );
    await workspaceEvent(user);
    await eventually(
      () => receiver.at('/pooled'),
      (r) => r.length === 2,
      'the second delivery',
    );
    // One connection, resolved and checked once, carried both.
    expect(lookups() - atCreation).toBe(1);

    // The name now resolves to a private address; the open connection is closed by the receiver.
    dns.set('pooled.test', ['10.0.0.7']);
    receiver.server.closeIdleConnections();
    await workspaceEvent(user);
    const deliveries = async () =>
      (await call(app.baseUrl, 'GET', `/v1/webhook_endpoints/${endpointId}/deliveries?status=pending`, { token: user.token })).body.data as {
        last_error: string | null;
      }[];
    const [refused] = await eventually(deliveries, (d) => d.length === 1 && d[0]!.last_error !== null, 'the refused attempt');
    expect(refused!.last_error).toBe('Not sent: the URL pooled.test is or resolves to 10.0.0.7, a loopback, private, link-local or metadata address.');
    expect(receiver.at('/pooled')).toHaveLength(2);
    expect(lookups() - atCreation).toBe(2);
  });
});
