// Assembles what a process needs to start and run workflows: the simulated cloud behind the shared provider
// rate limit, and the engine with every workflow kind. Used by main.ts and by tests.
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Clock } from './clock.ts';
import type { Config } from './config.ts';
import { openDatabase } from './db/connect.ts';
import { poolOf } from './db/raw-query.ts';
import type { Database } from './db/schema.ts';
import { WorkflowEngine } from './engine/engine.ts';
import { eventRetention } from './jobs/event-retention.ts';
import { leftoversReconciler } from './jobs/leftovers.ts';
import { tokenExpiryNotices } from './jobs/token-expiry.ts';
import { WebhookDispatcher } from './jobs/webhook-dispatcher.ts';
import { createComputeProvider } from './providers/index.ts';
import { type ProviderRateLimit, providerRateLimit } from './providers/rate-limit.ts';
import { rateLimited } from './providers/rate-limited.ts';
import { SimulatedCloud, type SimulationOptions } from './providers/simulated.ts';
import type { ClusterDriver } from './providers/types.ts';
import { recordWorkflowTransition } from './resources/audit-events.ts';
import { DELIVERY_SESSION } from './resources/webhook-deliveries.ts';
import { countCoolingEndpoints } from './resources/webhook-endpoints.ts';
import { secretBox } from './services/secrets.ts';
import { defaultResolve, type Resolver } from './services/ssrf.ts';
import { observeDatabase, observePool } from './telemetry/metrics.ts';
import { observeCalls } from './telemetry/provider-calls.ts';
import { workflowDefinitions } from './workflows/index.ts';

export interface RuntimeOptions {
  db: Kysely<Database>;
  /**
   * PostgreSQL for the connections that keep session state, never a pooler in transaction mode (DATABASE_DIRECT_URL):
   * the workflow locks (session advisory locks) and pg-boss (its LISTEN), the webhook dispatcher's LISTEN and its
   * claims (session settings, DELIVERY_SESSION).
   */
  connectionString: string;
  clock: Clock;
  logger: Logger;
  config: Pick<
    Config,
    | 'workerConcurrency'
    | 'providerRateLimit'
    | 'compute'
    | 'clusterDriver'
    | 'simulation'
    | 'orphanAfterSeconds'
    | 'deadlines'
    | 'workflowStepDelayMs'
    | 'eventRetentionDays'
    | 'auditRetentionDays'
    | 'webhooks'
  >;
  /** Overrides of the simulation (tests: zero latency, no failures, fast polling). */
  simulation?: Partial<SimulationOptions>;
  tickMs?: number;
  orphanAfterSeconds?: number;
  /** The cluster driver (providers/index.ts builds the configured one); default: the simulated cloud. */
  driver?: ClusterDriver;
  /** The provider rate limit; default: the one shared through PostgreSQL at `config.providerRateLimit`. */
  rateLimit?: ProviderRateLimit;
  /** Opens BYOM cloud credentials for the workflows and webhook endpoints' signing secrets; without it no webhook is sent. */
  secretsKey?: Buffer;
  /** Resolves webhook endpoints' host names for the SSRF check before each delivery; default DNS. */
  resolveHost?: Resolver;
  /** How often (real ms) a worker deletes expired events and audit events and looks for tokens about to expire; default hourly. */
  eventPruneEveryMs?: number;
}

export function createRuntime(options: RuntimeOptions) {
  const { config } = options;
  const cloud = new SimulatedCloud(options.db, options.clock, {
    bootSeconds: config.simulation.bootSeconds,
    controlPlaneSeconds: config.simulation.controlPlaneSeconds,
    releaseSeconds: config.simulation.releaseSeconds,
    snapshotSeconds: config.simulation.snapshotSeconds,
    failureRate: config.simulation.failureRate,
    latencyMs: config.simulation.latencyMs,
    serversElsewhere: config.compute.provider !== 'simulated',
    ...options.simulation,
  });
  // Calls are measured and traced by provider (telemetry/provider-calls.ts), the compute provider's inside its rate
  // limit, whose wait is measured apart.
  const driver = observeCalls(options.driver ?? cloud, config.clusterDriver.kind);
  const provider = rateLimited(
    observeCalls(createComputeProvider(config, { db: options.db, logger: options.logger, simulated: cloud }), config.compute.provider),
    options.rateLimit ?? providerRateLimit(options.db, config.providerRateLimit),
  );
  const engine = new WorkflowEngine({
    db: options.db,
    connectionString: options.connectionString,
    clock: options.clock,
    logger: options.logger,
    provider,
    driver,
    secrets: options.secretsKey ? secretBox(options.secretsKey) : undefined,
    definitions: workflowDefinitions(config.deadlines),
    concurrency: config.workerConcurrency,
    tickMs: options.tickMs ?? 250,
    orphanAfterSeconds: options.orphanAfterSeconds ?? config.orphanAfterSeconds,
    stepDelayMs: config.workflowStepDelayMs,
    onTransition: recordWorkflowTransition,
  });
  const retention = eventRetention({
    db: options.db,
    clock: options.clock,
    logger: options.logger,
    retentionDays: config.eventRetentionDays,
    auditRetentionDays: config.auditRetentionDays,
    everyMs: options.eventPruneEveryMs ?? 3_600_000,
  });
  // Two: one claim and one settling at a time. No connection is made before the first claim (an API process makes none).
  const leases = options.secretsKey ? openDatabase(options.connectionString, 2, DELIVERY_SESSION) : undefined;
  if (leases) observePool('webhook_dispatch', poolOf(leases.db));
  const webhooks =
    leases && options.secretsKey
      ? new WebhookDispatcher({
          db: options.db,
          leases,
          connectionString: options.connectionString,
          clock: options.clock,
          logger: options.logger,
          secrets: secretBox(options.secretsKey),
          resolve: options.resolveHost ?? defaultResolve,
          config: config.webhooks,
          tickMs: options.tickMs ?? 250,
        })
      : undefined;
  const tokenExpiry = tokenExpiryNotices({ db: options.db, clock: options.clock, logger: options.logger, everyMs: options.eventPruneEveryMs ?? 3_600_000 });
  const leftovers = leftoversReconciler({
    db: options.db,
    clock: options.clock,
    logger: options.logger,
    provider,
    secrets: options.secretsKey ? secretBox(options.secretsKey) : undefined,
    graceSeconds: config.compute.leftovers.graceSeconds,
    dryRun: config.compute.leftovers.dryRun,
    everyMs: config.compute.leftovers.everySeconds * 1000,
  });
  return { cloud, provider, driver, engine, retention, webhooks, tokenExpiry, leftovers };
}

/**
 * What a metrics scrape reads of the database (telemetry/metrics.ts, at scrape time with a deadline): the
 * workflows' backlog and the cooling webhook endpoints, by the queries of their tables' owners; and the main pool.
 */
export function observeDatabaseOf(db: Kysely<Database>, engine: WorkflowEngine): void {
  observePool('main', poolOf(db));
  observeDatabase(async () => {
    const [backlog, endpointsCooling] = await Promise.all([engine.backlog(), countCoolingEndpoints(db)]);
    return { ...backlog, endpointsCooling };
  });
}
