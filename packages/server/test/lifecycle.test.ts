// The processes users run: migrations up and down, `pnpm start` (configuration errors, seeding, SIGTERM
// draining) and `pnpm admin`.
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateDownToZero, migrateToLatest } from '../src/db/migrate.ts';
import { call, createTestDatabase, demoUserToken, eventually, type TestDatabase } from './support.ts';

const run = promisify(execFile);
const serverDir = join(import.meta.dirname, '..', 'src');

async function tables(database: TestDatabase): Promise<string[]> {
  const result = await sql<{
    tablename: string;
  }>`SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename NOT LIKE 'kysely_%' ORDER BY tablename`.execute(database.db);
  return result.rows.map((r) => r.tablename);
}

describe('migrations', () => {
  it('go up, down to zero, and up again', async () => {
    const database = await createTestDatabase({ migrate: false });
    try {
      await migrateToLatest(database.db);
      const all = await tables(database);
      expect(all).toContain('clusters');
      expect(all).toContain('cloud_credentials');
      await migrateDownToZero(database.db);
      expect(await tables(database)).toEqual([]);
      await migrateToLatest(database.db);
      expect(await tables(database)).toEqual(all);
      // Two processes migrating at once: the migrator's lock makes one wait for the other.
      await migrateDownToZero(database.db);
      await Promise.all([migrateToLatest(database.db), migrateToLatest(database.db)]);
      expect(await tables(database)).toEqual(all);
    } finally {
      await database.drop();
    }
  });
});

describe('pnpm start', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase({ migrate: false });
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('stops with one clear line naming a malformed variable', async () => {
    const failure = await run(process.execPath, [join(serverDir, 'main.ts')], { env: { ...process.env, DATABASE_URL: database.url, PORT: 'eighty' } }).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect(failure).toMatchObject({ code: 1 });
    expect((failure as { stderr: string }).stderr.trim()).toBe('Cannot start: PORT must be an integer from 0 to 65535, got "eighty"');
  });

  it('stops with one clear line when the METRICS_PORT it is given is taken', async () => {
    const taken = createServer().listen(0, '127.0.0.1');
    await once(taken, 'listening');
    const { port } = taken.address() as AddressInfo;
    const failure = await run(process.execPath, [join(serverDir, 'main.ts')], {
      env: { ...process.env, DATABASE_URL: database.url, PORT: '0', METRICS_PORT: String(port) },
    }).catch((e: { code: number; stderr: string }) => e);
    taken.close();
    expect(failure).toMatchObject({ code: 1 });
    expect((failure as { stderr: string }).stderr.trim()).toBe(
      `Cannot start: METRICS_PORT/METRICS_HOST: cannot listen on 127.0.0.1:${port} (the port is taken: set METRICS_PORT to a free port, or off)`,
    );
  });

  it('stops with one clear line when the database cannot be reached', async () => {
    const failure = await run(process.execPath, [join(serverDir, 'main.ts')], {
      env: { ...process.env, DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none', PORT: '0' },
    }).catch((e: { code: number; stderr: string }) => e);
    expect(failure).toMatchObject({ code: 1 });
    expect((failure as { stderr: string }).stderr.trim()).toMatch(/^Cannot start: DATABASE_URL: cannot open the database \(.+\)$/);
  });

  it('with SEED_DEMO=false, a first start on an empty database creates no demo user and says nothing of one', async () => {
    const empty = await createTestDatabase();
    try {
      const child = spawn(process.execPath, [join(serverDir, 'main.ts')], {
        env: { ...process.env, DATABASE_URL: empty.url, PORT: '0', LOG_LEVEL: 'warn', SEED_DEMO: 'false' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', () => /listening on /.test(out) && resolve());
        child.once('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
      });
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(await empty.db.selectFrom('users').select('id').execute()).toEqual([]);
      expect(out).not.toMatch(/Demo|Seeding/);
    } finally {
      await empty.drop();
    }
  });

  it('migrates, seeds a demo user, runs workflows, drains on SIGTERM and exits 0', async () => {
    const child = spawn(process.execPath, [join(serverDir, 'main.ts')], {
      env: { ...process.env, DATABASE_URL: database.url, PORT: '0', METRICS_PORT: '0', LOG_LEVEL: 'warn', SIM_RELEASE_SECONDS: '0', LOG_POLL_MS: '50' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', () => /Demo user created/.test(out) && resolve());
      child.once('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
    });
    const baseUrl = /listening on (http:\/\/\S+)/.exec(out)![1]!;
    // Piped, the demo token is not printed: it would be a credential in the logs.
    expect(out).not.toMatch(/svc_pat_/);
    const token = await demoUserToken(database.db);
    const clusters = await call(baseUrl, 'GET', '/v1/clusters', { token });
    expect(clusters.status).toBe(200);
    expect(clusters.body.data).toHaveLength(1);
    expect((await call(baseUrl, 'GET', '/openapi.json')).body.openapi).toBe('3.1.0');
    const docs = await fetch(`${baseUrl}/docs`);
    expect(docs.status).toBe(200);
    expect(await docs.text()).toContain('Platform Management API');
    // The workers of this process run an install of the demo product to the end.
    const products = await call(baseUrl, 'GET', '/v1/products', { token });
    const install = await call(baseUrl, 'POST', '/v1/installs', { token, body: { product_id: products.body.data[0].id, region_id: 'fsn1' } });
    expect(install.status).toBe(202);
    for (let i = 0; (await call(baseUrl, 'GET', `/v1/installs/${install.body.id}`, { token })).body.status !== 'running'; i++) {
      if (i > 200) throw new Error('the install did not run');
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    // Its metrics listener, apart from the API's port, counted the requests and the install's steps.
    const metricsUrl = /Metrics at (http:\/\/[^\s"]+)/.exec(out)![1]!;
    // The workflow is recorded finished just after its last step made the install running, and the database's
    // gauges are read at most once a second (a scrape may get the reading of one a moment ago).
    const metrics = await eventually(
      async () => (await fetch(metricsUrl)).text(),
      (text) =>
        /^platform_workflows_finished_total\{kind="createInstall"/m.test(text) && /^platform_workflows\{kind="createInstall",state="running"\} 0$/m.test(text),
      'the finished workflow counted and no createInstall workflow read as running',
    );
    expect(metrics).toMatch(/^platform_http_request_duration_seconds_count\{operation="createInstall",status="202"\} 1$/m);
    expect(metrics).toMatch(/^platform_workflows_finished_total\{kind="createInstall",outcome="succeeded"\} 1$/m);
    // A followed log stream gets the shutdown block and is closed, so its client reconnects elsewhere.
    const stream = await fetch(`${baseUrl}/v1/installs/${install.body.id}/logs`, {
      headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
    });
    const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
    let received = (await reader.read()).value ?? '';
    expect(received).toContain('event: log');
    // A request in flight when SIGTERM arrives completes; then the process exits 0. In flight for sure: the server
    // answered its `Expect: 100-continue` and waits for the rest of the body, sent once the drain has begun.
    const body = JSON.stringify({ name: 'in-flight' });
    const request = httpRequest(`${baseUrl}/v1/workspaces`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': String(body.length), expect: '100-continue' },
    });
    const inFlight = once(request, 'response') as Promise<[IncomingMessage]>;
    request.flushHeaders();
    await once(request, 'continue');
    request.write(body.slice(0, 5));
    let errors = '';
    const draining = new Promise<void>((resolve) =>
      child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()).includes('SIGTERM: draining') && resolve()),
    );
    child.kill('SIGTERM');
    await draining;
    request.end(body.slice(5));
    const [response] = await inFlight;
    expect(response.statusCode).toBe(201);
    response.resume();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) received += chunk.value;
    expect(received).toMatch(/retry: 1000\n: server shutting down; reconnect with Last-Event-ID\n\n$/);
    expect(await new Promise((resolve) => child.once('exit', resolve))).toBe(0);
  });
});

describe('pnpm start with the embedded PostgreSQL', () => {
  // Without DATABASE_URL the server starts PostgreSQL itself, on a port of this data folder's own (so beside any
  // other clone's). Each signal drains the server, then stops the database: exit 0 and no postmaster left behind.
  const dataDir = mkdtempSync(join(tmpdir(), 'platform-embedded-'));
  chmodSync(dataDir, 0o755); // as root, PostgreSQL runs as its own user, which must reach the data directory
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    it(`drains on ${signal}, stops its database and exits 0`, async () => {
      const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'warn' };
      delete env.DATABASE_URL;
      const child = spawn(process.execPath, [join(serverDir, 'main.ts')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
      // Past start-up: the workflow workers and their LISTEN connection are running, and the API listens.
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', () => /workflow worker running[\s\S]*listening on /.test(out) && resolve());
        child.once('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
      });
      child.kill(signal);
      const code = await new Promise((resolve) => child.once('exit', resolve));
      expect({ code, unhandled: out.includes('Unhandled') }).toEqual({ code: 0, unhandled: false });
      expect(existsSync(join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
    }, 120_000);
  }
});

describe('pnpm admin', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });
  const admin = (...args: string[]) => run(process.execPath, [join(serverDir, 'admin.ts'), ...args], { env: { ...process.env, DATABASE_URL: database.url } });

  it('create-user prints exactly one JSON line with a working token', async () => {
    const { stdout } = await admin('create-user', '--email', 'ops@example.com', '--plan', 'pro');
    const lines = stdout.split('\n').filter(Boolean);
    expect(lines).toHaveLength(1);
    const created = JSON.parse(lines[0]!);
    expect(created).toEqual({ user_id: expect.stringMatching(/^usr_/), token: expect.stringMatching(/^svc_pat_/) });
    const user = await database.db.selectFrom('users').selectAll().where('id', '=', created.user_id).executeTakeFirstOrThrow();
    expect(user).toMatchObject({ email: 'ops@example.com', plan: 'pro' });
  });

  it('set-plan and set-override change what the quotas say', async () => {
    const { stdout } = await admin('create-user', '--email', 'quota@example.com');
    const { user_id } = JSON.parse(stdout);
    await admin('set-plan', '--user', user_id, '--plan', 'pro');
    expect((await database.db.selectFrom('users').select('plan').where('id', '=', user_id).executeTakeFirstOrThrow()).plan).toBe('pro');
    await admin('set-override', '--user', user_id, '--metric', 'kaas/clusters', '--limit', '10');
    await admin('set-override', '--user', user_id, '--metric', 'kaas/clusters', '--limit', '12');
    const overrides = await database.db.selectFrom('quota_overrides').selectAll().where('user_id', '=', user_id).execute();
    expect(overrides).toMatchObject([{ metric: 'kaas/clusters', limit: 12 }]);
  });

  it('--help prints the usage on stdout and exits 0, touching no database', async () => {
    for (const flag of ['--help', '-h', 'help']) {
      const { stdout, stderr } = await run(process.execPath, [join(serverDir, 'admin.ts'), flag], {
        env: { ...process.env, DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' },
      });
      expect(stdout, flag).toMatch(/^Usage:\n {2}pnpm admin --help\n {2}pnpm admin create-user/);
      expect(stderr).toBe('');
    }
  });

  it('kaas-versions lists the Kubernetes versions; set, retire and offer change them', async () => {
    const list = async () =>
      (await admin('kaas-versions')).stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect((await list()).map((v) => v.id)).toEqual(['v1.30', 'v1.31', 'v1.32', 'v1.35', 'v1.36']);
    const added = JSON.parse((await admin('set-kaas-version', '--version', 'v1.37', '--release', 'v1.37.1', '--end-of-support', '2027-10-28')).stdout);
    expect(added).toMatchObject({
      id: 'v1.37',
      release: 'v1.37.1',
      available_for_new_clusters: true,
      end_of_support_at: Date.parse('2027-10-28T00:00:00Z') / 1000,
    });
    await admin('retire-kaas-version', '--version', 'v1.30');
    expect((await list()).find((v) => v.id === 'v1.30')).toMatchObject({ available_for_new_clusters: false });
    await admin('offer-kaas-version', '--version', 'v1.30');
    expect((await list()).find((v) => v.id === 'v1.30')).toMatchObject({ available_for_new_clusters: true });
    const unknown = await admin('retire-kaas-version', '--version', 'v1.99').catch((e: { code: number; stderr: string }) => e);
    expect(unknown).toMatchObject({ code: 1 });
    expect((unknown as { stderr: string }).stderr).toContain('Kubernetes v1.99 is not a version of this platform.');
    const wrongRelease = await admin('set-kaas-version', '--version', 'v1.37', '--release', 'v1.36.4').catch((e: { code: number; stderr: string }) => e);
    expect((wrongRelease as { stderr: string }).stderr).toContain('"v1.36.4" is not a patch release of v1.37');
  });

  it('wrong arguments print usage on stderr and exit 2', async () => {
    for (const args of [
      [],
      ['create-user'],
      ['create-user', '--email', 'x@y.z', '--plan', 'gold'],
      ['set-override', '--user', 'u', '--workspace', 'w', '--metric', 'kaas/clusters', '--limit', '1'],
      ['frobnicate'],
      ['create-user', '--bogus'],
      ['set-kaas-version', '--version', 'v1.37'],
      ['set-kaas-version', '--version', 'v1.37', '--release', 'v1.37.1', '--end-of-support', 'soon'],
      ['retire-kaas-version'],
    ]) {
      const failure = await admin(...args).catch((e: { code: number; stderr: string; stdout: string }) => e);
      expect(failure, args.join(' ')).toMatchObject({ code: 2, stdout: '' });
      expect((failure as { stderr: string }).stderr).toContain('Usage:');
    }
  });
});
