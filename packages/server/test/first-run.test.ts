// A newcomer's `pnpm start` with the embedded PostgreSQL, through real processes: what the first start says,
// the demo token later (`pnpm admin demo-token`), each data folder with its own database and port (two clones
// side by side), one clear line when the database cannot start, and readable logs on a terminal.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify, stripVTControlCharacters } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestDatabase, type TestDatabase } from './support.ts';

const run = promisify(execFile);
const serverDir = join(import.meta.dirname, '..', 'src');
const folders: string[] = [];
const children: ChildProcess[] = [];

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'platform-first-run-'));
  chmodSync(dir, 0o755); // as root, PostgreSQL runs as its own user, which must reach the data directory
  folders.push(dir);
  return dir;
}

/** The process environment without DATABASE_URL: the embedded PostgreSQL under `dir`. */
function embedded(dir: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dir, PORT: '0', LOG_LEVEL: 'warn', ...extra };
  delete env.DATABASE_URL;
  return env;
}

/** Resolves once the child's output (collected in `output.text`) matches `pattern`. */
function waitFor(child: ChildProcess, output: { text: string }, pattern: RegExp): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const check = () => pattern.test(output.text) && resolve();
    check();
    child.stdout!.on('data', check);
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${output.text}`)));
  });
}

/**
 * Starts `pnpm start`'s entry (under script(1), stdout on a pseudo-terminal, when `terminal`) and waits for
 * its start-up to end (the demo box on a terminal, the demo line otherwise, closes it).
 */
async function start(env: NodeJS.ProcessEnv, terminal = false): Promise<{ out: string; url: string; child: ChildProcess; output: { text: string } }> {
  const command = [process.execPath, join(serverDir, 'main.ts')];
  const child = terminal
    ? spawn('script', ['-qfec', command.join(' '), '/dev/null'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(command[0]!, command.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const output = { text: '' };
  child.stdout.on('data', (chunk: Buffer) => (output.text += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output.text += chunk.toString()));
  await waitFor(child, output, terminal ? /└─+┘\r?\n/ : /"msg":"Demo (user created|token)[^\n]*\n/);
  return { out: output.text, url: /listening on (http:\/\/\S+)/.exec(output.text)![1]!, child, output };
}

const admin = (env: NodeJS.ProcessEnv, ...args: string[]) => run(process.execPath, [join(serverDir, 'admin.ts'), ...args], { env });

afterAll(async () => {
  for (const child of children) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

describe('pnpm start with the embedded PostgreSQL, two clones side by side', () => {
  const first = dataDir();
  const second = dataDir();
  let one: { out: string; url: string };
  let blocker: Server;
  let blocked: number;

  beforeAll(async () => {
    one = await start(embedded(first), true);
    // The second clone's port (kept from an earlier run) is taken by something else meanwhile.
    blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    blocked = (blocker.address() as { port: number }).port;
    writeFileSync(join(second, 'postgres.port'), `${blocked}\n`);
  }, 120_000);
  afterAll(() => new Promise((resolve) => blocker.close(resolve)));

  it('says what the first start does, then the listen line, then the demo credentials in a box', async () => {
    const lines = stripVTControlCharacters(one.out).split(/\r?\n/);
    const at = (pattern: RegExp) => lines.findIndex((line) => pattern.test(line));
    const steps = [
      /^Creating the database in .+ \(first start only/,
      /^Starting PostgreSQL on 127\.0\.0\.1:\d+ /,
      /^Applying database migrations/,
      /^Seeding the demo user/,
      /^Platform API listening on /,
      /^┌─+┐$/,
      /^│ Token: svc_pat_\w+ +│$/,
      /^└─+┘$/,
    ];
    const positions = steps.map(at);
    expect(
      positions.every((position) => position >= 0),
      one.out,
    ).toBe(true);
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    const token = /Token: (svc_pat_\w+)/.exec(one.out)![1]!;
    expect((await call(one.url, 'GET', '/v1/clusters', { token })).status).toBe(200);
  });

  it('pnpm admin demo-token prints a new token for the demo user of the running server of this DATA_DIR', async () => {
    const { stdout } = await admin(embedded(first), 'demo-token');
    const printed = JSON.parse(stdout);
    expect(printed).toEqual({ user_id: expect.stringMatching(/^usr_/), email: 'demo@platform.example', token: expect.stringMatching(/^svc_pat_/) });
    expect(one.out).not.toContain(printed.token);
    const me = await call(one.url, 'GET', '/v1/clusters', { token: printed.token });
    expect(me.status).toBe(200);
    expect(me.body.data[0].name).toBe('demo-eu');
  });

  it('a second start on the same DATA_DIR stops with one clear line naming the fix and the port in use, and names no other port', async () => {
    const failure = await run(process.execPath, [join(serverDir, 'main.ts')], { env: embedded(first) }).catch(
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
    expect(failure).toMatchObject({ code: 1 });
    const port = /Starting PostgreSQL on 127\.0\.0\.1:(\d+)/.exec(one.out)![1];
    expect((failure as { stderr: string }).stderr.trim()).toMatch(
      new RegExp(
        `^Cannot start: DATA_DIR: cannot open the database \\(the embedded PostgreSQL in .+ is already running on port ${port} .*set DATA_DIR to another folder\\)$`,
      ),
    );
    expect((failure as { stdout: string }).stdout).not.toContain('Starting PostgreSQL');
  }, 60_000);

  it('another DATA_DIR gets its own database on another port, beside the first, and its own demo user', async () => {
    const two = await start(embedded(second));
    const port = (out: string) => Number(/Starting PostgreSQL on 127\.0\.0\.1:(\d+)/.exec(out)![1]);
    // Its kept port was taken: it took a free one, said so, and keeps that one for next time.
    expect(port(two.out)).not.toBe(blocked);
    expect(port(two.out)).not.toBe(port(one.out));
    const { stdout } = await admin(embedded(second), 'demo-token');
    const { token } = JSON.parse(stdout);
    expect((await call(two.url, 'GET', '/v1/clusters', { token })).status).toBe(200);
    // pnpm admin of one clone never reaches the database of the other.
    expect((await call(one.url, 'GET', '/v1/clusters', { token })).status).toBe(401);
  }, 120_000);
});

it('the tests run with a data folder of their own, never the one of a pnpm start beside them', () => {
  expect(process.env.DATA_DIR).toMatch(new RegExp(`^${tmpdir().replaceAll('/', '\\/')}\\/platform-test-data-`));
});

describe('pnpm start when its HTTP port is taken', () => {
  it('stops with one clear line before it creates, migrates or seeds a database', async () => {
    const dir = dataDir();
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const failure = await run(process.execPath, [join(serverDir, 'main.ts')], { env: embedded(dir, { PORT: String(port), HOST: '127.0.0.1' }) }).catch(
        (e: { code: number; stderr: string }) => e,
      );
      expect(failure).toMatchObject({ code: 1 });
      expect((failure as { stderr: string }).stderr.trim()).toBe(
        `Cannot start: PORT/HOST: cannot listen on 127.0.0.1:${port} (the port is taken (another \`pnpm start\`?): stop that, or set PORT to a free port)`,
      );
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
    // The port was looked at first: no database was made for a server that could not listen.
    expect(existsSync(join(dir, 'postgres'))).toBe(false);
  }, 120_000);
});

describe('pnpm start when the database cannot be created', () => {
  it('stops with one clear line', async () => {
    const file = join(dataDir(), 'not-a-folder');
    writeFileSync(file, '');
    const failure = await run(process.execPath, [join(serverDir, 'main.ts')], { env: embedded(file) }).catch((e: { code: number; stderr: string }) => e);
    expect(failure).toMatchObject({ code: 1 });
    const stderr = (failure as { stderr: string }).stderr.trim();
    expect(stderr.split('\n')).toHaveLength(1);
    expect(stderr).toMatch(/^Cannot start: DATA_DIR: cannot open the database \(.*not-a-folder.*\)$/);
  });
});

describe('logs', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase({ migrate: false });
  });
  afterAll(async () => {
    await database?.drop();
  });

  // A request gets an access line at level info.
  it('are JSON lines when stdout is not a terminal, start-up included, and hold no token', async () => {
    // The first start on this database: it seeds the demo user.
    const server = await start({ ...process.env, DATABASE_URL: database.url, PORT: '0', LOG_LEVEL: 'info' });
    expect((await call(server.url, 'GET', '/openapi.json')).status).toBe(200);
    await waitFor(server.child, server.output, /"msg":"request"/);
    const lines = server.output.text.split('\n').filter(Boolean);
    const messages = lines.map((line) => {
      const parsed = JSON.parse(line) as { level: number; msg: string };
      expect(parsed.level, line).toBeTypeOf('number');
      return parsed.msg;
    });
    const at = (pattern: RegExp) => messages.findIndex((message) => pattern.test(message));
    const steps = [
      /^Applying database migrations/,
      /^workflow worker running$/,
      /^Seeding the demo user/,
      /^Platform API listening on /,
      /^Demo user created: .+pnpm admin demo-token/,
    ];
    expect(steps.map(at)).toEqual(steps.map(at).sort((a, b) => a - b));
    expect(
      steps.map(at).every((position) => position >= 0),
      messages.join('\n'),
    ).toBe(true);
    expect(server.output.text).not.toMatch(/svc_pat_/);
  });

  it('are readable lines on a terminal', async () => {
    const server = await start({ ...process.env, DATABASE_URL: database.url, PORT: '0', LOG_LEVEL: 'info' }, true);
    expect((await call(server.url, 'GET', '/openapi.json')).status).toBe(200);
    await waitFor(server.child, server.output, /request/);
    const plain = stripVTControlCharacters(server.output.text);
    expect(plain).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: request\r?$/m);
    expect(plain).not.toMatch(/"level"/);
  });
});
