// The server benchmark (part of `pnpm bench`): GET /v1/clusters?limit=50 with a PAT and X-Workspace-Id on a
// workspace of 100,000 clusters, by autocannon at 32 connections, against (a) the server and (b) a raw
// node:http + pg baseline doing the same SQL work, on the same PostgreSQL in the same run. Prints both
// throughputs, p50/p99 and the ratios, the server's peak resident memory, and a deep page against the first.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createUser, encodeCursor, systemClock } from '@platform/server/testing';
import autocannon from 'autocannon';
import { sql } from 'kysely';
import { freshDatabase } from '../fresh-database.ts';
import { repoRoot } from '../gen.ts';
import { serverNodeFlags } from '../server-process.ts';

const CLUSTERS = Number(process.env.BENCH_CLUSTERS ?? 100_000);
const DURATION = Number(process.env.BENCH_DURATION ?? 15);
const CONNECTIONS = 32;

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

export async function load(url: string, headers: Record<string, string>, duration = DURATION): Promise<LoadResult> {
  const result = await autocannon({ url, headers, connections: CONNECTIONS, duration });
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, non2xx: result.non2xx, errors: result.errors };
}

async function startProcess(script: string, env: Record<string, string>, nodeFlags: string[] = []): Promise<{ child: ChildProcess; port: number }> {
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

/** `duration`: seconds of the two main loads (server and baseline); the warm-ups and page loads are fixed. */
export async function benchServer(duration = DURATION): Promise<Record<string, number>> {
  const { admin, url, connection: bench } = await freshDatabase('platform_bench', 'bench');
  const user = await createUser(bench.db, systemClock, 'bench@platform.example', 'pro');
  await sql`
    INSERT INTO clusters (id, workspace_id, name, region_id, kaas_version, status, status_message, created_at)
    SELECT 'cl_bench' || lpad(n::text, 8, '0'), ${user.workspaceId}, 'cluster-' || n, 'fsn1', 'v1.31', 'RUNNING', NULL, 1700000000 + n
    FROM generate_series(1, ${CLUSTERS}) AS n`.execute(bench.db);
  await sql`ANALYZE`.execute(bench.db);
  const deep = await bench.db
    .selectFrom('clusters')
    .select(['created_at', 'id'])
    .where('workspace_id', '=', user.workspaceId)
    .orderBy('created_at')
    .orderBy('id')
    .offset(Math.floor(CLUSTERS * 0.9) - 1)
    .limit(1)
    .executeTakeFirstOrThrow();
  await bench.close();

  // One token at full speed: the API rate limit is off, as the baseline has none.
  const env = { DATABASE_URL: url.toString(), PORT: '0', LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '0' };
  const headers = { authorization: `Bearer ${user.token}`, 'x-workspace-id': user.workspaceId };
  const baseline = await startProcess('scripts/bench/baseline-server.ts', env);
  const server = await startProcess('packages/server/src/main.ts', env, serverNodeFlags());
  try {
    const page = (port: number, query = '') => `http://127.0.0.1:${port}/v1/clusters?limit=50${query}`;
    await load(page(baseline.port), headers, 3);
    await load(page(server.port), headers, 3);
    const base = await load(page(baseline.port), headers, duration);
    const ours = await load(page(server.port), headers, duration);
    const first = await load(page(server.port), headers, 5);
    const deepPage = await load(page(server.port, `&cursor=${encodeCursor(deep)}`), headers, 5);
    const figures = {
      baseline_rps: base.rps,
      baseline_p50_ms: base.p50,
      baseline_p99_ms: base.p99,
      server_rps: ours.rps,
      server_p50_ms: ours.p50,
      server_p99_ms: ours.p99,
      throughput_ratio: ours.rps / base.rps,
      p99_ratio: ours.p99 / base.p99,
      server_peak_rss_mb: peakRssMb(server.child.pid!),
      first_page_p50_ms: first.p50,
      deep_page_p50_ms: deepPage.p50,
      deep_vs_first_ratio: first.rps / deepPage.rps,
      failed_requests: base.non2xx + base.errors + ours.non2xx + ours.errors + first.non2xx + deepPage.non2xx,
    };
    return figures;
  } finally {
    baseline.child.kill('SIGTERM');
    server.child.kill('SIGTERM');
    await admin.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const f = await benchServer();
  console.log(`GET /v1/clusters?limit=50, ${CLUSTERS} clusters, ${CONNECTIONS} connections, ${DURATION} s each:`);
  console.log(`  baseline (node:http + pg): ${f.baseline_rps!.toFixed(0)} req/s, p50 ${f.baseline_p50_ms} ms, p99 ${f.baseline_p99_ms} ms`);
  console.log(`  server:                    ${f.server_rps!.toFixed(0)} req/s, p50 ${f.server_p50_ms} ms, p99 ${f.server_p99_ms} ms`);
  console.log(
    `  throughput ratio ${f.throughput_ratio!.toFixed(2)} (target ≥ 0.8), p99 ratio ${f.p99_ratio!.toFixed(2)} (target ≤ 2), peak RSS ${f.server_peak_rss_mb!.toFixed(0)} MB (target < 200)`,
  );
  console.log(
    `  page at offset ~${Math.floor(CLUSTERS * 0.9)}: p50 ${f.deep_page_p50_ms} ms vs first page ${f.first_page_p50_ms} ms; throughput first/deep ${f.deep_vs_first_ratio!.toFixed(2)} (target ≤ 1.5)`,
  );
  console.log(`  failed requests: ${f.failed_requests}`);
}
