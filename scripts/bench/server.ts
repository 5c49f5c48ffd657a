// The server benchmark (part of `pnpm bench`): GET /v1/clusters?limit=50 with a PAT and X-Workspace-Id on a
// workspace of 20,000 clusters, by autocannon at 32 connections, against (a) the server and (b) a raw
// node:http + pg baseline doing the same checks and SQL with prepared statements (baseline-server.ts), on the
// same PostgreSQL in the same run. The baseline reads the token on every request; the server keeps what a request
// read of its token for the token's next requests, for a second at most (services/access-cache.ts), as it does for
// every caller. Both start once the server is quiet (no workflow left to run, its CPU idle).
// The two are loaded in alternating pairs (BENCH_PAIRS, default 3; the order swaps each pair) so a change in the
// machine's load (2 shared cores) falls on both; the ratios are the medians of the pairs' ratios. Prints them
// against the targets, the CPU each process spent a request (steadier than the throughput when others share the
// machine), the server's peak resident memory, and a deep page against the first.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { type Connection, createUser, encodeCursor, systemClock } from '@platform/server/testing';
import autocannon from 'autocannon';
import { sql } from 'kysely';
import { freshDatabase } from '../fresh-database.ts';
import { repoRoot } from '../gen.ts';
import { serverNodeFlags } from '../server-process.ts';
import { median } from '../stats.ts';

const CLUSTERS = Number(process.env.BENCH_CLUSTERS ?? 20_000);
const DURATION = Number(process.env.BENCH_DURATION ?? 15);
const PAIRS = Number(process.env.BENCH_PAIRS ?? 3);
const CONNECTIONS = 32;
export const SERVER_TARGETS = { throughput_ratio: 0.9, p99_ratio: 1.5, server_peak_rss_mb: 150 };

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  /** CPU time (user + system) the serving process used a request, in µs, when its pid was given. */
  cpuUsPerRequest?: number;
}

export async function load(url: string, headers: Record<string, string>, duration = DURATION, pid?: number): Promise<LoadResult> {
  const cpuBefore = pid === undefined ? 0 : cpuMs(pid);
  const result = await autocannon({ url, headers, connections: CONNECTIONS, duration });
  const cpuUsPerRequest = pid === undefined ? undefined : ((cpuMs(pid) - cpuBefore) * 1000) / Math.max(1, result.requests.total);
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, non2xx: result.non2xx, errors: result.errors, cpuUsPerRequest };
}

export async function startProcess(script: string, env: Record<string, string>, nodeFlags: string[] = []): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, [...nodeFlags, join(repoRoot, script)], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening (?:on http:\/\/127\.0\.0\.1:)?(\d+)/.exec(out);
      if (!match) return;
      // Later output (a log line per request at info) is read and dropped, not kept.
      child.stdout!.off('data', onData);
      resolve(Number(match[1]));
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}: ${out}`)));
  });
  child.stdout!.resume();
  return { child, port };
}

const peakRssMb = (pid: number): number => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
/** CPU time (user + system) the process has used, in ms (clock ticks of 10 ms). */
export const cpuMs = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

/**
 * Waits until no workflow is left to run and the server has used under 5 % of a core for two seconds running
 * (start-up's work and its workers' first polls done), so the load measures requests alone.
 */
export async function quiet(db: Connection['db'], pid: number): Promise<void> {
  const deadline = Date.now() + 120_000;
  let calm = 0;
  while (calm < 2) {
    if (Date.now() > deadline) throw new Error('the server did not become quiet within 2 minutes');
    const before = cpuMs(pid);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const { unsettled } = await db
      .selectFrom('workflows')
      .select((eb) => eb.fn.countAll<string>().as('unsettled'))
      .where('status', 'in', ['pending', 'running'])
      .executeTakeFirstOrThrow();
    calm = Number(unsettled) === 0 && cpuMs(pid) - before < 50 ? calm + 1 : 0;
  }
}

/** The list's data: `count` running clusters in the workspace, as rows (the statistics brought up to date). */
export async function listedClusters(db: Connection['db'], workspaceId: string, count: number): Promise<void> {
  await sql`
    INSERT INTO clusters (id, workspace_id, name, region_id, kaas_version, kaas_release, status, status_message, created_at)
    SELECT 'cl_bench' || lpad(n::text, 8, '0'), ${workspaceId}, 'cluster-' || n, 'fsn1', 'v1.31', 'v1.31.13', 'RUNNING', NULL, 1700000000 + n
    FROM generate_series(1, ${count}) AS n`.execute(db);
  await sql`ANALYZE`.execute(db);
}

/** A fresh database with a user whose workspace holds CLUSTERS clusters: the list load's data. */
export async function listDatabase() {
  const { admin, url, connection: bench } = await freshDatabase('platform_bench', 'bench');
  const user = await createUser(bench.db, systemClock, 'bench@platform.example', 'pro');
  await listedClusters(bench.db, user.workspaceId, CLUSTERS);
  return { admin, url, bench, user };
}

/** `duration`: seconds of the two main loads (server and baseline); the warm-ups and page loads are fixed. */
export async function benchServer(duration = DURATION): Promise<Record<string, number>> {
  const { admin, url, bench, user } = await listDatabase();
  const deep = await bench.db
    .selectFrom('clusters')
    .select(['created_at', 'id'])
    .where('workspace_id', '=', user.workspaceId)
    .orderBy('created_at')
    .orderBy('id')
    .offset(Math.floor(CLUSTERS * 0.9) - 1)
    .limit(1)
    .executeTakeFirstOrThrow();

  // One token at full speed: the API rate limit is off, as the baseline has none.
  // The metrics recorded as `pnpm start` records them, served on a port of their own (METRICS_PORT=0: any free one).
  const env = { DATABASE_URL: url.toString(), PORT: '0', METRICS_PORT: '0', LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '0' };
  const headers = { authorization: `Bearer ${user.token}`, 'x-workspace-id': user.workspaceId };
  // BENCH_SERVER_NODE_FLAGS: more flags for the server alone, e.g. `--cpu-prof --cpu-prof-dir=DIR` to profile it.
  const startFlags = serverNodeFlags();
  const serverFlags = [...startFlags, ...(process.env.BENCH_SERVER_NODE_FLAGS?.split(/\s+/).filter(Boolean) ?? [])];
  // The baseline runs on Node's compile cache too (the server's `--import` of packages/server/src/compile-cache.mjs):
  // without it the type stripper stays loaded, and its memory is not the baseline's (after 15 s of the list load the
  // baseline's peak was 221 MB with it, 143 MB without). BENCH_BASELINE_NODE_FLAGS: more flags for it, e.g. to profile it.
  const cacheAt = startFlags.indexOf('--import');
  const baselineFlags = [
    ...(cacheAt >= 0 ? startFlags.slice(cacheAt, cacheAt + 2) : []),
    ...(process.env.BENCH_BASELINE_NODE_FLAGS?.split(/\s+/).filter(Boolean) ?? []),
  ];
  // A first start of each fills Node's compile cache with its code, as any earlier `pnpm start` of the server would;
  // the processes measured then start as users' servers do after their first start.
  for (const [script, flags] of [
    ['scripts/bench/baseline-server.ts', baselineFlags],
    ['packages/server/src/main.ts', serverFlags],
  ] as const) {
    const warmUp = await startProcess(script, env, [...flags]);
    const warmUpExited = once(warmUp.child, 'exit');
    warmUp.child.kill('SIGTERM');
    await warmUpExited;
  }
  const baseline = await startProcess('scripts/bench/baseline-server.ts', env, baselineFlags);
  const server = await startProcess('packages/server/src/main.ts', env, serverFlags);
  try {
    await quiet(bench.db, server.child.pid!);
    await bench.close();
    const page = (port: number, query = '') => `http://127.0.0.1:${port}/v1/clusters?limit=50${query}`;
    await load(page(baseline.port), headers, 3);
    await load(page(server.port), headers, 3);
    const pairs: { base: LoadResult; ours: LoadResult }[] = [];
    for (let i = 0; i < PAIRS; i++) {
      // Alternating order: the baseline first in even pairs, the server first in odd ones.
      const [firstPort, firstPid, secondPort, secondPid] =
        i % 2 ? [server.port, server.child.pid, baseline.port, baseline.child.pid] : [baseline.port, baseline.child.pid, server.port, server.child.pid];
      const first = await load(page(firstPort), headers, duration, firstPid);
      const second = await load(page(secondPort), headers, duration, secondPid);
      pairs.push(i % 2 ? { base: second, ours: first } : { base: first, ours: second });
    }
    const peakRss = peakRssMb(server.child.pid!);
    const first = await load(page(server.port), headers, 5);
    const deepPage = await load(page(server.port, `&cursor=${encodeCursor(deep)}`), headers, 5);
    const failed = (r: LoadResult) => r.non2xx + r.errors;
    return {
      baseline_rps: median(pairs.map((p) => p.base.rps)),
      baseline_p50_ms: median(pairs.map((p) => p.base.p50)),
      baseline_p99_ms: median(pairs.map((p) => p.base.p99)),
      server_rps: median(pairs.map((p) => p.ours.rps)),
      server_p50_ms: median(pairs.map((p) => p.ours.p50)),
      server_p99_ms: median(pairs.map((p) => p.ours.p99)),
      throughput_ratio: median(pairs.map((p) => p.ours.rps / p.base.rps)),
      p99_ratio: median(pairs.map((p) => p.ours.p99 / p.base.p99)),
      // Less noisy than the throughput on a shared machine: what each process spent on a request.
      server_cpu_us_per_request: median(pairs.map((p) => p.ours.cpuUsPerRequest!)),
      baseline_cpu_us_per_request: median(pairs.map((p) => p.base.cpuUsPerRequest!)),
      server_peak_rss_mb: peakRss,
      baseline_peak_rss_mb: peakRssMb(baseline.child.pid!),
      first_page_p50_ms: first.p50,
      deep_page_p50_ms: deepPage.p50,
      deep_vs_first_ratio: first.rps / deepPage.rps,
      failed_requests: pairs.reduce((n, p) => n + failed(p.base) + failed(p.ours), failed(first) + failed(deepPage)),
      pairs: PAIRS,
      ...Object.fromEntries(
        pairs.flatMap((p, i) => [
          [`pair${i + 1}_throughput_ratio`, p.ours.rps / p.base.rps],
          [`pair${i + 1}_p99_ratio`, p.ours.p99 / p.base.p99],
        ]),
      ),
    };
  } finally {
    baseline.child.kill('SIGTERM');
    server.child.kill('SIGTERM');
    await bench.close().catch(() => {});
    await admin.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const loadAtStart = os.loadavg()[0]!;
  const f = await benchServer();
  const mark = (ok: boolean) => (ok ? 'met' : 'MISSED');
  console.log(
    `GET /v1/clusters?limit=50, ${CLUSTERS} clusters, ${CONNECTIONS} connections, ${PAIRS} alternating pairs of ${DURATION} s (medians), load average ${loadAtStart.toFixed(1)} at the start and ${os.loadavg()[0]!.toFixed(1)} at the end:`,
  );
  console.log(`  baseline (node:http + pg): ${f.baseline_rps!.toFixed(0)} req/s, p50 ${f.baseline_p50_ms} ms, p99 ${f.baseline_p99_ms} ms`);
  console.log(`  server:                    ${f.server_rps!.toFixed(0)} req/s, p50 ${f.server_p50_ms} ms, p99 ${f.server_p99_ms} ms`);
  const each = (name: string) => Array.from({ length: PAIRS }, (_, i) => f[`pair${i + 1}_${name}`]!.toFixed(2)).join(' / ');
  console.log(
    `  throughput ratio ${f.throughput_ratio!.toFixed(2)} (target ≥ ${SERVER_TARGETS.throughput_ratio}: ${mark(f.throughput_ratio! >= SERVER_TARGETS.throughput_ratio)}; pairs ${each('throughput_ratio')})`,
  );
  console.log(
    `  p99 ratio ${f.p99_ratio!.toFixed(2)} (target ≤ ${SERVER_TARGETS.p99_ratio}: ${mark(f.p99_ratio! <= SERVER_TARGETS.p99_ratio)}; pairs ${each('p99_ratio')})`,
  );
  console.log(
    `  CPU a request (user + system): server ${f.server_cpu_us_per_request!.toFixed(0)} µs, baseline ${f.baseline_cpu_us_per_request!.toFixed(0)} µs → ${(f.server_cpu_us_per_request! / f.baseline_cpu_us_per_request!).toFixed(2)}×`,
  );
  console.log(
    `  server peak RSS ${f.server_peak_rss_mb!.toFixed(0)} MB (target < ${SERVER_TARGETS.server_peak_rss_mb}: ${mark(f.server_peak_rss_mb! < SERVER_TARGETS.server_peak_rss_mb)}); baseline ${f.baseline_peak_rss_mb!.toFixed(0)} MB`,
  );
  console.log(
    `  page at offset ~${Math.floor(CLUSTERS * 0.9)}: p50 ${f.deep_page_p50_ms} ms vs first page ${f.first_page_p50_ms} ms; throughput first/deep ${f.deep_vs_first_ratio!.toFixed(2)} (target ≤ 1.5)`,
  );
  console.log(`  failed requests: ${f.failed_requests}`);
}
