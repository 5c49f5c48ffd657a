// The workflows benchmark (part of `pnpm bench`), against `pnpm start` (API and workers in one process) on a
// fresh database, with the simulated cloud at zero latency and zero boot/release time:
//   (a) installs completed per second, end to end (202 → running), for a batch started at once;
//   (b) createInstall p50/p99 under 32 connections, against GET /v1/regions (authentication and routing
//       alone) on the same server as its baseline;
//   (c) 1,000 followers of one install's log stream: the delay from a line being written (its timestamp)
//       to its delivery, and the server's resident memory per stream.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { sql } from 'kysely';
import { systemClock } from '../../packages/server/src/clock.ts';
import { connect, openDatabase } from '../../packages/server/src/db/connect.ts';
import { migrateToLatest } from '../../packages/server/src/db/migrate.ts';
import { createUser, seedSampleResources } from '../../packages/server/src/db/seed.ts';
import { repoRoot } from '../gen.ts';

const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const BATCH = Number(process.env.BENCH_INSTALLS ?? 300);
const FOLLOWERS = Number(process.env.BENCH_FOLLOWERS ?? 1000);
const CONNECTIONS = 32;

const rssKb = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
};

async function startServer(env: Record<string, string>): Promise<{ child: ChildProcess; base: string }> {
  const child = spawn(process.execPath, [join(repoRoot, 'packages/server/src/main.ts')], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const base = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`the server exited with ${code}: ${out}`)));
  });
  child.stdout!.resume();
  return { child, base };
}

async function post(base: string, path: string, token: string, body: unknown): Promise<{ id: string }> {
  const response = await fetch(`${base}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (response.status !== 202) throw new Error(`POST ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as { id: string };
}

/** Opens one log stream and records, for each line, the delay from its timestamp to its arrival. */
function follow(url: string, token: string, delays: number[], ready: () => void): http.ClientRequest {
  const request = http.get(url, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' }, agent: false }, (response) => {
    response.setEncoding('utf8');
    let pending = '';
    let first = true;
    response.on('data', (chunk: string) => {
      const now = Date.now();
      if (first) {
        first = false;
        ready();
      }
      pending += chunk;
      const events = pending.split('\n\n');
      pending = events.pop() ?? '';
      for (const event of events) {
        const timestamp = /"timestamp":"([^"]+)"/.exec(event)?.[1];
        if (timestamp) delays.push(now - Date.parse(timestamp));
      }
    });
  });
  request.on('error', () => {});
  return request;
}

export async function benchWorkflows(): Promise<Record<string, number>> {
  const admin = await connect(process.env.DATABASE_URL, join(repoRoot, '.data', 'bench'));
  await sql`DROP DATABASE IF EXISTS platform_bench_workflows WITH (FORCE)`.execute(admin.db);
  await sql`CREATE DATABASE platform_bench_workflows`.execute(admin.db);
  const url = new URL(admin.url);
  url.pathname = '/platform_bench_workflows';
  const db = openDatabase(url.toString());
  await migrateToLatest(db.db);
  const user = await createUser(db.db, systemClock, 'bench-workflows@platform.example', 'pro');
  const sample = await seedSampleResources(db.db, systemClock, user, 'bench');
  const server = await startServer({
    DATABASE_URL: url.toString(),
    PORT: '0',
    LOG_LEVEL: 'warn',
    SIM_BOOT_SECONDS: '0',
    SIM_RELEASE_SECONDS: '0',
    SIM_CONTROL_PLANE_SECONDS: '0',
    PROVIDER_RATE_LIMIT: '10000',
    RATE_LIMIT_PER_MINUTE: '0', // one token at full speed
  });
  const installBody = { product_id: sample.productId, region_id: 'fsn1' };
  try {
    // (a) A batch of installs, started together, until every one runs.
    const started = performance.now();
    const ids: string[] = [];
    for (let i = 0; i < BATCH; i += CONNECTIONS) {
      const chunk = await Promise.all(Array.from({ length: Math.min(CONNECTIONS, BATCH - i) }, () => post(server.base, '/v1/installs', user.token, installBody)));
      ids.push(...chunk.map((c) => c.id));
    }
    for (;;) {
      const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM installs WHERE id = ANY(${ids}) AND status = 'running'`.execute(db.db);
      if (rows[0]!.n === ids.length) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const installsPerSecond = BATCH / ((performance.now() - started) / 1000);

    // (b) createInstall under load, against a cheap authenticated GET on the same server.
    const headers = { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' };
    const regions = await autocannon({ url: `${server.base}/v1/regions`, headers, connections: CONNECTIONS, duration: DURATION });
    const creates = await autocannon({ url: `${server.base}/v1/installs`, method: 'POST', headers, body: JSON.stringify(installBody), connections: CONNECTIONS, duration: DURATION });

    // (c) Followers of one running install's log stream.
    const { id } = await post(server.base, '/v1/installs', user.token, installBody);
    while ((await db.db.selectFrom('installs').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status !== 'running') {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // Let the backlog of the other installs' workflows drain first, so the streams are measured alone.
    for (;;) {
      const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM workflows WHERE status IN ('pending', 'running')`.execute(db.db);
      if (rows[0]!.n === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const before = rssKb(server.child.pid!);
    const delays: number[] = [];
    let connected = 0;
    const streams = Array.from({ length: FOLLOWERS }, () => follow(`${server.base}/v1/installs/${id}/logs?tail=1`, user.token, delays, () => connected++));
    while (connected < FOLLOWERS) await new Promise((resolve) => setTimeout(resolve, 50));
    delays.length = 0; // the backlog line each got on connecting is not a live line
    await new Promise((resolve) => setTimeout(resolve, DURATION * 1000));
    const during = rssKb(server.child.pid!);
    for (const stream of streams) stream.destroy();

    return {
      installs_per_second: installsPerSecond,
      regions_rps: regions.requests.average,
      regions_p50_ms: regions.latency.p50,
      regions_p99_ms: regions.latency.p99,
      create_install_rps: creates.requests.average,
      create_install_p50_ms: creates.latency.p50,
      create_install_p99_ms: creates.latency.p99,
      create_vs_get_throughput_ratio: creates.requests.average / regions.requests.average,
      failed_requests: regions.non2xx + regions.errors + creates.non2xx + creates.errors,
      followers: FOLLOWERS,
      log_lines_delivered: delays.length,
      log_delay_p50_ms: percentile(delays, 50),
      log_delay_p99_ms: percentile(delays, 99),
      memory_per_stream_kb: (during - before) / FOLLOWERS,
    };
  } finally {
    server.child.kill('SIGTERM');
    await db.close();
    await admin.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const f = await benchWorkflows();
  console.log(`workflows (pnpm start, simulated cloud at zero latency), ${CONNECTIONS} connections, ${DURATION} s per load:`);
  console.log(`  installs completed end to end: ${f.installs_per_second!.toFixed(0)} installs/s (a batch of ${BATCH})`);
  console.log(`  GET /v1/regions (baseline): ${f.regions_rps!.toFixed(0)} req/s, p50 ${f.regions_p50_ms} ms, p99 ${f.regions_p99_ms} ms`);
  console.log(`  POST /v1/installs:          ${f.create_install_rps!.toFixed(0)} req/s, p50 ${f.create_install_p50_ms} ms, p99 ${f.create_install_p99_ms} ms (throughput ratio ${f.create_vs_get_throughput_ratio!.toFixed(2)})`);
  console.log(`  ${f.followers} log followers: ${f.log_lines_delivered} lines, delay p50 ${f.log_delay_p50_ms} ms, p99 ${f.log_delay_p99_ms} ms (target < 100), ${f.memory_per_stream_kb!.toFixed(1)} KB per stream (target < 50)`);
  console.log(`  failed requests: ${f.failed_requests}`);
}
