// `pnpm bench:sizing`: what the deployed processes serve on one PostgreSQL, 1 API process + 1 worker against 2 API
// processes + 1 worker (the manifests' `--role api` / `--role worker` split), each process started as `pnpm start`
// starts it (scripts/server-process.ts) on a fresh database (`platform_bench_sizing`, made anew for each round):
//   list           GET /v1/clusters?limit=50 with a PAT and X-Workspace-Id, on a workspace of BENCH_CLUSTERS clusters;
//   createInstall  POST /v1/installs of a product onto a running cluster (202; the worker runs the installs meanwhile,
//                  on the simulated cloud at zero latency, as it would in production).
// autocannon at 32 connections in all, split evenly over the API processes (as a Service spreads connections), for
// BENCH_DURATION seconds after 2 s warm-ups; rounds alternate 1 and 2 API processes (BENCH_PAIRS pairs) so a change in
// the machine's load falls on both; the figures are the medians of the rounds. With 2 API processes a load's p99 is
// the higher of the two processes' p99s. During each load it reads the CPU of every process from /proc: each server
// process, the database's backends serving this database, the benchmark itself (autocannon), and the rest of the
// machine (others' work), in cores, the API processes' CPU a request (steadier than the throughput on a shared
// machine), and what the database's backends do (sampled every 200 ms: running, on a lock, idle in a transaction
// waiting for the server, idle). Prints the figures docs/performance.md keeps.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { createUser, seedSampleResources, systemClock } from '@platform/server/testing';
import autocannon from 'autocannon';
import { sql } from 'kysely';
import { freshDatabase } from '../fresh-database.ts';
import { type ServerProcess, startServerProcess } from '../server-process.ts';
import { median } from '../stats.ts';
import { listedClusters } from './server.ts';
import { INSTANT_SIMULATION } from './workflows.ts';

const CLUSTERS = Number(process.env.BENCH_CLUSTERS ?? 20_000);
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const PAIRS = Number(process.env.BENCH_PAIRS ?? 2);
const CONNECTIONS = 32;

/** utime + stime of a process in seconds (clock ticks of 10 ms); 0 once it is gone. */
function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** CPU seconds the whole machine has spent busy (everything but idle and iowait). */
function machineBusySeconds(): number {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  const values = ticks.map(Number);
  return (values.reduce((a, b) => a + b, 0) - values[3]! - values[4]!) / 100;
}

interface Load {
  rps: number;
  p50: number;
  p99: number;
  failed: number;
  /** Cores used during the load, by who. */
  cpu: { api: number[]; worker: number; postgres: number; bench: number; others: number };
  /** What the database's backends were doing, on average over the load (BackendStates). */
  backends: BackendStates;
}

/**
 * The database's backends by what they do: running a statement (on a CPU, or waiting for one), waiting on a lock,
 * idle in a transaction (waiting for the server process's next statement), idle.
 */
interface BackendStates {
  running: number;
  locked: number;
  inTransaction: number;
  idle: number;
}

interface Setup {
  apis: ServerProcess[];
  worker: ServerProcess;
  /** The backends of this database, for their CPU. */
  backends(): Promise<number[]>;
  /** What they do now. */
  backendStates(): Promise<BackendStates>;
}

/** `requests` spread over the API processes, CONNECTIONS in all; the CPU of everyone meanwhile. */
async function measure(setup: Setup, options: Omit<autocannon.Options, 'url' | 'connections' | 'duration'>, duration: number): Promise<Load> {
  const backends = await setup.backends();
  const pids = [...setup.apis.map((api) => api.child.pid!), setup.worker.child.pid!];
  const before = { procs: pids.map(cpuSeconds), postgres: backends.map(cpuSeconds), bench: process.cpuUsage(), machine: machineBusySeconds() };
  const started = performance.now();
  const samples: BackendStates[] = [];
  const sampling = setInterval(() => void setup.backendStates().then((states) => samples.push(states)), 200);
  const results = await Promise.all(setup.apis.map((api) => autocannon({ ...options, url: api.base, connections: CONNECTIONS / setup.apis.length, duration })));
  clearInterval(sampling);
  const wall = (performance.now() - started) / 1000;
  const procs = pids.map((pid, i) => (cpuSeconds(pid) - before.procs[i]!) / wall);
  const postgres = backends.reduce((sum, pid, i) => sum + cpuSeconds(pid) - before.postgres[i]!, 0) / wall;
  const benchUsage = process.cpuUsage(before.bench);
  const bench = (benchUsage.user + benchUsage.system) / 1e6 / wall;
  const machine = (machineBusySeconds() - before.machine) / wall;
  const ours = procs.reduce((a, b) => a + b, 0) + postgres + bench;
  return {
    rps: results.reduce((sum, r) => sum + r.requests.average, 0),
    p50: Math.max(...results.map((r) => r.latency.p50)),
    p99: Math.max(...results.map((r) => r.latency.p99)),
    failed: results.reduce((sum, r) => sum + r.non2xx + r.errors + r.timeouts, 0),
    cpu: { api: procs.slice(0, -1), worker: procs.at(-1)!, postgres, bench, others: Math.max(0, machine - ours) },
    backends: Object.fromEntries(
      (['running', 'locked', 'inTransaction', 'idle'] as const).map((state) => [
        state,
        samples.reduce((sum, each) => sum + each[state], 0) / Math.max(1, samples.length),
      ]),
    ) as unknown as BackendStates,
  };
}

/** One round: a fresh database, `apiCount` API processes and a worker, the list load then the createInstall load. */
async function round(apiCount: number): Promise<{ list: Load; create: Load }> {
  const { admin, url, connection } = await freshDatabase('platform_bench_sizing', 'bench');
  const processes: ServerProcess[] = [];
  try {
    const installer = await createUser(connection.db, systemClock, 'sizing-installs@platform.example', 'pro');
    const sample = await seedSampleResources(connection.db, systemClock, installer, 'sizing');
    const lister = await createUser(connection.db, systemClock, 'sizing-lists@platform.example', 'pro');
    await listedClusters(connection.db, lister.workspaceId, CLUSTERS);
    const env = { DATABASE_URL: url.toString(), ...INSTANT_SIMULATION };
    const worker = await startServerProcess(env, ['--role', 'worker']);
    processes.push(worker);
    const apis: ServerProcess[] = [];
    for (let i = 0; i < apiCount; i++) {
      apis.push(await startServerProcess(env, ['--role', 'api']));
      processes.push(apis.at(-1)!);
    }
    const database = url.pathname.slice(1);
    const setup: Setup = {
      apis,
      worker,
      backends: async () =>
        (await sql<{ pid: number }>`SELECT pid FROM pg_stat_activity WHERE datname = ${database} AND pid <> pg_backend_pid()`.execute(connection.db)).rows.map(
          (row) => row.pid,
        ),
      backendStates: async () =>
        (
          await sql<BackendStates>`
            SELECT count(*) FILTER (WHERE state = 'active' AND wait_event_type IS DISTINCT FROM 'Lock')::int AS running,
                   count(*) FILTER (WHERE state = 'active' AND wait_event_type = 'Lock')::int AS locked,
                   count(*) FILTER (WHERE state LIKE 'idle in transaction%')::int AS "inTransaction",
                   count(*) FILTER (WHERE state = 'idle')::int AS idle
            FROM pg_stat_activity WHERE datname = ${database} AND pid <> pg_backend_pid()`.execute(connection.db)
        ).rows[0]!,
    };
    const list = {
      headers: { authorization: `Bearer ${lister.token}`, 'x-workspace-id': lister.workspaceId },
      requests: [{ method: 'GET' as const, path: '/v1/clusters?limit=50' }],
    };
    const create = {
      headers: { authorization: `Bearer ${installer.token}`, 'content-type': 'application/json' },
      requests: [{ method: 'POST' as const, path: '/v1/installs', body: JSON.stringify({ product_id: sample.productId, region_id: 'fsn1' }) }],
    };
    await measure(setup, list, 3);
    const listed = await measure(setup, list, DURATION);
    await measure(setup, create, 3);
    const created = await measure(setup, create, DURATION);
    return { list: listed, create: created };
  } finally {
    await Promise.all(processes.map((each) => each.stop()));
    await connection.close();
    await admin.close();
  }
}

const cores = (n: number) => n.toFixed(2);
const row = (name: string, loads: Load[]) => {
  const m = (pick: (load: Load) => number) => median(loads.map(pick));
  const api = loads[0]!.cpu.api.map((_, i) => cores(m((load) => load.cpu.api[i]!))).join(' + ');
  const apiUs = m((l) => (l.cpu.api.reduce((a, b) => a + b, 0) / l.rps) * 1e6);
  return `${name.padEnd(18)}${m((l) => l.rps)
    .toFixed(0)
    .padStart(
      8,
    )} req/s  p50 ${String(m((l) => l.p50)).padStart(3)} ms  p99 ${String(m((l) => l.p99)).padStart(4)} ms  API CPU ${apiUs.toFixed(0)} µs a request; CPU (cores): API ${api}, worker ${cores(m((l) => l.cpu.worker))}, PostgreSQL ${cores(m((l) => l.cpu.postgres))}, autocannon ${cores(m((l) => l.cpu.bench))}, others ${cores(m((l) => l.cpu.others))}; backends running ${m((l) => l.backends.running).toFixed(1)}, on a lock ${m((l) => l.backends.locked).toFixed(1)}, idle in a transaction ${m((l) => l.backends.inTransaction).toFixed(1)}, idle ${m((l) => l.backends.idle).toFixed(1)}${loads.some((l) => l.failed > 0) ? `  FAILED ${loads.reduce((n, l) => n + l.failed, 0)}` : ''}`;
};

const loadAtStart = os.loadavg();
const rounds: Record<1 | 2, { list: Load; create: Load }[]> = { 1: [], 2: [] };
for (let pair = 0; pair < PAIRS; pair++) {
  for (const apiCount of pair % 2 ? ([2, 1] as const) : ([1, 2] as const)) rounds[apiCount].push(await round(apiCount));
}
const ratio = (pick: (load: Load) => number, phase: 'list' | 'create') =>
  (median(rounds[2].map((r) => pick(r[phase]))) / median(rounds[1].map((r) => pick(r[phase])))).toFixed(2);
console.log(
  `Sizing on ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}), ${(os.totalmem() / 1024 ** 3).toFixed(0)} GiB, ${new Date().toISOString()}: ${CONNECTIONS} connections split over the API processes, ${DURATION} s loads, ${PAIRS} alternated pairs (medians); load average ${loadAtStart.map((n) => n.toFixed(1)).join(' ')} at the start, ${os
    .loadavg()
    .map((n) => n.toFixed(1))
    .join(' ')} at the end`,
);
for (const phase of ['list', 'create'] as const) {
  console.log(
    phase === 'list' ? `GET /v1/clusters?limit=50 (${CLUSTERS} clusters):` : 'POST /v1/installs (createInstall; the worker runs the installs meanwhile):',
  );
  console.log(
    `  ${row(
      '1 API + 1 worker',
      rounds[1].map((r) => r[phase]),
    )}`,
  );
  console.log(
    `  ${row(
      '2 API + 1 worker',
      rounds[2].map((r) => r[phase]),
    )}`,
  );
  console.log(`  2 API ÷ 1 API: throughput ${ratio((l) => l.rps, phase)}×, p99 ${ratio((l) => l.p99, phase)}×`);
}
const failed = [...rounds[1], ...rounds[2]].some((r) => r.list.failed + r.create.failed > 0);
if (failed) {
  console.error('sizing: some requests failed (non-2xx, errors or timeouts)');
  process.exit(1);
}
