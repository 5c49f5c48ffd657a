// The `platform` CLI as a user runs it, driven in the test's process through run() with an I/O context of its own
// (cli-runner.ts), against an in-process server with its workflow workers and webhook dispatcher on a real
// PostgreSQL and the simulated cloud at second-scale timings, with its config directory redirected through
// XDG_CONFIG_HOME. (process.test.ts runs the real process.)
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPlatformClient } from '@platform/client';
import { createToken, holdControlPlanes, newUser, systemClock, type TestUser, useTestServer } from '@platform/server/testing';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliRun, type RunningCli, startCli } from './cli-runner.ts';

// On real time: the CLI's clock is the machine's.
const app = useTestServer({
  clock: systemClock,
  env: {
    PROVIDER_RATE_LIMIT: '1000',
    SIM_CONTROL_PLANE_SECONDS: '1',
    SIM_BOOT_SECONDS: '1',
    SIM_RELEASE_SECONDS: '1',
    SIM_SNAPSHOT_SECONDS: '1',
    LOG_POLL_MS: '20',
    DEVICE_POLL_INTERVAL_SECONDS: '1',
    EVENT_POLL_MS: '50',
    // Webhook endpoints on the loopback (the receivers the tests start), as in development.
    WEBHOOK_ALLOW_HTTP_LOOPBACK: 'true',
    WEBHOOK_TIMEOUT_MS: '2000',
  },
  runtime: { simulation: { followPollMs: 20, logLinesPerSecond: 20 }, tickMs: 20, webhooks: true },
});
let user: TestUser;
const configHomes: string[] = [];

beforeAll(async () => {
  user = await newUser(app.db, systemClock, 'pro');
});

afterAll(async () => {
  for (const dir of configHomes) rmSync(dir, { recursive: true, force: true });
});

function configHome(): string {
  const dir = mkdtempSync(join(tmpdir(), 'platform-cli-'));
  configHomes.push(dir);
  return dir;
}

type Run = CliRun;

interface RunOptions {
  home?: string;
  /** PLATFORM_TOKEN; null for none. Default: the user's PAT. */
  token?: string | null;
  env?: Record<string, string>;
  /** Called with everything written to stdout so far, after each write. */
  onOutput?: (stdout: string, running: RunningCli) => void;
  /** Called with everything written to stderr so far, after each write. */
  onError?: (stderr: string, running: RunningCli) => void;
  /** Standard input. */
  input?: string;
  /** Standard output is a terminal this wide (the tables' terminal form); without it, a pipe. */
  columns?: number;
}

/**
 * The pauses of a run, shortened: the workflows take a second or two, so --wait reads every 50 ms instead of every
 * second, the client retries at most 20, 40 and 80 ms apart, and a feed lost for longer than that is opened again
 * after 100 ms, not 2 s.
 */
const PACE = { waitPollMs: 50, feedReconnectMs: 100, retry: { baseDelayMs: 20 } };

/** Starts `platform …` with nothing of the test's environment. */
function startPlatform(args: string[], options: RunOptions = {}, stdinTerminal = false): RunningCli {
  const token = options.token === undefined ? user.token : options.token;
  const env: Record<string, string> = {
    XDG_CONFIG_HOME: options.home ?? configHome(),
    PLATFORM_API_URL: app.baseUrl,
    ...(token === null ? {} : { PLATFORM_TOKEN: token }),
    ...options.env,
  };
  const { input, onOutput, onError, columns } = options;
  return startCli(args, { env, input, onOutput, onError, columns, stdinTerminal, pace: PACE });
}

/** Runs `platform …` to its end. */
function platform(args: string[], options: RunOptions = {}): Promise<Run> {
  return startPlatform(args, options).done;
}

/** Runs `platform …` with standard input a terminal, typing `input`: the prompt is on stderr. */
function platformOnTerminal(args: string[], input: string, options: RunOptions = {}): Promise<Run> {
  const running = startPlatform(args, options, true);
  running.type(input);
  return running.done;
}

async function platformJson<T>(args: string[], options: RunOptions = {}): Promise<T> {
  const run = await platform([...args, '--json'], options);
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as T;
}

// Tests that run several workflows one after another through --wait: about 20 s on a busy shared machine,
// too close to the suite's 30 s default.
const WORKFLOWS_MS = 90_000;

const api = (token = user.token) => createPlatformClient({ baseUrl: app.baseUrl, token, retry: false });

/** Polls `check` every 50 ms until it holds, failing after `ms`. */
async function until(what: string, check: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Polls `read` every 50 ms until `check` holds of its answer, which it returns; fails after `ms`. */
async function eventually<T>(what: string, read: () => Promise<T>, check: (value: T) => boolean, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (check(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function listenOnLoopback(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

interface Delivery {
  body: string;
  headers: IncomingHttpHeaders;
}

/** A webhook receiver on the loopback: keeps each request's raw body and headers; answers `status(n)` to the n-th. */
async function startReceiver(status: (n: number) => number = () => 200) {
  const received: Delivery[] = [];
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ body: Buffer.concat(chunks).toString('utf8'), headers: req.headers });
      res.writeHead(status(received.length)).end();
    });
  });
  return { url: `${await listenOnLoopback(receiver)}/hook`, received, close: () => closeServer(receiver) };
}

type Forwarded = { id: string; type: string; object_id: string };

/** Checks a delivery as a receiver would, with the reference implementation of Standard Webhooks. */
function verified(delivery: Delivery, secret: string): Forwarded {
  return new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>) as Forwarded;
}

/**
 * A proxy in front of the server that can cut the events feeds passing through it, and answer 503 for a while;
 * it keeps each request's method, path and body (what the CLI sent).
 */
async function startProxy() {
  const feeds = new Set<ServerResponse>();
  const feedRequests: IncomingHttpHeaders[] = [];
  const requests: { method: string; url: string; body: string }[] = [];
  let down = false;
  const proxy = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => requests.push({ method: req.method ?? '', url: req.url ?? '', body: Buffer.concat(chunks).toString('utf8') }));
    if (down) {
      const body = { error: { code: 'service_unavailable', message: 'The service is restarting.' } };
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '0' }).end(JSON.stringify(body));
      return;
    }
    const upstream = httpRequest(new URL(req.url ?? '/', app.baseUrl), { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    res.on('close', () => upstream.destroy());
    if (req.url?.startsWith('/v1/events/stream')) {
      feedRequests.push(req.headers);
      feeds.add(res);
      res.on('close', () => feeds.delete(res));
    }
    req.pipe(upstream);
  });
  const url = await listenOnLoopback(proxy);
  return {
    url,
    feedRequests,
    /** The bodies of the requests sent to `method path`, parsed. */
    bodies: (method: string, path: string) => requests.filter((r) => r.method === method && r.url === path).map((r) => JSON.parse(r.body) as unknown),
    drop: () => {
      for (const feed of feeds) feed.destroy();
    },
    setDown: (value: boolean) => {
      down = value;
    },
    close: () => closeServer(proxy),
  };
}

/**
 * Starts a `platform …` that runs until interrupted; resolves once its stderr matches `ready`, with the match, its
 * output so far and its run.
 */
async function startRunning(args: string[], ready: RegExp, options: RunOptions = {}) {
  let matched: (match: RegExpExecArray) => void = () => {};
  const readiness = new Promise<RegExpExecArray>((resolve) => (matched = resolve));
  const running = startPlatform(args, {
    ...options,
    onError: (stderr) => {
      const match = ready.exec(stderr);
      if (match) matched(match);
    },
  });
  const run = running.done;
  const interrupt = () => running.interrupt();
  /** `promise`, or 'late' after `ms`. */
  const within = async <T>(promise: Promise<T>, ms: number): Promise<T | 'late'> => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), ms)));
    return Promise.race([promise, late]).finally(() => clearTimeout(timer));
  };
  // A run that hangs fails the test with what it said, instead of running into the test's time limit.
  const started = await within(Promise.race([readiness.then((match) => ({ match })), run.then((done) => ({ done }))]), 30_000);
  if (started === 'late') {
    interrupt();
    throw new Error(`platform ${args.join(' ')} was not ready after 30 s; stderr: ${running.stderr()}`);
  }
  if ('done' in started) throw new Error(`platform ${args.join(' ')} exited with ${started.done.code}: ${started.done.stderr}`);
  /** Ctrl-C, then its run. */
  const stop = async (): Promise<Run> => {
    interrupt();
    const ended = await within(run, 15_000);
    if (ended !== 'late') return ended;
    throw new Error(`platform ${args.join(' ')} did not end 15 s after Ctrl-C; stderr: ${running.stderr()}`);
  };
  return { match: started.match, run, stdout: running.stdout, stderr: running.stderr, interrupt, stop };
}

/** Starts `platform webhooks listen …`; resolves once it says it is ready, with its secret, its output so far and its run. */
async function startListener(args: string[], options: RunOptions = {}) {
  const running = await startRunning(['webhooks', 'listen', ...args], /Webhook signing secret: (whsec_\S+)\n/, options);
  return { ...running, secret: running.match[1]! };
}

// Each group works as its own user where it counts usage, so the groups run at once.
describe('platform', () => {
  describe('clusters', () => {
    it('create --wait exits 0 once the cluster runs; list, get and delete in JSON and as tables', async () => {
      const created = await platform([
        'clusters',
        'create',
        '--name',
        'cli-eu',
        '--region',
        'fsn1',
        '--version',
        'v1.31',
        '--wait',
        '--timeout',
        '30',
        '--json',
      ]);
      expect(created.code, created.stderr).toBe(0);
      const cluster = JSON.parse(created.stdout) as { id: string; name: string; kaas: { status: string; version: string } };
      expect(cluster).toMatchObject({ name: 'cli-eu', kaas: { status: 'RUNNING', version: 'v1.31' } });

      const page = await platformJson<{ data: { id: string }[]; pagination: unknown }>(['clusters', 'list']);
      expect(page).toEqual(await api().GET('/v1/clusters'));

      // On a terminal: a header, then the rows; piped: the rows, tab-separated.
      const table = await platform(['clusters', 'list'], { columns: 200 });
      expect(table.code).toBe(0);
      expect(table.stdout).toMatch(/^ID +NAME/);
      expect(table.stdout).toContain(cluster.id);
      expect(table.stdout).toContain('RUNNING');
      expect((await platform(['clusters', 'list'])).stdout).toMatch(new RegExp(`^${cluster.id}\\tcli-eu\\tfsn1\\tv1\\.31\\tRUNNING\\t`, 'm'));

      expect(await platformJson(['clusters', 'get', cluster.id])).toEqual(
        await api().GET('/v1/clusters/{clusterId}', { params: { path: { clusterId: cluster.id } } }),
      );
      const record = await platform(['clusters', 'get', cluster.id]);
      expect(record.stdout).toMatch(/STATUS\tRUNNING/);

      const renamed = await platformJson<{ name: string }>(['clusters', 'rename', cluster.id, '--name', 'cli-eu-2']);
      expect(renamed.name).toBe('cli-eu-2');
      const kubeconfig = await platform(['clusters', 'kubeconfig', cluster.id, '--ttl', '600']);
      expect(kubeconfig.code, kubeconfig.stderr).toBe(0);
      expect(kubeconfig.stdout).toMatch(/^apiVersion: v1\n[\s\S]*token: \S{32,}/);
      expect(kubeconfig.stderr).toContain('The token expires');

      const other = await platformJson<{ id: string }>(['clusters', 'create', '--name', 'cli-gone', '--region', 'fsn1']);
      const deleted = await platform(['clusters', 'delete', other.id, '--yes']);
      expect(deleted.code, deleted.stderr).toBe(0);
      expect(deleted.stdout).toContain(`Deleted cluster ${other.id}`);
    });

    it('delete asks on a terminal (n keeps the cluster, y deletes it); without a terminal and without --yes it refuses with exit 2', async () => {
      const someone = await newUser(app.db, systemClock, 'pro');
      const cluster = await platformJson<{ id: string }>(['clusters', 'create', '--name', 'asked', '--region', 'fsn1'], { token: someone.token });
      const stillThere = async () => (await api(someone.token).GET('/v1/clusters')).data.some((c) => c.id === cluster.id);

      const refused = await platform(['clusters', 'delete', cluster.id], { token: someone.token });
      expect(refused.code).toBe(2);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toContain(`Delete cluster ${cluster.id}: not confirmed`);
      expect(refused.stderr).toContain('--yes');
      expect(await stillThere()).toBe(true);

      const declined = await platformOnTerminal(['clusters', 'delete', cluster.id], 'n\n', { token: someone.token });
      expect(declined.stderr).toContain(`Delete cluster ${cluster.id}? [y/N]`);
      expect(declined.stderr).toContain('cancelled, nothing changed');
      expect(declined.code).toBe(1);
      expect(await stillThere()).toBe(true);

      const confirmed = await platformOnTerminal(['clusters', 'delete', cluster.id], 'y\n', { token: someone.token });
      expect(confirmed.code, confirmed.stderr).toBe(0);
      expect(confirmed.stdout).toContain(`Deleted cluster ${cluster.id}`);
      expect(await stillThere()).toBe(false);
    });
  });

  describe('regions', () => {
    it('lists the regions as the API does, and as a table', async () => {
      expect(await platformJson(['regions'])).toEqual(await api().GET('/v1/regions'));
      const table = await platform(['regions'], { columns: 200 });
      expect(table.code, table.stderr).toBe(0);
      expect(table.stdout).toMatch(/^ID +NAME +COUNTRY/);
      expect(table.stdout).toMatch(/^fsn1 +\S.* +DE +\S/m);
      expect((await platform(['regions'])).stdout).toMatch(/^fsn1\t[^\t]+\tDE\t/m);
    });
  });

  describe('clusters versions', () => {
    it('lists the Kubernetes versions as the API does, and as a table saying which new clusters may use', async () => {
      expect(await platformJson(['clusters', 'versions'])).toEqual(await api().GET('/v1/kaas/versions'));
      const table = await platform(['clusters', 'versions'], { columns: 200 });
      expect(table.code, table.stderr).toBe(0);
      expect(table.stdout).toMatch(/^VERSION +RELEASE +NEW CLUSTERS +END OF SUPPORT/);
      expect((await platform(['clusters', 'versions'])).stdout).toMatch(/^v1\.36\tv1\.36\.4\tyes\t2027-06-28/m);
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

    it('exits 1 with the 401 when the token is wrong, suggesting `platform login`', async () => {
      const run = await platform(['clusters', 'list'], { token: 'svc_pat_wrongwrongwrongwrongwrongwrongwrong' });
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/401/);
      expect(run.stderr).toContain('Suggestion: Run `platform login`');
      expect(run.stderr).not.toContain('Authorization');
    });

    it('suggests commands instead of HTTP requests, headers and operationIds', async () => {
      const unknownRegion = await platform(['clusters', 'create', '--name', 'nowhere', '--region', 'xx9']);
      expect(unknownRegion.code).toBe(1);
      expect(unknownRegion.stderr).toMatch(/^Error: .*xx9.*\(404 not_found\)$/m);
      expect(unknownRegion.stderr).toContain('Suggestion: List the regions with `platform regions`; --region takes one of their ids.');

      const badVersion = await platform(['clusters', 'create', '--name', 'odd', '--region', 'fsn1', '--version', 'v9']);
      expect(badVersion.code).toBe(1);
      expect(badVersion.stderr).toContain('(422 validation_error)');
      expect(badVersion.stderr).toContain('Suggestion: See `platform clusters create --help` for what kaas_version accepts.');
      const unknownVersion = await platform(['clusters', 'create', '--name', 'odd', '--region', 'fsn1', '--version', 'v1.99']);
      expect(unknownVersion.code).toBe(1);
      expect(unknownVersion.stderr).toContain('Kubernetes v1.99 is not a version of this platform. (422 validation_error)');
      expect(unknownVersion.stderr).toMatch(/Suggestion: Choose one of: v1\.30, .*v1\.36 \(`platform clusters versions`\)\./);

      const productFile = join(configHome(), 'product.yaml');
      writeFileSync(
        productFile,
        `name: Lost\ncluster_ids: [cl_doesnotexist]\nsources:\n  - chart: { repo_url: 'https://charts.example.com', target_revision: '1.0.0', chart: lost }\n`,
      );
      const unknownCluster = await platform(['products', 'create', '--file', productFile]);
      expect(unknownCluster.code).toBe(1);
      expect(unknownCluster.stderr).toContain("Suggestion: List the workspace's clusters with `platform clusters list` and use their ids.");

      const foreignWorkspace = await platform(['--workspace', 'ws_notmine', 'clusters', 'create', '--name', 'x', '--region', 'fsn1']);
      expect(foreignWorkspace.code).toBe(1);
      expect(foreignWorkspace.stderr).toContain('(403 forbidden)');
      expect(foreignWorkspace.stderr).toContain(
        'Suggestion: List your workspaces with `platform workspaces list`, then choose one with `platform workspaces use <id>` or --workspace <id>.',
      );

      for (const run of [unknownRegion, badVersion, unknownCluster, foreignWorkspace])
        expect(run.stderr).not.toMatch(/\b(GET|POST) \/v1|X-Workspace-Id|createCluster/);
      expect(unknownRegion.stderr).not.toContain('member');
    });

    it('exits 2 on a usage error: unknown command, unknown option, missing required option', async () => {
      for (const args of [
        ['clusters', 'bogus'],
        ['clusters', 'list', '--bogus'],
        ['clusters', 'create', '--region', 'fsn1'],
        ['clusters', 'list', '--limit', 'many'],
      ]) {
        const run = await platform(args);
        expect(run.code, args.join(' ')).toBe(2);
        expect(run.stderr).toMatch(/error:/);
      }
    });

    it('exits 2 naming where an API address that is not an http(s) URL came from', async () => {
      const flag = await platform(['--api-url', 'notaurl', 'workspaces', 'list']);
      expect(flag).toMatchObject({ code: 2, stdout: '' });
      expect(flag.stderr).toBe('error: --api-url must be an http:// or https:// URL, such as http://127.0.0.1:8080 (got "notaurl")\n');
      const variable = await platform(['workspaces', 'list'], { env: { PLATFORM_API_URL: 'ftp://files.example' } });
      expect(variable.code).toBe(2);
      expect(variable.stderr).toMatch(/^error: PLATFORM_API_URL must be an http:\/\/ or https:\/\/ URL/);
    });

    it('--help shows an example on each command and exits 0', async () => {
      for (const args of [['--help'], ['installs', 'logs', '--help'], ['webhooks', 'listen', '--help']]) {
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
      // Piped: one line a workspace, the id first (what `| cut -f1` takes), the default marked last.
      const line = listed.stdout.split('\n').find((row) => row.startsWith(`${user.workspaceId}\t`));
      expect(line?.split('\t').at(-1)).toBe('*');
      // A flag beats the environment: a wrong --token fails even with a good PLATFORM_TOKEN.
      const flagged = await platform(['--token', 'svc_pat_wrongwrongwrongwrongwrongwrongwrong', 'workspaces', 'list'], { home });
      expect(flagged.code).toBe(1);
      // And the environment beats the file: a wrong PLATFORM_API_URL is used even though the file has none.
      const elsewhere = await platform(['workspaces', 'list', '--json'], { home, env: { PLATFORM_API_URL: `${app.baseUrl}/nowhere` } });
      expect(elsewhere.code).toBe(1);
    });
  });

  describe('invitations', () => {
    it('an owner invites by email; the invitee lists, accepts and leaves', async () => {
      const invitee = await newUser(app.db, systemClock);
      const email = (await app.db.selectFrom('users').select('email').where('id', '=', invitee.userId).executeTakeFirstOrThrow()).email;
      const invited = await platformJson<{ id: string; role: string }>(['workspaces', 'invite', user.workspaceId, email, '--role', 'viewer']);
      expect(invited.role).toBe('viewer');
      const listed = await platform(['workspaces', 'invitations'], { token: invitee.token });
      expect(listed.stdout).toContain(invited.id);
      expect(await platformJson(['workspaces', 'accept', invited.id], { token: invitee.token })).toMatchObject({ user_id: invitee.userId, role: 'viewer' });
      const left = await platform(['workspaces', 'leave', user.workspaceId], { token: invitee.token });
      expect(left.code, left.stderr).toBe(0);
      expect((await platform(['workspaces', 'leave', user.workspaceId])).code).toBe(1);
    });
  });

  describe('workspaces', () => {
    it('create, members list and set-role, pending and revoke-invitation, decline, transfer, members remove, delete', async () => {
      const owner = await newUser(app.db, systemClock);
      const dana = await newUser(app.db, systemClock);
      const erin = await newUser(app.db, systemClock);
      const emailOf = async (u: TestUser) => (await app.db.selectFrom('users').select('email').where('id', '=', u.userId).executeTakeFirstOrThrow()).email;
      const as = (u: TestUser) => ({ token: u.token });
      const created = await platformJson<{ id: string; name: string }>(['workspaces', 'create', '--name', 'Team'], as(owner));
      expect(created.name).toBe('Team');
      const ws = created.id;
      const toDana = await platformJson<{ id: string }>(['workspaces', 'invite', ws, await emailOf(dana)], as(owner));
      await platformJson(['workspaces', 'accept', toDana.id], as(dana));
      const members = await platform(['workspaces', 'members', 'list', ws], as(owner));
      expect(members.stdout).toMatch(new RegExp(`${dana.userId}\\t\\S+\\tmember`));
      expect(await platformJson(['workspaces', 'members', 'set-role', ws, dana.userId, 'viewer'], as(owner))).toMatchObject({ role: 'viewer' });
      expect((await platform(['workspaces', 'members', 'set-role', ws, dana.userId, 'boss'], as(owner))).code).toBe(2);

      const toErin = await platformJson<{ id: string }>(['workspaces', 'invite', ws, await emailOf(erin)], as(owner));
      const toNobody = await platformJson<{ id: string }>(['workspaces', 'invite', ws, 'nobody@elsewhere.example'], as(owner));
      const pending = await platformJson<{ data: { id: string }[] }>(['workspaces', 'pending', ws], as(owner));
      expect(pending.data.map((i) => i.id)).toEqual([toErin.id, toNobody.id]);
      expect((await platform(['workspaces', 'revoke-invitation', ws, toNobody.id], as(owner))).stdout).toContain(`Revoked invitation ${toNobody.id}`);
      expect((await platform(['workspaces', 'decline', toErin.id], as(erin))).stdout).toContain(`Declined invitation ${toErin.id}`);
      expect((await platformJson<{ data: unknown[] }>(['workspaces', 'pending', ws], as(owner))).data).toEqual([]);
      expect((await platformJson<{ data: unknown[] }>(['workspaces', 'invitations'], as(erin))).data).toEqual([]);

      // Transfers and removals ask first; a script says --yes.
      expect((await platform(['workspaces', 'transfer', ws, dana.userId], as(owner))).code).toBe(2);
      expect(await platformJson(['workspaces', 'transfer', ws, dana.userId, '--yes'], as(owner))).toMatchObject({ user_id: dana.userId, role: 'owner' });
      expect((await platform(['workspaces', 'members', 'remove', ws, owner.userId, '--yes'], as(dana))).stdout).toContain(`Removed ${owner.userId}`);
      const left = await platformJson<{ data: { user_id: string }[] }>(['workspaces', 'members', 'list', ws], as(dana));
      expect(left.data.map((m) => m.user_id)).toEqual([dana.userId]);

      // Deleting forgets it as the default workspace.
      const home = configHome();
      await platformJson(['workspaces', 'use', ws], { ...as(dana), home });
      expect((await platform(['workspaces', 'delete', ws], { ...as(dana), home })).code).toBe(2);
      const deleted = await platform(['workspaces', 'delete', ws, '--yes'], { ...as(dana), home });
      expect(deleted.code, deleted.stderr).toBe(0);
      expect(JSON.parse(readFileSync(join(home, 'platform', 'config.json'), 'utf8'))).not.toHaveProperty('workspace');
      expect((await platform(['workspaces', 'use', ws], as(dana))).code).toBe(1);
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
      expect(login.stdout).toContain(`${app.baseUrl}/device`);
      // It says which account approved the code.
      const email = (await app.db.selectFrom('users').select('email').where('id', '=', user.userId).executeTakeFirstOrThrow()).email;
      expect(login.stdout).toContain(`Logged in to ${app.baseUrl} as ${email} (${user.userId}).`);
      const file = join(home, 'platform', 'config.json');
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const stored = JSON.parse(readFileSync(file, 'utf8')) as { token: string; api_url: string };
      expect(stored.token).toMatch(/^[A-Za-z0-9]{32}$/);
      expect(stored.api_url).toBe(app.baseUrl);

      const listed = await platformJson<{ data: { id: string }[] }>(['workspaces', 'list'], { home, token: null });
      expect(listed.data.map((w) => w.id)).toContain(user.workspaceId);

      const logout = await platform(['logout'], { home, token: null });
      expect(logout.code, logout.stderr).toBe(0);
      expect(JSON.parse(readFileSync(file, 'utf8'))).not.toHaveProperty('token');
      const after = await platform(['workspaces', 'list'], { home, token: stored.token });
      expect(after.code).toBe(1);
      expect(after.stderr).toMatch(/401/);
      expect(after.stderr).toContain('Suggestion: Run `platform login`');
    });

    it("logout leaves a token from PLATFORM_TOKEN alone (a CI job's PAT is not ended by it)", async () => {
      const refused = await platform(['logout']);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('not revoked');
      expect((await api().GET('/v1/workspaces')).data.length).toBeGreaterThan(0);
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

  // Two workflows at once, each waiting on its own: run side by side.
  describe.concurrent('compute, products and installs', () => {
    let owner: TestUser;
    let clusterId: string;
    const as = (args: string[], options: RunOptions = {}) => platform(args, { token: owner.token, ...options });
    const asJson = <T>(args: string[], options: RunOptions = {}) => platformJson<T>(args, { token: owner.token, ...options });

    beforeAll(async () => {
      owner = await newUser(app.db, systemClock, 'pro');
      const cluster = await asJson<{ id: string }>(['clusters', 'create', '--name', 'apps', '--region', 'fsn1', '--wait']);
      clusterId = cluster.id;
    });

    it(
      'cloud-credentials create, configs create (BYOM), machines request --wait, list, drift, status, suspend, suspensions get and resume --wait, delete; configs list and delete',
      async () => {
        const client = api(owner.token);
        const stored = await as(['compute', 'cloud-credentials', 'create', '--name', 'own', '--token-file', '-', '--json'], {
          input: 'hcloud-token-0123456789abcdef0123456789abcdef\n',
        });
        expect(stored.code, stored.stderr).toBe(0);
        const credential = JSON.parse(stored.stdout) as { id: string };
        const configFlags = ['--region', 'fsn1', '--image', 'ubuntu-24.04', '--server-types', 'cx2*', '--cloud-credential', credential.id];
        const config = await asJson<{ id: string }>(['compute', 'configs', 'create', '--name', 'byom', ...configFlags]);
        expect(config).toMatchObject({
          name: 'byom',
          provider: 'hcloud',
          provider_config: { provider: 'hcloud', region: 'fsn1', image: 'ubuntu-24.04', machine_type_filter: 'cx2*' },
          cloud_credential_id: credential.id,
        });
        const spare = await asJson<{ id: string }>(['compute', 'configs', 'create', '--name', 'spare', ...configFlags]);

        const requested = await as(['compute', 'machines', 'request', '--cluster', clusterId, '--config', config.id, '--wait', '--timeout', '30', '--json']);
        expect(requested.code, requested.stderr).toBe(0);
        const machine = JSON.parse(requested.stdout) as { provider_id: string; status: string };
        expect(machine.status).toBe('ready');

        expect(await asJson(['compute', 'machines', 'list', '--cluster', clusterId])).toEqual(
          await client.GET('/v1/compute/machines', { params: { query: { cluster_id: clusterId } } }),
        );
        const table = await as(['compute', 'machines', 'list', '--cluster', clusterId]);
        expect(table.stdout).toMatch(new RegExp(`${machine.provider_id}\\t.+\\tready\\t`));
        expect(table.stdout).toMatch(/\d+ cores?\t\d+(\.\d+)? GiB\t/);

        expect(await asJson<{ drifted: boolean }>(['compute', 'drift', machine.provider_id])).toMatchObject({ drifted: false });
        expect(await asJson(['compute', 'status', clusterId])).toMatchObject({ machines: 1, autoscaling: { state: 'idle' } });

        const suspension = await asJson<{ id: string; status: string }>(['compute', 'machines', 'suspend', machine.provider_id]);
        expect(suspension.status).toBe('suspending');
        // Resuming needs the snapshot: wait (through the client) until the suspension is done.
        for (let i = 0; i < 100 && (await client.GET('/v1/compute/suspensions/{id}', { params: { path: { id: suspension.id } } })).status !== 'suspended'; i++)
          await new Promise((r) => setTimeout(r, 100));
        expect((await as(['compute', 'suspensions', 'list'])).stdout).toMatch(new RegExp(`${suspension.id}.+suspended`));
        expect(await asJson(['compute', 'suspensions', 'get', suspension.id])).toEqual(
          await client.GET('/v1/compute/suspensions/{id}', { params: { path: { id: suspension.id } } }),
        );
        expect((await as(['compute', 'suspensions', 'get', suspension.id])).stdout).toMatch(/STATUS\tsuspended/);
        const resumed = await as(['compute', 'suspensions', 'resume', suspension.id, '--wait', '--timeout', '30']);
        expect(resumed.code, resumed.stderr).toBe(0);
        expect(resumed.stdout).toMatch(/STATUS\tresumed/);

        const configs = await asJson<{ data: { id: string }[] }>(['compute', 'configs', 'list']);
        expect(configs.data.map((c) => c.id).sort()).toEqual([config.id, spare.id].sort());
        expect((await as(['compute', 'configs', 'delete', spare.id, '--yes'])).code).toBe(0);
        const gone = await as(['compute', 'machines', 'delete', machine.provider_id, '-y']);
        expect(gone.code, gone.stderr).toBe(0);
        expect(gone.stdout).toContain(`Deleted machine ${machine.provider_id}`);
      },
      WORKFLOWS_MS,
    );

    it(
      'installs create --wait, logs --no-follow --tail 3, logs --follow until Ctrl-C (130); products create, list, get, update --file; a failed install exits 3; installs update --wait, revisions, rollback --wait, delete; products delete',
      async () => {
        const client = api(owner.token);
        const productFile = join(configHome(), 'new-product.yaml');
        writeFileSync(
          productFile,
          `name: Shop\ncluster_ids: [${clusterId}]\nsources:\n  - chart: { repo_url: 'https://charts.bitnami.com/bitnami', target_revision: '19.6.1', chart: wordpress }\n    values: { replicaCount: 1 }\n`,
        );
        const createdProduct = await as(['products', 'create', '--file', productFile, '--json']);
        expect(createdProduct.code, createdProduct.stderr).toBe(0);
        const product = JSON.parse(createdProduct.stdout) as { id: string; sources: { id: string }[] };
        expect(await client.GET('/v1/products/{id}', { params: { path: { id: product.id } } })).toMatchObject({
          name: 'Shop',
          sources: [{ chart: { chart: 'wordpress' } }],
        });
        const values = join(configHome(), 'values.yaml');
        writeFileSync(values, 'replicaCount: 2\n');
        const created = await as([
          'installs',
          'create',
          '--product',
          product.id,
          '--region',
          'fsn1',
          '--values',
          `wordpress=${values}`,
          '--wait',
          '--timeout',
          '30',
        ]);
        expect(created.code, created.stderr).toBe(0);
        const id = /ins_[0-9a-z]+/.exec(created.stdout)?.[0] ?? '';
        expect(created.stdout).toMatch(/STATUS\trunning/);
        const install = await client.GET('/v1/installs/{id}', { params: { path: { id } } });
        expect(install.overrides).toEqual([{ template_helm_source_id: product.sources[0]!.id, values: { replicaCount: 2 } }]);
        expect(await asJson(['installs', 'get', id])).toEqual(install);
        expect((await asJson<{ data: { id: string }[] }>(['installs', 'list'])).data.map((i) => i.id)).toEqual([id]);

        const logs = await as(['installs', 'logs', id, '--no-follow', '--tail', '3']);
        expect(logs.code, logs.stderr).toBe(0);
        const lines = logs.stdout.trimEnd().split('\n');
        expect(lines).toHaveLength(3);
        for (const line of lines) expect(line).toMatch(/^\S+\/\S+ .+/);
        const ndjson = await as(['installs', 'logs', id, '--no-follow', '--tail', '2', '--json']);
        expect(
          ndjson.stdout
            .trimEnd()
            .split('\n')
            .map((line) => JSON.parse(line) as unknown),
        ).toEqual([expect.objectContaining({ line: expect.any(String) }), expect.objectContaining({ pod: expect.any(String) })]);

        // Followed: the stream stays open; Ctrl-C (SIGINT) ends it with 130 once lines have come.
        let interrupted = false;
        const followed = await as(['installs', 'logs', id, '--tail', '1'], {
          onOutput: (stdout, running) => {
            if (!interrupted && stdout.split('\n').length > 3) {
              interrupted = true;
              running.interrupt();
            }
          },
        });
        expect(followed.code, followed.stderr).toBe(130);
        expect(interrupted).toBe(true);

        const products = await asJson<{ data: { id: string }[] }>(['products', 'list']);
        expect(products).toEqual(await client.GET('/v1/products'));
        expect((await as(['products', 'list'])).stdout).toContain('wordpress@19.6.1');
        expect(await asJson(['products', 'get', product.id])).toEqual(await client.GET('/v1/products/{id}', { params: { path: { id: product.id } } }));
        const file = join(configHome(), 'product.yaml');
        writeFileSync(
          file,
          `name: Shop 2\ncluster_ids: [${clusterId}]\nsources:\n  - id: ${product.sources[0]!.id}\n    chart: { repo_url: 'https://charts.bitnami.com/bitnami', target_revision: '19.7.0', chart: wordpress }\n`,
        );
        const updated = await as(['products', 'update', product.id, '--file', file]);
        expect(updated.code, updated.stderr).toBe(0);
        expect(updated.stdout).toMatch(/NEW TEMPLATE\t\S+/);
        expect(await client.GET('/v1/products/{id}', { params: { path: { id: product.id } } })).toMatchObject({
          name: 'Shop 2',
          sources: [{ chart: { target_revision: '19.7.0' } }],
        });
        const invalid = await as(['products', 'update', product.id, '--file', file.replace('.yaml', '.missing')]);
        expect(invalid.code).toBe(2);

        // No cluster of the product runs in hel1: the install fails, and --wait says so with exit 3.
        const failed = await as(['installs', 'create', '--product', product.id, '--region', 'hel1', '--wait', '--timeout', '30', '--json']);
        expect(failed.code, failed.stderr).toBe(3);
        expect(JSON.parse(failed.stdout)).toMatchObject({ status: 'failed' });

        writeFileSync(values, 'replicaCount: 4\n');
        const upgraded = await as(['installs', 'update', id, '--values', `wordpress=${values}`, '--wait', '--timeout', '30', '--json']);
        expect(upgraded.code, upgraded.stderr).toBe(0);
        expect(JSON.parse(upgraded.stdout)).toMatchObject({ status: 'running', overrides: [{ values: { replicaCount: 4 } }] });
        const revisions = await as(['installs', 'revisions', id], { columns: 200 });
        expect(revisions.code, revisions.stderr).toBe(0);
        expect(revisions.stdout).toMatch(/^REVISION +TEMPLATE/);
        expect(await asJson(['installs', 'revisions', id])).toEqual(await client.GET('/v1/installs/{id}/revisions', { params: { path: { id } } }));
        const rolledBack = await as(['installs', 'rollback', id, '--revision', '1', '--wait', '--timeout', '30', '--json']);
        expect(rolledBack.code, rolledBack.stderr).toBe(0);
        expect(JSON.parse(rolledBack.stdout)).toMatchObject({ status: 'running', overrides: [{ values: { replicaCount: 2 } }] });

        // Uninstalled, the installs go; then the product can be deleted.
        expect((await as(['products', 'delete', product.id, '--yes'])).code).not.toBe(0);
        const uninstalled = await as(['installs', 'delete', id, '--yes', '--json']);
        expect(uninstalled.code, uninstalled.stderr).toBe(0);
        expect(JSON.parse(uninstalled.stdout)).toMatchObject({ id, status: 'uninstalling' });
        const ids = [id, (JSON.parse(failed.stdout) as { id: string }).id];
        expect((await as(['installs', 'delete', ids[1]!, '--yes'])).code).toBe(0);
        const remaining = async () => (await client.GET('/v1/installs', { params: { query: { limit: 100 } } })).data.filter((i) => ids.includes(i.id));
        for (const deadline = Date.now() + 20_000; (await remaining()).length > 0 && Date.now() < deadline; )
          await new Promise((resolve) => setTimeout(resolve, 100));
        const deleted = await as(['products', 'delete', product.id, '--yes']);
        expect(deleted.code, deleted.stderr).toBe(0);
        expect(deleted.stdout).toContain(`Deleted product ${product.id}`);
      },
      WORKFLOWS_MS,
    );
  });

  describe('helm values files', () => {
    it('installs create --values <source>=<file>: sources named by metadata.name, chart, path or id; unknown, ambiguous and repeated names exit 2; --override-file still works', async () => {
      const someone = await newUser(app.db, systemClock, 'pro');
      const client = api(someone.token);
      const as = (args: string[]) => platform(args, { token: someone.token });
      const asJson = <T>(args: string[]) => platformJson<T>(args, { token: someone.token });
      const clusterId = (await client.POST('/v1/clusters', { body: { name: 'stack', region_id: 'fsn1' } })).id;
      const dir = configHome();
      const productFile = join(dir, 'product.yaml');
      writeFileSync(
        productFile,
        `name: Stack\ncluster_ids: [${clusterId}]\nsources:\n` +
          `  - chart: { repo_url: 'https://charts.example.com', target_revision: '1.0.0', chart: shop }\n` +
          `  - chart: { repo_url: 'https://git.example.com/stack.git', target_revision: main, path: deploy/charts/web/ }\n` +
          `  - chart: { repo_url: 'https://charts.example.com', target_revision: '2.0.0', chart: postgresql }\n    metadata: { name: db }\n` +
          `  - chart: { repo_url: 'https://charts.example.com', target_revision: '3.0.0', chart: cache }\n` +
          `  - chart: { repo_url: 'https://mirror.example.com', target_revision: '3.0.1', chart: cache }\n`,
      );
      const product = await asJson<{ id: string; sources: { id: string }[] }>(['products', 'create', '--file', productFile]);
      const [shop, web, db, cache, mirror] = product.sources.map((s) => s.id);
      expect((await as(['products', 'get', product.id])).stdout).toMatch(
        /SOURCES\tshop@1\.0\.0, web: deploy\/charts\/web\/@main, db: postgresql@2\.0\.0, cache@3\.0\.0, cache@3\.0\.1/,
      );
      const file = (name: string, text: string) => {
        writeFileSync(join(dir, name), text);
        return join(dir, name);
      };
      const shopValues = file('shop.yaml', 'replicaCount: 3\nimage:\n  tag: "1.2"\n');
      const webValues = file('web.json', '{"ingress": {"host": "shop.example.com"}}');
      const dbValues = file('db.yaml', 'auth:\n  database: shop\n');
      const empty = file('empty.yaml', '');

      const install = await asJson<{ id: string }>([
        'installs',
        'create',
        '--product',
        product.id,
        '--region',
        'fsn1',
        '--values',
        `shop=${shopValues}`,
        '--values',
        `web=${webValues}`,
        '--values',
        `db=${dbValues}`,
        '--values',
        `${mirror}=${empty}`,
      ]);
      expect((await client.GET('/v1/installs/{id}', { params: { path: { id: install.id } } })).overrides).toEqual([
        { template_helm_source_id: shop, values: { replicaCount: 3, image: { tag: '1.2' } } },
        { template_helm_source_id: web, values: { ingress: { host: 'shop.example.com' } } },
        { template_helm_source_id: db, values: { auth: { database: 'shop' } } },
        { template_helm_source_id: mirror, values: {} },
      ]);

      const before = (await client.GET('/v1/installs')).data.length;
      const unknown = await as(['installs', 'create', '--product', product.id, '--region', 'fsn1', '--values', `nginx=${shopValues}`]);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toContain(
        `product ${product.id} has no source named nginx. Its sources: shop (${shop}), web (${web}), db (${db}), cache (${cache}), cache (${mirror})`,
      );
      const ambiguous = await as(['installs', 'create', '--product', product.id, '--region', 'fsn1', '--values', `cache=${empty}`]);
      expect(ambiguous.code).toBe(2);
      expect(ambiguous.stderr).toContain(`2 sources of product ${product.id} are named cache; name one by its id: ${cache}, ${mirror}`);
      const twice = await as([
        'installs',
        'create',
        '--product',
        product.id,
        '--region',
        'fsn1',
        '--values',
        `shop=${shopValues}`,
        '--values',
        `${shop}=${empty}`,
      ]);
      expect(twice.code).toBe(2);
      expect(twice.stderr).toContain('is given twice');
      expect((await as(['installs', 'create', '--product', product.id, '--region', 'fsn1', '--values', shopValues])).stderr).toContain(
        'expected <source>=<file>',
      );
      const list = file('list.yaml', '- 1\n- 2\n');
      expect((await as(['installs', 'create', '--product', product.id, '--region', 'fsn1', '--values', `shop=${list}`])).stderr).toContain(
        'must hold a map of helm values',
      );
      expect((await client.GET('/v1/installs')).data.length).toBe(before);

      const overrides = file('overrides.yaml', `- template_helm_source_id: ${cache}\n  values:\n    size: 2\n`);
      const both = await asJson<{ id: string }>([
        'installs',
        'create',
        '--product',
        product.id,
        '--region',
        'fsn1',
        '--values',
        `web=${webValues}`,
        '--override-file',
        overrides,
      ]);
      expect((await client.GET('/v1/installs/{id}', { params: { path: { id: both.id } } })).overrides).toEqual([
        { template_helm_source_id: web, values: { ingress: { host: 'shop.example.com' } } },
        { template_helm_source_id: cache, values: { size: 2 } },
      ]);
    });
  });

  // Independent of each other (quotas and the timeout on users of their own): side by side.
  describe.concurrent('tokens, quotas, notifications, registry credentials', () => {
    it('tokens create, list, revoke; the revoked token no longer works', async () => {
      const created = await platformJson<{ id: string; token: string; scopes: string[] }>([
        'tokens',
        'create',
        '--name',
        'ci',
        '--scope',
        'workspaces:read',
        '--scope',
        'clusters:read',
        '--expires-at',
        '2099-01-31',
      ]);
      expect(created.token).toMatch(/^svc_pat_/);
      expect(created).toMatchObject({ name: 'ci', expires_at: Date.parse('2099-01-31') / 1000, scopes: ['workspaces:read', 'clusters:read'] });
      expect((await platform(['workspaces', 'list'], { token: created.token })).code).toBe(0);
      // Outside its scopes: tokens:read.
      expect((await platform(['tokens', 'list'], { token: created.token })).stderr).toContain('tokens:read');
      const table = await platform(['tokens', 'list']);
      expect(table.stdout).toMatch(new RegExp(`${created.id}\\tci\\tsvc_pat_`));
      expect(table.stdout).not.toContain(created.token);
      expect((await platform(['tokens', 'revoke', created.id])).code).toBe(2);
      const revoked = await platform(['tokens', 'revoke', created.id, '--yes']);
      expect(revoked.stdout).toContain(`Revoked token ${created.id}`);
      expect((await platform(['workspaces', 'list'], { token: created.token })).code).toBe(1);
      expect((await platform(['tokens', 'create', '--name', 'x', '--scope', '*', '--expires-at', 'someday'])).code).toBe(2);
    });

    it('tokens create --workspace-ids restricts a token to workspaces; tokens get shows them', async () => {
      const restricted = await platformJson<{ id: string; token: string; scopes: string[]; workspace_ids: string[] }>([
        'tokens',
        'create',
        '--name',
        'one-workspace',
        '--scope',
        'workspaces:read,clusters:read',
        '--workspace-ids',
        user.workspaceId,
      ]);
      expect(restricted).toMatchObject({ scopes: ['workspaces:read', 'clusters:read'], workspace_ids: [user.workspaceId] });
      const shown = await platform(['tokens', 'get', restricted.id]);
      expect(shown.stdout).toMatch(new RegExp(`WORKSPACES\\t${user.workspaceId}`));
      const listed = await platformJson<{ data: { id: string }[] }>(['workspaces', 'list'], { token: restricted.token });
      expect(listed.data.map((w) => w.id)).toEqual([user.workspaceId]);
      const refused = await platform(['tokens', 'create', '--name', 'x', '--scope', '*', '--workspace-ids', 'ws_nope']);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('workspace ws_nope');
      await platform(['tokens', 'revoke', restricted.id, '--yes']);
    });

    it('sessions list marks the current one; revoke-others ends the rest, revoke <id> one', async () => {
      const someone = await newUser(app.db, systemClock, 'free');
      const session = async () =>
        (await createToken(app.db, systemClock, { userId: someone.userId, kind: 'session', name: 'platform-cli', expiresAt: null })).secret;
      const [here, there, elsewhere] = [await session(), await session(), await session()];
      const listed = await platformJson<{ data: { id: string; current: boolean }[] }>(['sessions', 'list'], { token: here });
      expect(listed.data).toHaveLength(3);
      const current = listed.data.find((s) => s.current)!;
      expect((await platform(['sessions', 'list'], { token: here })).stdout).toContain(`${current.id} *`);
      expect((await platform(['sessions', 'revoke-others'], { token: here })).code).toBe(2);
      expect(await platformJson(['sessions', 'revoke-others', '--yes'], { token: here })).toEqual({ revoked: 2 });
      expect((await platform(['workspaces', 'list'], { token: there })).code).toBe(1);
      expect((await platform(['workspaces', 'list'], { token: elsewhere })).code).toBe(1);
      const revoked = await platform(['sessions', 'revoke', current.id, '--yes'], { token: someone.token });
      expect(revoked.stdout).toContain(`Revoked session ${current.id}`);
      expect((await platform(['workspaces', 'list'], { token: here })).code).toBe(1);
    });

    it('quotas list and get, notifications list --unread and read', async () => {
      const someone = await newUser(app.db, systemClock, 'free');
      const options = { token: someone.token };
      // A running cluster: it fills the free plan's cluster quota and tells the workspace it is ready.
      const cluster = await platformJson<{ id: string }>(['clusters', 'create', '--name', 'one', '--region', 'fsn1', '--wait'], options);
      const quotas = await platformJson<{ metric: string }[]>(['quotas', 'list'], options);
      expect(quotas).toEqual(await api(someone.token).GET('/v1/quotas'));
      expect(quotas).toContainEqual(expect.objectContaining({ metric: 'kaas/clusters', usage: 1, limit: 1, remaining: 0 }));
      const table = (await platform(['quotas', 'list'], options)).stdout;
      expect(table).toMatch(/^kaas\/clusters\t.+\t1\t1\t0$/m);
      // The free plan: 2 cores and 4 GiB, none used yet (the cluster has no machines).
      expect(table).toMatch(/^compute\/cpu\t.+\t0 cores\t2 cores\t2 cores$/m);
      expect(table).toMatch(/^compute\/memory\t.+\t0 GiB\t4 GiB\t4 GiB$/m);
      expect(table).not.toContain(String(4 * 2 ** 30));
      expect((await platform(['quotas', 'get', 'compute/memory'], options)).stdout).toMatch(/LIMIT\t4 GiB/);
      const one = await platformJson(['quotas', 'get', 'kaas/clusters'], options);
      expect(one).toEqual(quotas.find((q) => q.metric === 'kaas/clusters'));
      expect(await platformJson(['quotas', 'list', '--cluster', cluster.id], options)).toContainEqual(
        expect.objectContaining({ metric: 'compute/provisioning' }),
      );

      const unread = await platformJson<{ data: { id: string; type: string; read_at: number | null }[] }>(['notifications', 'list', '--unread'], options);
      const ready = unread.data.find((n) => n.type === 'cluster.running');
      expect(ready?.read_at).toBeNull();
      expect((await platform(['notifications', 'list'], options)).stdout).toContain('cluster.running');
      const read = await platformJson<{ read_at: number | null }>(['notifications', 'read', ready!.id], options);
      expect(read.read_at).toEqual(expect.any(Number));
      expect((await platformJson<{ data: { id: string }[] }>(['notifications', 'list', '--unread'], options)).data.map((n) => n.id)).not.toContain(ready!.id);
    });

    it('registry credentials create (password from stdin), list, delete', async () => {
      const created = await platform(
        ['registry', 'credentials', 'create', '--name', 'ghcr', '--registry', 'ghcr.io', '--username', 'bot', '--password-stdin', '--json'],
        { input: 'registry-secret-123\n' },
      );
      expect(created.code, created.stderr).toBe(0);
      const credential = JSON.parse(created.stdout) as { id: string; is_active: boolean };
      expect(credential.is_active).toBe(true);
      expect(created.stdout).not.toContain('registry-secret-123');
      expect((await platformJson<{ data: { id: string }[] }>(['registry', 'credentials', 'list'])).data.map((c) => c.id)).toContain(credential.id);
      expect((await platform(['registry', 'credentials', 'list'])).stdout).toMatch(/ghcr\tghcr\.io/);
      expect((await platform(['registry', 'credentials', 'create', '--name', 'x', '--registry', 'ghcr.io', '--username', 'bot'])).code).toBe(2);
      const rotated = await platform(['registry', 'credentials', 'rotate', credential.id, '--password-stdin', '--inactive', '--json'], {
        input: 'registry-secret-456\n',
      });
      expect(rotated.code, rotated.stderr).toBe(0);
      expect(JSON.parse(rotated.stdout)).toMatchObject({ id: credential.id, is_active: false });
      expect((await platformJson<{ is_active: boolean }>(['registry', 'credentials', 'get', credential.id])).is_active).toBe(false);
      expect((await platform(['registry', 'credentials', 'rotate', credential.id])).code).toBe(2);
      expect((await platform(['registry', 'credentials', 'delete', credential.id])).code).toBe(2);
      expect((await platform(['registry', 'credentials', 'delete', credential.id, '--yes'])).code).toBe(0);
    });

    it('compute cloud-credentials: the token from a file or stdin (never a flag), list, get, rotate, delete; configs create on the platform’s account or a credential', async () => {
      const someone = await newUser(app.db, systemClock, 'pro');
      const client = api(someone.token);
      // Through a proxy that keeps what the CLI sent: the secret never comes back from the API.
      const proxy = await startProxy();
      const options = { token: someone.token, env: { PLATFORM_API_URL: proxy.url } };
      try {
        const tokenFile = join(configHome(), 'hcloud-token');
        writeFileSync(tokenFile, 'hc_from_file_0123456789abcdef\n');
        const fromFile = await platformJson<{ id: string; name: string; provider: string; is_active: boolean }>(
          ['compute', 'cloud-credentials', 'create', '--name', 'from-file', '--token-file', tokenFile],
          options,
        );
        expect(fromFile).toMatchObject({ name: 'from-file', provider: 'hcloud', is_active: true });
        const fromStdin = await platform(['compute', 'cloud-credentials', 'create', '--name', 'from-stdin', '--token-file', '-'], {
          ...options,
          input: 'hc_from_stdin_0123456789abcdef\r\n',
        });
        expect(fromStdin.code, fromStdin.stderr).toBe(0);
        expect(fromStdin.stdout).toMatch(/NAME\tfrom-stdin/);
        expect(fromStdin.stdout).not.toContain('hc_from_stdin');
        // The token as it is in the file or on stdin, without the line's end.
        expect(proxy.bodies('POST', '/v1/compute/cloud_credentials')).toEqual([
          { name: 'from-file', provider: 'hcloud', secret: 'hc_from_file_0123456789abcdef' },
          { name: 'from-stdin', provider: 'hcloud', secret: 'hc_from_stdin_0123456789abcdef' },
        ]);

        const listed = await platformJson<{ data: { id: string }[] }>(['compute', 'cloud-credentials', 'list'], options);
        expect(listed).toEqual(await client.GET('/v1/compute/cloud_credentials'));
        expect(listed.data).toHaveLength(2);
        expect((await platform(['compute', 'cloud-credentials', 'list'], options)).stdout).toMatch(/from-file\thcloud\ttrue/);
        expect(await platformJson(['compute', 'cloud-credentials', 'get', fromFile.id], options)).toEqual(
          await client.GET('/v1/compute/cloud_credentials/{id}', { params: { path: { id: fromFile.id } } }),
        );

        const rotated = await platformJson<{ name: string; is_active: boolean }>(
          ['compute', 'cloud-credentials', 'rotate', fromFile.id, '--token-file', '-', '--name', 'rotated', '--inactive'],
          { ...options, input: 'hc_rotated_0123456789abcdef\n' },
        );
        expect(rotated).toMatchObject({ name: 'rotated', is_active: false });
        expect(proxy.bodies('PATCH', `/v1/compute/cloud_credentials/${fromFile.id}`)).toEqual([
          { secret: 'hc_rotated_0123456789abcdef', name: 'rotated', is_active: false },
        ]);

        // An inactive credential cannot make new configs; the suggestion names the command that activates it.
        const configFlags = ['--region', 'fsn1', '--image', 'ubuntu-24.04', '--server-types', 'cx2*'];
        const refused = await platform(['compute', 'configs', 'create', '--name', 'byom', ...configFlags, '--cloud-credential', fromFile.id], options);
        expect(refused.code).toBe(1);
        expect(refused.stderr).toContain('(422 validation_error)');
        expect(refused.stderr).toContain('`platform compute cloud-credentials rotate <id>`');
        expect((await platform(['compute', 'cloud-credentials', 'rotate', fromFile.id, '--active'], options)).code).toBe(0);
        const byom = await platformJson<{ id: string; cloud_credential_id: string }>(
          ['compute', 'configs', 'create', '--name', 'byom', ...configFlags, '--cloud-credential', fromFile.id],
          options,
        );
        expect(byom.cloud_credential_id).toBe(fromFile.id);
        const platformAccount = await platform(['compute', 'configs', 'create', '--name', 'platform', ...configFlags], options);
        expect(platformAccount.code, platformAccount.stderr).toBe(0);
        expect(platformAccount.stdout).toMatch(/CREDENTIAL\t\(platform\)/);

        // Still used by a config: 409; deleted once the config is gone, after the confirmation.
        const inUse = await platform(['compute', 'cloud-credentials', 'delete', fromFile.id, '--yes'], options);
        expect(inUse.code).toBe(1);
        expect(inUse.stderr).toContain('(409 conflict)');
        expect((await platform(['compute', 'configs', 'delete', byom.id, '--yes'], options)).code).toBe(0);
        const unconfirmed = await platform(['compute', 'cloud-credentials', 'delete', fromFile.id], options);
        expect(unconfirmed.code).toBe(2);
        expect(unconfirmed.stderr).toContain(`Delete cloud credential ${fromFile.id}: not confirmed`);
        const deleted = await platform(['compute', 'cloud-credentials', 'delete', fromFile.id, '--yes'], options);
        expect(deleted.code, deleted.stderr).toBe(0);
        expect(deleted.stdout).toContain(`Deleted cloud credential ${fromFile.id}`);
        expect((await platform(['compute', 'cloud-credentials', 'get', fromFile.id], options)).stderr).toContain('(404 not_found)');

        // Usage errors, before any request: no token, an unreadable or empty one, nothing to change.
        const sent = proxy.bodies('POST', '/v1/compute/cloud_credentials').length;
        for (const [args, input, message] of [
          [['create', '--name', 'x'], undefined, "required option '--token-file <path>' not specified"],
          [['create', '--name', 'x', '--token-file', join(configHome(), 'missing')], undefined, '--token-file: cannot read'],
          [['create', '--name', 'x', '--token-file', '-'], '\n', '--token-file: standard input is empty'],
          [['create', '--name', 'x', '--token-file', '-', '--provider', 'aws'], 'hc_x', "argument 'aws' is invalid"],
          [['rotate', fromStdin.stdout.match(/ID\t(\S+)/)![1]!], undefined, 'give what to change'],
        ] as const) {
          const run = await platform(['compute', 'cloud-credentials', ...args], { ...options, input });
          expect(run.code, args.join(' ')).toBe(2);
          expect(run.stderr).toContain(message);
        }
        expect(proxy.bodies('POST', '/v1/compute/cloud_credentials')).toHaveLength(sent);
      } finally {
        await proxy.close();
      }
    });

    it("audit list: the workspace's with filters, --mine, and a usage error", async () => {
      const someone = await newUser(app.db, systemClock, 'free');
      const options = { token: someone.token };
      const workspace = await api(someone.token).POST('/v1/workspaces', { body: { name: 'audited' } });
      expect((await platform(['workspaces', 'rename', someone.workspaceId, '--name', 'renamed'], options)).code).toBe(0);
      type Page = { data: { operation: string; actor_id: string; target_ids: string[] }[] };
      const listed = await platformJson<Page>(['audit', 'list'], options);
      expect(listed).toEqual(await api(someone.token).GET('/v1/audit_events'));
      expect(listed.data.map((e) => e.operation)).toEqual(['updateWorkspace']);
      const mine = await platformJson<Page>(['audit', 'list', '--mine', '--target', workspace.id], options);
      expect(mine.data).toMatchObject([{ operation: 'createWorkspace', actor_id: someone.userId, target_ids: [workspace.id] }]);
      const since = await platformJson<Page>(
        ['audit', 'list', '--mine', '--operation', 'updateWorkspace', '--since', '2000-01-01', '--until', '4000000000'],
        options,
      );
      expect(since.data).toHaveLength(1);
      expect((await platform(['audit', 'list', '--mine', '--since', '2099-01-01'], options)).stdout).not.toContain('updateWorkspace');
      expect((await platform(['audit', 'list'], options)).stdout).toMatch(/updateWorkspace\t.*succeeded 200/);
      expect((await platform(['audit', 'list', '--mine', '--actor', someone.userId], options)).code).toBe(2);
      expect((await platform(['audit', 'list', '--since', 'yesterday'], options)).code).toBe(2);
    });

    it('--wait gives up with exit 4 after --timeout', async () => {
      const other = await newUser(app.db, systemClock, 'free');
      // The cluster cannot come up meanwhile, however slowly this machine runs the CLI.
      const release = await holdControlPlanes(app.db, app.runtime.cloud!);
      try {
        const run = await platform(['clusters', 'create', '--name', 'slow', '--region', 'fsn1', '--wait', '--timeout', '0'], { token: other.token });
        expect(run.code, run.stderr).toBe(4);
        expect(run.stderr).toContain('Timed out');
      } finally {
        await release();
      }
    });
  });
  describe('events', () => {
    it(
      'list with --type and --object; follow prints only new events until Ctrl-C (130), --json one event a line, --all from the oldest, --after from an event',
      async () => {
        const someone = await newUser(app.db, systemClock, 'pro');
        const client = api(someone.token);
        const options = { token: someone.token };
        const before = await platformJson<{ id: string }>(['clusters', 'create', '--name', 'before', '--region', 'fsn1', '--wait'], options);
        type Event = { id: string; type: string; object_id: string };
        const listed = await platformJson<{ data: Event[] }>(['events', 'list'], options);
        expect(listed).toEqual(await client.GET('/v1/events'));
        expect(listed.data.map((e) => [e.type, e.object_id])).toEqual([
          ['cluster.created', before.id],
          ['cluster.running', before.id],
        ]);
        const running = await platformJson<{ data: Event[] }>(['events', 'list', '--type', 'cluster.running', '--object', before.id], options);
        expect(running.data).toEqual([listed.data[1]]);
        expect((await platformJson<{ data: Event[] }>(['events', 'list', '--object', 'cl_other'], options)).data).toEqual([]);
        const table = await platform(['events', 'list', '--limit', '1'], options);
        expect(table.stdout).toMatch(new RegExp(`${listed.data[0]!.id}\\t.+\\tcluster\\.created\\tcluster ${before.id}`));
        expect(table.stderr).toMatch(/^More results: add --cursor \S+$/m);

        const ready = /Following the events of your default workspace \(Ctrl-C to stop\)\.\n/;
        const lines = await startRunning(['events', 'follow'], ready, options);
        const json = await startRunning(['events', 'follow', '--json', '--type', 'cluster.running'], ready, options);
        const all = await startRunning(['events', 'follow', '--all', '--type', 'cluster.created'], ready, options);
        const after = await startRunning(['events', 'follow', '--after', listed.data[0]!.id, '--json'], ready, options);
        const during = await client.POST('/v1/clusters', { body: { name: 'during', region_id: 'fsn1' } });
        const count = (text: string) => text.split('\n').length - 1;
        await until('the new events', () => count(lines.stdout()) >= 2 && count(json.stdout()) >= 1 && count(all.stdout()) >= 2 && count(after.stdout()) >= 3);
        const runs = await Promise.all([lines, json, all, after].map((follower) => follower.stop()));
        for (const run of runs) expect(run.code, run.stderr).toBe(130);

        const events = (await client.GET('/v1/events')).data;
        const of = (type: string, objectId: string) => events.find((e) => e.type === type && e.object_id === objectId)!;
        const timePattern = '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ';
        expect(runs[0]!.stdout.trimEnd().split('\n')).toEqual([
          expect.stringMatching(new RegExp(`^${timePattern}  cluster\\.created +  cluster ${during.id}$`)),
          expect.stringMatching(new RegExp(`^${timePattern}  cluster\\.running +  cluster ${during.id}$`)),
        ]);
        const parse = (stdout: string) =>
          stdout
            .trimEnd()
            .split('\n')
            .map((line) => JSON.parse(line) as unknown);
        expect(parse(runs[1]!.stdout)).toEqual([of('cluster.running', during.id)]);
        expect(runs[2]!.stdout).toContain(`cluster ${before.id}`);
        expect(runs[2]!.stdout).toContain(`cluster ${during.id}`);
        expect(runs[2]!.stdout).not.toContain('cluster.running');
        expect(parse(runs[3]!.stdout)).toEqual([of('cluster.running', before.id), of('cluster.created', during.id), of('cluster.running', during.id)]);

        for (const [args, message] of [
          [['follow', '--all', '--after', listed.data[0]!.id], 'give --all or --after, not both'],
          [['list', '--type', 'cluster.exploded'], 'unknown event type cluster.exploded'],
          [['follow', '--type', 'cluster.created,cluster.running'], 'expected one event type'],
        ] as const) {
          const run = await platform(['events', ...args], options);
          expect(run.code, args.join(' ')).toBe(2);
          expect(run.stderr).toContain(message);
        }
        const unknown = await platform(['events', 'follow', '--after', 'evt_unknown'], options);
        expect(unknown.code).toBe(1);
        expect(unknown.stderr).toContain('(422 validation_error)');
        expect(unknown.stderr).toContain('Suggestion: Give --after the id of an event of the workspace (`platform events list` shows them)');
      },
      WORKFLOWS_MS,
    );
  });

  describe('webhook endpoints', () => {
    it(
      'create shows the secret once; deliveries are signed with it; list, get, update --disable cancels, deliveries list --status, redeliver once enabled, rotate-secret --overlap signs with both, delete asks',
      async () => {
        const someone = await newUser(app.db, systemClock, 'pro');
        const client = api(someone.token);
        const options = { token: someone.token };
        let answer = 500;
        const receiver = await startReceiver(() => answer);
        try {
          const created = await platform(
            ['webhooks', 'create', '--url', receiver.url, '--events', 'cluster.created,cluster.failed', '--description', 'deploy bot'],
            options,
          );
          expect(created.code, created.stderr).toBe(0);
          const id = /ID\t(whe_\S+)/.exec(created.stdout)![1]!;
          const secret = /SECRET\t(whsec_\S+)/.exec(created.stdout)![1]!;
          expect(created.stdout).toMatch(/EVENTS\tcluster\.created cluster\.failed/);
          expect(created.stderr).toContain('Store the signing secret now: it cannot be shown again.');

          // Never shown again: not by get, list or their JSON.
          const shown = await platformJson<Record<string, unknown>>(['webhooks', 'get', id], options);
          expect(shown).toEqual(await client.GET('/v1/webhook_endpoints/{id}', { params: { path: { id } } }));
          expect(shown).toMatchObject({ url: receiver.url, event_types: ['cluster.created', 'cluster.failed'], description: 'deploy bot', enabled: true });
          expect(shown).not.toHaveProperty('secret');
          const listed = await platformJson(['webhooks', 'list'], options);
          expect(listed).toEqual(await client.GET('/v1/webhook_endpoints'));
          const table = await platform(['webhooks', 'list'], options);
          expect(table.stdout).toMatch(new RegExp(`${id}\\t${receiver.url}\\t`));
          for (const run of [JSON.stringify(listed), table.stdout, (await platform(['webhooks', 'get', id], options)).stdout])
            expect(run).not.toContain(secret);

          // The receiver fails the first delivery: it stays pending until the endpoint is disabled, which cancels it.
          const cluster = await client.POST('/v1/clusters', { body: { name: 'hooked', region_id: 'fsn1' } });
          await until('the first attempt', () => receiver.received.length >= 1);
          expect(verified(receiver.received[0]!, secret)).toMatchObject({ type: 'cluster.created', object_id: cluster.id });
          type Deliveries = { data: { id: string; event_type: string; status: string; attempts: number; last_response_status: number | null }[] };
          const deliveries = (status: string) => platformJson<Deliveries>(['webhooks', 'deliveries', 'list', id, '--status', status], options);
          await eventually(
            'the failure recorded',
            () => client.GET('/v1/webhook_endpoints/{id}/deliveries', { params: { path: { id } } }),
            (page) => page.data[0]?.last_response_status === 500,
          );
          const disabled = await platformJson<{ enabled: boolean; disabled_reason: string }>(['webhooks', 'update', id, '--disable'], options);
          expect(disabled.enabled).toBe(false);
          const cancelled = await deliveries('cancelled');
          expect(cancelled.data).toMatchObject([{ event_type: 'cluster.created', status: 'cancelled', last_response_status: 500 }]);
          expect((await deliveries('pending')).data).toEqual([]);
          const delivery = cancelled.data[0]!;
          const listedTable = await platform(['webhooks', 'deliveries', 'list', id], options);
          expect(listedTable.stdout).toMatch(new RegExp(`${delivery.id}\\t.+\\tcluster\\.created\\tcancelled\\t`));

          const whileDisabled = await platform(['webhooks', 'deliveries', 'redeliver', id, delivery.id], options);
          expect(whileDisabled.code).toBe(1);
          expect(whileDisabled.stderr).toContain('(409 conflict)');
          const enabled = await platform(['webhooks', 'update', id, '--enable'], options);
          expect(enabled.stdout).toMatch(/ENABLED\tyes/);
          answer = 200;
          const redelivered = await platformJson<{ id: string; status: string }>(['webhooks', 'deliveries', 'redeliver', id, delivery.id], options);
          expect(redelivered).toMatchObject({ id: delivery.id, status: 'pending' });
          const succeeded = await eventually(
            'the redelivery',
            () => deliveries('succeeded'),
            (page) => page.data.length > 0,
          );
          expect(verified(receiver.received.at(-1)!, secret)).toMatchObject({ type: 'cluster.created', object_id: cluster.id });
          expect(succeeded.data).toMatchObject([{ id: delivery.id, status: 'succeeded', last_response_status: 200 }]);
          expect(succeeded.data[0]!.attempts).toBeGreaterThanOrEqual(2);

          // A new secret, shown once; for the overlap the deliveries carry a signature by each.
          const before = Math.floor(Date.now() / 1000);
          const rotation = await platform(['webhooks', 'rotate-secret', id, '--overlap', '3600'], options);
          expect(rotation.code, rotation.stderr).toBe(0);
          const newSecret = /SECRET\t(whsec_\S+)/.exec(rotation.stdout)![1]!;
          expect(newSecret).not.toBe(secret);
          expect(rotation.stderr).toContain('Store the new signing secret now');
          const oldSecretUntil = (await client.GET('/v1/webhook_endpoints/{id}', { params: { path: { id } } })).previous_secret_expires_at!;
          expect(oldSecretUntil - before).toBeGreaterThanOrEqual(3600);
          expect(oldSecretUntil - before).toBeLessThanOrEqual(3600 + 60);
          const count = receiver.received.length;
          await platform(['webhooks', 'deliveries', 'redeliver', id, delivery.id], options);
          await until('the delivery after the rotation', () => receiver.received.length > count);
          const latest = receiver.received.at(-1)!;
          expect(verified(latest, newSecret)).toMatchObject({ object_id: cluster.id });
          expect(verified(latest, secret)).toMatchObject({ object_id: cluster.id });

          const changed = await platformJson(['webhooks', 'update', id, '--all-events', '--description', 'everything', '--url', `${receiver.url}/v2`], options);
          expect(changed).toMatchObject({ event_types: [], description: 'everything', url: `${receiver.url}/v2` });
          expect((await platform(['webhooks', 'get', id], options)).stdout).toMatch(/EVENTS\tall/);

          const unconfirmed = await platform(['webhooks', 'delete', id], options);
          expect(unconfirmed.code).toBe(2);
          expect(unconfirmed.stderr).toContain(`Delete webhook endpoint ${id}: not confirmed`);
          const deleted = await platform(['webhooks', 'delete', id, '--yes'], options);
          expect(deleted.code, deleted.stderr).toBe(0);
          expect(deleted.stdout).toContain(`Deleted webhook endpoint ${id}`);
          expect((await platform(['webhooks', 'get', id], options)).stderr).toContain('(404 not_found)');
        } finally {
          await receiver.close();
        }
      },
      WORKFLOWS_MS,
    );

    it('list and get show the delivery state: active, the failures in a row, cooling until the next probe', async () => {
      const someone = await newUser(app.db, systemClock, 'pro');
      const options = { token: someone.token };
      const endpoint = await api(someone.token).POST('/v1/webhook_endpoints', { body: { url: 'http://127.0.0.1:9/hook' } });
      const iso = (seconds: number) => new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');
      const row = async () => (await platform(['webhooks', 'list'], options)).stdout.split('\n').find((line) => line.startsWith(endpoint.id));
      expect(await row()).toMatch(/\tactive\t/);
      const shownActive = (await platform(['webhooks', 'get', endpoint.id], options)).stdout;
      expect(shownActive).toMatch(/^DELIVERY STATE\tactive$/m);
      expect(shownActive).toMatch(/^CONSECUTIVE FAILURES\t0$/m);
      expect(shownActive).toMatch(/^COOLING UNTIL\t-$/m);

      // The circuit open after five failed attempts in a row, as the dispatcher records it.
      const until = Math.floor(Date.now() / 1000) + 600;
      await app.db.updateTable('webhook_endpoints').set({ consecutive_failures: 5, cooling_until: until }).where('id', '=', endpoint.id).execute();
      expect(await row()).toContain(`\tcooling until ${iso(until)}, 5 failures\t`);
      const shown = (await platform(['webhooks', 'get', endpoint.id], options)).stdout;
      expect(shown).toMatch(/^DELIVERY STATE\tcooling$/m);
      expect(shown).toMatch(/^CONSECUTIVE FAILURES\t5$/m);
      expect(shown).toMatch(new RegExp(`^COOLING UNTIL\\t${iso(until)}$`, 'm'));
      // A failure that did not open it.
      await app.db.updateTable('webhook_endpoints').set({ consecutive_failures: 1, cooling_until: null }).where('id', '=', endpoint.id).execute();
      expect(await row()).toMatch(/\tactive, 1 failure\t/);
    });

    it('create --json prints the secret in the JSON; a private address is refused (422); usage errors exit 2', async () => {
      const someone = await newUser(app.db, systemClock, 'pro');
      const options = { token: someone.token };
      const receiver = await startReceiver();
      try {
        const created = await platformJson<{ id: string; secret: string; enabled: boolean; event_types: string[] }>(
          ['webhooks', 'create', '--url', receiver.url, '--disabled'],
          options,
        );
        expect(created).toMatchObject({ enabled: false, event_types: [] });
        expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
        const rotated = await platformJson<{ secret: string; previous_secret_expires_at: number }>(['webhooks', 'rotate-secret', created.id], options);
        // The service's default overlap: a day.
        expect(rotated.previous_secret_expires_at - Math.floor(Date.now() / 1000)).toBeGreaterThan(86_400 - 60);
        expect(rotated.secret).not.toBe(created.secret);

        const refused = await platform(['webhooks', 'create', '--url', 'https://10.0.0.1/hook'], options);
        expect(refused.code).toBe(1);
        expect(refused.stderr).toMatch(/^Error: The webhook URL .*10\.0\.0\.1.* \(422 validation_error\)$/m);

        for (const [args, message] of [
          [['create'], "required option '--url <url>' not specified"],
          [['create', '--url', receiver.url, '--events', 'cluster.exploded'], 'unknown event type cluster.exploded'],
          [['update', created.id], 'give what to change'],
          [['update', created.id, '--enable', '--disable'], 'give --enable or --disable, not both'],
          [['update', created.id, '--events', 'cluster.running', '--all-events'], 'give --events or --all-events, not both'],
          [['rotate-secret', created.id, '--overlap', 'a-day'], 'expected a whole number'],
          [['deliveries', 'list', created.id, '--status', 'lost'], "argument 'lost' is invalid"],
          [['deliveries', 'redeliver', created.id], "missing required argument 'delivery-id'"],
        ] as const) {
          const run = await platform(['webhooks', ...args], options);
          expect(run.code, args.join(' ')).toBe(2);
          expect(run.stderr).toContain(message);
        }
      } finally {
        await receiver.close();
      }
    });
  });

  describe('webhooks listen', () => {
    const otherSecret = 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD';

    it(
      'forwards each new event, signed, to the receiver; a receiver answering 500 does not stop it; Ctrl-C exits 130',
      async () => {
        const someone = await newUser(app.db, systemClock, 'pro');
        const client = api(someone.token);
        // Events from before the listener started are not forwarded.
        const before = await platformJson<{ id: string }>(['clusters', 'create', '--name', 'before', '--region', 'fsn1', '--wait'], { token: someone.token });
        const receiver = await startReceiver((n) => (n === 1 ? 500 : 200));
        try {
          const listener = await startListener(['--forward-to', receiver.url], { token: someone.token });
          expect(listener.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
          const cluster = await client.POST('/v1/clusters', { body: { name: 'during', region_id: 'fsn1' } });
          await until('two deliveries', () => receiver.received.length >= 2);
          // Ctrl-C once both answers are in (the line of each is printed when its answer comes).
          await until('two lines', () => listener.stdout().split('\n').length > 2);
          listener.interrupt();
          const run = await listener.run;
          expect(run.code, run.stderr).toBe(130);

          const events = receiver.received.map((delivery) => verified(delivery, listener.secret));
          expect(events.map((e) => [e.type, e.object_id])).toEqual([
            ['cluster.created', cluster.id],
            ['cluster.running', cluster.id],
          ]);
          expect(events.map((e) => e.object_id)).not.toContain(before.id);
          // The body is the event as the API lists it; webhook-id is its id.
          expect(events).toEqual((await client.GET('/v1/events', { params: { query: { object_id: cluster.id } } })).data);
          for (const [i, delivery] of receiver.received.entries()) {
            expect(delivery.headers['webhook-id']).toBe(events[i]?.id);
            expect(delivery.headers['content-type']).toBe('application/json');
          }
          expect(() => verified(receiver.received[0]!, otherSecret)).toThrow('No matching signature found');

          const lines = run.stdout.trimEnd().split('\n');
          expect(lines).toHaveLength(2);
          expect(lines[0]).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ  cluster\\.created +  ${cluster.id}  \\[500\\] \\d+ ms$`));
          expect(lines[1]).toMatch(new RegExp(`  cluster\\.running +  ${cluster.id}  \\[200\\] \\d+ ms$`));
          expect(run.stderr).toContain(`to ${receiver.url} (Ctrl-C to stop)`);
        } finally {
          await receiver.close();
        }
      },
      WORKFLOWS_MS,
    );

    it(
      '--events filters the types, --secret signs with that secret, --json prints a line per event; a receiver that is down is reported and skipped',
      async () => {
        const someone = await newUser(app.db, systemClock, 'pro');
        const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
        const receiver = await startReceiver();
        // A port nothing listens on any more: a receiver that is down.
        const down = await startReceiver();
        await down.close();
        try {
          const filtered = await startListener(['--forward-to', receiver.url, '--events', 'cluster.running, install.failed', '--secret', secret, '--json'], {
            token: someone.token,
          });
          expect(filtered.secret).toBe(secret);
          const failing = await startListener(['--forward-to', down.url], { token: someone.token });
          const cluster = await api(someone.token).POST('/v1/clusters', { body: { name: 'filtered', region_id: 'fsn1' } });
          await until('the running event', () => receiver.received.length >= 1);
          // Its line is printed once the receiver has answered, a moment after the receiver has it.
          await until('the forward printed', () => filtered.stdout().trim() !== '');
          await until('two failed forwards', () => failing.stdout().split('\n').length > 2);
          filtered.interrupt();
          failing.interrupt();
          const [run, failedRun] = await Promise.all([filtered.run, failing.run]);

          // cluster.created came first: it would have been forwarded before cluster.running.
          expect(receiver.received.map((delivery) => verified(delivery, secret))).toEqual([
            expect.objectContaining({ type: 'cluster.running', object_id: cluster.id }),
          ]);
          expect(() => verified(receiver.received[0]!, otherSecret)).toThrow('No matching signature found');
          expect(run.code, run.stderr).toBe(130);
          expect(
            run.stdout
              .trimEnd()
              .split('\n')
              .map((text) => JSON.parse(text) as unknown),
          ).toEqual([
            {
              id: verified(receiver.received[0]!, secret).id,
              type: 'cluster.running',
              object_id: cluster.id,
              created_at: expect.any(Number),
              status: 200,
              duration_ms: expect.any(Number),
            },
          ]);

          expect(failedRun.code, failedRun.stderr).toBe(130);
          const failures = failedRun.stdout.trimEnd().split('\n');
          expect(failures).toEqual([
            expect.stringMatching(new RegExp(`  cluster\\.created +  ${cluster.id}  \\[failed\\] .*ECONNREFUSED.* \\d+ ms$`)),
            expect.stringMatching(new RegExp(`  cluster\\.running +  ${cluster.id}  \\[failed\\] .*ECONNREFUSED.* \\d+ ms$`)),
          ]);
        } finally {
          await receiver.close();
        }
      },
      WORKFLOWS_MS,
    );

    it(
      'resumes the feed with Last-Event-ID after the connection drops and after the API answered 503 for a while, forwarding each event once',
      async () => {
        const someone = await newUser(app.db, systemClock, 'pro');
        const client = api(someone.token);
        const receiver = await startReceiver();
        const proxy = await startProxy();
        try {
          const listener = await startListener(['--forward-to', receiver.url], { token: someone.token, env: { PLATFORM_API_URL: proxy.url } });
          const first = await client.POST('/v1/clusters', { body: { name: 'first', region_id: 'fsn1' } });
          await until('the first cluster’s events', () => receiver.received.length >= 2);
          const lastBeforeDrop = verified(receiver.received[1]!, listener.secret);
          expect(proxy.feedRequests).toHaveLength(1);
          proxy.drop();
          await until('a new feed', () => proxy.feedRequests.length >= 2);
          expect(proxy.feedRequests[1]?.['last-event-id']).toBe(lastBeforeDrop.id);

          const second = await client.POST('/v1/clusters', { body: { name: 'second', region_id: 'fsn1' } });
          await until('the second cluster’s events', () => receiver.received.length >= 4);

          // An outage longer than the client's own retries: the listener keeps trying, and what happened meanwhile comes.
          proxy.setDown(true);
          proxy.drop();
          await until('the outage noticed', () => listener.stderr().includes('Lost the events feed (The service is restarting.); reconnecting in 0.1 s'));
          const third = await client.POST('/v1/clusters', { body: { name: 'third', region_id: 'fsn1' } });
          proxy.setDown(false);
          // The third cluster also reaches the plan's limit of 3: a quota.reached event besides the clusters' six.
          await until('the third cluster’s events', () => receiver.received.length >= 7);
          listener.interrupt();
          const run = await listener.run;
          expect(run.code, run.stderr).toBe(130);
          const received = receiver.received.map((delivery) => verified(delivery, listener.secret));
          expect(received.filter((e) => e.type === 'quota.reached').map((e) => e.object_id)).toEqual(['kaas/clusters']);
          const events = received.filter((e) => e.type !== 'quota.reached');
          expect(events.map((e) => [e.type, e.object_id])).toEqual([
            ['cluster.created', first.id],
            ['cluster.running', first.id],
            ['cluster.created', second.id],
            ['cluster.running', second.id],
            ['cluster.created', third.id],
            ['cluster.running', third.id],
          ]);
          expect(proxy.feedRequests.at(-1)?.['last-event-id']).toBe(events[3]?.id);
        } finally {
          await receiver.close();
          await proxy.close();
        }
      },
      WORKFLOWS_MS,
    );

    it('exits 2 on an unknown event type, a URL that is not http(s), a malformed secret or no --forward-to', async () => {
      const unknown = await platform(['webhooks', 'listen', '--forward-to', 'http://127.0.0.1:9/hook', '--events', 'cluster.running,cluster.exploded']);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toContain('unknown event type cluster.exploded; the types are cluster.created, cluster.running');
      expect((await platform(['webhooks', 'listen', '--forward-to', 'http://127.0.0.1:9/hook', '--events', ','])).stderr).toContain('no event type');
      const ftp = await platform(['webhooks', 'listen', '--forward-to', 'ftp://127.0.0.1/hook']);
      expect(ftp.code).toBe(2);
      expect(ftp.stderr).toContain('expected an http:// or https:// URL');
      const secret = await platform(['webhooks', 'listen', '--forward-to', 'http://127.0.0.1:9/hook', '--secret', 'sk_test_123']);
      expect(secret.code).toBe(2);
      expect(secret.stderr).toContain('expected whsec_ followed by base64');
      const missing = await platform(['webhooks', 'listen']);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain("required option '--forward-to <url>' not specified");
    });
  });
});
