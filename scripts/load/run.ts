// `pnpm load [--duration S] [--scenario list,churn,installs,logs] [--connections N] [--followers N]`:
// load scenarios against the real server process (main.ts, API and workers) on a fresh database
// (`platform_load` on DATABASE_URL, or the embedded PostgreSQL under .data/load), with autocannon:
//   list      GET pages of clusters, workspaces, products and installs, rotating
//   churn     create a registry credential, then delete it (201 then 204, per connection, in a loop)
//   logs      N followers of a running install's log stream for the duration (SSE over raw node:http)
//   installs  POST /v1/installs of a product onto a running cluster (202; the workers run them meanwhile;
//             last, since the backlog it leaves would hold up the install the log followers need)
// Each prints throughput and p50/p99 (for logs: lines delivered per second, and the delay from a line's
// timestamp to its arrival). Valid traffic must get no errors and no non-2xx: the script exits 1 otherwise.
// Not part of `pnpm test`; the API rate limit and the log-stream cap are off (one token at full speed).
import http from 'node:http';
import { createUser, seedSampleResources, systemClock } from '@platform/server/testing';
import autocannon from 'autocannon';
import { sql } from 'kysely';
import { freshDatabase } from '../fresh-database.ts';
import { startServerProcess } from '../server-process.ts';
import { percentile } from '../stats.ts';

const flag = (name: string) => {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : undefined;
};
const DURATION = Number(flag('duration') ?? process.env.LOAD_DURATION ?? 60);
const CONNECTIONS = Number(flag('connections') ?? 16);
const FOLLOWERS = Number(flag('followers') ?? 200);
const SCENARIOS = (flag('scenario') ?? 'list,churn,installs,logs').split(',');

interface Figures {
  scenario: string;
  throughput: string;
  p50: number;
  p99: number;
  failures: number;
}

async function cannon(scenario: string, options: autocannon.Options): Promise<Figures> {
  const result = await autocannon({ connections: CONNECTIONS, duration: DURATION, ...options });
  const failures = result.non2xx + result.errors + result.timeouts;
  return { scenario, throughput: `${result.requests.average.toFixed(0)} req/s`, p50: result.latency.p50, p99: result.latency.p99, failures };
}

/** Followers of one log stream for the duration: lines per second and the delay from timestamp to arrival. */
async function followers(base: string, token: string, installId: string): Promise<Figures> {
  const delays: number[] = [];
  let failures = 0;
  const requests: http.ClientRequest[] = [];
  for (let i = 0; i < FOLLOWERS; i++) {
    const request = http.get(
      `${base}/v1/installs/${installId}/logs?tail=1`,
      { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' }, agent: false },
      (response) => {
        if (response.statusCode !== 200) {
          failures++;
          response.resume();
          return;
        }
        response.setEncoding('utf8');
        let pending = '';
        response.on('data', (chunk: string) => {
          pending += chunk;
          const events = pending.split('\n\n');
          pending = events.pop() ?? '';
          for (const event of events) {
            const data = /^data: (.*)$/m.exec(event)?.[1];
            if (!event.includes('event: log') || !data) continue;
            delays.push(Date.now() - Date.parse(JSON.parse(data).timestamp));
          }
        });
      },
    );
    request.on('error', () => failures++);
    requests.push(request);
  }
  const started = Date.now();
  await new Promise((resolve) => setTimeout(resolve, DURATION * 1000));
  for (const request of requests) request.destroy();
  const seconds = (Date.now() - started) / 1000;
  if (delays.length === 0) failures++;
  return {
    scenario: `logs (${FOLLOWERS} followers)`,
    throughput: `${(delays.length / seconds).toFixed(0)} lines/s`,
    p50: percentile(delays, 50),
    p99: percentile(delays, 99),
    failures,
  };
}

async function main(): Promise<void> {
  const { admin, url, connection: load } = await freshDatabase('platform_load', 'load');
  const user = await createUser(load.db, systemClock, 'load@platform.example', 'pro');
  const sample = await seedSampleResources(load.db, systemClock, user, 'load');
  // A page's worth of clusters to list.
  await sql`
    INSERT INTO clusters (id, workspace_id, name, region_id, kaas_version, kaas_release, status, status_message, created_at)
    SELECT 'cl_load' || lpad(n::text, 6, '0'), ${user.workspaceId}, 'load-' || n, 'fsn1', 'v1.31', 'v1.31.13', 'RUNNING', NULL, 1700000000 + n
    FROM generate_series(1, 500) AS n`.execute(load.db);
  await load.close();

  const server = await startServerProcess({
    DATABASE_URL: url.toString(),
    PORT: '0',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '0',
    LOG_STREAMS_PER_USER: '0',
    PROVIDER_RATE_LIMIT: '1000',
    SIM_RELEASE_SECONDS: '1',
    SIM_BOOT_SECONDS: '1',
  });
  const headers = { authorization: `Bearer ${user.token}`, 'x-workspace-id': user.workspaceId, 'content-type': 'application/json' };
  const results: Figures[] = [];
  const report = (figures: Figures) => {
    results.push(figures);
    console.log(
      `${figures.scenario.padEnd(30)}${figures.throughput.padEnd(18)}${String(figures.p50).padEnd(10)}${String(figures.p99).padEnd(10)}${figures.failures}`,
    );
  };
  try {
    console.log(`load: ${DURATION} s per scenario, ${CONNECTIONS} connections, server ${server.base}`);
    console.log('scenario                      throughput        p50 ms    p99 ms    failures');
    if (SCENARIOS.includes('list')) {
      report(
        await cannon('list pages', {
          url: server.base,
          headers,
          requests: ['/v1/clusters?limit=50', '/v1/workspaces', '/v1/products', '/v1/installs?limit=20'].map((path) => ({ method: 'GET' as const, path })),
        }),
      );
    }
    if (SCENARIOS.includes('churn')) {
      report(
        await cannon('create-and-delete churn', {
          url: server.base,
          headers,
          requests: [
            {
              method: 'POST',
              path: '/v1/registry/credentials',
              // An IP literal: the SSRF check needs no DNS look-up for it.
              body: JSON.stringify({ name: 'churn', registry_url: '140.82.112.33', username: 'bot', password: 'secret-value' }),
              onResponse: (_status: number, body: string, context: Record<string, unknown>) => {
                context.id = JSON.parse(body).id;
              },
            },
            {
              method: 'DELETE',
              setupRequest: (request: any, context: Record<string, unknown>) => ({
                ...request,
                path: `/v1/registry/credentials/${context.id}`,
                body: undefined,
              }),
            },
          ],
        } as autocannon.Options),
      );
    }
    if (SCENARIOS.includes('logs')) {
      const created = await fetch(`${server.base}/v1/installs`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ product_id: sample.productId, region_id: 'fsn1' }),
      });
      const install = (await created.json()) as { id: string };
      for (let i = 0; ; i++) {
        const state = (await (await fetch(`${server.base}/v1/installs/${install.id}`, { headers })).json()) as { status: string };
        if (state.status === 'running') break;
        if (i > 600) throw new Error(`install ${install.id} did not reach running (${state.status})`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      report(await followers(server.base, user.token, install.id));
    }
    if (SCENARIOS.includes('installs')) {
      report(
        await cannon('installs', {
          url: `${server.base}/v1/installs`,
          method: 'POST',
          headers,
          body: JSON.stringify({ product_id: sample.productId, region_id: 'fsn1' }),
        }),
      );
    }
  } finally {
    server.child.kill('SIGTERM');
    await admin.close();
  }
  const failed = results.filter((r) => r.failures > 0);
  if (failed.length > 0) {
    console.error(`load: non-2xx answers or errors in ${failed.map((r) => r.scenario).join(', ')}`);
    process.exit(1);
  }
}

await main();
