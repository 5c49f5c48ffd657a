// `pnpm smoke` as a user runs it: a child process, against the simulator it starts itself, and against a
// deployment (PLATFORM_API_URL, PLATFORM_TOKEN) that the test starts and then inspects in its database.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, createUser, systemClock, type TestDatabase } from '@platform/server/testing';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { repoRoot } from '../scripts/gen.ts';
import { type ServerProcess, startServerProcess } from '../scripts/server-process.ts';

const STEPS = ['cluster', 'machine', 'product', 'install', 'logs', 'uninstall', 'cleanup'];
// Seconds-scale deadlines: the simulator at fast timings takes a few seconds per step.
const FAST = ['--cluster-timeout', '60', '--machine-timeout', '60', '--install-timeout', '60', '--step-timeout', '60'];

/** Runs the smoke; `onOutput` sees the output so far after each chunk, with the process (to interrupt it). */
function smoke(
  args: string[],
  env: Record<string, string> = {},
  onOutput?: (out: string, child: ChildProcess) => void,
): Promise<{ code: number | null; out: string }> {
  const inherited = { ...process.env };
  delete inherited.PLATFORM_API_URL;
  delete inherited.PLATFORM_TOKEN;
  const child = spawn(process.execPath, [join(repoRoot, 'scripts/smoke.ts'), ...args], {
    env: { ...inherited, SMOKE_POLL_MS: '200', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    onOutput?.(out, child);
  });
  child.stderr.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, out })));
}

/** The line the smoke printed for a step: its name, then ok or FAILED. */
const stepLine = (out: string, step: string) => out.split('\n').find((line) => line.startsWith(step.padEnd(12)) && line.trim() !== step);

describe('pnpm smoke against the simulator it starts itself', () => {
  it('passes every step and exits 0', { timeout: 120_000 }, async () => {
    const { code, out } = await smoke(FAST, { DATABASE_URL: inject('databaseUrl') });
    expect(out).toContain('(the simulator, started for this run)');
    for (const step of STEPS) expect(stepLine(out, step), out).toMatch(/ ok +\d+\.\d s/);
    expect(out).toContain('nothing left behind');
    expect(out).toContain('smoke: all steps passed');
    expect(code).toBe(0);
  });
});

describe('pnpm smoke against a deployment', () => {
  let database: TestDatabase;
  let server: ServerProcess;
  let dir: string;
  beforeAll(async () => {
    database = await createTestDatabase();
    dir = await mkdtemp(join(tmpdir(), 'smoke-'));
    server = await startServerProcess({
      DATABASE_URL: database.url,
      PORT: '0',
      LOG_LEVEL: 'warn',
      SIM_CONTROL_PLANE_SECONDS: '1',
      SIM_BOOT_SECONDS: '1',
      SIM_RELEASE_SECONDS: '1',
    });
  });
  afterAll(async () => {
    await server?.stop();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** What the workspace still holds, table by table: the smoke must leave it as it found it. */
  async function leftovers(workspaceId: string): Promise<Record<string, number>> {
    const count = async (table: 'clusters' | 'compute_configs' | 'cloud_credentials' | 'products' | 'installs') =>
      Number((await sql<{ n: string }>`SELECT count(*) AS n FROM ${sql.table(table)} WHERE workspace_id = ${workspaceId}`.execute(database.db)).rows[0]!.n);
    const machines = await sql<{ n: string }>`
      SELECT count(*) AS n FROM machines JOIN compute_configs ON compute_configs.id = machines.compute_config_id
      WHERE compute_configs.workspace_id = ${workspaceId}`.execute(database.db);
    return {
      clusters: await count('clusters'),
      compute_configs: await count('compute_configs'),
      cloud_credentials: await count('cloud_credentials'),
      products: await count('products'),
      installs: await count('installs'),
      machines: Number(machines.rows[0]!.n),
    };
  }
  const nothing = { clusters: 0, compute_configs: 0, cloud_credentials: 0, products: 0, installs: 0, machines: 0 };

  it('passes with a BYOM cloud credential and leaves nothing behind', { timeout: 120_000 }, async () => {
    const user = await createUser(database.db, systemClock, 'smoke-pass@platform.example', 'pro');
    const tokenFile = join(dir, 'hcloud-token');
    await writeFile(tokenFile, 'smoke-byom-token\n');
    const { code, out } = await smoke([...FAST, '--cloud-token-file', tokenFile], {
      PLATFORM_API_URL: server.base,
      PLATFORM_TOKEN: user.token,
      PLATFORM_WORKSPACE_ID: user.workspaceId,
    });
    for (const step of STEPS) expect(stepLine(out, step), out).toMatch(/ ok +\d+\.\d s/);
    expect(code, out).toBe(0);
    expect(await leftovers(user.workspaceId)).toEqual(nothing);
    // The machine was made with the credential (BYOM), and the credential is gone with the rest.
    const byom = await sql<{
      n: string;
    }>`SELECT count(*) AS n FROM audit_events WHERE operation = 'createCloudCredential' AND workspace_id = ${user.workspaceId}`.execute(database.db);
    expect(Number(byom.rows[0]!.n)).toBeGreaterThan(0);
  });

  it('names the first failing step and the API error, exits 1 and still deletes what it made', { timeout: 120_000 }, async () => {
    const user = await createUser(database.db, systemClock, 'smoke-quota@platform.example', 'pro');
    // No machine allowed: the cluster is made, then the machine is refused.
    await database.db.insertInto('quota_overrides').values({ user_id: user.userId, workspace_id: null, metric: 'compute/machines', limit: 0 }).execute();
    const { code, out } = await smoke(FAST, { PLATFORM_API_URL: server.base, PLATFORM_TOKEN: user.token, PLATFORM_WORKSPACE_ID: user.workspaceId });
    expect(stepLine(out, 'cluster'), out).toMatch(/ ok /);
    expect(stepLine(out, 'machine'), out).toMatch(/ FAILED .*quota/i);
    for (const step of ['product', 'install', 'logs', 'uninstall']) expect(stepLine(out, step), out).toBeUndefined();
    expect(stepLine(out, 'cleanup'), out).toContain('nothing left behind');
    expect(out).toMatch(/smoke: FAILED at step 'machine': 4\d\d \w+:/);
    expect(code).toBe(1);
    expect(await leftovers(user.workspaceId)).toEqual(nothing);
  });

  it('on Ctrl-C ends the step under way, deletes what it made and exits 1', { timeout: 120_000 }, async () => {
    const user = await createUser(database.db, systemClock, 'smoke-interrupt@platform.example', 'pro');
    let interrupted = false;
    // Interrupted once the cluster runs, while the machine boots.
    const { code, out } = await smoke(
      FAST,
      { PLATFORM_API_URL: server.base, PLATFORM_TOKEN: user.token, PLATFORM_WORKSPACE_ID: user.workspaceId },
      (sofar, child) => {
        if (interrupted || stepLine(sofar, 'cluster') === undefined) return;
        interrupted = true;
        child.kill('SIGINT');
      },
    );
    expect(stepLine(out, 'machine'), out).toMatch(/ FAILED .*interrupted/);
    expect(stepLine(out, 'cleanup'), out).toContain('nothing left behind');
    expect(out).toContain("smoke: FAILED at step 'machine': interrupted");
    expect(code).toBe(1);
    expect(await leftovers(user.workspaceId)).toEqual(nothing);
  });

  it('on a second Ctrl-C stops at once and names what it leaves behind', { timeout: 120_000 }, async () => {
    const user = await createUser(database.db, systemClock, 'smoke-stop@platform.example', 'pro');
    let signals = 0;
    const { code, out } = await smoke(
      FAST,
      { PLATFORM_API_URL: server.base, PLATFORM_TOKEN: user.token, PLATFORM_WORKSPACE_ID: user.workspaceId },
      (sofar, child) => {
        if (signals === 0 && stepLine(sofar, 'cluster') !== undefined) {
          signals++;
          child.kill('SIGINT');
        } else if (signals === 1 && sofar.includes('smoke: interrupted')) {
          signals++;
          child.kill('SIGINT');
        }
      },
    );
    const left = await sql<{ id: string }>`SELECT id FROM clusters WHERE workspace_id = ${user.workspaceId}`.execute(database.db);
    expect(left.rows, out).toHaveLength(1);
    expect(out).toMatch(new RegExp(`smoke: stopped; left behind: .*cluster ${left.rows[0]!.id}`));
    expect(code).toBe(1);
  });

  it('exits 2 on a usage error, before making anything', async () => {
    const unknown = await smoke(['--no-such-flag']);
    expect(unknown.code).toBe(2);
    expect(unknown.out).toContain('Usage: pnpm smoke');
    const half = await smoke([], { PLATFORM_API_URL: server.base });
    expect(half.code).toBe(2);
    expect(half.out).toContain('set both PLATFORM_API_URL and PLATFORM_TOKEN');
  });
});

describe('pnpm smoke against a cloud that refuses every server', () => {
  let database: TestDatabase;
  let server: ServerProcess;
  let user: Awaited<ReturnType<typeof createUser>>;
  beforeAll(async () => {
    database = await createTestDatabase();
    // Made before the start: a database with a user gets no demo seed, whose machine this cloud would refuse.
    user = await createUser(database.db, systemClock, 'smoke-refused@platform.example', 'pro');
    server = await startServerProcess({ DATABASE_URL: database.url, PORT: '0', LOG_LEVEL: 'warn', SIM_CONTROL_PLANE_SECONDS: '1', SIM_FAILURE_RATE: '1' });
  });
  afterAll(async () => {
    await server?.stop();
    await database?.drop();
  });

  it("fails the machine step at its deadline with the last attempt's reason, and cleans up", { timeout: 120_000 }, async () => {
    const { code, out } = await smoke([...FAST, '--machine-timeout', '5'], {
      PLATFORM_API_URL: server.base,
      PLATFORM_TOKEN: user.token,
      PLATFORM_WORKSPACE_ID: user.workspaceId,
    });
    expect(stepLine(out, 'machine'), out).toMatch(/ FAILED .*ready did not happen within 5 s .*the last attempt failed: .*resource_unavailable/);
    expect(stepLine(out, 'cleanup'), out).toContain('nothing left behind');
    expect(code).toBe(1);
    const clusters = await sql<{ n: string }>`SELECT count(*) AS n FROM clusters WHERE workspace_id = ${user.workspaceId}`.execute(database.db);
    expect(Number(clusters.rows[0]!.n)).toBe(0);
  });
});
