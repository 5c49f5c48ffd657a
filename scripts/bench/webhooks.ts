// The webhooks benchmark (`pnpm bench:webhooks`, part of `pnpm bench`). On a fresh database (dropped at the end),
// against the server run as its own process (packages/server/src/main.ts) with the simulated cloud at zero latency:
//   (a) delivery latency: BENCH_WEBHOOK_EVENTS events (default 1,000), committed at BENCH_WEBHOOK_RATE a second
//       (default 100) by this process through recordEvent, to BENCH_WEBHOOK_ENDPOINTS endpoints (default 10) on a
//       loopback receiver of its own (node:http, answering 204 at once): p50/p99 of the time from each event's
//       commit to its arrival at each endpoint (system clock, one machine), API and workers in one process
//       (`--role all`, the default WEBHOOK_CONCURRENCY);
//   (b) what the outbox and the fan-out cost createInstall: POST /v1/installs under 32 autocannon connections in a
//       workspace with no endpoint, then in one with 10 endpoints subscribed to install.created (each install writes
//       its event and 10 deliveries), on one API process (`--role api`: the deliveries wait for workers that are not
//       there, so the load measures the write), as a throughput and p50/p99 ratio of the same run.
// Run on its own it prints its figures; `benchWebhooks()` returns them to scripts/bench/report.ts.
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createUser, recordEvent, seedSampleResources, systemClock } from '@platform/server/testing';
import autocannon from 'autocannon';
import { sql } from 'kysely';
import { freshDatabase } from '../fresh-database.ts';
import { type ServerProcess, startServerProcess } from '../server-process.ts';
import { percentile } from '../stats.ts';

export interface WebhooksOptions {
  /** Seconds of each autocannon load. */
  duration: number;
  events: number;
  /** Events committed a second. */
  rate: number;
  endpoints: number;
}

export const defaultWebhooksOptions = (): WebhooksOptions => ({
  duration: Number(process.env.BENCH_DURATION ?? 10),
  events: Number(process.env.BENCH_WEBHOOK_EVENTS ?? 1000),
  rate: Number(process.env.BENCH_WEBHOOK_RATE ?? 100),
  endpoints: Number(process.env.BENCH_WEBHOOK_ENDPOINTS ?? 10),
});

export interface WebhooksFigures {
  options: WebhooksOptions;
  deliveries: number;
  /** Deliveries that had not arrived 60 s after the last event, or arrived twice. */
  deliveries_missing: number;
  deliveries_duplicated: number;
  latency_p50_ms: number;
  latency_p99_ms: number;
  latency_max_ms: number;
  create_install_rps: number;
  create_install_p50_ms: number;
  create_install_p99_ms: number;
  create_install_with_endpoints_rps: number;
  create_install_with_endpoints_p50_ms: number;
  create_install_with_endpoints_p99_ms: number;
  /** With 10 endpoints ÷ without: below 1 for throughput means the fan-out costs that share. */
  fan_out_throughput_ratio: number;
  fan_out_p50_ratio: number;
  fan_out_p99_ratio: number;
  failed_requests: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function createEndpoints(base: string, token: string, workspaceId: string, urls: string[], types: string[]): Promise<void> {
  for (const url of urls) {
    const response = await fetch(`${base}/v1/webhook_endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-workspace-id': workspaceId },
      body: JSON.stringify({ url, event_types: types }),
    });
    if (response.status !== 201) throw new Error(`POST /v1/webhook_endpoints: ${response.status} ${await response.text()}`);
  }
}

export async function benchWebhooks(options: WebhooksOptions = defaultWebhooksOptions()): Promise<WebhooksFigures> {
  const { admin, url, connection: db } = await freshDatabase('platform_bench_webhooks', 'bench');
  const servers: ServerProcess[] = [];
  // Arrival (epoch ms) of each event at each endpoint: `${path} ${webhook-id}` → ms.
  const arrivals = new Map<string, number>();
  let duplicates = 0;
  const receiver = http.createServer((req, res) => {
    const key = `${req.url} ${req.headers['webhook-id']}`;
    if (arrivals.has(key)) duplicates++;
    else arrivals.set(key, Date.now());
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  const receiverBase = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  try {
    const env = {
      DATABASE_URL: url.toString(),
      PORT: '0',
      LOG_LEVEL: 'warn',
      SECRETS_KEY: randomBytes(32).toString('base64'),
      WEBHOOK_ALLOW_HTTP_LOOPBACK: 'true',
      SIM_BOOT_SECONDS: '0',
      SIM_CONTROL_PLANE_SECONDS: '0',
      SIM_RELEASE_SECONDS: '0',
      SIM_SNAPSHOT_SECONDS: '0',
      SIM_LATENCY_MS: '0',
      PROVIDER_RATE_LIMIT: '10000',
      RATE_LIMIT_PER_MINUTE: '0',
    };

    // (a) Delivery latency.
    const user = await createUser(db.db, systemClock, 'bench-webhooks@bench.example', 'pro');
    const server = await startServerProcess(env);
    servers.push(server);
    const paths = Array.from({ length: options.endpoints }, (_, i) => `/endpoint-${i}`);
    await createEndpoints(
      server.base,
      user.token,
      user.workspaceId,
      paths.map((path) => `${receiverBase}${path}`),
      ['quota.reached'],
    );
    const committed = new Map<string, number>();
    const object = { metric: 'kaas/clusters', type: 'allocation', displayName: 'Managed clusters', unit: 'count', limit: 3, usage: 3, remaining: 0 } as const;
    const started = Date.now();
    for (let i = 0; i < options.events; i++) {
      const due = started + (i * 1000) / options.rate;
      if (due > Date.now()) await sleep(due - Date.now());
      const id = await recordEvent(
        db.db,
        { type: 'quota.reached', workspace_id: user.workspaceId, object_type: 'quota', object_id: 'kaas/clusters', object },
        systemClock.now(),
      );
      committed.set(id, Date.now());
    }
    const expected = options.events * options.endpoints;
    const deadline = Date.now() + 60_000;
    while (arrivals.size < expected && Date.now() < deadline) await sleep(50);
    const latencies: number[] = [];
    for (const [key, at] of arrivals) {
      const commit = committed.get(key.split(' ')[1]!);
      if (commit !== undefined) latencies.push(at - commit);
    }
    await server.stop();

    // (b) createInstall without and with 10 subscribed endpoints, in two workspaces of two users.
    const plain = await createUser(db.db, systemClock, 'bench-plain@bench.example', 'pro');
    const hooked = await createUser(db.db, systemClock, 'bench-hooked@bench.example', 'pro');
    const plainSample = await seedSampleResources(db.db, systemClock, plain, 'bench-plain');
    const hookedSample = await seedSampleResources(db.db, systemClock, hooked, 'bench-hooked');
    const api = await startServerProcess(env, ['--role', 'api']);
    servers.push(api);
    await createEndpoints(
      api.base,
      hooked.token,
      hooked.workspaceId,
      Array.from({ length: 10 }, (_, i) => `${receiverBase}/install-${i}`),
      ['install.created'],
    );
    const load = (token: string, productId: string, duration: number) =>
      autocannon({
        url: `${api.base}/v1/installs`,
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ product_id: productId, region_id: 'fsn1' }),
        connections: 32,
        duration,
      });
    await load(plain.token, plainSample.productId, 2);
    await load(hooked.token, hookedSample.productId, 2);
    const without = await load(plain.token, plainSample.productId, options.duration);
    const withEndpoints = await load(hooked.token, hookedSample.productId, options.duration);
    await api.stop();
    // Every install of the second load wrote its 10 deliveries.
    const { rows } = await sql<{ installs: number; deliveries: number }>`
      SELECT (SELECT count(*)::int FROM installs WHERE workspace_id = ${hooked.workspaceId}) AS installs,
             (SELECT count(*)::int FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
               WHERE e.workspace_id = ${hooked.workspaceId}) AS deliveries`.execute(db.db);
    if (rows[0]!.deliveries !== rows[0]!.installs * 10) throw new Error(`expected 10 deliveries per install: ${JSON.stringify(rows[0])}`);

    return {
      options,
      deliveries: latencies.length,
      deliveries_missing: expected - arrivals.size,
      deliveries_duplicated: duplicates,
      latency_p50_ms: percentile(latencies, 50),
      latency_p99_ms: percentile(latencies, 99),
      latency_max_ms: percentile(latencies, 100),
      create_install_rps: without.requests.average,
      create_install_p50_ms: without.latency.p50,
      create_install_p99_ms: without.latency.p99,
      create_install_with_endpoints_rps: withEndpoints.requests.average,
      create_install_with_endpoints_p50_ms: withEndpoints.latency.p50,
      create_install_with_endpoints_p99_ms: withEndpoints.latency.p99,
      fan_out_throughput_ratio: withEndpoints.requests.average / without.requests.average,
      fan_out_p50_ratio: withEndpoints.latency.p50 / without.latency.p50,
      fan_out_p99_ratio: withEndpoints.latency.p99 / without.latency.p99,
      failed_requests: without.non2xx + without.errors + withEndpoints.non2xx + withEndpoints.errors,
    };
  } finally {
    for (const server of servers) if (server.child.exitCode === null) await server.stop();
    receiver.closeAllConnections();
    receiver.close();
    await db.close();
    await sql`DROP DATABASE IF EXISTS platform_bench_webhooks WITH (FORCE)`.execute(admin.db);
    await admin.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await benchWebhooks());
