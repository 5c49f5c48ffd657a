// The server behind a real PgBouncer in transaction mode, as production PostgreSQL is often reached: DATABASE_URL is
// the pooler, DATABASE_DIRECT_URL PostgreSQL itself. What keeps session state goes direct (migrations, the LISTEN
// connections, pg-boss, the workflow locks, the webhook dispatcher's claims); the pool goes through the pooler with
// named prepared statements off. This file starts its own pgbouncer (test/support/pgbouncer.ts; Debian's package,
// it fails naming the package when it is missing) and `pnpm start`'s process; the `pgbouncer` project of
// vitest.config.ts runs a set of the other server tests through one as well.
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { type Connection, openDatabase } from '../src/db/connect.ts';
import { applyMigrations } from '../src/db/migrate.ts';
import { type PgBouncer, startPgBouncer } from './support/pgbouncer.ts';
import { call, createTestDatabase, demoUserToken, eventually, type TestDatabase } from './support.ts';

let pgbouncer: PgBouncer;
let database: TestDatabase;
const databaseName = () => new URL(database.url).pathname.slice(1);

beforeAll(async () => {
  database = await createTestDatabase({ migrate: false });
  // Two server connections: the transactions of every client below take turns on them.
  pgbouncer = await startPgBouncer(database.url, { poolSize: 2 });
});

afterAll(async () => {
  await pgbouncer?.stop();
  await database?.drop();
});

describe('DATABASE_PREPARED_STATEMENTS', () => {
  /** Many clients' parameterised queries at once, of several texts, each checking its own answer. */
  async function concurrentQueries(connection: Connection): Promise<unknown[]> {
    const failures: unknown[] = [];
    await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        try {
          const { rows } = await sql<{ n: number }>`SELECT ${i}::int + ${i % 7}::int AS n, ${`text ${i % 5}`}::text AS t`.execute(connection.db);
          expect(rows[0]!.n).toBe(i + (i % 7));
          const other = await sql<{ n: number }>`SELECT ${i}::int * 2 AS n`.execute(connection.db);
          expect(other.rows[0]!.n).toBe(i * 2);
        } catch (error) {
          failures.push(error);
        }
      }),
    );
    return failures;
  }

  it('on, named prepared statements fail through PgBouncer in transaction mode: the statement is missing on the server connection a query lands on', async () => {
    const connection = openDatabase(pgbouncer.url(databaseName()), 10);
    try {
      const failures = await concurrentQueries(connection);
      expect(failures.length).toBeGreaterThan(0);
      for (const failure of failures)
        expect(String((failure as Error).message)).toMatch(/prepared statement "stmt_\d+_[0-9a-f]{40}" (does not exist|already exists)/);
    } finally {
      await connection.close();
    }
  });

  it('off, every query runs unnamed and answers right; DATABASE_DIRECT_URL set turns them off unless told otherwise', async () => {
    const config = loadConfig({ DATABASE_URL: pgbouncer.url(databaseName()), DATABASE_DIRECT_URL: database.url });
    expect(config.preparedStatements).toBe(false);
    expect(loadConfig({ DATABASE_URL: database.url }).preparedStatements).toBe(true);
    expect(loadConfig({ DATABASE_URL: database.url, DATABASE_DIRECT_URL: database.url, DATABASE_PREPARED_STATEMENTS: 'true' }).preparedStatements).toBe(true);
    expect(() => loadConfig({ DATABASE_DIRECT_URL: database.url })).toThrow(/DATABASE_DIRECT_URL is set without DATABASE_URL/);
    const connection = openDatabase(pgbouncer.url(databaseName()), 10, {}, { preparedStatements: config.preparedStatements });
    try {
      expect(await concurrentQueries(connection)).toEqual([]);
    } finally {
      await connection.close();
    }
  });
});

describe('migrations', () => {
  it('run on the direct URL: the migrator holds a session advisory lock across its transaction', async () => {
    const empty = await createTestDatabase({ migrate: false });
    // The pool's URL answers nothing: only the direct one can have migrated it.
    const connection = openDatabase('postgres://postgres@127.0.0.1:1/nowhere', 1, {}, { preparedStatements: false, direct: empty.url });
    try {
      await applyMigrations(connection);
      const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM kysely_migration`.execute(empty.db);
      expect(rows[0]!.n).toBeGreaterThan(0);
    } finally {
      await connection.close();
      await empty.drop();
    }
  });
});

/** A webhook receiver on a loopback port: the bodies it was sent. */
function receiver(): Promise<{ server: Server; url: string; bodies: { type: string; object_id: string }[] }> {
  const bodies: { type: string; object_id: string }[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    req.on('end', () => {
      bodies.push(JSON.parse(body));
      res.writeHead(204).end();
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, bodies })),
  );
}

describe('pnpm start with DATABASE_URL through PgBouncer and DATABASE_DIRECT_URL', () => {
  let server: ChildProcess | undefined;
  let base = '';
  let token = '';
  let output = '';
  let hooks: Awaited<ReturnType<typeof receiver>>;

  beforeAll(async () => {
    hooks = await receiver();
    server = spawn(process.execPath, [join(import.meta.dirname, '..', 'src', 'main.ts')], {
      env: {
        ...process.env,
        DATABASE_URL: pgbouncer.url(databaseName()),
        DATABASE_DIRECT_URL: database.url,
        PORT: '0',
        LOG_LEVEL: 'warn',
        SIM_CONTROL_PLANE_SECONDS: '1',
        WEBHOOK_ALLOW_HTTP_LOOPBACK: 'true',
        // Only an announcement heard on the LISTEN connection ends a stream within this test's time.
        STREAM_REAUTH_SECONDS: '3600',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    server.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    base = await new Promise<string>((resolve, reject) => {
      server!.stdout!.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        const listening = /listening on (http:\/\/\S+)/.exec(output);
        if (listening && /Demo user created/.test(output)) resolve(listening[1]!);
      });
      server!.once('exit', (code) => reject(new Error(`the server exited with ${code}:\n${output}\npgbouncer:\n${pgbouncer.log()}`)));
    });
    token = await demoUserToken(database.db);
  });

  afterAll(async () => {
    if (server && server.exitCode === null) {
      const exited = new Promise((resolve) => server!.once('exit', resolve));
      server.kill('SIGTERM');
      await exited;
    }
    await new Promise((resolve) => hooks?.server.close(resolve));
  });

  it('migrates on the direct URL, serves requests, runs a workflow to its end, sends its webhook and hears an access change', async () => {
    // Migrated on the direct connection (the migrator's session lock), and seeded through the pooler.
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM kysely_migration`.execute(database.db);
    expect(rows[0]!.n).toBeGreaterThan(0);
    expect((await call(base, 'GET', '/readyz')).status).toBe(200);
    expect((await call(base, 'GET', '/v1/clusters', { token })).status).toBe(200);

    const endpoint = await call(base, 'POST', '/v1/webhook_endpoints', { token, body: { url: hooks.url, event_types: ['cluster.running'] } });
    expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);
    // Requests at once, so their transactions take turns on the pooler's two server connections.
    const lists = await Promise.all(Array.from({ length: 20 }, () => call(base, 'GET', '/v1/clusters', { token })));
    expect(lists.map((reply) => reply.status)).toEqual(lists.map(() => 200));
    // The demo user's sample clusters leave room for one more.
    const created = await call(base, 'POST', '/v1/clusters', { token, body: { name: 'pooled', region_id: 'fsn1' } });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    // Its workflow, under its session lock on the direct URL, runs to RUNNING…
    await eventually(
      async () => (await call(base, 'GET', `/v1/clusters/${created.body.id}`, { token })).body.kaas?.status,
      (status) => status === 'RUNNING',
      `the cluster to run (server output: ${output})`,
      20_000,
    );
    // …and the dispatcher, claiming on its own direct connections, sends its cluster.running.
    await eventually(
      () => hooks.bodies.filter((body) => body.type === 'cluster.running').map((body) => body.object_id),
      (ids) => ids.includes(created.body.id),
      'the cluster.running webhook',
      20_000,
    );

    // A token revoked ends its open stream at once: the announcement is heard on the direct LISTEN connection.
    const pat = await call(base, 'POST', '/v1/user/tokens', { token, body: { name: 'stream' } });
    expect(pat.status).toBe(201);
    const abort = new AbortController();
    const stream = await fetch(`${base}/v1/events/stream`, { headers: { authorization: `Bearer ${pat.body.token}` }, signal: abort.signal });
    expect(stream.status).toBe(200);
    const text = stream.text();
    try {
      expect((await call(base, 'DELETE', `/v1/user/tokens/${pat.body.id}`, { token })).status).toBe(204);
      const ended = await Promise.race([text, new Promise<'open'>((resolve) => setTimeout(() => resolve('open'), 10_000))]);
      expect(ended).toMatch(/event: access_ended\ndata: \{"reason":"unauthenticated"/);
    } finally {
      abort.abort();
    }
  }, 60_000);
});
