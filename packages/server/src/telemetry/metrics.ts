// The process's Prometheus metrics (prom-client), served by telemetry/metrics-server.ts on a port of their own.
// Until enableMetrics() runs, `metrics` is undefined and every recording site (`metrics?.…`) costs nothing.
// Labels hold only bounded values: operationIds, statuses, workflow kinds and steps, provider operations, SQLSTATE
// codes; never an id of a resource, a user or a workspace.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/** What the database holds that a scrape reports, read when a scrape asks (observeDatabase). */
export interface DatabaseReading {
  /** Unfinished workflows by kind and status. */
  workflows: { kind: string; status: string; count: number }[];
  /** Seconds since the oldest workflow that has not begun was started; undefined when none waits. */
  oldestPendingSeconds: number | undefined;
  /** Webhook endpoints whose circuit is open (cooling) now. */
  endpointsCooling: number;
}

/** A scrape waits this long (ms) for the database's gauges, then answers without them. */
export const DATABASE_READ_DEADLINE_MS = 2000;
/** A reading of the database serves the scrapes within this long (ms) of it. */
const DATABASE_READ_KEPT_MS = 1000;

// Buckets fitting this API: list requests answer in 2–20 ms under load, creations with their audit event and
// deliveries in 5–40 ms, a slow request (a provider look-up, a big page) in hundreds of ms; streams stay open for
// minutes and fall in the last buckets.
const REQUEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
// A step is a few queries (5–50 ms) or a provider call (a Hetzner action: seconds).
const STEP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const PROVIDER_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
// The event's created_at has whole seconds: the lag's resolution is a second.
const LAG_BUCKETS = [1, 2, 5, 10, 30, 60, 300, 1800, 3600, 7200, 21_600, 86_400, 259_200];
const WAIT_BUCKETS = [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** A request's token look-up by result, one counter child each (the list path counts one a request). */
function accessCacheLookups(registers: Registry[]) {
  const lookups = new Counter({
    name: 'platform_access_cache_lookups_total',
    help: "Token look-ups of requests by result: hit (kept from the token's earlier request), shared (joined a read under way), miss (read from the database). The hit ratio: (hit + shared) / all.",
    labelNames: ['result'] as const,
    registers,
  });
  return { accessCacheHits: lookups.labels('hit'), accessCacheShared: lookups.labels('shared'), accessCacheMisses: lookups.labels('miss') };
}

function instruments(registry: Registry) {
  const registers = [registry];
  const databaseReadFailures = new Counter({
    name: 'platform_metrics_database_read_failures_total',
    help: `Readings of the database's gauges that failed or took over ${DATABASE_READ_DEADLINE_MS} ms (those gauges are then left out of the scrape, or NaN).`,
    registers,
  });
  /**
   * Sets a gauge from the database's reading. Without one, a gauge by labels is left out of this scrape and one
   * without labels (which prom-client always writes) is NaN: never a stale or a made-up 0.
   */
  const fromDatabase = async (gauge: Gauge, set: (reading: DatabaseReading) => void, labelled = false) => {
    const reading = await databaseReading(databaseReadFailures);
    gauge.reset();
    if (reading) set(reading);
    else if (!labelled) gauge.set(Number.NaN);
  };
  return {
    databaseReadFailures,
    registry,
    requestDuration: new Histogram({
      name: 'platform_http_request_duration_seconds',
      help: 'API requests by operationId (`none`: no operation matched) and status: seconds from the first byte read to the last written.',
      labelNames: ['operation', 'status'] as const,
      buckets: REQUEST_BUCKETS,
      registers,
    }),
    requestsInFlight: new Gauge({ name: 'platform_http_requests_in_flight', help: 'API requests being served now, open streams included.', registers }),
    streamsOpen: new Gauge({
      name: 'platform_streams_open',
      help: 'Open event and install log streams of this process.',
      labelNames: ['stream'] as const,
      registers,
    }),
    workflows: new Gauge({
      name: 'platform_workflows',
      help: 'Unfinished workflows by kind and state (pending: not begun; running), read from the database at scrape time.',
      labelNames: ['kind', 'state'] as const,
      registers,
      collect() {
        return fromDatabase(
          this,
          (reading) => {
            for (const { kind, status, count } of reading.workflows) this.set({ kind, state: status }, count);
          },
          true,
        );
      },
    }),
    workflowOldestPending: new Gauge({
      name: 'platform_workflow_oldest_pending_age_seconds',
      help: 'Seconds since the oldest workflow that has not begun was started (0 when none waits), read from the database at scrape time.',
      registers,
      collect() {
        return fromDatabase(this, (reading) => this.set(reading.oldestPendingSeconds ?? 0));
      },
    }),
    workflowsFinished: new Counter({
      name: 'platform_workflows_finished_total',
      help: 'Workflows this process finished, by kind and outcome (succeeded, failed).',
      labelNames: ['kind', 'outcome'] as const,
      registers,
    }),
    stepDuration: new Histogram({
      name: 'platform_workflow_step_duration_seconds',
      help: 'Workflow steps run by this process, by kind, step and outcome (next, wait, done, failed, error: the step threw).',
      labelNames: ['kind', 'step', 'outcome'] as const,
      buckets: STEP_BUCKETS,
      registers,
    }),
    stepFailures: new Counter({
      name: 'platform_workflow_step_failures_total',
      help: 'Workflow steps that threw (retried or failed by their kind), by kind and step.',
      labelNames: ['kind', 'step'] as const,
      registers,
    }),
    webhookAttempts: new Counter({
      name: 'platform_webhook_attempts_total',
      help: 'Webhook delivery attempts by outcome: succeeded (2xx), http_error (another status), no_answer (timeout or connection failure), not_sent (refused before sending).',
      labelNames: ['outcome'] as const,
      registers,
    }),
    webhookLag: new Histogram({
      name: 'platform_webhook_delivery_lag_seconds',
      help: "Seconds from an event's commit to its delivery's successful attempt (whole seconds: the event's created_at).",
      buckets: LAG_BUCKETS,
      registers,
    }),
    endpointsCooling: new Gauge({
      name: 'platform_webhook_endpoints_cooling',
      help: 'Webhook endpoints whose circuit is open (their deliveries wait for a probe), read from the database at scrape time.',
      registers,
      collect() {
        return fromDatabase(this, (reading) => this.set(reading.endpointsCooling));
      },
    }),
    poolTotal: poolGauge('platform_db_pool_connections', 'Open connections of each database pool.', (p) => p.totalCount, registers),
    poolIdle: poolGauge('platform_db_pool_idle_connections', 'Idle connections of each database pool.', (p) => p.idleCount, registers),
    poolWaiting: poolGauge('platform_db_pool_waiting_clients', 'Callers waiting for a connection of each database pool.', (p) => p.waitingCount, registers),
    queryErrors: new Counter({
      name: 'platform_db_query_errors_total',
      help: 'Queries of the main pool that failed, by SQLSTATE (`connection`: the connection broke or none could be had).',
      labelNames: ['code'] as const,
      registers,
    }),
    ...accessCacheLookups(registers),
    providerCalls: new Histogram({
      name: 'platform_provider_call_duration_seconds',
      help: 'Calls to the compute provider and the cluster driver, by provider, operation and status (ok, or the provider error kind, or error).',
      labelNames: ['provider', 'operation', 'status'] as const,
      buckets: PROVIDER_BUCKETS,
      registers,
    }),
    providerRateLimitWait: new Histogram({
      name: 'platform_provider_rate_limit_wait_seconds',
      help: "Seconds a provider call waited for its rate limit's slot (the reservation's query included), by limit: compute-provider (PROVIDER_RATE_LIMIT, every process's), hetzner-token (a Hetzner token's hourly bucket).",
      labelNames: ['limit'] as const,
      buckets: WAIT_BUCKETS,
      registers,
    }),
  };
}

export type Metrics = ReturnType<typeof instruments>;

/** The instruments, once enableMetrics() ran; undefined before (nothing is recorded). */
export let metrics: Metrics | undefined;

/** Starts recording: the instruments and prom-client's process metrics (CPU, RSS, heap, event loop delay, GC). Idempotent. */
export function enableMetrics(): Metrics {
  if (metrics) return metrics;
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  metrics = instruments(registry);
  return metrics;
}

/** Pools whose connections each scrape reports, by name. */
const pools = new Map<string, PoolSizes>();

export interface PoolSizes {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
}

/** Reports `pool`'s sizes as `name` (the main pool, the webhook dispatcher's, the workflow locks'). */
export function observePool(name: string, pool: PoolSizes): void {
  pools.set(name, pool);
}

/** A gauge of every observed pool, read at scrape time. */
const poolGauge = (name: string, help: string, size: (pool: PoolSizes) => number, registers: Registry[]) =>
  new Gauge({
    name,
    help,
    labelNames: ['pool'] as const,
    registers,
    collect() {
      for (const [pool, sizes] of pools) this.set({ pool }, size(sizes));
    },
  });

let readDatabase: (() => Promise<DatabaseReading>) | undefined;
let reading: { at: number; value: Promise<DatabaseReading | undefined> } | undefined;

/** Where scrapes read the database's gauges (the composition root hands it the queries of the tables' owners). */
export function observeDatabase(read: () => Promise<DatabaseReading>): void {
  readDatabase = read;
  reading = undefined;
}

/** One reading for the scrapes of a second, with a deadline; undefined when it failed or took too long. */
function databaseReading(failures: Counter): Promise<DatabaseReading | undefined> {
  const read = readDatabase;
  if (!read) return Promise.resolve(undefined);
  const now = performance.now();
  if (reading && now - reading.at < DATABASE_READ_KEPT_MS) return reading.value;
  let timer: NodeJS.Timeout | undefined;
  const value = Promise.race([
    read(),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('deadline')), DATABASE_READ_DEADLINE_MS);
    }),
  ]).then(
    (result) => result,
    () => {
      failures.inc();
      return undefined;
    },
  );
  void value.finally(() => clearTimeout(timer));
  reading = { at: now, value };
  return value;
}

/** Waits for `taken` (a rate limit's slot), recording how long as the wait of `limit`. */
export async function timedWait<T>(limit: string, taken: Promise<T>): Promise<T> {
  const m = metrics;
  if (!m) return taken;
  const started = performance.now();
  try {
    return await taken;
  } finally {
    m.providerRateLimitWait.observe({ limit }, (performance.now() - started) / 1000);
  }
}
