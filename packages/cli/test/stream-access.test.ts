// `platform events follow` and `platform installs logs` when the server ends the stream because the caller lost
// access: the CLI says why, suggests what to do, exits with an error and does not reconnect. The program driven in
// the test's process (cli-runner.ts) against an in-process server on a real PostgreSQL.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, eventually, newUser, seedSampleResources, systemClock, type TestUser, useTestServer } from '@platform/server/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCli } from './cli-runner.ts';

const app = useTestServer({ clock: systemClock, env: { EVENT_POLL_MS: '50' } });
let owner: TestUser;
let installId: string;
const home = mkdtempSync(join(tmpdir(), 'platform-cli-access-'));

beforeAll(async () => {
  owner = await newUser(app.db, systemClock, 'pro');
  const { productId } = await seedSampleResources(app.db, systemClock, owner, 'cli-streams');
  const install = await call(app.baseUrl, 'POST', '/v1/installs', { token: owner.token, body: { product_id: productId, region_id: 'fsn1' } });
  installId = install.body.id;
});

afterAll(() => rmSync(home, { recursive: true, force: true }));

/** Runs `platform …` with the token, until it exits. */
async function platform(args: string[], token: string): Promise<{ code: number; stderr: string }> {
  const env = {
    XDG_CONFIG_HOME: home,
    PLATFORM_API_URL: app.baseUrl,
    PLATFORM_TOKEN: token,
    PLATFORM_WORKSPACE: owner.workspaceId,
  };
  const running = startCli(args, { env });
  // One that never ends is stopped (Ctrl-C: exit 130), failing the test on its exit code.
  const timer = setTimeout(() => running.interrupt(), 20_000);
  const { code, stderr } = await running.done;
  clearTimeout(timer);
  return { code, stderr };
}

/** A member of the owner's workspace, with a PAT of their own. */
async function member(): Promise<{ user: TestUser; pat: { id: string; token: string } }> {
  const user = await newUser(app.db, systemClock);
  await app.db
    .insertInto('workspace_members')
    .values({ workspace_id: owner.workspaceId, user_id: user.userId, role: 'member', created_at: systemClock.now() })
    .execute();
  const pat = await call(app.baseUrl, 'POST', '/v1/user/tokens', { token: user.token, body: { name: 'cli' } });
  return { user, pat: pat.body };
}

/** Waits until the user holds an open stream (its slot). */
const streaming = (userId: string) =>
  eventually(
    () => app.db.selectFrom('stream_slots').select('id').where('key', '=', `user:${userId}`).execute(),
    (rows) => rows.length === 1,
    'the CLI to open its stream',
  );

describe('a stream whose access ends', () => {
  it('events follow: prints the reason and a suggestion, exits 1, does not reconnect', async () => {
    const { user, pat } = await member();
    const run = platform(['events', 'follow'], pat.token);
    await streaming(user.userId);
    await call(app.baseUrl, 'DELETE', `/v1/workspaces/${owner.workspaceId}/members/${user.userId}`, { token: owner.token });
    const { code, stderr } = await run;
    expect(code).toBe(1);
    expect(stderr).toContain(`Error: the stream was closed: You are no longer a member of workspace ${owner.workspaceId}`);
    expect(stderr).toContain('(membership_ended)');
    expect(stderr).toContain('Suggestion: ask an admin of the workspace to invite you again');
    expect(stderr).not.toMatch(/reconnect/i);
  });

  it('installs logs: prints the reason when the token is revoked, exits 1, does not reconnect', async () => {
    const { user, pat } = await member();
    const run = platform(['installs', 'logs', installId], pat.token);
    await streaming(user.userId);
    await call(app.baseUrl, 'DELETE', `/v1/user/tokens/${pat.id}`, { token: user.token });
    const { code, stderr } = await run;
    expect(code).toBe(1);
    expect(stderr).toContain('(unauthenticated)');
    expect(stderr).toContain('Suggestion: log in again with `platform login`');
    expect(stderr).not.toMatch(/reconnect/i);
  });
});
