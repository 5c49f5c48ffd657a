// The metrics as an operator reads them: a real Prometheus (Debian's `prometheus` package, /usr/bin/prometheus)
// started with a configuration of this test's own scrapes the server's metrics listener, and the series are
// queried back through Prometheus's HTTP API after a few requests and a workflow.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { observeDatabaseOf } from '../src/runtime.ts';
import { enableMetrics } from '../src/telemetry/metrics.ts';
import { type MetricsServer, serveMetrics } from '../src/telemetry/metrics-server.ts';
import { call, eventually, newUser, SIMULATED_WORKFLOWS_ENV, type TestUser, useTestServer, workersSettled } from './support.ts';

const PROMETHEUS = process.env.PROMETHEUS_BIN ?? '/usr/bin/prometheus';

// Before the server starts: the app installs its request instruments and the pools their statement counters.
beforeAll(() => {
  enableMetrics();
});

const app = useTestServer({
  env: { ...SIMULATED_WORKFLOWS_ENV, WEBHOOK_ALLOW_HTTP_LOOPBACK: 'true' },
  runtime: { tickMs: 20, orphanAfterSeconds: 1, webhooks: true },
});

/** A webhook receiver answering 204. */
const hooks = createHttpServer((_req, res) => res.writeHead(204).end());

let metricsServer: MetricsServer;
let prometheus: ChildProcess;
let prometheusUrl = '';
let storage = '';

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });

beforeAll(async () => {
  if (!existsSync(PROMETHEUS)) {
    throw new Error(
      `${PROMETHEUS} is missing: this test scrapes the metrics with a real Prometheus. Install it with \`apt-get install -y prometheus\` (Debian's package), or set PROMETHEUS_BIN.`,
    );
  }
  metricsServer = await serveMetrics(enableMetrics(), 0, '127.0.0.1');
  observeDatabaseOf(app.db, app.runtime.engine);
  storage = await mkdtemp(join(tmpdir(), 'platform-prometheus-'));
  const config = join(storage, 'prometheus.yml');
  await writeFile(
    config,
    [
      'global:',
      '  scrape_interval: 1s',
      '  scrape_timeout: 1s',
      'scrape_configs:',
      '  - job_name: platform',
      `    static_configs: [{ targets: ['127.0.0.1:${metricsServer.port}'] }]`,
      '',
    ].join('\n'),
  );
  const port = await freePort();
  prometheusUrl = `http://127.0.0.1:${port}`;
  let output = '';
  prometheus = spawn(PROMETHEUS, [`--config.file=${config}`, `--storage.tsdb.path=${join(storage, 'data')}`, `--web.listen-address=127.0.0.1:${port}`], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  prometheus.stdout!.on('data', (chunk) => (output += chunk));
  prometheus.stderr!.on('data', (chunk) => (output += chunk));
  await eventually(
    () =>
      fetch(`${prometheusUrl}/-/ready`).then(
        (r) => r.status,
        () => 0,
      ),
    (status) => status === 200 || prometheus.exitCode !== null,
    'Prometheus to be ready',
  );
  if (prometheus.exitCode !== null) throw new Error(`prometheus exited with ${prometheus.exitCode}: ${output}`);
}, 30_000);

afterAll(async () => {
  if (prometheus && prometheus.exitCode === null) {
    const exited = new Promise((resolve) => prometheus.once('exit', resolve));
    prometheus.kill('SIGTERM');
    await exited;
  }
  await metricsServer?.close();
  if (hooks.listening) await new Promise((resolve) => hooks.close(resolve));
  if (storage) await rm(storage, { recursive: true, force: true });
});

interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

/** An instant query through Prometheus's HTTP API. */
async function query(promql: string): Promise<Sample[]> {
  const reply = (await (await fetch(`${prometheusUrl}/api/v1/query?query=${encodeURIComponent(promql)}`)).json()) as {
    status: string;
    data: { result: Sample[] };
  };
  expect(reply.status, promql).toBe('success');
  return reply.data.result;
}

/** The query's first value once Prometheus has scraped one that satisfies `check`. */
const scraped = async (promql: string, check: (value: number) => boolean = () => true) =>
  Number(
    (
      await eventually(
        () => query(promql),
        (samples) => samples.length > 0 && check(Number(samples[0]!.value[1])),
        promql,
      )
    )[0]!.value[1],
  );

describe('the metrics, scraped by Prometheus', () => {
  let user: TestUser;
  beforeAll(async () => {
    user = await newUser(app.db, app.clock);
    await new Promise<void>((resolve) => hooks.listen(0, '127.0.0.1', resolve));
    const hookUrl = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/hook`;
    expect(
      (await call(app.baseUrl, 'POST', '/v1/webhook_endpoints', { token: user.token, body: { url: hookUrl, event_types: ['cluster.created'] } })).status,
    ).toBe(201);
    for (let i = 0; i < 5; i++) {
      expect((await call(app.baseUrl, 'GET', '/v1/clusters', { token: user.token, headers: { 'x-workspace-id': user.workspaceId } })).status).toBe(200);
    }
    expect((await call(app.baseUrl, 'GET', '/v1/nowhere', { token: user.token })).status).toBe(404);
    const created = await call(app.baseUrl, 'POST', '/v1/clusters', { token: user.token, body: { name: 'measured', region_id: 'fsn1' } });
    expect(created.status).toBe(202);
    await workersSettled(app.db, app.clock);
  });

  it('counts requests by operationId and status, with latency buckets', async () => {
    expect(
      await scraped('platform_http_request_duration_seconds_count{job="platform",operation="listClusters",status="200"}', (n) => n >= 5),
    ).toBeGreaterThanOrEqual(5);
    expect(await scraped('platform_http_request_duration_seconds_count{operation="none",status="404"}')).toBe(1);
    expect(await scraped('platform_http_request_duration_seconds_count{operation="createCluster",status="202"}')).toBe(1);
    const buckets = await query('platform_http_request_duration_seconds_bucket{operation="listClusters",status="200"}');
    expect(buckets.map((b) => b.metric.le)).toEqual(expect.arrayContaining(['0.005', '0.025', '1', '+Inf']));
    expect(await scraped('platform_http_requests_in_flight')).toBe(0);
  });

  it('reports workflows: their steps by kind and step, the unfinished by kind and state, the oldest waiting', async () => {
    expect(await scraped('sum(platform_workflow_step_duration_seconds_count{kind="createCluster"})', (n) => n >= 1)).toBeGreaterThanOrEqual(1);
    // The cluster waits for its control plane (the test clock does not move): a running createCluster.
    expect(await scraped('platform_workflows{kind="createCluster",state="running"}', (n) => n === 1)).toBe(1);
    expect(await scraped('platform_workflows{kind="deleteInstall",state="pending"}')).toBe(0);
    expect(await scraped('platform_workflow_oldest_pending_age_seconds')).toBe(0);
    expect(await scraped('platform_webhook_endpoints_cooling')).toBe(0);
  });

  it('reports the database pools, the access cache and the process', async () => {
    expect(await scraped('platform_db_pool_connections{pool="main"}', (n) => n >= 1)).toBeGreaterThanOrEqual(1);
    // Reported whatever they are: the scrape's own reading of the database may wait for a connection being opened.
    expect(await scraped('platform_db_pool_idle_connections{pool="main"}')).toBeGreaterThanOrEqual(0);
    expect(await scraped('platform_db_pool_waiting_clients{pool="main"}')).toBeGreaterThanOrEqual(0);
    expect(await scraped('platform_db_pool_connections{pool="workflow_locks"}')).toBeGreaterThanOrEqual(0);
    expect(await scraped('sum(platform_access_cache_lookups_total)', (n) => n >= 6)).toBeGreaterThanOrEqual(6);
    expect(await scraped('process_resident_memory_bytes')).toBeGreaterThan(10_000_000);
    expect(await scraped('nodejs_eventloop_lag_p99_seconds')).toBeGreaterThanOrEqual(0);
    expect(await scraped('count(nodejs_gc_duration_seconds_count)', (n) => n >= 1)).toBeGreaterThanOrEqual(1);
    expect(await scraped('platform_metrics_database_read_failures_total')).toBe(0);
  });

  it('reports webhook attempts by outcome with their lag, and provider calls by provider, operation and status', async () => {
    expect(await scraped('platform_webhook_attempts_total{outcome="succeeded"}', (n) => n >= 1)).toBe(1);
    expect(await scraped('platform_webhook_delivery_lag_seconds_count')).toBe(1);
    expect(await scraped('platform_provider_call_duration_seconds_count{provider="simulated",operation="createCluster",status="ok"}')).toBeGreaterThanOrEqual(
      1,
    );
  });

  it('reports the streams open, and the statements that failed by SQLSTATE', async () => {
    const stream = new AbortController();
    const response = await fetch(`${app.baseUrl}/v1/events/stream`, {
      headers: { authorization: `Bearer ${user.token}`, 'x-workspace-id': user.workspaceId, accept: 'text/event-stream' },
      signal: stream.signal,
    });
    expect(response.status).toBe(200);
    expect(await scraped('platform_streams_open{stream="streamEvents"}', (n) => n === 1)).toBe(1);
    stream.abort();
    expect(await scraped('platform_streams_open{stream="streamEvents"}', (n) => n === 0)).toBe(0);
    // A statement on a table that is away: 42P01, undefined_table.
    await sql`ALTER TABLE regions RENAME TO regions_away`.execute(app.db);
    try {
      expect((await call(app.baseUrl, 'GET', '/v1/regions', { token: user.token })).status).toBe(500);
    } finally {
      await sql`ALTER TABLE regions_away RENAME TO regions`.execute(app.db);
    }
    expect(await scraped('platform_db_query_errors_total{code="42P01"}')).toBeGreaterThanOrEqual(1);
    expect(await scraped('platform_http_request_duration_seconds_count{operation="listRegions",status="500"}')).toBe(1);
  });

  it('labels no series with an id', async () => {
    const reply = (await (await fetch(`${prometheusUrl}/api/v1/series?match[]=${encodeURIComponent('{__name__=~"platform_.+"}')}`)).json()) as {
      data: Record<string, string>[];
    };
    expect(reply.data.length).toBeGreaterThan(20);
    const values = reply.data.flatMap((series) =>
      Object.entries(series)
        .filter(([name]) => name !== '__name__' && name !== 'instance')
        .map(([, value]) => value),
    );
    expect(values.filter((value) => /^[a-z]{2,4}_[0-9a-z]{10,}/.test(value))).toEqual([]);
  });

  it('is not on the public port', async () => {
    const reply = await call(app.baseUrl, 'GET', '/metrics');
    expect(reply.status).toBe(404);
    expect(reply.body.error.code).toBe('not_found');
  });
});
