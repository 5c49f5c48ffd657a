// Faults: the real server process (main.ts, as `pnpm start` runs it) stopped with SIGTERM under load and killed
// with SIGKILL mid-request, and PostgreSQL taken away under load. What must hold: in-flight requests complete
// and the process exits 0; a client retrying createInstall with its idempotency key after a crash ends with
// exactly one install; without its database the API answers 503 service_unavailable with Retry-After, recovers
// by itself when the database is back, and every write it acknowledged with a 2xx is there afterwards. Each test
// has its own database and server, and waits for events (100 Continue, the drain's log line, a committed row),
// not for fixed times.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { systemClock } from '../src/clock.ts';
import { openDatabase } from '../src/db/connect.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { createUser } from '../src/db/seed.ts';
import { freePort, scratchPostgres } from './global-setup.ts';
import { call, createTestDatabase, demoUserToken, startTestServer, type TestDatabase } from './support.ts';

const main = join(import.meta.dirname, '..', 'src', 'main.ts');
const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const step of cleanup.reverse()) await step().catch(() => {});
});

interface Started {
  child: ChildProcess;
  baseUrl: string;
  exited: Promise<number | null>;
  /** Resolves once the process has written a line matching `pattern` (stdout or stderr). */
  printed(pattern: RegExp): Promise<void>;
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
  const printed = (pattern: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const check = () => pattern.test(out) && resolve();
      check();
      child.stdout!.on('data', check);
      child.stderr!.on('data', check);
      void exited.then((code) => reject(new Error(`server exited ${code} before printing ${pattern}: ${out}`)));
    });
  await printed(seeds ? /Demo user created/ : /listening on http/);
  return { child, baseUrl: `http://127.0.0.1:${port}`, exited, printed };
}

/** A fresh database and the server's first start on it, which seeds the demo user; a token of the demo user's. */
async function seededServer(env: Record<string, string> = {}): Promise<Started & { database: TestDatabase; port: number; token: string }> {
  const database = await createTestDatabase();
  cleanup.push(() => database.drop());
  const port = await freePort();
  const started = await startServer(database, port, env, true);
  return { ...started, database, port, token: await demoUserToken(database.db) };
}

/** Polls `check` every few milliseconds until it holds: for states that no event announces. */
async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('the server process', () => {
  it('SIGTERM with requests in flight: each completes with its 2xx, the writes are there, and the process exits 0', async () => {
    const server = await seededServer({ ROLE: 'api' });
    const { database, token: demoToken } = server;
    expect((await call(server.baseUrl, 'GET', '/v1/workspaces', { token: demoToken })).status).toBe(200);
    // Requests whose headers the server has read and whose bodies are still arriving: in flight for sure. The
    // server's 100 Continue (its answer to `Expect: 100-continue`) is the event that says it took the request.
    const uploads = Array.from({ length: 10 }, (_, i) => {
      const body = JSON.stringify({ name: `sigterm-${i}` });
      const half = Math.floor(body.length / 2);
      const request = httpRequest(`${server.baseUrl}/v1/workspaces`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${demoToken}`,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          expect: '100-continue',
        },
      });
      const reply = new Promise<{ status: number; body: string }>((resolve, reject) => {
        request.once('response', (response) => {
          let text = '';
          response.on('data', (chunk: Buffer) => (text += chunk.toString()));
          response.once('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
        });
        request.once('error', reject);
      });
      const taken = once(request, 'continue').then(() => request.write(body.slice(0, half)));
      request.flushHeaders();
      return { request, rest: body.slice(half), reply, taken };
    });
    await Promise.all(uploads.map((u) => u.taken));
    server.child.kill('SIGTERM');
    await server.printed(/SIGTERM: draining/);
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
    const seeded = await seededServer({ ROLE: 'api' });
    const { database, port, token: demoToken } = seeded;
    let server: Started = seeded;
    const products = await call(server.baseUrl, 'GET', '/v1/products', { token: demoToken });
    const body = { product_id: products.body.data[0].id, region_id: 'fsn1' };
    const keys = Array.from({ length: 8 }, (_, i) => `crash-${i}-${Date.now()}`);
    const first = keys.map((key) =>
      call(server.baseUrl, 'POST', '/v1/installs', { token: demoToken, body, headers: { 'idempotency-key': key } }).catch(() => undefined),
    );
    // Kill once the first has committed, while the others are on the wire or in the handler.
    await until(async () => (await database.db.selectFrom('idempotency_keys').select('key').where('key', 'in', keys).execute()).length > 0, 'a first install');
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
    await until(async () => acknowledged.length >= 8, 'writes before the outage');
    phase = 'down';
    await postgres.stop();
    await until(async () => unavailable.length >= 8, '503s during the outage');
    await postgres.start();
    phase = 'after';
    // Recovery without a restart of the server: writes succeed again on the same process and pool.
    await until(async () => okAfter >= 20, 'writes after the outage');
    stop = true;
    await Promise.all(workers);

    expect(unavailable.length).toBeGreaterThan(0);
    for (const u of unavailable) expect(u).toEqual({ retryAfter: expect.stringMatching(/^\d+$/), code: 'service_unavailable' });
    expect([...statuses.keys()].sort()).toEqual([201, 503]);
    const stored = await connection.db.selectFrom('workspaces').select('id').where('id', 'in', acknowledged).execute();
    expect(stored).toHaveLength(acknowledged.length);
  });
});
