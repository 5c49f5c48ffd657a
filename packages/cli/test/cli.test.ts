// The `platform` CLI as a user runs it: a real process (Node 24 running src/main.ts) against an in-process
// server with its workflow workers on a real PostgreSQL and the simulated cloud at second-scale timings, with
// its config directory redirected through XDG_CONFIG_HOME.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createPlatformClient } from '@platform/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../server/src/clock.ts';
import { loadConfig } from '../../server/src/config.ts';
import { createRuntime } from '../../server/src/workflows/runtime.ts';
import { createTestDatabase, newUser, startTestServer, type TestDatabase, type TestServer, type TestUser } from '../../server/test/support.ts';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));
// pino is the server's dependency, not the CLI's: loaded from there for a silent workers' logger.
type Logger = Parameters<typeof createRuntime>[0]['logger'];
const pino = createRequire(new URL('../../server/package.json', import.meta.url))('pino') as (options: { level: string }) => Logger;

let database: TestDatabase;
let server: TestServer;
let runtime: ReturnType<typeof createRuntime>;
let user: TestUser;
const configHomes: string[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  const config = loadConfig({ PROVIDER_RATE_LIMIT: '1000', SIM_CONTROL_PLANE_SECONDS: '1', SIM_BOOT_SECONDS: '1', SIM_RELEASE_SECONDS: '1', SIM_SNAPSHOT_SECONDS: '1' });
  runtime = createRuntime({ db: database.db, connectionString: database.url, clock: systemClock, logger: pino({ level: 'silent' }), config, simulation: { followPollMs: 20, logLinesPerSecond: 20 }, tickMs: 20 });
  await runtime.engine.run({ work: true });
  server = await startTestServer(database.db, systemClock, { LOG_POLL_MS: '20', DEVICE_POLL_INTERVAL_SECONDS: '1' }, { workflows: runtime.engine, provider: runtime.provider, driver: runtime.driver });
  user = await newUser(database.db, systemClock, 'pro');
});

afterAll(async () => {
  await server?.close();
  await runtime?.engine.stop();
  await database?.drop();
  for (const dir of configHomes) rmSync(dir, { recursive: true, force: true });
});

function configHome(): string {
  const dir = mkdtempSync(join(tmpdir(), 'platform-cli-'));
  configHomes.push(dir);
  return dir;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

interface RunOptions {
  home?: string;
  /** PLATFORM_TOKEN; null for none. Default: the user's PAT. */
  token?: string | null;
  env?: Record<string, string>;
  /** Called with the process once it has written `waitFor` on stdout. */
  onOutput?: (stdout: string) => void;
}

/** Runs `platform …` as a separate process, with nothing of the test's environment but PATH. */
function platform(args: string[], options: RunOptions = {}): Promise<Run> {
  const token = options.token === undefined ? user.token : options.token;
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    XDG_CONFIG_HOME: options.home ?? configHome(),
    PLATFORM_API_URL: server.baseUrl,
    ...(token === null ? {} : { PLATFORM_TOKEN: token }),
    ...options.env,
  };
  const child = spawn(process.execPath, [MAIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    options.onOutput?.(stdout);
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

async function platformJson<T>(args: string[], options: RunOptions = {}): Promise<T> {
  const run = await platform([...args, '--json'], options);
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as T;
}

const api = (token = user.token) => createPlatformClient({ baseUrl: server.baseUrl, token, retry: false });

describe('clusters', () => {
  it('create --wait exits 0 once the cluster runs; list, get and delete in JSON and as tables', async () => {
    const created = await platform(['clusters', 'create', '--name', 'cli-eu', '--region', 'fsn1', '--version', 'v1.31', '--wait', '--timeout', '30', '--json']);
    expect(created.code, created.stderr).toBe(0);
    const cluster = JSON.parse(created.stdout) as { id: string; name: string; kaas: { status: string; version: string } };
    expect(cluster).toMatchObject({ name: 'cli-eu', kaas: { status: 'RUNNING', version: 'v1.31' } });

    const page = await platformJson<{ data: { id: string }[]; pagination: unknown }>(['clusters', 'list']);
    expect(page).toEqual(await api().GET('/v1/clusters'));

    const table = await platform(['clusters', 'list']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/ID\s+│\s+NAME/);
    expect(table.stdout).toContain(cluster.id);
    expect(table.stdout).toContain('RUNNING');

    expect(await platformJson(['clusters', 'get', cluster.id])).toEqual(await api().GET('/v1/clusters/{clusterId}', { params: { path: { clusterId: cluster.id } } }));
    const record = await platform(['clusters', 'get', cluster.id]);
    expect(record.stdout).toMatch(/STATUS\s+│\s+RUNNING/);

    const other = await platformJson<{ id: string }>(['clusters', 'create', '--name', 'cli-gone', '--region', 'fsn1']);
    const deleted = await platform(['clusters', 'delete', other.id]);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toContain(`Deleted cluster ${other.id}`);
  });
});

describe('errors and usage', () => {
  it('prints the service’s message, suggestion and request id on stderr and exits 1', async () => {
    const run = await platform(['clusters', 'get', 'cl_doesnotexist']);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^Error: .+\(404 not_found\)$/m);
    expect(run.stderr).toMatch(/^Suggestion: .+$/m);
    expect(run.stderr).toMatch(/^Request id: .+$/m);
  });

  it('exits 1 with the 401 when the token is wrong', async () => {
    const run = await platform(['clusters', 'list'], { token: 'svc_pat_wrongwrongwrongwrongwrongwrongwrong' });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/401/);
  });

  it('exits 2 on a usage error: unknown command, unknown option, missing required option', async () => {
    for (const args of [['clusters', 'bogus'], ['clusters', 'list', '--bogus'], ['clusters', 'create', '--region', 'fsn1'], ['clusters', 'list', '--limit', 'many']]) {
      const run = await platform(args);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr).toMatch(/error:/);
    }
  });

  it('--help shows an example on each command and exits 0', async () => {
    for (const args of [['--help'], ['clusters', '--help'], ['clusters', 'create', '--help'], ['login', '--help']]) {
      const run = await platform(args);
      expect(run.code, args.join(' ')).toBe(0);
      expect(run.stdout).toMatch(/Examples?:\n\s+\$ platform /);
    }
  });
});

describe('configuration', () => {
  it('keeps the default workspace in a 0600 file in a 0700 directory, and never a token from PLATFORM_TOKEN', async () => {
    const home = configHome();
    const used = await platform(['workspaces', 'use', user.workspaceId], { home });
    expect(used.code, used.stderr).toBe(0);
    const file = join(home, 'platform', 'config.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(home, 'platform')).mode & 0o777).toBe(0o700);
    const text = readFileSync(file, 'utf8');
    expect(JSON.parse(text)).toEqual({ workspace: user.workspaceId });
    expect(text).not.toContain(user.token);

    const listed = await platform(['workspaces', 'list'], { home });
    expect(listed.stdout).toMatch(new RegExp(`\\*\\s+│\\s+${user.workspaceId}`));
    // A flag beats the environment: a wrong --token fails even with a good PLATFORM_TOKEN.
    const flagged = await platform(['--token', 'svc_pat_wrongwrongwrongwrongwrongwrongwrong', 'workspaces', 'list'], { home });
    expect(flagged.code).toBe(1);
    // And the environment beats the file: a wrong PLATFORM_API_URL is used even though the file has none.
    const elsewhere = await platform(['workspaces', 'list', '--json'], { home, env: { PLATFORM_API_URL: `${server.baseUrl}/nowhere` } });
    expect(elsewhere.code).toBe(1);
  });
});

describe('login and logout', () => {
  it('signs in with the device flow, keeps the session token, and logout revokes it', async () => {
    const home = configHome();
    let approving: Promise<unknown> | undefined;
    const login = await platform(['login'], {
      home,
      token: null,
      onOutput: (stdout) => {
        const code = /enter the code: ([A-Z]{4}-[A-Z]{4})/.exec(stdout)?.[1];
        // The user approves on the web page; here, through the generated client with their PAT.
        if (code && !approving) approving = api().POST('/v1/auth/device/approve', { body: { user_code: code, action: 'approve' } });
      },
    });
    await approving;
    expect(login.code, login.stderr).toBe(0);
    expect(login.stdout).toContain(`${server.baseUrl}/device`);
    expect(login.stdout).toContain('Logged in');
    const file = join(home, 'platform', 'config.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(readFileSync(file, 'utf8')) as { token: string; api_url: string };
    expect(stored.token).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(stored.api_url).toBe(server.baseUrl);

    const listed = await platformJson<{ data: { id: string }[] }>(['workspaces', 'list'], { home, token: null });
    expect(listed.data.map((w) => w.id)).toContain(user.workspaceId);

    const logout = await platform(['logout'], { home, token: null });
    expect(logout.code, logout.stderr).toBe(0);
    expect(JSON.parse(readFileSync(file, 'utf8'))).not.toHaveProperty('token');
    const after = await platform(['workspaces', 'list'], { home, token: stored.token });
    expect(after.code).toBe(1);
    expect(after.stderr).toMatch(/401/);
  });

  it('stops with exit 1 when the sign-in is denied', async () => {
    let denying: Promise<unknown> | undefined;
    const login = await platform(['login'], {
      token: null,
      onOutput: (stdout) => {
        const code = /enter the code: ([A-Z]{4}-[A-Z]{4})/.exec(stdout)?.[1];
        if (code && !denying) denying = api().POST('/v1/auth/device/approve', { body: { user_code: code, action: 'deny' } });
      },
    });
    await denying;
    expect(login.code).toBe(1);
    expect(login.stderr).toContain('denied');
  });
});
