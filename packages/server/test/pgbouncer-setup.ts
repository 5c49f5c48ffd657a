// The `pgbouncer` project's global setup (vitest.config.ts), which vitest runs only when that project has files in the
// run: the test PostgreSQL and template of its own (global-setup.ts), and a PgBouncer in transaction mode before that
// PostgreSQL, given to the project's files as `pooledDatabaseUrl` (support.ts).
import type { TestProject } from 'vitest/node';
import setUpDatabase from './global-setup.ts';
import { startPgBouncer } from './support/pgbouncer.ts';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const tearDownDatabase = await setUpDatabase(project);
  try {
    const { databaseUrl } = project.getProvidedContext();
    const pgbouncer = await startPgBouncer(databaseUrl);
    project.provide('pooledDatabaseUrl', pgbouncer.url(new URL(databaseUrl).pathname.slice(1) || 'postgres'));
    return async () => {
      await pgbouncer.stop();
      await tearDownDatabase();
    };
  } catch (error) {
    await tearDownDatabase();
    throw error;
  }
}
