// What metrics and traces cost (`pnpm bench:telemetry`): the list load of the server benchmark (GET
// /v1/clusters?limit=50, PAT + X-Workspace-Id, 20,000 clusters, autocannon at 32 connections) against three server
// processes on the same database in the same run: telemetry off (METRICS_PORT=off, no OTEL_* variable), metrics on
// (METRICS_PORT=0), and traces on at a 10 % sample (OTEL_TRACES_SAMPLER=parentbased_traceidratio, ARG 0.1, exported
// as OTLP/HTTP to a receiver of the bench's own that answers at once) with metrics off; and both on. The variants
// are loaded in BENCH_ROUNDS rounds (default 5) of BENCH_DURATION seconds each (default 10), the order rotating each
// round so a change in the machine's load (2 shared cores) falls on every variant; each ratio is the median of the
// rounds' ratios against the round's load with telemetry off. Prints the throughput ratios against the targets
// (metrics ≥ 0.97×, traces ≥ 0.90×), the CPU each process spent a request, and p99.
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { serverNodeFlags } from '../server-process.ts';
import { median } from '../stats.ts';
import { type LoadResult, listDatabase, load, quiet, startProcess } from './server.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
export const TELEMETRY_TARGETS = { metrics_ratio: 0.97, traces_ratio: 0.9 };

const loadAtStart = os.loadavg();
const startedAt = new Date();
const { admin, url, bench, user } = await listDatabase();
// The collector: takes every export and answers at once (what a local OpenTelemetry Collector does).
let exports = 0;
const sink = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    exports++;
    res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
  });
});
sink.listen(0, '127.0.0.1');
await once(sink, 'listening');
const traces = {
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://127.0.0.1:${(sink.address() as AddressInfo).port}/v1/traces`,
  OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
  OTEL_TRACES_SAMPLER_ARG: '0.1',
};
const common = { DATABASE_URL: url.toString(), PORT: '0', LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '0' };
const variants = {
  off: { ...common, METRICS_PORT: 'off' },
  metrics: { ...common, METRICS_PORT: '0' },
  traces: { ...common, METRICS_PORT: 'off', ...traces },
  both: { ...common, METRICS_PORT: '0', ...traces },
} as const;
type Variant = keyof typeof variants;
const names = Object.keys(variants) as Variant[];

// BENCH_SERVER_NODE_FLAGS: more flags for the servers, e.g. `--cpu-prof --cpu-prof-dir=DIR` to see where each spends its time.
const flags = [...serverNodeFlags(), ...(process.env.BENCH_SERVER_NODE_FLAGS?.split(/\s+/).filter(Boolean) ?? [])];
const servers = [] as { name: Variant; child: Awaited<ReturnType<typeof startProcess>>['child']; port: number }[];
try {
  // A first start fills Node's compile cache, as an earlier `pnpm start` would.
  const warm = await startProcess('packages/server/src/main.ts', variants.both, flags);
  const warmExited = once(warm.child, 'exit');
  warm.child.kill('SIGTERM');
  await warmExited;
  for (const name of names) servers.push({ name, ...(await startProcess('packages/server/src/main.ts', variants[name], flags)) });
  console.log(`servers: ${servers.map((server) => `${server.name} pid ${server.child.pid}`).join(', ')}`);
  // A profiled server is never quiet (the profiler's own sampling): it is given 10 s instead.
  if (flags.includes('--cpu-prof')) await new Promise((resolve) => setTimeout(resolve, 10_000));
  else for (const server of servers) await quiet(bench.db, server.child.pid!);
  await bench.close();
  const headers = { authorization: `Bearer ${user.token}`, 'x-workspace-id': user.workspaceId };
  const page = (port: number) => `http://127.0.0.1:${port}/v1/clusters?limit=50`;
  for (const server of servers) await load(page(server.port), headers, 3);
  const rounds: Record<Variant, LoadResult>[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const results = {} as Record<Variant, LoadResult>;
    for (let i = 0; i < servers.length; i++) {
      const server = servers[(i + round) % servers.length]!;
      results[server.name] = await load(page(server.port), headers, DURATION, server.child.pid);
    }
    rounds.push(results);
    const line = names.map((name) => `${name} ${results[name].rps.toFixed(0)}`).join(', ');
    console.log(`round ${round + 1}: ${line} req/s (load average ${os.loadavg()[0]!.toFixed(1)})`);
  }
  const ratio = (name: Variant) => median(rounds.map((r) => r[name].rps / r.off.rps));
  const each = (name: Variant) => rounds.map((r) => (r[name].rps / r.off.rps).toFixed(2)).join(' / ');
  const cpu = (name: Variant) => median(rounds.map((r) => r[name].cpuUsPerRequest!));
  const p99 = (name: Variant) => median(rounds.map((r) => r[name].p99));
  const failed = rounds.reduce((n, r) => n + names.reduce((m, name) => m + r[name].non2xx + r[name].errors, 0), 0);
  const mark = (ok: boolean) => (ok ? 'met' : 'MISSED');
  console.log(
    `\nGET /v1/clusters?limit=50, 32 connections, ${ROUNDS} rounds of ${DURATION} s, ${startedAt.toISOString()}; load average ${loadAtStart.map((l) => l.toFixed(1)).join(' ')} at the start, ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')} at the end; ${os.cpus().length} cores`,
  );
  for (const name of names) {
    console.log(
      `  ${name.padEnd(8)} ${median(rounds.map((r) => r[name].rps)).toFixed(0)} req/s, p99 ${p99(name)} ms, CPU ${cpu(name).toFixed(0)} µs a request${name === 'off' ? '' : ` → throughput ${ratio(name).toFixed(3)}× (rounds ${each(name)}), CPU ${(cpu(name) / cpu('off')).toFixed(3)}×`}`,
    );
  }
  console.log(
    `  metrics on: throughput ${ratio('metrics').toFixed(3)}× (target ≥ ${TELEMETRY_TARGETS.metrics_ratio}: ${mark(ratio('metrics') >= TELEMETRY_TARGETS.metrics_ratio)})`,
  );
  console.log(
    `  traces at 10 %: throughput ${ratio('traces').toFixed(3)}× (target ≥ ${TELEMETRY_TARGETS.traces_ratio}: ${mark(ratio('traces') >= TELEMETRY_TARGETS.traces_ratio)})`,
  );
  console.log(`  failed requests: ${failed}; trace exports received: ${exports}`);
} finally {
  for (const server of servers) server.child.kill('SIGTERM');
  await Promise.all(servers.map((server) => (server.child.exitCode === null ? once(server.child, 'exit') : undefined)));
  sink.close();
  await bench.close().catch(() => {});
  await admin.close();
}
