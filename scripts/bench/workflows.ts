// The workflows benchmark (`pnpm bench:workflows`, part of `pnpm bench`). On a fresh database it creates
// (and drops at the end), against the server run as its own process (packages/server/src/main.ts, so its
// resident memory is its own), with the simulated cloud at zero latency, zero failures and zero boot, control
// plane, release and snapshot time (the SIM_* variables, which main.ts hands to createRuntime's simulation):
//   (b) installs completed per second end to end: BENCH_INSTALLS installs started by 32 clients at once, timed
//       from the first POST until every one is `running` (API and workers in one process, `--role all`);
//   (c) log fan-out: followers of one running install's log stream (raw node:http connections, SSE), the delay
//       from each line's `timestamp` to its arrival (system clock), one follower (the baseline) and then
//       BENCH_FOLLOWERS at once, and the server's resident memory per stream; at the default LOG_POLL_MS and,
//       for comparison, at BENCH_ALT_POLL_MS;
//   (a) POST /v1/installs (createInstall, no idempotency key) p50/p99 and throughput under 32 autocannon
//       connections with a PAT, against GET /v1/regions on the same server as the baseline (an authenticated
//       read that does nothing else). The server runs `--role api` there: the load measures the API, and the
//       workflows it starts wait in the queue instead of competing for the machine's cores. The API rate limit is
//       off there (one token at full speed); the same GET is then measured with it counting every request.
// Run on its own it prints its figures; `benchWorkflows()` returns them to scripts/bench/report.ts.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createUser, loadConfig, newId, seedSampleResources, systemClock } from '@platform/server/testing';
import autocannon from 'autocannon';
import { sql } from 'kysely';
import { freshDatabase } from '../fresh-database.ts';
import { type ServerProcess, startServerProcess } from '../server-process.ts';
import { median, percentile } from '../stats.ts';

/**
 * The server's environment for loads of workflows (without DATABASE_URL): the simulated cloud at zero latency,
 * failures and waits, the provider rate limit lifted, one token at full speed.
 */
export const INSTANT_SIMULATION = {
  PORT: '0',
  LOG_LEVEL: 'warn',
  SIM_BOOT_SECONDS: '0',
  SIM_CONTROL_PLANE_SECONDS: '0',
  SIM_RELEASE_SECONDS: '0',
  SIM_SNAPSHOT_SECONDS: '0',
  SIM_LATENCY_MS: '0',
  SIM_FAILURE_RATE: '0',
  // The default (20 calls/s, shared by every process) would be the figure measured; lift it.
  PROVIDER_RATE_LIMIT: '10000',
  // One token at full speed: the API rate limit (RATE_LIMIT_PER_MINUTE, per user) is off.
  RATE_LIMIT_PER_MINUTE: '0',
};

export interface WorkflowsOptions {
  /** Seconds of each autocannon load and of each log-stream window. */
  duration: number;
  /** Installs in the end-to-end batch. */
  installs: number;
  /** Concurrent followers of the one log stream. */
  followers: number;
  /**
   * Helm sources of the product of a second followed install (0: skip): each is a container printing 2 lines a
   * second. The first followed install is of the seeded product, with one source.
   */
  logSources: number;
  /** A second LOG_POLL_MS to measure the fan-out at (0: skip). */
  altPollMs: number;
}

export const defaultWorkflowsOptions = (): WorkflowsOptions => ({
  duration: Number(process.env.BENCH_DURATION ?? 10),
  installs: Number(process.env.BENCH_INSTALLS ?? 300),
  followers: Number(process.env.BENCH_FOLLOWERS ?? 1000),
  logSources: Number(process.env.BENCH_LOG_SOURCES ?? 4),
  altPollMs: Number(process.env.BENCH_ALT_POLL_MS ?? 250),
});

export interface FanOut {
  pollMs: number;
  /** Containers of the followed install, each printing 2 lines a second. */
  containers: number;
  followers: number;
  /** Seconds from the first connection until every follower had its first event. */
  connect_s: number;
  failed_connections: number;
  /** Live lines (produced during the window) delivered, summed over the followers. */
  lines_delivered: number;
  /**
   * Lines older than the backlog (tail=1) delivered after it, over all followers: a stream with `tail` should
   * send none. Not counted in the delays.
   */
  replayed_lines: number;
  single_replayed_lines: number;
  delay_p50_ms: number;
  delay_p99_ms: number;
  delay_max_ms: number;
  /** The one-follower baseline on the same server, same install. */
  single_delay_p50_ms: number;
  single_delay_p99_ms: number;
  single_lines: number;
  /** Server RSS before the streams and with them open (median of samples over the window), in KB. */
  rss_before_kb: number;
  rss_with_streams_kb: number;
  memory_per_stream_kb: number;
  /** The server's CPU use during the window, in cores (2 on this machine's scale). */
  server_cpu_cores: number;
  /** The benchmark client's own event-loop delay p99 during the window (it adds to the measured delay). */
  client_loop_p99_ms: number;
}

export interface WorkflowsFigures {
  options: WorkflowsOptions;
  installs_per_second: number;
  installs_create_s: number;
  installs_total_s: number;
  installs_failed: number;
  regions_rps: number;
  regions_p50_ms: number;
  regions_p99_ms: number;
  create_install_rps: number;
  create_install_p50_ms: number;
  create_install_p99_ms: number;
  create_vs_get_throughput_ratio: number;
  create_vs_get_p50_ratio: number;
  create_vs_get_p99_ratio: number;
  /** GET /v1/regions with the API rate limit on (RATE_LIMIT_PER_MINUTE=1,000,000: counted, never reached). */
  regions_limited_rps: number;
  regions_limited_p50_ms: number;
  regions_limited_p99_ms: number;
  /** regions_limited_rps ÷ regions_rps: what counting every request in PostgreSQL costs one busy token. */
  rate_limit_throughput_ratio: number;
  failed_requests: number;
  /** One container, at the server's default LOG_POLL_MS: the headline figures. */
  logs: FanOut;
  /** `options.logSources` containers, at the default LOG_POLL_MS (when logSources is not 0). */
  logs_multi: FanOut | undefined;
  /** One container at `options.altPollMs` (when not 0). */
  logs_alt: FanOut | undefined;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const rssKb = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
/** utime + stime of a process, in seconds (clock ticks of 10 ms). */
const cpuSeconds = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
};

async function post(base: string, path: string, token: string, body: unknown): Promise<{ id: string }> {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (response.status !== 202) throw new Error(`POST ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as { id: string };
}

/** Runs `work` for 0..count-1 with at most `concurrency` at once. */
async function pool(count: number, concurrency: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) await work(next++);
    }),
  );
}

interface Follower {
  request: http.ClientRequest;
  /** Resolves when the first event arrived (true) or the connection failed (false). */
  ready: Promise<boolean>;
}

interface Sink {
  /** now − timestamp of every `log` event whose line was produced at or after `from` (epoch ms). */
  delays: number[];
  from: number;
  to: number;
  /** Lines delivered after the backlog that are older than the backlog's newest line by over a second. */
  replayed: number;
}

/** One raw HTTP connection to a log stream (no EventSource library): parses SSE events as they arrive. */
function follow(url: string, token: string, sink: Sink): Follower {
  let settle!: (ok: boolean) => void;
  const ready = new Promise<boolean>((resolve) => (settle = resolve));
  const request = http.get(url, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' }, agent: false }, (response) => {
    if (response.statusCode !== 200) {
      settle(false);
      response.resume();
      return;
    }
    response.setEncoding('utf8');
    let pending = '';
    let newest = Number.NEGATIVE_INFINITY;
    let first = true;
    response.on('data', (chunk: string) => {
      const now = Date.now();
      pending += chunk;
      let end: number;
      while ((end = pending.indexOf('\n\n')) >= 0) {
        const event = pending.slice(0, end);
        pending = pending.slice(end + 2);
        const at = event.indexOf('"timestamp":"');
        if (at < 0 || !event.includes('event: log')) continue;
        const timestamp = Date.parse(event.slice(at + 13, event.indexOf('"', at + 13)));
        if (first) newest = Math.max(newest, timestamp);
        else if (timestamp < newest - 1000) sink.replayed++;
        if (timestamp >= sink.from && timestamp < sink.to) sink.delays.push(now - timestamp);
      }
      if (first) {
        first = false;
        settle(true);
      }
    });
    response.on('error', () => {});
  });
  request.on('error', () => settle(false));
  return { request, ready };
}

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 300_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** One follower for `duration`, then `followers` at once for `duration`, on the same server and install. */
async function fanOut(server: ServerProcess, streamUrl: string, token: string, options: WorkflowsOptions, pollMs: number, containers: number): Promise<FanOut> {
  const pid = server.child.pid!;
  // The baseline: one follower alone.
  const single: Sink = { delays: [], from: Number.POSITIVE_INFINITY, to: Number.POSITIVE_INFINITY, replayed: 0 };
  const one = follow(streamUrl, token, single);
  if (!(await one.ready)) throw new Error('the single follower could not connect');
  await sleep(1000); // past the first update (see `replayed`)
  single.from = Date.now(); // live lines only: produced from here on
  single.to = single.from + options.duration * 1000;
  await sleep(options.duration * 1000 + 2000); // the window's last lines arrive too, however late
  const singleDelays = [...single.delays];
  one.request.destroy();
  await sleep(1000);

  const before = rssKb(pid);
  const sink: Sink = { delays: [], from: Number.POSITIVE_INFINITY, to: Number.POSITIVE_INFINITY, replayed: 0 };
  const started = performance.now();
  const followers: Follower[] = [];
  let failed = 0;
  // Connect in waves of 100, so the listen backlog is not the thing measured.
  for (let i = 0; i < options.followers; i += 100) {
    const wave = Array.from({ length: Math.min(100, options.followers - i) }, () => follow(streamUrl, token, sink));
    followers.push(...wave);
    failed += (await Promise.all(wave.map((f) => f.ready))).filter((ok) => !ok).length;
  }
  const connectSeconds = (performance.now() - started) / 1000;
  await sleep(1000); // past every follower's first update (see `replayed`)
  sink.from = Date.now(); // from here on, lines produced while every follower was connected
  sink.to = sink.from + options.duration * 1000;
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const cpu0 = cpuSeconds(pid);
  const t0 = performance.now();
  const samples: number[] = [];
  for (let waited = 0; waited < options.duration * 1000; waited += 500) {
    await sleep(500);
    samples.push(rssKb(pid));
  }
  const cpu = (cpuSeconds(pid) - cpu0) / ((performance.now() - t0) / 1000);
  loop.disable();
  await sleep(2000); // the window's last lines arrive too, however late
  const delays = [...sink.delays];
  for (const f of followers) f.request.destroy();
  await sleep(1000);
  const during = median(samples);
  return {
    pollMs,
    containers,
    followers: options.followers,
    connect_s: connectSeconds,
    failed_connections: failed,
    lines_delivered: delays.length,
    replayed_lines: sink.replayed,
    single_replayed_lines: single.replayed,
    delay_p50_ms: percentile(delays, 50),
    delay_p99_ms: percentile(delays, 99),
    delay_max_ms: delays.length ? Math.max(...delays) : Number.NaN,
    single_delay_p50_ms: percentile(singleDelays, 50),
    single_delay_p99_ms: percentile(singleDelays, 99),
    single_lines: singleDelays.length,
    rss_before_kb: before,
    rss_with_streams_kb: during,
    memory_per_stream_kb: (during - before) / options.followers,
    server_cpu_cores: cpu,
    client_loop_p99_ms: loop.percentile(99) / 1e6,
  };
}

export async function benchWorkflows(options: WorkflowsOptions = defaultWorkflowsOptions()): Promise<WorkflowsFigures> {
  const { admin, url, connection: db } = await freshDatabase('platform_bench_workflows', 'bench');
  const servers: ServerProcess[] = [];
  try {
    const user = await createUser(db.db, systemClock, 'bench-workflows@platform.example', 'pro');
    const sample = await seedSampleResources(db.db, systemClock, user, 'bench');
    // The second followed install's product: `logSources` charts, so its stream carries 2 × logSources lines a second.
    const product = await db.db.selectFrom('products').selectAll().where('id', '=', sample.productId).executeTakeFirstOrThrow();
    const logProductId = newId('prd');
    const charts = ['wordpress', 'redis', 'nginx', 'postgresql', 'rabbitmq', 'memcached', 'minio', 'keycloak'];
    await db.db
      .insertInto('products')
      .values({
        ...product,
        id: logProductId,
        name: 'Log bench',
        template_id: newId('tpl'),
        sources: JSON.stringify(
          Array.from({ length: options.logSources }, (_, i) => ({
            id: newId('src'),
            chart: {
              repo_url: 'https://charts.bitnami.com/bitnami',
              target_revision: '1.0.0',
              chart: `${charts[i % charts.length]}${i >= charts.length ? `-${i}` : ''}`,
            },
            values: {},
            metadata: {},
          })),
        ),
        cluster_ids: JSON.stringify(product.cluster_ids),
        stripe_price_ids: JSON.stringify(product.stripe_price_ids),
        settings: JSON.stringify(product.settings),
      })
      .execute();

    const simulation = { DATABASE_URL: url.toString(), ...INSTANT_SIMULATION };
    const server = await startServerProcess(simulation);
    servers.push(server);
    const installBody = { product_id: sample.productId, region_id: 'fsn1' };

    // (b) Installs end to end: 32 clients start the batch, until every one is `running`.
    const started = performance.now();
    const ids: string[] = [];
    await pool(options.installs, 32, async () => {
      ids.push((await post(server.base, '/v1/installs', user.token, installBody)).id);
    });
    const created = performance.now();
    let failedInstalls = 0;
    await waitFor(async () => {
      const { rows } = await sql<{ running: number; failed: number }>`
        SELECT count(*) FILTER (WHERE status = 'running')::int AS running, count(*) FILTER (WHERE status = 'failed')::int AS failed
        FROM installs WHERE id = ANY(${ids})`.execute(db.db);
      failedInstalls = rows[0]!.failed;
      return rows[0]!.running + rows[0]!.failed === ids.length;
    }, 'the batch of installs');
    const finished = performance.now();

    // (c) Followers of one running install's log stream.
    const followed = async (productId: string) => {
      const { id } = await post(server.base, '/v1/installs', user.token, { product_id: productId, region_id: 'fsn1' });
      await waitFor(
        async () => (await db.db.selectFrom('installs').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status === 'running',
        'a followed install',
      );
      return `/v1/installs/${id}/logs?tail=1`;
    };
    const single = await followed(sample.productId);
    const multi = options.logSources > 0 ? await followed(logProductId) : undefined;
    await waitFor(
      async () => (await sql<{ n: number }>`SELECT count(*)::int AS n FROM workflows WHERE status IN ('pending', 'running')`.execute(db.db)).rows[0]!.n === 0,
      'the workflows to settle',
    );
    const defaultPollMs = loadConfig({}).logPollMs;
    const logs = await fanOut(server, `${server.base}${single}`, user.token, options, defaultPollMs, 1);
    const logsMulti = multi ? await fanOut(server, `${server.base}${multi}`, user.token, options, defaultPollMs, options.logSources) : undefined;
    let logsAlt: FanOut | undefined;
    if (options.altPollMs > 0) {
      const alt = await startServerProcess({ ...simulation, LOG_POLL_MS: String(options.altPollMs) }, ['--role', 'api']);
      servers.push(alt);
      logsAlt = await fanOut(alt, `${alt.base}${single}`, user.token, options, options.altPollMs, 1);
      await alt.stop();
    }
    await server.stop();

    // (a) createInstall under load against a cheap authenticated GET, on one API process.
    const api = await startServerProcess(simulation, ['--role', 'api']);
    servers.push(api);
    const headers = { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' };
    const load = (method: 'GET' | 'POST', path: string, duration: number) =>
      autocannon({
        url: `${api.base}${path}`,
        method,
        headers,
        connections: 32,
        duration,
        ...(method === 'POST' ? { body: JSON.stringify(installBody) } : {}),
      });
    await load('GET', '/v1/regions', 2);
    await load('POST', '/v1/installs', 2);
    const regions = await load('GET', '/v1/regions', options.duration);
    const creates = await load('POST', '/v1/installs', options.duration);
    await api.stop();
    // The same GET with the API rate limit counting every request (a limit too high to be reached), as deployed.
    const limited = await startServerProcess({ ...simulation, RATE_LIMIT_PER_MINUTE: '1000000' }, ['--role', 'api']);
    servers.push(limited);
    const limitedUrl = `${limited.base}/v1/regions`;
    await autocannon({ url: limitedUrl, headers, connections: 32, duration: 2 });
    const regionsLimited = await autocannon({ url: limitedUrl, headers, connections: 32, duration: options.duration });
    await limited.stop();

    return {
      options,
      installs_per_second: options.installs / ((finished - started) / 1000),
      installs_create_s: (created - started) / 1000,
      installs_total_s: (finished - started) / 1000,
      installs_failed: failedInstalls,
      regions_rps: regions.requests.average,
      regions_p50_ms: regions.latency.p50,
      regions_p99_ms: regions.latency.p99,
      create_install_rps: creates.requests.average,
      create_install_p50_ms: creates.latency.p50,
      create_install_p99_ms: creates.latency.p99,
      create_vs_get_throughput_ratio: creates.requests.average / regions.requests.average,
      create_vs_get_p50_ratio: creates.latency.p50 / regions.latency.p50,
      create_vs_get_p99_ratio: creates.latency.p99 / regions.latency.p99,
      regions_limited_rps: regionsLimited.requests.average,
      regions_limited_p50_ms: regionsLimited.latency.p50,
      regions_limited_p99_ms: regionsLimited.latency.p99,
      rate_limit_throughput_ratio: regionsLimited.requests.average / regions.requests.average,
      failed_requests: regions.non2xx + regions.errors + creates.non2xx + creates.errors + regionsLimited.non2xx + regionsLimited.errors,
      logs,
      logs_multi: logsMulti,
      logs_alt: logsAlt,
    };
  } finally {
    for (const server of servers) if (server.child.exitCode === null) await server.stop();
    await db.close();
    await sql`DROP DATABASE IF EXISTS platform_bench_workflows WITH (FORCE)`.execute(admin.db);
    await admin.close();
  }
}

export function printFanOut(f: FanOut): string {
  return [
    `  ${f.followers} followers of an install of ${f.containers} container(s) (${2 * f.containers} lines/s) at LOG_POLL_MS=${f.pollMs}: connected in ${f.connect_s.toFixed(1)} s (${f.failed_connections} failed), ${f.lines_delivered} live lines delivered`,
    `    lines older than the backlog (tail=1) sent after it: ${f.replayed_lines} to the ${f.followers} followers, ${f.single_replayed_lines} to the single one (expected 0)`,
    `    delay p50 ${f.delay_p50_ms} ms, p99 ${f.delay_p99_ms} ms (target < 100), max ${f.delay_max_ms} ms; one follower alone: p50 ${f.single_delay_p50_ms} ms, p99 ${f.single_delay_p99_ms} ms (${f.single_lines} lines); ratio p99 ${(f.delay_p99_ms / f.single_delay_p99_ms).toFixed(2)}`,
    `    server RSS ${(f.rss_before_kb / 1024).toFixed(0)} → ${(f.rss_with_streams_kb / 1024).toFixed(0)} MB: ${f.memory_per_stream_kb.toFixed(1)} KB per stream (target < 50); server CPU ${f.server_cpu_cores.toFixed(2)} cores; client event-loop delay p99 ${f.client_loop_p99_ms.toFixed(1)} ms`,
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const f = await benchWorkflows();
  const o = f.options;
  console.log(`workflows (server as its own process, simulated cloud at zero latency/failures/timings), ${o.duration} s per load:`);
  console.log(
    `  installs end to end: ${f.installs_per_second.toFixed(1)} installs/s (${o.installs} started by 32 clients in ${f.installs_create_s.toFixed(1)} s, all running after ${f.installs_total_s.toFixed(1)} s, ${f.installs_failed} failed)`,
  );
  console.log(`  GET /v1/regions (baseline), 32 connections: ${f.regions_rps.toFixed(0)} req/s, p50 ${f.regions_p50_ms} ms, p99 ${f.regions_p99_ms} ms`);
  console.log(
    `  POST /v1/installs, 32 connections:          ${f.create_install_rps.toFixed(0)} req/s, p50 ${f.create_install_p50_ms} ms, p99 ${f.create_install_p99_ms} ms`,
  );
  console.log(
    `  GET /v1/regions, rate limit on:          ${f.regions_limited_rps.toFixed(0)} req/s, p50 ${f.regions_limited_p50_ms} ms, p99 ${f.regions_limited_p99_ms} ms (throughput ${f.rate_limit_throughput_ratio.toFixed(2)} of the limit off)`,
  );
  console.log(
    `  createInstall / GET: throughput ${f.create_vs_get_throughput_ratio.toFixed(2)}, p50 ${f.create_vs_get_p50_ratio.toFixed(2)}, p99 ${f.create_vs_get_p99_ratio.toFixed(2)}; failed requests ${f.failed_requests}`,
  );
  console.log('  log fan-out (tail=1, follow):');
  console.log(printFanOut(f.logs));
  if (f.logs_multi) console.log(printFanOut(f.logs_multi));
  if (f.logs_alt) console.log(printFanOut(f.logs_alt));
}
