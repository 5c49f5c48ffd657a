// The webhooks benchmark (`pnpm bench:webhooks`, part of `pnpm bench`). On a fresh database (dropped at the end),
// against the server run as its own process (packages/server/src/main.ts, API and dispatcher in one: `--role all`,
// the default WEBHOOK_* settings) with the simulated cloud at zero latency, each figure against a baseline
// measured in the same run, everything (server, PostgreSQL, receivers, this load generator) on one machine:
//   (a) throughput: BENCH_WEBHOOK_EVENTS events (default 3,000), committed at BENCH_WEBHOOK_RATE a second (default
//       220, 2,200 deliveries a second: 10 % above the target, so that a rate kept up with shows as at least 2,000 from
//       the first commit to the last arrival; BENCH_WEBHOOK_RATE=300 finds where it stops keeping up) by this process through recordEvent, in batches of the events come due by up
//       to BENCH_WEBHOOK_WRITERS transactions at once (default 8), to BENCH_WEBHOOK_ENDPOINTS endpoints (default 10) on a loopback
//       receiver of its own (node:http, answering 204 at once): deliveries a second from the first commit to the
//       last arrival, and p50/p99 of each event's commit → its arrival at each endpoint (system clock). Baseline:
//       the same number of signed POSTs sent by this process straight to the receiver over kept-alive connections,
//       as many at once as the endpoints' concurrency allows (what the machine can do without the service);
//   (b) fairness: the same load in another workspace while 200 endpoints of 20 other workspaces hang (a receiver
//       that never answers) with 100,000 deliveries waiting for them: the healthy workspace's p99 against (a)'s,
//       and the server's peak RSS against (a)'s (the backlog is never loaded);
//   (c) what the outbox and the fan-out cost createInstall: POST /v1/installs under 32 autocannon connections in a
//       workspace with no endpoint, then in one with 10 endpoints subscribed to install.created (each install writes
//       its event and 10 deliveries), on one API process (`--role api`: the deliveries wait for workers that are not
//       there, so the load measures the write), in 4 alternated pairs of loads: the median of the pairs' throughput
//       ratios, and the loads' p50/p99 ratio.
// Targets: (a) >= 2,000 deliveries a second with p99 < 1 s; (b) p99 < 1 s; (c) >= 0.9x.
// Run on its own it prints its figures and targets; `benchWebhooks()` returns them to scripts/bench/report.ts.
// BENCH_WEBHOOK_PHASES=fan-out runs (c) alone. BENCH_WEBHOOK_PHASES=throughput runs (a) alone, without its baseline,
// and adds what PostgreSQL counted for the bench's database during it (transactions and rows written, per delivery;
// its statistics are read after the 11 s in which every connection reports them), to profile the delivery path
// (BENCH_SERVER_NODE_FLAGS).
import { createHmac, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { createUser, openDatabase, recordEvent, seedSampleResources, systemClock } from '@platform/server/testing';
import autocannon from 'autocannon';
import { sql } from 'kysely';
import { freshDatabase } from '../fresh-database.ts';
import { type ServerProcess, startServerProcess } from '../server-process.ts';
import { median, percentile } from '../stats.ts';

export interface WebhooksOptions {
  /** Seconds of each autocannon load. */
  duration: number;
  events: number;
  /** Events committed a second. */
  rate: number;
  endpoints: number;
  /** Transactions writing events at once. */
  writers: number;
  /** 'throughput': (a) alone, with PostgreSQL's counters (`benchWebhookThroughput`); 'fan-out': (c) alone; 'all' otherwise. */
  phases: 'all' | 'throughput' | 'fan-out';
}

export const defaultWebhooksOptions = (): WebhooksOptions => ({
  duration: Number(process.env.BENCH_DURATION ?? 10),
  events: Number(process.env.BENCH_WEBHOOK_EVENTS ?? 3000),
  rate: Number(process.env.BENCH_WEBHOOK_RATE ?? 220),
  endpoints: Number(process.env.BENCH_WEBHOOK_ENDPOINTS ?? 10),
  writers: Number(process.env.BENCH_WEBHOOK_WRITERS ?? 8),
  phases: process.env.BENCH_WEBHOOK_PHASES === 'throughput' || process.env.BENCH_WEBHOOK_PHASES === 'fan-out' ? process.env.BENCH_WEBHOOK_PHASES : 'all',
});

/** The targets the figures are held to. */
export const WEBHOOK_TARGETS = { deliveries_per_second: 2000, latency_p99_ms: 1000, fair_latency_p99_ms: 1000, fan_out_throughput_ratio: 0.9 };

/** (c)'s pairs of loads (none and with endpoints). */
const FAN_OUT_PAIRS = 4;

/** The hanging endpoints of (b), and the deliveries waiting for them. */
const HANGING_WORKSPACES = 20;
const HANGING_PER_WORKSPACE = 10;
const WAITING_DELIVERIES = 100_000;

/** One load of events to a healthy workspace's endpoints: what arrived, how fast, how late. */
export interface DeliveryFigures {
  deliveries: number;
  /** Deliveries that had not arrived 60 s after the last event, or arrived twice. */
  missing: number;
  duplicated: number;
  /** Deliveries a second the events were committed for (the load offered; this process on a busy machine may fall short of the rate). */
  offered_per_second: number;
  per_second: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  server_peak_rss_mb: number;
  /** The server's CPU time (user + system, /proc) during the load ÷ the deliveries that arrived. */
  server_cpu_us_per_delivery: number;
}

export interface WebhooksFigures extends FanOutFigures {
  options: WebhooksOptions;
  throughput: DeliveryFigures;
  /** Baseline of (a): signed POSTs straight to the receiver, a second. */
  raw_per_second: number;
  throughput_ratio: number;
  fairness: DeliveryFigures & { hanging_endpoints: number; waiting_deliveries: number };
  fair_p99_ratio: number;
  fair_rss_ratio: number;
}

/** (c): createInstall without and with 10 subscribed endpoints. */
export interface FanOutFigures {
  create_install_rps: number;
  create_install_p50_ms: number;
  create_install_p99_ms: number;
  create_install_with_endpoints_rps: number;
  create_install_with_endpoints_p50_ms: number;
  create_install_with_endpoints_p99_ms: number;
  /** With 10 endpoints ÷ without, the median of the pairs': below 1 means the fan-out costs that share. */
  fan_out_throughput_ratio: number;
  /** Each pair's ratio, in the order measured. */
  fan_out_pair_ratios: number[];
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

/** A process's resident memory (MB), from /proc. */
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

/** A process's CPU time so far (user + system, ms), from /proc (clock ticks of 10 ms). */
const cpuMs = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

const QUOTA = { metric: 'kaas/clusters', type: 'allocation', displayName: 'Managed clusters', unit: 'count', limit: 3, usage: 3, remaining: 0 } as const;

/** The bench's database, receivers and server (`--role all`), and the delivery load run against them. */
interface Bench {
  db: Awaited<ReturnType<typeof freshDatabase>>['connection'];
  env: Record<string, string>;
  server: ServerProcess;
  servers: ServerProcess[];
  receiverBase: string;
  hangingBase: string;
  /** Commits the events at the rate to a new workspace with its endpoints on the receiver, and measures their arrivals. */
  deliver: (label: string, beforeLoad?: () => Promise<void>) => Promise<DeliveryFigures>;
}

async function withBench<T>(options: WebhooksOptions, work: (bench: Bench) => Promise<T>): Promise<T> {
  const { admin, url, connection: db } = await freshDatabase('platform_bench_webhooks', 'bench');
  // Named, so that PostgreSQL's CPU for the event writers is told apart from the server's (benchWebhookThroughput).
  const writersUrl = new URL(url);
  writersUrl.searchParams.set('application_name', WRITERS);
  const writers = openDatabase(writersUrl.toString(), options.writers);
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
  // Reads the request and never answers.
  const hanging = http.createServer((req) => req.resume());
  for (const server of [receiver, hanging]) {
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
  }
  const receiverBase = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  const hangingBase = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`;
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
    // The hanging endpoints' circuits would open after 5 timeouts (50 s) and stop taking slots; kept closed, so
    // that (b) measures the fair shares alone, the worst case.
    const server = await startServerProcess({ ...env, WEBHOOK_CIRCUIT_FAILURES: '1000' });
    servers.push(server);

    const deliver = async (label: string, beforeLoad?: () => Promise<void>): Promise<DeliveryFigures> => {
      const user = await createUser(db.db, systemClock, `bench-${label}@bench.example`, 'pro');
      await createEndpoints(
        server.base,
        user.token,
        user.workspaceId,
        Array.from({ length: options.endpoints }, (_, i) => `${receiverBase}/${label}-${i}`),
        ['quota.reached'],
      );
      await beforeLoad?.();
      let peakRss = rssMb(server.child.pid!);
      const cpuBefore = cpuMs(server.child.pid!);
      const sampler = setInterval(() => {
        peakRss = Math.max(peakRss, rssMb(server.child.pid!));
      }, 100);
      // Committed → the moment its transaction committed. Events are written by up to `writers` transactions at
      // once, each taking the events come due since the last one (at most 50) through recordEvent, as the API
      // writes them: one writer alone committed about 25 events a second on a busy machine, below the rate.
      const committed = new Map<string, number>();
      const writing = new Set<Promise<void>>();
      const event = { type: 'quota.reached', workspace_id: user.workspaceId, object_type: 'quota', object_id: 'kaas/clusters', object: QUOTA } as const;
      const started = Date.now();
      let written = 0;
      while (written < options.events) {
        const due = Math.min(options.events, Math.floor(((Date.now() - started) * options.rate) / 1000) + 1);
        if (writing.size >= options.writers) await Promise.race(writing);
        else if (due <= written) await sleep(Math.max(1, Math.ceil(((written + 1) * 1000) / options.rate - (Date.now() - started))));
        else {
          const batch = Math.min(due - written, 50);
          written += batch;
          const write = writers.db
            .transaction()
            .execute(async (trx) => {
              const ids: string[] = [];
              for (let i = 0; i < batch; i++) ids.push(await recordEvent(trx, event, systemClock.now()));
              return ids;
            })
            .then((ids) => {
              const at = Date.now();
              for (const id of ids) committed.set(id, at);
            })
            .finally(() => writing.delete(write));
          writing.add(write);
        }
      }
      await Promise.all(writing);
      const expected = options.events * options.endpoints;
      const offered = Math.round((expected * 1000) / (Date.now() - started));
      const arrived = () => [...arrivals.keys()].filter((key) => key.startsWith(`/${label}-`));
      const deadline = Date.now() + 60_000;
      while (arrived().length < expected && Date.now() < deadline) await sleep(50);
      clearInterval(sampler);
      const latencies: number[] = [];
      let last = started;
      for (const key of arrived()) {
        const at = arrivals.get(key)!;
        last = Math.max(last, at);
        latencies.push(at - committed.get(key.split(' ')[1]!)!);
      }
      const figures = {
        deliveries: latencies.length,
        missing: expected - latencies.length,
        duplicated: duplicates,
        offered_per_second: offered,
        per_second: Math.round((latencies.length * 1000) / (last - started)),
        p50_ms: percentile(latencies, 50),
        p99_ms: percentile(latencies, 99),
        max_ms: percentile(latencies, 100),
        server_peak_rss_mb: Math.round(peakRss),
        server_cpu_us_per_delivery: Math.round(((cpuMs(server.child.pid!) - cpuBefore) * 1000) / Math.max(1, latencies.length)),
      };
      console.error(`${label}: ${JSON.stringify(figures)} (load average ${loadavg()[0]!.toFixed(1)})`);
      return figures;
    };

    return await work({ db, env, server, servers, receiverBase, hangingBase, deliver });
  } finally {
    for (const server of servers) if (server.child.exitCode === null) await server.stop();
    for (const server of [receiver, hanging]) {
      server.closeAllConnections();
      server.close();
    }
    await writers.close();
    await db.close();
    await sql`DROP DATABASE IF EXISTS platform_bench_webhooks WITH (FORCE)`.execute(admin.db);
    await admin.close();
  }
}

/** What PostgreSQL counted for the bench's database (every connection's: the server's and the event writers'). */
interface DatabaseCounters {
  transactions: number;
  inserted: number;
  updated: number;
  /** Of the updates, those that wrote no index entry (HOT). */
  hot_updated: number;
}

/** The application name of the bench's event writers' connections. */
const WRITERS = 'bench-event-writers';

/**
 * CPU time so far (ms) of every PostgreSQL backend connected to the bench's database, by process id, with its
 * application name (the webhook dispatcher's connections name themselves, the writers are named above).
 */
async function backendCpuMs(db: Bench['db']): Promise<Map<number, { ms: number; application: string }>> {
  const { rows } = await sql<{ pid: number; application: string }>`
    SELECT pid, application_name AS application FROM pg_stat_activity WHERE datname = current_database()`.execute(db.db);
  const cpu = new Map<number, { ms: number; application: string }>();
  for (const { pid, application } of rows) {
    try {
      cpu.set(pid, { ms: cpuMs(pid), application });
    } catch {
      // Gone meanwhile, or PostgreSQL on another machine: not counted.
    }
  }
  return cpu;
}

/**
 * Every backend reports its counters within 10 s of going idle (PostgreSQL 15's PGSTAT_IDLE_INTERVAL), and the
 * server's are idle once the load ended: read after 11 s, the counters hold everything done before.
 */
async function databaseCounters(db: Bench['db']): Promise<DatabaseCounters> {
  await sleep(11_000);
  const { rows } = await sql<{ transactions: string; inserted: string; updated: string; hot_updated: string }>`
    SELECT (SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()) AS transactions,
      sum(n_tup_ins) AS inserted, sum(n_tup_upd) AS updated, sum(n_tup_hot_upd) AS hot_updated
    FROM pg_stat_user_tables`.execute(db.db);
  const row = rows[0]!;
  return { transactions: Number(row.transactions), inserted: Number(row.inserted), updated: Number(row.updated), hot_updated: Number(row.hot_updated) };
}

export interface ThroughputFigures {
  throughput: DeliveryFigures;
  /** PostgreSQL's counters during the load, per delivery. */
  database_per_delivery: DatabaseCounters;
  /**
   * The CPU time of the database's backends during the load (read every half second: a backend that ends loses
   * what it spent since its last reading) ÷ the deliveries, in all and by the backends' application name (the
   * event writers', the webhook dispatcher's claims and settlings; '' the server's other connections).
   */
  database_cpu_us_per_delivery: number;
  database_cpu_us_per_delivery_by_application: Record<string, number>;
}

/** (a) alone, with PostgreSQL's counters: what a delivery costs the server and the database. */
export async function benchWebhookThroughput(options: WebhooksOptions = defaultWebhooksOptions()): Promise<ThroughputFigures> {
  return withBench(options, async ({ db, deliver }) => {
    let before: DatabaseCounters | undefined;
    let cpuBefore = new Map<number, { ms: number; application: string }>();
    const cpuLatest = new Map<number, { ms: number; application: string }>();
    // Each reading of the backends is a transaction of the bench's own, taken off the count below.
    let readings = 0;
    const read = async () => {
      readings++;
      for (const [pid, cpu] of await backendCpuMs(db)) cpuLatest.set(pid, cpu);
    };
    let sampler: NodeJS.Timeout | undefined;
    const throughput = await deliver('throughput', async () => {
      before = await databaseCounters(db);
      readings++;
      cpuBefore = await backendCpuMs(db);
      sampler = setInterval(() => void read(), 500);
    });
    clearInterval(sampler);
    await read();
    let backendsCpu = 0;
    const byApplication: Record<string, number> = {};
    for (const [pid, { ms, application }] of cpuLatest) {
      const spent = ms - (cpuBefore.get(pid)?.ms ?? 0);
      backendsCpu += spent;
      byApplication[application] = (byApplication[application] ?? 0) + spent;
    }
    const perDelivery = (ms: number) => Math.round((ms * 1000) / Math.max(1, throughput.deliveries));
    const after = await databaseCounters(db);
    // Less the bench's own readings: of the statistics before, and of the backends.
    const per = (key: keyof DatabaseCounters, less = 0) => Math.round(((after[key] - before![key] - less) / Math.max(1, throughput.deliveries)) * 1000) / 1000;
    return {
      throughput,
      database_per_delivery: {
        transactions: per('transactions', 1 + readings),
        inserted: per('inserted'),
        updated: per('updated'),
        hot_updated: per('hot_updated'),
      },
      database_cpu_us_per_delivery: perDelivery(backendsCpu),
      database_cpu_us_per_delivery_by_application: Object.fromEntries(Object.entries(byApplication).map(([name, ms]) => [name, perDelivery(ms)])),
    };
  });
}

/** (c) createInstall without and with 10 subscribed endpoints, in two workspaces of two users. */
async function fanOutFigures(
  db: Bench['db'],
  env: Record<string, string>,
  servers: ServerProcess[],
  receiverBase: string,
  options: WebhooksOptions,
): Promise<FanOutFigures> {
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
  // FAN_OUT_PAIRS pairs of loads of the duration each, the order swapping every pair (none then with, with then
  // none, …), so a drift of the machine's load weighs on both alike; the ratio is the median of the pairs' ratios,
  // so one disturbed load does not decide it (the means of two pairs of 5 s loads varied 0.81–0.94 for the same
  // code, single pairs 0.85–1.04); the other figures are the loads' means.
  const none = () => load(plain.token, plainSample.productId, options.duration);
  const some = () => load(hooked.token, hookedSample.productId, options.duration);
  const pairs: { without: autocannon.Result; with: autocannon.Result }[] = [];
  for (let i = 0; i < FAN_OUT_PAIRS; i++) {
    if (i % 2 === 0) {
      const without = await none();
      pairs.push({ without, with: await some() });
    } else {
      const withEndpoints = await some();
      pairs.push({ without: await none(), with: withEndpoints });
    }
  }
  const mean = (of: autocannon.Result[]) => {
    const avg = (pick: (r: autocannon.Result) => number) => of.reduce((sum, r) => sum + pick(r), 0) / of.length;
    return {
      requests: { average: Math.round(avg((r) => r.requests.average) * 10) / 10 },
      latency: { p50: avg((r) => r.latency.p50), p99: avg((r) => r.latency.p99) },
      non2xx: avg((r) => r.non2xx) * of.length,
      errors: avg((r) => r.errors) * of.length,
    };
  };
  const without = mean(pairs.map((pair) => pair.without));
  const withEndpoints = mean(pairs.map((pair) => pair.with));
  const pairRatios = pairs.map((pair) => pair.with.requests.average / pair.without.requests.average);
  await api.stop();
  // Every install of the second load wrote its 10 deliveries.
  const { rows } = await sql<{ installs: number; deliveries: number }>`
    SELECT (SELECT count(*)::int FROM installs WHERE workspace_id = ${hooked.workspaceId}) AS installs,
           (SELECT count(*)::int FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
             WHERE e.workspace_id = ${hooked.workspaceId}) AS deliveries`.execute(db.db);
  if (rows[0]!.deliveries !== rows[0]!.installs * 10) throw new Error(`expected 10 deliveries per install: ${JSON.stringify(rows[0])}`);

  return {
    create_install_rps: without.requests.average,
    create_install_p50_ms: without.latency.p50,
    create_install_p99_ms: without.latency.p99,
    create_install_with_endpoints_rps: withEndpoints.requests.average,
    create_install_with_endpoints_p50_ms: withEndpoints.latency.p50,
    create_install_with_endpoints_p99_ms: withEndpoints.latency.p99,
    fan_out_throughput_ratio: median(pairRatios),
    fan_out_pair_ratios: pairRatios,
    fan_out_p50_ratio: withEndpoints.latency.p50 / without.latency.p50,
    fan_out_p99_ratio: withEndpoints.latency.p99 / without.latency.p99,
    failed_requests: without.non2xx + without.errors + withEndpoints.non2xx + withEndpoints.errors,
  };
}

/** (c) alone. */
export async function benchFanOut(options: WebhooksOptions = defaultWebhooksOptions()): Promise<FanOutFigures> {
  return withBench(options, async ({ db, env, server, servers, receiverBase }) => {
    // Its dispatcher would deliver what the load writes, on the same cores.
    await server.stop();
    return fanOutFigures(db, env, servers, receiverBase, options);
  });
}

export async function benchWebhooks(options: WebhooksOptions = defaultWebhooksOptions()): Promise<WebhooksFigures> {
  return withBench(options, async ({ db, env, server, servers, receiverBase, hangingBase, deliver }) => {
    // (a) Throughput, and its baseline: the receiver fed straight, signed, over kept-alive connections.
    const raw = await rawPosts(receiverBase, options.events * options.endpoints, options.endpoints * 4);
    const throughput = await deliver('throughput');

    // (b) The same beside 200 hanging endpoints of 20 other workspaces, with 100,000 deliveries waiting for them.
    for (let w = 0; w < HANGING_WORKSPACES; w++) {
      const other = await createUser(db.db, systemClock, `bench-hanging-${w}@bench.example`, 'pro');
      await createEndpoints(
        server.base,
        other.token,
        other.workspaceId,
        Array.from({ length: HANGING_PER_WORKSPACE }, (_, i) => `${hangingBase}/hang-${w}-${i}`),
        ['quota.reached'],
      );
    }
    await waitingDeliveries(db.db, WAITING_DELIVERIES / (HANGING_WORKSPACES * HANGING_PER_WORKSPACE));
    // The outage is under way before the healthy load starts: every hanging endpoint's first attempt has timed out
    // (WEBHOOK_TIMEOUT_MS, 10 s), so each is known to be failing and has one attempt at a time. In those first
    // seconds the endpoints still count at their full concurrency and the healthy workspace has its plain share.
    await hangingEndpointsFailing(db.db);
    const fairness = { ...(await deliver('fairness')), hanging_endpoints: HANGING_WORKSPACES * HANGING_PER_WORKSPACE, waiting_deliveries: WAITING_DELIVERIES };
    await server.stop();

    const fanOut = await fanOutFigures(db, env, servers, receiverBase, options);

    return {
      options,
      throughput,
      raw_per_second: raw,
      throughput_ratio: throughput.per_second / raw,
      fairness,
      fair_p99_ratio: fairness.p99_ms / throughput.p99_ms,
      fair_rss_ratio: fairness.server_peak_rss_mb / throughput.server_peak_rss_mb,
      ...fanOut,
    };
  });
}

/**
 * `count` signed POSTs of an event's body straight to the receiver, `concurrency` at a time over kept-alive
 * connections: deliveries a second without the service.
 */
async function rawPosts(base: string, count: number, concurrency: number): Promise<number> {
  const agent = new http.Agent({ keepAlive: true });
  const key = randomBytes(32);
  const body = JSON.stringify({ id: 'evt_raw', type: 'quota.reached', object: QUOTA, created_at: systemClock.now() });
  let next = 0;
  const post = (n: number) =>
    new Promise<void>((resolve, reject) => {
      const timestamp = systemClock.now();
      const signature = createHmac('sha256', key).update(`evt_raw_${n}.${timestamp}.${body}`).digest('base64');
      const request = http.request(`${base}/raw`, {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'webhook-id': `evt_raw_${n}`,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': `v1,${signature}`,
        },
      });
      request.on('response', (response) => response.resume().on('end', resolve));
      request.on('error', reject);
      request.end(body);
    });
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await post(next++);
    }),
  );
  const perSecond = Math.round((count * 1000) / (performance.now() - started));
  agent.destroy();
  return perSecond;
}

/** `perEndpoint` due deliveries for every endpoint of the hanging workspaces, written in bulk (one event each). */
async function waitingDeliveries(db: Parameters<typeof recordEvent>[0], perEndpoint: number): Promise<void> {
  const now = systemClock.now();
  await sql`
    WITH hanging AS (SELECT id, workspace_id FROM webhook_endpoints WHERE url LIKE '%/hang-%'),
    event AS (
      INSERT INTO events (id, type, workspace_id, object_type, object_id, object, created_at)
      SELECT 'evt_waiting_' || h.id || '_' || n, 'quota.reached', h.workspace_id, 'quota', 'kaas/clusters', ${JSON.stringify(QUOTA)}::jsonb, ${now}
      FROM hanging h, generate_series(1, ${perEndpoint}) n
      RETURNING id, workspace_id
    )
    INSERT INTO webhook_deliveries (id, endpoint_id, workspace_id, event_id, event_type, status, first_attempt_at, next_attempt_at, created_at, updated_at)
    SELECT 'whd_waiting_' || substr(e.id, 13), substring(e.id FROM '^evt_waiting_(whe_[^_]+)_'), e.workspace_id, e.id, 'quota.reached', 'pending',
      ${now}, ${now}, ${now}, ${now}
    FROM event e`.execute(db);
  // Statistics as autovacuum keeps them for a table whose backlog grew over time (written at once here, the
  // planner would take the live leases for a third of the table and scan it all on every claim).
  await sql`ANALYZE webhook_deliveries`.execute(db);
  await sql`SELECT pg_notify('webhook_deliveries_due', '')`.execute(db);
}

/** Waits until every hanging endpoint has had an attempt time out, within twice the timeout and a margin. */
async function hangingEndpointsFailing(db: Parameters<typeof recordEvent>[0]): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { rows } = await sql<{ fresh: number }>`
      SELECT count(*)::int AS fresh FROM webhook_endpoints WHERE url LIKE '%/hang-%' AND consecutive_failures = 0`.execute(db);
    if (rows[0]!.fresh === 0) return;
    if (Date.now() > deadline) throw new Error(`${rows[0]!.fresh} hanging endpoints had no attempt time out within 30 s`);
    await sleep(500);
  }
}

/** The figures against their targets, one line each. */
export function webhookLines(f: WebhooksFigures): string[] {
  const t = WEBHOOK_TARGETS;
  const mark = (ok: boolean) => (ok ? 'pass' : 'MISS');
  return [
    `throughput: ${f.throughput.per_second} deliveries/s, commit → received p50 ${f.throughput.p50_ms} ms, p99 ${f.throughput.p99_ms} ms ` +
      `(${f.options.events} events × ${f.options.endpoints} endpoints at ${f.options.rate}/s, offered ${f.throughput.offered_per_second} deliveries/s; ` +
      `${f.throughput.missing} missing, ${f.throughput.duplicated} duplicated); ` +
      `raw signed POSTs ${f.raw_per_second}/s → ${f.throughput_ratio.toFixed(2)}×; target ≥ ${t.deliveries_per_second}/s with p99 < ${t.latency_p99_ms} ms: ` +
      mark(f.throughput.per_second >= t.deliveries_per_second && f.throughput.p99_ms < t.latency_p99_ms),
    `fairness: healthy workspace p99 ${f.fairness.p99_ms} ms (p50 ${f.fairness.p50_ms} ms, ${f.fairness.per_second}/s of ${f.fairness.offered_per_second}/s offered, ` +
      `${f.fairness.missing} missing) while ` +
      `${f.fairness.hanging_endpoints} endpoints of other workspaces hang with ${f.fairness.waiting_deliveries} deliveries waiting; ` +
      `without them p99 ${f.throughput.p99_ms} ms → ${f.fair_p99_ratio.toFixed(2)}×; server peak RSS ${f.fairness.server_peak_rss_mb} MB against ` +
      `${f.throughput.server_peak_rss_mb} MB → ${f.fair_rss_ratio.toFixed(2)}×; target p99 < ${t.fair_latency_p99_ms} ms: ${mark(f.fairness.p99_ms < t.fair_latency_p99_ms)}`,
    fanOutLine(f),
  ];
}

function fanOutLine(f: FanOutFigures): string {
  const target = WEBHOOK_TARGETS.fan_out_throughput_ratio;
  return (
    `createInstall with 10 subscribed endpoints: ${f.create_install_with_endpoints_rps} req/s, p99 ${f.create_install_with_endpoints_p99_ms} ms; ` +
    `none ${f.create_install_rps} req/s, p99 ${f.create_install_p99_ms} ms → ${f.fan_out_throughput_ratio.toFixed(2)}× ` +
    `(median of pairs ${f.fan_out_pair_ratios.map((r) => r.toFixed(2)).join(' / ')}), p99 ${f.fan_out_p99_ratio.toFixed(2)}×; ` +
    `target ≥ ${target}×: ${f.fan_out_throughput_ratio >= target ? 'pass' : 'MISS'}`
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const options = defaultWebhooksOptions();
  if (options.phases === 'throughput') {
    console.log(await benchWebhookThroughput(options));
  } else if (options.phases === 'fan-out') {
    const figures = await benchFanOut(options);
    console.log(figures);
    console.log(fanOutLine(figures));
  } else {
    const figures = await benchWebhooks(options);
    console.log(figures);
    for (const line of webhookLines(figures)) console.log(line);
  }
}
