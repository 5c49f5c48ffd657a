// The image as an operator runs it (README "In production"): `pnpm image` builds it, podman runs it the way the
// Kubernetes manifests do (read-only root, every capability dropped, no privilege escalation, its own non-root
// user, no demo user) against a fresh database on the test run's PostgreSQL: the image's migrations, the server,
// ready, a token from the image's admin command, the API answering with it, and SIGTERM stopping the server with
// exit code 0. A second build of the same tree gives the same digest. Needs podman (with runc), buildah and mmdebstrap; where
// podman is missing the test is skipped, saying so (.ci/run installs them).
import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestDatabase, freePort, type TestDatabase } from '@platform/server/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repoRoot = join(import.meta.dirname, '..', '..');
const tag = `localhost/platform-api:test-${process.pid}`;
const container = `platform-image-test-${process.pid}`;
const podmanMissing = spawnSync('podman', ['--version']).error ? 'podman is not installed (apt-get install podman runc buildah mmdebstrap uidmap)' : undefined;

function run(command: string, args: string[]): SpawnSyncReturns<string> {
  return spawnSync(command, args, { cwd: repoRoot, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
}

function succeed(command: string, args: string[]): string {
  const result = run(command, args);
  if (result.error || result.status !== 0)
    throw new Error(`${command} ${args.join(' ')}: exit ${result.status}\n${result.error?.message ?? ''}${result.stderr}${result.stdout}`);
  return result.stdout;
}

function build(): { digest: string; bytes: number } {
  const out = succeed(process.execPath, ['scripts/image.ts', '--tag', tag]);
  const digest = /digest (sha256:[0-9a-f]{64})/.exec(out)?.[1];
  const megabytes = /size ([\d.]+) MB/.exec(out)?.[1];
  if (!digest || !megabytes) throw new Error(`pnpm image printed no digest and size:\n${out}`);
  return { digest, bytes: Number(megabytes) * 1e6 };
}

/** This machine's hard limits bound what a container may ask for (podman here needs them given explicitly). */
function ulimits(): string[] {
  const limits = readFileSync('/proc/self/limits', 'utf8');
  const hard = (name: string, wanted: number) => {
    const limit = new RegExp(`^${name}\\s+\\S+\\s+(\\S+)`, 'm').exec(limits)?.[1];
    return limit === undefined || limit === 'unlimited' ? wanted : Math.min(wanted, Number(limit));
  };
  const nofile = hard('Max open files', 8192);
  const nproc = hard('Max processes', 4096);
  return ['--ulimit', `nofile=${nofile}:${nofile}`, '--ulimit', `nproc=${nproc}:${nproc}`];
}

/** `podman run` as the manifests' security context has it, on the host's network (PostgreSQL listens on loopback). */
const podmanRun = (options: string[], args: string[]) => [
  'run',
  '--runtime',
  'runc',
  ...ulimits(),
  '--network',
  'host',
  '--read-only',
  '--cap-drop',
  'all',
  '--security-opt',
  'no-new-privileges',
  ...options,
  tag,
  ...args,
];

if (podmanMissing) console.warn(`test/deploy/image.test.ts skipped: ${podmanMissing}`);

describe.skipIf(podmanMissing)(`the image, run with podman${podmanMissing ? ` (skipped: ${podmanMissing})` : ''}`, () => {
  let database: TestDatabase;
  let built: { digest: string; bytes: number };

  beforeAll(async () => {
    database = await createTestDatabase({ migrate: false });
    built = build();
  }, 600_000);

  afterAll(async () => {
    run('podman', ['rm', '--force', '--time', '0', container]);
    run('podman', ['rmi', '--force', tag]);
    await database?.drop();
  });

  it('migrates, serves, makes a token that the API takes, and stops on SIGTERM', { timeout: 180_000 }, async () => {
    expect(built.bytes).toBeLessThan(300e6);
    const env = ['--env', `DATABASE_URL=${database.url}`];
    expect(succeed('podman', podmanRun(['--rm', ...env], ['migrate']))).toContain('Migrations applied.');

    const port = await freePort();
    const secretsKey = randomBytes(32).toString('base64');
    const serving = [
      '--detach',
      '--name',
      container,
      ...env,
      '--env',
      `SECRETS_KEY=${secretsKey}`,
      '--env',
      'HOST=127.0.0.1',
      '--env',
      `PORT=${port}`,
      '--env',
      'SEED_DEMO=false',
    ];
    succeed('podman', podmanRun(serving, ['--role', 'all']));
    const base = `http://127.0.0.1:${port}`;
    let ready: Response | undefined;
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 250))) {
      ready = await fetch(`${base}/readyz`).catch(() => undefined);
      if (ready?.status === 200) break;
    }
    expect(ready?.status, run('podman', ['logs', container]).stdout).toBe(200);
    expect(await ready!.json()).toEqual({ status: 'ok', checks: { database: 'ok', queue: 'ok' } });

    // SEED_DEMO=false: the empty database got no demo user; the operator makes the first one.
    const demo = run('podman', podmanRun(['--rm', ...env], ['demo-token']));
    expect(demo.status, demo.stdout).toBe(1);
    expect(demo.stderr).toContain('no demo user');
    const { token } = JSON.parse(succeed('podman', podmanRun(['--rm', ...env], ['create-user', '--email', 'ops@example.com', '--plan', 'pro']))) as {
      token: string;
    };
    expect(token).toMatch(/^svc_pat_/);

    const clusters = await fetch(`${base}/v1/clusters`, { headers: { authorization: `Bearer ${token}` } });
    expect(clusters.status).toBe(200);
    expect(await clusters.json()).toMatchObject({ data: [] });
    expect((await fetch(`${base}/v1/clusters`)).status).toBe(401);

    // The server is the container's first process: SIGTERM drains it, and it exits 0.
    succeed('podman', ['stop', '--time', '30', container]);
    expect(succeed('podman', ['inspect', '--format', '{{.State.ExitCode}}', container]).trim()).toBe('0');
    expect(succeed('podman', ['image', 'inspect', '--format', '{{.Config.User}}', tag]).trim()).toBe('10001:10001');
  });

  it('builds the same image again, to the byte (the same digest)', { timeout: 600_000 }, () => {
    expect(build().digest).toBe(built.digest);
  });
});
