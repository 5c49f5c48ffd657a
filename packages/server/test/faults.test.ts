// Faults: the real server process (main.ts, as `pnpm start` runs it) stopped with SIGTERM under load and killed
// with SIGKILL mid-request, and PostgreSQL taken away under load. What must hold: in-flight requests complete
// and the process exits 0; a client retrying createInstall with its idempotency key after a crash ends with
// exactly one install; without its database the API answers 503 service_unavailable with Retry-After, recovers
// by itself when the database is back, and every write it acknowledged with a 2xx is there afterwards.
import { type ChildProcess, spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { systemClock } from '../src/clock.ts';
import { openDatabase } from '../src/db/connect.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { createUser } from '../src/db/seed.ts';
import { freePort, scratchPostgres } from './global-setup.ts';
import { call, createTestDatabase, startTestServer, type TestDatabase } from './support.ts';

const main = join(import.meta.dirname, '..', 'src', 'main.ts');
const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const step of cleanup.reverse()) await step().catch(() => {});
});

interface Started {
  child: ChildProcess;
  baseUrl: string;
  token: string;
  exited: Promise<number | null>;
}

/** `node main.ts` on the database; resolves once it listens (its first start seeds the demo user). */
async function startServer(database: TestDatabase, port: number, env: Record<string, string> = {}, seeds = false): Promise<Started> {
  const child = spawn(process.execPath, [main], {
    env: { ...process.env, DATABASE_URL: database.url, PORT: String(port), LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  cleanup.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', () => (seeds ? /curl .+\n/ : /listening on http/).test(out) && resolve());
    void exited.then((code) => reject(new Error(`server exited ${code}: ${out}`)));
  });
  const token = /Token: (svc_pat_\w+)/.exec(out)?.[1] ?? '';
  return { child, baseUrl: `http://127.0.0.1:${port}`, token, exited };
}

describe('the server process', () => {
  let database: TestDatabase;
  let demoToken: string;

  it('SIGTERM with requests in flight: each completes with its 2xx, the writes are there, and the process exits 0', async () => {
    database = await createTestDatabase();
    cleanup.push(() => database.drop());
    const server = await startServer(database, await freePort(), { ROLE: 'api' }, true);
    demoToken = server.token;
    expect((await call(server.baseUrl, 'GET', '/v1/workspaces', { token: demoToken })).status).toBe(200);
    // Requests whose headers the server has read and whose bodies are still arriving: in flight for sure.
    const uploads = Array.from({ length: 10 }, (_, i) => {
      const body = JSON.stringify({ name: `sigterm-${i}` });
      const half = Math.floor(body.length / 2);
      const request = httpRequest(`${server.baseUrl}/v1/workspaces`, {
        method: 'POST',
        headers: { authorization: `Bearer ${demoToken}`, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
      });
      const reply = new Promise<{ status: number; body: string }>((resolve, reject) => {
        request.once('response', (response) => {
          let text = '';
          response.on('data', (chunk: Buffer) => (text += chunk.toString()));
          response.once('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
        });
        request.once('error', reject);
      });
      request.write(body.slice(0, half));
      return { request, rest: body.slice(half), reply };
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    server.child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 200));
    // A newcomer is answered 503 (not reset) while the requests in flight finish.
    const late = await call(server.baseUrl, 'GET', '/v1/workspaces', { token: demoToken });
    expect(late.status).toBe(503);
    expect(late.body.error.code).toBe('service_unavailable');
    expect(late.headers.get('retry-after')).toBe('1');
    expect(late.headers.get('connection')).toBe('close');
    for (const upload of uploads) upload.request.end(upload.rest);
    const replies = await Promise.all(uploads.map((u) => u.reply));
    expect(replies.map((r) => r.status)).toEqual(uploads.map(() => 201));
    expect(await server.exited).toBe(0);
    const names = await database.db.selectFrom('workspaces').select('name').where('name', 'like', 'sigterm-%').execute();
    expect(names).toHaveLength(10);
  });

  it('SIGKILL mid-request, then the client retries createInstall with its idempotency key: exactly one install per key', async () => {
    const port = await freePort();
    let server = await startServer(database, port, { ROLE: 'api' });
    // The demo user's token is printed on the first start only (the previous test's); the database is seeded now.
    expect(server.token).toBe('');
    const products = await call(server.baseUrl, 'GET', '/v1/products', { token: demoToken });
    const body = { product_id: products.body.data[0].id, region_id: 'fsn1' };
    const keys = Array.from({ length: 8 }, (_, i) => `crash-${i}-${Date.now()}`);
    const first = keys.map((key) =>
      call(server.baseUrl, 'POST', '/v1/installs', { token: demoToken, body, headers: { 'idempotency-key': key } }).catch(() => undefined),
    );
    // Kill while the requests are on the wire or in the handler; some may have committed, some not.
    await new Promise((resolve) => setTimeout(resolve, 15));
    server.child.kill('SIGKILL');
    await server.exited;
    await Promise.all(first);

    server = await startServer(database, port, { ROLE: 'api' });
    for (const key of keys) {
      // The client's retry: the same key and body until it gets an answer that is not "still running".
      let reply = await call(server.baseUrl, 'POST', '/v1/installs', { token: demoToken, body, headers: { 'idempotency-key': key } });
      for (let attempt = 0; reply.status === 409 && attempt < 20; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        reply = await call(server.baseUrl, 'POST', '/v1/installs', { token: demoToken, body, headers: { 'idempotency-key': key } });
      }
      expect(reply.status, key).toBe(202);
      const again = await call(server.baseUrl, 'POST', '/v1/installs', { token: demoToken, body, headers: { 'idempotency-key': key } });
      expect(again.status).toBe(202);
      expect(again.body.id).toBe(reply.body.id);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
    }
    const { n } = await database.db
      .selectFrom('installs')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(n)).toBe(keys.length);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  });
});

describe('PostgreSQL taken away under load', () => {
  it('answers 503 service_unavailable with Retry-After, recovers without a restart, and keeps every acknowledged write', async () => {
    const postgres = await scratchPostgres('faults');
    cleanup.push(() => postgres.remove());
    const connection = openDatabase(postgres.url);
    cleanup.push(() => connection.close());
    await migrateToLatest(connection.db);
    const user = await createUser(connection.db, systemClock, 'faults@test.example', 'pro');
    const server = await startTestServer(connection.db, systemClock, { RATE_LIMIT_PER_MINUTE: '0' });
    cleanup.push(() => server.close());

    const acknowledged: string[] = [];
    const statuses = new Map<number, number>();
    const unavailable: { retryAfter: string | null; code: string }[] = [];
    let phase: 'before' | 'down' | 'after' = 'before';
    let okAfter = 0;
    let stop = false;
    const worker = async (w: number) => {
      for (let i = 0; !stop; i++) {
        const reply = await call(server.baseUrl, 'POST', '/v1/workspaces', { token: user.token, body: { name: `load-${w}-${i}` } });
        statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
        if (reply.status === 201) {
          acknowledged.push(reply.body.id);
          if (phase === 'after') okAfter++;
        } else if (reply.status === 503) {
          unavailable.push({ retryAfter: reply.headers.get('retry-after'), code: reply.body.error.code });
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
    };
    const workers = Array.from({ length: 4 }, (_, w) => worker(w));
    await new Promise((resolve) => setTimeout(resolve, 300));
    phase = 'down';
    await postgres.stop();
    await new Promise((resolve) => setTimeout(resolve, 700));
    await postgres.start();
    phase = 'after';
    // Recovery without a restart of the server: writes succeed again on the same process and pool.
    while (okAfter < 20) await new Promise((resolve) => setTimeout(resolve, 20));
    stop = true;
    await Promise.all(workers);

    expect(unavailable.length).toBeGreaterThan(0);
    for (const u of unavailable) expect(u).toEqual({ retryAfter: expect.stringMatching(/^\d+$/), code: 'service_unavailable' });
    expect([...statuses.keys()].sort()).toEqual([201, 503]);
    const stored = await connection.db.selectFrom('workspaces').select('id').where('id', 'in', acknowledged).execute();
    expect(stored).toHaveLength(acknowledged.length);
  });
});
