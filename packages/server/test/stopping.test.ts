// Stopping `pnpm start` the ways people and supervisors do, through real processes on an embedded PostgreSQL:
// Ctrl-C in a terminal (SIGINT to the whole foreground process group), a supervisor's SIGTERM to pnpm's process
// alone, and pnpm killed outright (it passes nothing on). Either way the server drains and stops the database
// itself: no error-level line, no pnpm failure, no process left, the port free.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repoRoot = join(import.meta.dirname, '..', '..', '..');
const serverDir = join(import.meta.dirname, '..', 'src');
let dir: string;
const started: ChildProcess[] = [];
const postmasters: number[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'platform-stopping-'));
  chmodSync(dir, 0o755); // as root, PostgreSQL runs as its own user, which must reach the data directory
});

afterAll(() => {
  // What a failed test left: the process groups it started, and PostgreSQL in its own group.
  for (const child of started) if (child.pid && child.exitCode === null) tryKill(-child.pid, 'SIGKILL');
  for (const pid of postmasters) tryKill(pid, 'SIGQUIT');
  rmSync(dir, { recursive: true, force: true });
});

function tryKill(pid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Starts `command` as a terminal would: in a process group of its own, on the embedded PostgreSQL under `dir`. */
async function launch(command: string, args: string[]) {
  // The PATH of a person's shell: without the workspace's node_modules/.bin that `pnpm test` put first (its `node`
  // is a shell script that runs node as a child, so `pnpm` would not be the process spawned here).
  const PATH = process.env.PATH?.split(':')
    .filter((entry) => !entry.includes('node_modules'))
    .join(':');
  const env: NodeJS.ProcessEnv = { ...process.env, PATH, DATA_DIR: dir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' };
  delete env.DATABASE_URL;
  const child = spawn(command, args, { cwd: repoRoot, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  const output = { text: '' };
  child.stdout!.on('data', (chunk: Buffer) => (output.text += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output.text += chunk.toString()));
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  await new Promise<void>((resolve, reject) => {
    const check = () => /listening on http:\/\/\S+/.test(output.text) && /Demo (user created|token)/.test(output.text) && resolve();
    child.stdout!.on('data', check);
    void exited.then(([code]) => reject(new Error(`exited ${code} before listening: ${output.text}`)));
  });
  const port = Number(/listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(output.text)![1]);
  const postgres = Number(readFileSync(join(dir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
  postmasters.push(postgres);
  return { child, output, exited, port, postgres };
}

const portAnswers = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => resolve(!socket.destroy()));
    socket.once('error', () => resolve(false));
  });

/** Waits until `gone()` holds, for at most 30 s. */
async function until(gone: () => boolean | Promise<boolean>, what: string | (() => string)): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (await gone()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`still there after 30 s: ${typeof what === 'string' ? what : what()}`);
}

/** The processes of a group, as ps shows them (for a failure's message). */
const groupOf = (pgid: number) => () =>
  execFileSync('ps', ['-eo', 'pid,ppid,pgid,stat,args'], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.trim().split(/\s+/)[2] === String(pgid))
    .join('\n');

/** Lines at pino's error level or above, and anything printed as an error with a stack. */
const errorLines = (text: string) => text.split('\n').filter((line) => /"level":(50|60)|\bERROR\b|^\s+at /.test(line));

async function expectAllGone(run: { child: ChildProcess; port: number; postgres: number }) {
  // Nothing of the process group is left (pnpm, its shell, the server), nor the PostgreSQL in a group of its own.
  await until(() => !tryKill(-run.child.pid!, 0), groupOf(run.child.pid!));
  await until(() => !tryKill(run.postgres, 0), 'the embedded PostgreSQL');
  expect(existsSync(join(dir, 'postgres', 'postmaster.pid'))).toBe(false);
  expect(await portAnswers(run.port)).toBe(false);
}

describe('stopping the server', () => {
  it('runs PostgreSQL outside the group a terminal signals, so Ctrl-C reaches only the server, which exits 0', async () => {
    const run = await launch(process.execPath, [join(serverDir, 'main.ts')]);
    expect(tryKill(-run.postgres, 0)).toBe(true); // a group of its own, led by the postmaster
    process.kill(-run.child.pid!, 'SIGINT');
    const [code] = await run.exited;
    expect(code).toBe(0);
    expect(run.output.text).toContain('SIGINT: draining');
    expect(errorLines(run.output.text)).toEqual([]);
    await expectAllGone(run);
  }, 120_000);

  it('pnpm start, Ctrl-C: drains, no error line, nothing left running; pnpm exits 0 without ELIFECYCLE', async () => {
    const run = await launch('pnpm', ['start']);
    process.kill(-run.child.pid!, 'SIGINT');
    expect(await run.exited).toEqual([0, null]);
    await expectAllGone(run);
    expect(run.output.text).toContain('SIGINT: draining');
    expect(errorLines(run.output.text)).toEqual([]);
    expect(run.output.text).not.toContain('ELIFECYCLE');
  }, 120_000);

  it("pnpm start, SIGTERM to pnpm's process alone: pnpm passes it to the server, which drains; both exit 0", async () => {
    const run = await launch('pnpm', ['start']);
    process.kill(run.child.pid!, 'SIGTERM');
    expect(await run.exited).toEqual([0, null]);
    await expectAllGone(run);
    expect(run.output.text).toContain('SIGTERM: draining');
    expect(errorLines(run.output.text)).toEqual([]);
    expect(run.output.text).not.toContain('ELIFECYCLE');
  }, 120_000);

  it('pnpm start, pnpm killed outright: the server sees its launcher go, drains and stops everything', async () => {
    const run = await launch('pnpm', ['start']);
    process.kill(run.child.pid!, 'SIGKILL');
    expect(await run.exited).toEqual([null, 'SIGKILL']);
    await expectAllGone(run);
    // pnpm's pipes close with it: the server's last words are not seen here, but its database stopped cleanly.
    expect(errorLines(run.output.text)).toEqual([]);
  }, 120_000);
});
