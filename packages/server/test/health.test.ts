// The health probes: liveness without the database, readiness of the database and the workflow queue (503 in
// the contract's error body, within the deadline, when either fails), no token, no rate limit.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/db/connect.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { rowOnlyStarter, type WorkflowStarter } from '../src/engine/engine.ts';
import { scratchPostgres } from './global-setup.ts';
import { call, createTestDatabase, startTestServer, TestClock, type TestDatabase } from './support.ts';

const clock = new TestClock();
const databases: TestDatabase[] = [];
afterAll(async () => {
  for (const database of databases) await database.drop();
});

async function database(): Promise<TestDatabase> {
  const created = await createTestDatabase();
  databases.push(created);
  return created;
}

const notReady = (database: string, queue: string) => ({
  error: {
    code: 'service_unavailable',
    message: expect.stringMatching(/^Not ready: .+ did not answer\.$/),
    suggestion: expect.any(String),
    details: { checks: { database, queue } },
  },
});

describe('in a process without a workflow queue', () => {
  it('both answer 200 without a token, even under a tight rate limit for unauthenticated calls', async () => {
    const server = await startTestServer((await database()).db, clock, { RATE_LIMIT_DEVICE_PER_MINUTE: '1' });
    try {
      for (let i = 0; i < 3; i++) {
        const live = await call(server.baseUrl, 'GET', '/healthz');
        expect({ status: live.status, body: live.body, limited: live.headers.get('ratelimit') }).toEqual({
          status: 200,
          body: { status: 'ok' },
          limited: null,
        });
        const ready = await call(server.baseUrl, 'GET', '/readyz');
        expect({ status: ready.status, body: ready.body }).toEqual({ status: 200, body: { status: 'ok', checks: { database: 'ok', queue: 'not_used' } } });
      }
      // Only GET: another method is the router's 405.
      const post = await call(server.baseUrl, 'POST', '/healthz');
      expect(post.status).toBe(405);
      expect(post.body).toMatchObject({ error: { code: 'method_not_allowed' } });
    } finally {
      await server.close();
    }
  });
});

describe('readiness of the workflow queue', () => {
  const withQueue = (queueReady: () => Promise<void>): WorkflowStarter => ({ ...rowOnlyStarter(clock), queueReady });

  it('is 503 naming the queue when it fails, while liveness stays 200', async () => {
    const server = await startTestServer((await database()).db, clock, {}, { workflows: withQueue(() => Promise.reject(new Error('connection refused'))) });
    try {
      const ready = await call(server.baseUrl, 'GET', '/readyz');
      expect(ready.status).toBe(503);
      expect(ready.headers.get('retry-after')).toBe('5');
      expect(ready.body).toEqual(notReady('ok', 'unavailable'));
      expect(ready.body.error.message).toBe('Not ready: the workflow queue did not answer.');
      expect((await call(server.baseUrl, 'GET', '/healthz')).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('is 503 after the deadline (READY_TIMEOUT_MS) when the queue hangs', async () => {
    // A deadline of 300 ms, not the default 2 s: the test waits it out.
    const server = await startTestServer((await database()).db, clock, { READY_TIMEOUT_MS: '300' }, { workflows: withQueue(() => new Promise(() => {})) });
    try {
      const started = performance.now();
      const ready = await call(server.baseUrl, 'GET', '/readyz');
      expect(ready.status).toBe(503);
      // The configured deadline, waited out, and not the default one.
      const waited = performance.now() - started;
      expect(waited).toBeGreaterThanOrEqual(290);
      expect(waited).toBeLessThan(2000);
      expect(ready.body).toEqual(notReady('ok', 'unavailable'));
    } finally {
      await server.close();
    }
  });
});

describe('readiness of the database', () => {
  it('is 503 while the database is down and 200 again once it is back; liveness stays 200', async () => {
    const postgres = await scratchPostgres('health');
    const connection = openDatabase(postgres.url);
    try {
      await migrateToLatest(connection.db);
      const server = await startTestServer(connection.db, clock);
      try {
        expect((await call(server.baseUrl, 'GET', '/readyz')).status).toBe(200);
        await postgres.stop();
        const ready = await call(server.baseUrl, 'GET', '/readyz');
        expect(ready.status).toBe(503);
        expect(ready.body).toEqual(notReady('unavailable', 'not_used'));
        expect(ready.body.error.message).toBe('Not ready: the database did not answer.');
        expect((await call(server.baseUrl, 'GET', '/healthz')).body).toEqual({ status: 'ok' });
        await postgres.start();
        expect((await call(server.baseUrl, 'GET', '/readyz')).status).toBe(200);
      } finally {
        await server.close();
      }
    } finally {
      await connection.close();
      await postgres.remove();
    }
  }, 120_000);
});

describe('pnpm start', () => {
  it('is ready with its database and its workflow queue', async () => {
    const { url } = await database();
    const child = spawn(process.execPath, [join(import.meta.dirname, '..', 'src', 'main.ts')], {
      env: { ...process.env, DATABASE_URL: url, PORT: '0', LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', () => /listening on /.test(out) && resolve());
        child.once('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
      });
      const baseUrl = /listening on (http:\/\/\S+)/.exec(out)![1]!;
      const ready = await call(baseUrl, 'GET', '/readyz');
      expect({ status: ready.status, body: ready.body }).toEqual({ status: 200, body: { status: 'ok', checks: { database: 'ok', queue: 'ok' } } });
    } finally {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  });
});
