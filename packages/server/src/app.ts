// Builds the Koa application from its parts (the named middlewares of http/, in the order a request meets
// them); main.ts serves it and tests call it in-process.
import Koa from 'koa';
import type { Kysely } from 'kysely';
import pino, { type Logger } from 'pino';
import { type Clock, systemClock } from './clock.ts';
import type { Config } from './config.ts';
import type { Database } from './db/schema.ts';
import { rowOnlyStarter, type WorkflowStarter } from './engine/engine.ts';
import { accessLog } from './http/access-log.ts';
import { createAuthenticator } from './http/auth.ts';
import { loadContract } from './http/contract.ts';
import { cors } from './http/cors.ts';
import { declaredResponses } from './http/declared-responses.ts';
import { dispatch } from './http/dispatch.ts';
import { errorBody } from './http/error-body.ts';
import { healthProbes } from './http/health.ts';
import { pages } from './http/pages.ts';
import { securityHeaders } from './http/security-headers.ts';
import { requestTelemetry } from './http/telemetry.ts';
import type { HandlerEnv } from './operations/types.ts';
import { createClusterDriver, createComputeProvider } from './providers/index.ts';
import { SimulatedCloud } from './providers/simulated.ts';
import type { ClusterDriver, ComputeProvider } from './providers/types.ts';
import type { AccessChanges } from './services/access-changes.ts';
import { apiRateLimiter } from './services/api-rate-limit.ts';
import { LogTails } from './services/log-tails.ts';
import { loggerOptions } from './services/redaction.ts';
import { secretBox } from './services/secrets.ts';
import { defaultResolve, type Resolver } from './services/ssrf.ts';
import { metrics } from './telemetry/metrics.ts';
import { tracing } from './telemetry/tracing.ts';

export interface AppOptions {
  db: Kysely<Database>;
  config: Config;
  clock?: Clock;
  logger?: Logger;
  /** The key that seals write-only secrets (see services/secrets.ts). */
  secretsKey: Buffer;
  /** Starts workflows; default: rows only, for a worker process elsewhere to pick up. */
  workflows?: WorkflowStarter;
  /** The cloud provider and cluster driver; default: the simulated cloud on this database. */
  provider?: ComputeProvider;
  driver?: ClusterDriver;
  /** Aborted when the process begins to shut down (long-lived streams end). */
  shutdown?: AbortSignal;
  /** Resolves host names for the SSRF checks; default DNS (tests inject one, the machines have no public DNS). */
  resolveHost?: Resolver;
  /**
   * Announcements of access changes (services/access-changes.ts), so open streams end at once (else on their timer),
   * and with which a token's reading is kept between its requests (services/access-cache.ts).
   */
  accessChanges?: AccessChanges;
  /** The contract to bind; default the bundled one (a test binds a fixture through the same binding). */
  definition?: Parameters<typeof loadContract>[0];
}

export async function createApp(options: AppOptions): Promise<Koa> {
  const { db, config } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? pino(loggerOptions(config.logLevel));
  const contract = await loadContract(options.definition);
  const authenticate = createAuthenticator(db, clock, config, options.accessChanges);
  const rateLimiter = apiRateLimiter(db, clock);
  const simulated = options.provider && options.driver ? undefined : new SimulatedCloud(db, clock);
  const driver = options.driver ?? (await createClusterDriver(config, { db, clock, simulated }));
  const env: HandlerEnv = {
    db,
    clock,
    config,
    logger,
    secrets: secretBox(options.secretsKey),
    workflows: options.workflows ?? rowOnlyStarter(clock),
    provider: options.provider ?? createComputeProvider(config, { db, logger, simulated: simulated as SimulatedCloud<Database> }),
    driver,
    shutdown: options.shutdown ?? new AbortController().signal,
    logTails: new LogTails({ db, driver, pollMs: config.logPollMs }),
    resolveHost: options.resolveHost ?? defaultResolve,
  };
  const app = new Koa();
  app.proxy = false;
  app.silent = true;
  // Outermost: the request's span and duration cover everything below, and its trace id reaches the access log.
  if (metrics || tracing) app.use(requestTelemetry());
  app.use(accessLog(logger));
  if (config.validateResponses) app.use(declaredResponses(contract));
  app.use(errorBody(logger));
  app.use(securityHeaders(config));
  app.use(cors(config.corsOrigins));
  // Liveness and readiness answer before authentication and the rate limit (a probe has no token).
  app.use(healthProbes(env));
  app.use(await pages());
  app.use(dispatch({ contract, authenticate, rateLimiter, env, config, accessChanges: options.accessChanges }));
  return app;
}
