// What server tests share: a database of their own, migrated (a copy of the run's template), and the app served on a free port with
// response validation on (a response that breaks the contract fails the test), with the workflow runtime when
// they ask for it: useTestServer() at the top of a file.
import { randomBytes } from 'node:crypto';
import { PlatformApiError } from '@platform/client';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, expect, inject } from 'vitest';
import { type AppOptions, createApp } from '../src/app.ts';
import { type Clock, systemClock } from '../src/clock.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/connect.ts';
import type { Database, Plan } from '../src/db/schema.ts';
import { createUser, DEMO_EMAIL } from '../src/db/seed.ts';
import { createHttpServer } from '../src/http/server.ts';
import { createClusterDriver } from '../src/providers/index.ts';
import { createToken } from '../src/resources/tokens.ts';
import { findUserByEmail } from '../src/resources/users.ts';
import { createRuntime, type RuntimeOptions } from '../src/runtime.ts';
import { type AccessChanges, listenForAccessChanges } from '../src/services/access-changes.ts';
import type { Resolver } from '../src/services/ssrf.ts';
import { serverLogger } from './support/server-logs.ts';

export { serverLogger } from './support/server-logs.ts';

export interface TestDatabase {
  /** Its pool: through the pooler in the `pgbouncer` project, with prepared statements off (as DATABASE_URL is). */
  db: Kysely<Database>;
  /** PostgreSQL itself, for what keeps a session (as DATABASE_DIRECT_URL is): the runtime, the access listener. */
  url: string;
  /** The pooler's URL of it in the `pgbouncer` project; else `url`. */
  pooledUrl: string;
  drop(): Promise<void>;
}

/**
 * A fresh database on the test PostgreSQL: a copy of the run's migrated template (global-setup.ts), or empty with
 * `migrate: false`.
 */
export async function createTestDatabase(options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const adminUrl = inject('databaseUrl');
  const name = `platform_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const admin = openDatabase(adminUrl, 1);
  const { sql } = await import('kysely');
  const template = options.migrate === false ? '' : ` TEMPLATE ${inject('templateDatabase')}`;
  await sql.raw(`CREATE DATABASE ${name}${template}`).execute(admin.db);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const pooler = inject('pooledDatabaseUrl');
  const pooledUrl = pooler ? new URL(pooler) : url;
  pooledUrl.pathname = `/${name}`;
  const connection = openDatabase(pooledUrl.toString(), undefined, undefined, { preparedStatements: !pooler, direct: url.toString() });
  return {
    db: connection.db,
    url: url.toString(),
    pooledUrl: pooledUrl.toString(),
    drop: async () => {
      // Every audit event the file's requests wrote is scanned for credentials before the database goes.
      const leaks = await secretsInAuditLog(connection.db).catch((error: unknown) => [`the scan failed: ${String(error)}`]);
      await connection.close();
      await sql.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).execute(admin.db);
      await admin.close();
      if (leaks.length > 0) throw new Error(`The audit log holds what looks like a credential:\n${leaks.join('\n')}`);
    },
  };
}

/**
 * What must never be in an audit event: PATs, webhook secrets, JWTs, 32-character session tokens (a plain hex
 * string of that length is a request id, not a token), and the passwords and secrets the tests send.
 */
const SECRET_PATTERNS = [
  /svc_pat_/i,
  /whsec_/i,
  /eyJ[\w-]+\.[\w-]+\./,
  /(?<![A-Za-z0-9])(?![0-9a-f]{32}(?![A-Za-z0-9]))[A-Za-z0-9]{32}(?![A-Za-z0-9])/,
  /password|secret|hunter2|p4ssw0rd|hcloud-token|byom-token|hc-token/i,
];

/** The audit events of the database that hold something credential-like, one line each (none: empty). */
export async function secretsInAuditLog(db: Kysely<Database>): Promise<string[]> {
  const { sql } = await import('kysely');
  const { rows: table } = await sql<{ exists: boolean }>`SELECT to_regclass('audit_events') IS NOT NULL AS exists`.execute(db);
  if (!table[0]?.exists) return [];
  const rows = await db.selectFrom('audit_events').selectAll().execute();
  return rows.flatMap(({ operation: _named, ...row }) => {
    // `operation` is an operationId of the contract or a workflow transition, never request data (and one of them
    // is rotateWebhookEndpointSecret).
    const values = Object.values(row)
      .flat()
      .filter((value): value is string => typeof value === 'string');
    return values.some((value) => SECRET_PATTERNS.some((pattern) => pattern.test(value))) ? [JSON.stringify(row)] : [];
  });
}

/**
 * Holds the simulated cloud's control planes: with their table locked, a cluster created meanwhile stays
 * PROVISIONING (its workflow waits to make the control plane) until `release()`, however slowly the test runs.
 */
export async function holdControlPlanes(db: Kysely<Database>, cloud: { offerings(): Promise<unknown> }): Promise<() => Promise<void>> {
  const { sql } = await import('kysely');
  // The simulated cloud makes its tables on its first call.
  await cloud.offerings();
  const held = await db.startTransaction().execute();
  await sql`LOCK TABLE simulated_cloud.clusters IN EXCLUSIVE MODE`.execute(held);
  return () => held.rollback().execute();
}

/** Reads until `check` holds (every 20 ms); after `ms` fails, naming `what` and the last value read. */
export async function eventually<T>(read: () => Promise<T> | T, check: (value: T) => boolean, what: string, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (check(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * The workers have settled: every workflow is finished or waits for a moment the clock has not reached. `ms`: how
 * long (real time) the workers may take to get there.
 */
export async function workersSettled(db: Kysely<Database>, clock: Clock, ms = 15_000): Promise<void> {
  const { sql } = await import('kysely');
  await eventually(
    async () =>
      (
        await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM workflows
        WHERE status IN ('pending', 'running') AND (run_after IS NULL OR run_after <= ${clock.now()})`.execute(db)
      ).rows[0]!.n,
    (n) => n === 0,
    'the workers to settle',
    ms,
  );
}

/** A clock the test moves by hand. */
export class TestClock implements Clock {
  private seconds: number;
  constructor(seconds = 1_800_000_000) {
    this.seconds = seconds;
  }
  now(): number {
    return this.seconds;
  }
  nowMs(): number {
    return this.seconds * 1000;
  }
  advance(seconds: number): void {
    this.seconds += seconds;
  }
}

export interface TestServer {
  baseUrl: string;
  close(): Promise<void>;
}

export async function startTestServer(
  db: Kysely<Database>,
  clock: Clock,
  env: Record<string, string> = {},
  parts: Partial<AppOptions> = {},
): Promise<TestServer> {
  const config = { ...loadConfig({ LOG_LEVEL: 'silent', ...env }), validateResponses: true };
  const app = await createApp({ db, config, clock, logger: serverLogger(), secretsKey: randomBytes(32), ...parts });
  // The server main.ts runs (its limits, its answers to what Node's parser refuses).
  const { server, listen } = createHttpServer(app.callback(), config);
  const { port } = await listen(0, '127.0.0.1');
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface TestUser {
  userId: string;
  workspaceId: string;
  token: string;
}

export function newUser(db: Kysely<Database>, clock: Clock, plan: Plan = 'free'): Promise<TestUser> {
  return createUser(db, clock, `user-${Math.random().toString(36).slice(2, 10)}@test.example`, plan);
}

/**
 * A new token of the demo user that a server's first start seeded (a piped start does not print one, as
 * `pnpm admin demo-token` does not print the one it replaces).
 */
export async function demoUserToken(db: Kysely<Database>): Promise<string> {
  const demo = await findUserByEmail(db, DEMO_EMAIL);
  if (!demo) throw new Error(`no demo user (${DEMO_EMAIL}): the server's first start on an empty database seeds it`);
  return (await createToken(db, systemClock, { userId: demo.id, kind: 'pat', name: 'test', expiresAt: null })).secret;
}

export interface Reply {
  status: number;
  headers: Headers;
  body: any;
}

/** A plain HTTP call, for tests about the wire (statuses, headers, races) rather than the client. */
export async function call(
  baseUrl: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] ??= 'application/json';
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers,
    ...(options.body === undefined ? {} : { body: typeof options.body === 'string' ? options.body : JSON.stringify(options.body) }),
  });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, headers: response.headers, body };
}

const ready = <T>(value: T | undefined, what: string): T => {
  if (value === undefined) throw new Error(`the test ${what} is read before beforeAll ran`);
  return value;
};

export interface TestDatabaseContext {
  readonly database: TestDatabase;
  readonly db: Kysely<Database>;
}

/**
 * A database of the file's own, migrated, made before the file's tests and dropped after them (for tests below the
 * HTTP layer; useTestServer serves the app on one). The fields are read in tests and hooks.
 */
export function useTestDatabase(): TestDatabaseContext {
  let database: TestDatabase | undefined;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });
  return {
    get database() {
      return ready(database, 'database');
    },
    get db() {
      return ready(database, 'database').db;
    },
  };
}

export interface TestContext<C extends Clock = TestClock> extends TestDatabaseContext {
  readonly clock: C;
  /** The key that seals secrets, shared by the app and the workflow runtime. */
  readonly secretsKey: Buffer;
  readonly server: TestServer;
  readonly baseUrl: string;
  /** The workflow runtime (only with the `runtime` option). */
  readonly runtime: Runtime;
}

export type Runtime = ReturnType<typeof createRuntime>;

type TestAppParts = Partial<Omit<AppOptions, 'db' | 'config' | 'clock' | 'secretsKey' | 'resolveHost'>>;

export interface TestServerOptions<C extends Clock = TestClock> {
  /** Default a new TestClock; systemClock where other processes (on real time) talk to the server. */
  clock?: C;
  /**
   * Configuration variables of the server and of its workflow runtime, one configuration as in main.ts. A function
   * is read in beforeAll, after the file's earlier hooks (which may start a fake the variables point at).
   */
  env?: Record<string, string> | (() => Record<string, string>);
  /** Replaces parts of the app (a provider, a driver, a logger, a workflow starter); a function is given the database. */
  parts?: TestAppParts | ((db: Kysely<Database>) => TestAppParts);
  /** Resolves host names for the SSRF checks of the app and of webhook deliveries; default DNS. */
  resolveHost?: Resolver;
  /** Runs the workflow engine on the file's database, and the app starts its workflows there. */
  runtime?: Pick<RuntimeOptions, 'simulation' | 'tickMs' | 'orphanAfterSeconds' | 'eventPruneEveryMs'> & {
    /** Also runs the webhook dispatcher (deliveries are sent). */
    webhooks?: boolean;
    /** Also runs the retention of events and audit events. */
    retention?: boolean;
  };
}

/**
 * Workflow tests' simulated cloud, on the test clock: workers enough to run side by side, no provider rate limit in
 * the way, and steps that last (test-clock) seconds, so a test can watch each state before moving the clock on.
 */
export const SIMULATED_WORKFLOWS_ENV = {
  WORKER_CONCURRENCY: '8',
  PROVIDER_RATE_LIMIT: '1000',
  SIM_BOOT_SECONDS: '20',
  SIM_CONTROL_PLANE_SECONDS: '30',
  SIM_RELEASE_SECONDS: '8',
  SIM_SNAPSHOT_SECONDS: '15',
};

/**
 * The preamble every server test file shares: a database of the file's own (useTestDatabase), and the app served on
 * a free port with response validation on, started before the file's tests and removed after them; with `runtime`,
 * the workflow runtime main.ts runs as well, before the server. The fields are read in tests and hooks (they exist
 * once beforeAll ran), except `clock` and `secretsKey`. Hooks the file registers before this call run before its
 * beforeAll and after its afterAll; those registered after it, the other way round.
 */
export function useTestServer<C extends Clock = TestClock>(options: TestServerOptions<C> = {}): TestContext<C> {
  const clock = options.clock ?? (new TestClock() as Clock as C);
  const secretsKey = randomBytes(32);
  const data = useTestDatabase();
  let server: TestServer | undefined;
  let runtime: Runtime | undefined;
  let accessChanges: AccessChanges | undefined;
  beforeAll(async () => {
    const { db, url } = data.database;
    const env = typeof options.env === 'function' ? options.env() : (options.env ?? {});
    const own = typeof options.parts === 'function' ? options.parts(db) : options.parts;
    let parts: Partial<AppOptions> = { secretsKey, ...(options.resolveHost ? { resolveHost: options.resolveHost } : {}), ...own };
    if (options.runtime) {
      const { webhooks, retention, ...tuning } = options.runtime;
      const config = loadConfig(env);
      runtime = createRuntime({
        db,
        connectionString: url,
        clock,
        logger: own?.logger ?? serverLogger(),
        config,
        // As main.ts builds it, but the simulated cloud is the runtime's own (with the test's simulation options).
        driver: config.clusterDriver.kind === 'simulated' ? undefined : await createClusterDriver(config, { db, clock }),
        secretsKey,
        resolveHost: options.resolveHost,
        ...tuning,
      });
      await runtime.engine.run({ work: true });
      if (retention) runtime.retention.start();
      if (webhooks) await runtime.webhooks?.run();
      parts = { workflows: runtime.engine, provider: runtime.provider, driver: runtime.driver, ...parts };
    }
    // As main.ts does: open streams hear of access changes at once.
    accessChanges = await listenForAccessChanges(url, serverLogger());
    server = await startTestServer(db, clock, env, { accessChanges, ...parts });
  });
  // Runs before the database's afterAll (registered first).
  afterAll(async () => {
    runtime?.retention.stop();
    await server?.close();
    await runtime?.webhooks?.stop();
    await runtime?.engine.stop();
    await accessChanges?.close();
  });
  return {
    clock,
    secretsKey,
    get database() {
      return data.database;
    },
    get db() {
      return data.db;
    },
    get server() {
      return ready(server, 'server');
    },
    get baseUrl() {
      return ready(server, 'server').baseUrl;
    },
    get runtime() {
      if (!options.runtime) throw new Error('the test runtime is read, but useTestServer was not asked for one');
      return ready(runtime, 'runtime');
    },
  };
}

/** The PlatformApiError a client call is refused with (the test fails if it succeeds or throws anything else). */
export async function apiError(promise: Promise<unknown>): Promise<PlatformApiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PlatformApiError);
  return error as PlatformApiError;
}
