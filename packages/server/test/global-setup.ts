// Tests need a real PostgreSQL: DATABASE_URL when set (CI sets the machine's), otherwise an embedded one
// started here for the whole run. Each test file then makes its own database (see support.ts).
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../src/db/connect.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
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

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // Nothing the tests start may touch the data folder of a `pnpm start` (DATA_DIR, default .data): the servers
  // and admin commands they spawn inherit a folder of the run's own.
  const scratch = await mkdtemp(join(tmpdir(), 'platform-test-data-'));
  process.env.DATA_DIR = scratch;
  const removeScratch = () => rm(scratch, { recursive: true, force: true });
  if (process.env.DATABASE_URL) {
    project.provide('databaseUrl', process.env.DATABASE_URL);
    return removeScratch;
  }
  const dataDir = await mkdtemp(join(tmpdir(), 'platform-test-pg-'));
  // As root, PostgreSQL runs as its own user, which must be able to reach the data directory.
  await chmod(dataDir, 0o755);
  const embedded = await startEmbeddedPostgres(dataDir, await freePort());
  project.provide('databaseUrl', embedded.url);
  return async () => {
    await embedded.stop();
    await rm(dataDir, { recursive: true, force: true });
    await removeScratch();
  };
}
