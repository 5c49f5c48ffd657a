// Tests need a real PostgreSQL: DATABASE_URL when set (CI sets the machine's), otherwise an embedded one
// started here for the whole run. The schema is migrated once, into a template database of the run's own (several
// runs may share one server); each test file then copies it into a database of its own (see support.ts). The
// `pgbouncer` project (vitest.config.ts) runs its files with a PgBouncer in transaction mode before that PostgreSQL
// (pgbouncer-setup.ts): their databases' pools go through it, what keeps a session goes direct, as in production with
// DATABASE_DIRECT_URL.
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import type { TestProject } from 'vitest/node';
import { openDatabase, startEmbeddedPostgres } from '../src/db/connect.ts';
import { migrateToLatest } from '../src/db/migrate.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    /** The run's migrated database, which createTestDatabase copies (CREATE DATABASE … TEMPLATE). */
    templateDatabase: string;
    /** In the `pgbouncer` project, `databaseUrl` through its PgBouncer (pgbouncer-setup.ts); else empty. */
    pooledDatabaseUrl: string;
  }
}

/** A port nothing listens on now (tests that start servers of their own use it too). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** A PostgreSQL of a test's own (embedded, in a temporary folder), which the test may stop and start again. */
export async function scratchPostgres(name: string) {
  const dataDir = await mkdtemp(join(tmpdir(), `platform-${name}-pg-`));
  // As root, PostgreSQL runs as its own user, which must be able to reach the data directory.
  await chmod(dataDir, 0o755);
  const port = await freePort();
  let server = await startEmbeddedPostgres(dataDir, port);
  return {
    url: server.url,
    stop: () => server.stop(),
    async start() {
      server = await startEmbeddedPostgres(dataDir, port);
    },
    async remove() {
      await server.stop().catch(() => {});
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Migrates a new database named for this run (process id and a random part, so runs at once on one server each
 * have their own) and closes its connections: PostgreSQL copies a template only while nobody is connected to it.
 */
async function createTemplate(adminUrl: string): Promise<{ name: string; drop(): Promise<void> }> {
  const name = `platform_template_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const admin = openDatabase(adminUrl, 1);
  await sql.raw(`CREATE DATABASE ${name}`).execute(admin.db);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const template = openDatabase(url.toString(), 1);
  try {
    await migrateToLatest(template.db);
  } finally {
    await template.close();
  }
  return {
    name,
    drop: async () => {
      await sql.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).execute(admin.db);
      await admin.close();
    },
  };
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // Nothing the tests start may touch the data folder of a `pnpm start` (DATA_DIR, default .data): the servers
  // and admin commands they spawn inherit a folder of the run's own.
  const scratch = await mkdtemp(join(tmpdir(), 'platform-test-data-'));
  process.env.DATA_DIR = scratch;
  const removeScratch = () => rm(scratch, { recursive: true, force: true });
  if (process.env.DATABASE_URL) {
    const template = await createTemplate(process.env.DATABASE_URL);
    project.provide('databaseUrl', process.env.DATABASE_URL);
    project.provide('templateDatabase', template.name);
    project.provide('pooledDatabaseUrl', '');
    return async () => {
      await template.drop();
      await removeScratch();
    };
  }
  const dataDir = await mkdtemp(join(tmpdir(), 'platform-test-pg-'));
  // As root, PostgreSQL runs as its own user, which must be able to reach the data directory.
  await chmod(dataDir, 0o755);
  const embedded = await startEmbeddedPostgres(dataDir, await freePort());
  const template = await createTemplate(embedded.url);
  project.provide('databaseUrl', embedded.url);
  project.provide('templateDatabase', template.name);
  project.provide('pooledDatabaseUrl', '');
  return async () => {
    await template.drop();
    await embedded.stop();
    await rm(dataDir, { recursive: true, force: true });
    await removeScratch();
  };
}
