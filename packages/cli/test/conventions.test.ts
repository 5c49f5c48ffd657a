// The conventions people bring from gh and stripe, driven in the test's process (cli-runner.ts): `config` (each
// setting and where it comes from), `completion`, `api` (any GET of the API as JSON, as `gh api`), `--all` on lists, tables as gh prints them (fitted to a terminal,
// tab-separated when piped), one line for a mistyped command, and a pointer to `webhooks listen` when an http://
// receiver is refused. (`--version` through the real process: process.test.ts.)
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createPlatformClient } from '@platform/client';
import { newUser, systemClock, type TestUser, useTestServer } from '@platform/server/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type CliOptions, cli, startCli } from './cli-runner.ts';

const run = promisify(execFile);
// Approvals polled every second, so the login below ends soon after its approval.
const app = useTestServer({ clock: systemClock, env: { DEVICE_POLL_INTERVAL_SECONDS: '1' } });
let user: TestUser;
let home: string;

beforeAll(async () => {
  user = await newUser(app.db, systemClock, 'pro');
  home = mkdtempSync(join(tmpdir(), 'platform-cli-conventions-'));
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

const environment = () => ({ XDG_CONFIG_HOME: home, PLATFORM_API_URL: app.baseUrl, PLATFORM_TOKEN: user.token });

/** `platform …` with nothing of the test's environment; resolves with the exit code whatever it is. */
function platform(args: string[], env: Record<string, string> = {}, options: Partial<CliOptions> = {}) {
  return cli(args, { ...options, env: { ...environment(), ...env } });
}

describe('the CLI', () => {
  it('a mistyped command gets one line with the closest command and exit 2', async () => {
    expect(await platform(['clustrs'])).toEqual({ code: 2, stdout: '', stderr: "error: unknown command 'clustrs' (did you mean clusters?)\n" });
    expect(await platform(['clusters', 'lst'])).toMatchObject({ code: 2, stderr: "error: unknown command 'lst' (did you mean list?)\n" });
  });

  it('whoami shows the user, the token kind, its scopes and restriction, and the workspace commands act in', async () => {
    const { code, stdout } = await platform(['whoami']);
    expect(code).toBe(0);
    expect(stdout).toMatch(new RegExp(`^user +.*\\(${user.userId}, plan pro\\)$`, 'm'));
    expect(stdout).toMatch(/^token +personal_access_token /m);
    expect(stdout).toMatch(/^workspaces +every workspace of yours$/m);
    expect(stdout).toMatch(new RegExp(`^workspace +${user.workspaceId}$`, 'm'));
    expect(JSON.parse((await platform(['whoami', '--json'])).stdout)).toMatchObject({ id: user.userId, token: { kind: 'personal_access_token' } });
  });

  it('config says each setting and where it came from, never the whole token', async () => {
    const { code, stdout } = await platform(['config', '--workspace', 'ws_flag']);
    expect(code).toBe(0);
    const lines = stdout.trimEnd().split('\n');
    expect(lines).toEqual([
      `api_url    ${app.baseUrl}  (environment (PLATFORM_API_URL))`,
      `token      ${user.token.slice(0, 12)}…  (environment (PLATFORM_TOKEN))`,
      'workspace  ws_flag  (--workspace)',
    ]);
    expect(stdout).not.toContain(user.token);
  });

  it('completion prints a bash script that completes commands and subcommands', async () => {
    const { stdout } = await platform(['completion', 'bash']);
    const complete = (words: string[]) =>
      run('bash', ['-c', `${stdout}\nCOMP_WORDS=(${words.join(' ')}); COMP_CWORD=${words.length - 1}; _platform; echo "\${COMPREPLY[@]}"`]).then((r) =>
        r.stdout.trim(),
      );
    expect((await complete(['platform', 'clu'])).split(' ')).toEqual(['clusters']);
    expect((await complete(['platform', 'clusters', 'l'])).split(' ')).toEqual(['list']);
    // Each command's own flags, and the program's after any command.
    expect((await complete(['platform', 'clusters', 'create', '--re'])).split(' ')).toEqual(['--region']);
    expect((await complete(['platform', 'installs', 'logs', 'ins_1', '--t'])).split(' ')).toEqual(expect.arrayContaining(['--tail', '--token']));
    expect((await platform(['completion', 'tcsh'])).code).toBe(2);
    const fish = (await platform(['completion', 'fish'])).stdout;
    expect(fish).toContain("complete -c platform -n '__fish_seen_subcommand_from clusters' -a list");
    expect(fish).toContain("complete -c platform -n '__fish_seen_subcommand_from create' -l region");
    expect(fish).toContain('complete -c platform -l api-url');
  });

  it('--all follows the cursor to the last page', async () => {
    const api = createPlatformClient({ baseUrl: app.baseUrl, token: user.token });
    const regions = (await api.GET('/v1/regions', { params: { query: { limit: 100 } } })).data.map((r) => r.id);
    expect(regions.length).toBeGreaterThan(1);
    const onePage = JSON.parse((await platform(['regions', '--limit', '1', '--json'])).stdout);
    expect(onePage.data).toHaveLength(1);
    expect(onePage.pagination.has_more).toBe(true);
    const every = JSON.parse((await platform(['regions', '--limit', '1', '--all', '--json'])).stdout);
    expect(every.data.map((r: { id: string }) => r.id)).toEqual(regions);
    expect(every.pagination.has_more).toBe(false);
  });

  it('api reads any GET of the API as JSON: a list page by page (--limit, --cursor, --all, or its query) or whole', async () => {
    const client = createPlatformClient({ baseUrl: app.baseUrl, token: user.token });
    const members = await client.GET('/v1/workspaces/{workspaceId}/members', { params: { path: { workspaceId: user.workspaceId } } });
    const list = await platform(['api', `/v1/workspaces/${user.workspaceId}/members`]);
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout)).toEqual(members);

    const regions = (await client.GET('/v1/regions', { params: { query: { limit: 100 } } })).data;
    const first = await platform(['api', 'v1/regions?limit=1']);
    expect(JSON.parse(first.stdout).data).toEqual(regions.slice(0, 1));
    const { cursor } = JSON.parse(first.stdout).pagination;
    expect(first.stderr).toBe(`More results: add --cursor ${cursor}, or --all\n`);
    expect(JSON.parse((await platform(['api', '/v1/regions', '--limit', '1', '--cursor', cursor])).stdout).data).toEqual(regions.slice(1, 2));
    const every = await platform(['api', '/v1/regions', '--limit', '1', '--all']);
    expect(JSON.parse(every.stdout)).toMatchObject({ data: regions, pagination: { has_more: false } });
    expect(every.stderr).toBe('');
  });

  it('api refuses a path with a parameter left in it or outside the API (exit 2), and prints the API’s error (exit 1)', async () => {
    expect(await platform(['api', '/v1/workspaces/{workspaceId}/members'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'error: api: put the value of {workspaceId} in the path\n',
    });
    expect(await platform(['api', '/v1/../healthz'])).toMatchObject({
      code: 2,
      stderr: 'error: api: /v1/../healthz is not a path of the API, which all start with /v1/\n',
    });
    const missing = await platform(['api', '/v1/clusters/cl_01jd2x8m5r7t9v1w3y5a7c9e1g']);
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toMatch(/^Error: .* \(404 not_found\)$/m);
  });

  it('tables: on a terminal a header and aligned rows without borders, cut to its width (ids whole); piped, tab-separated rows, nothing cut', async () => {
    const regions = (await createPlatformClient({ baseUrl: app.baseUrl, token: user.token }).GET('/v1/regions', { params: { query: { limit: 100 } } })).data;
    const time = (seconds: number) => new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');

    const piped = await platform(['regions', '--limit', '100']);
    expect(piped.stdout).toBe(regions.map((r) => `${r.id}\t${r.name}\t${r.country}\t${time(r.created_at)}\n`).join(''));

    const wide = await platform(['regions', '--limit', '100'], {}, { columns: 200 });
    const lines = wide.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID +NAME +COUNTRY +CREATED$/);
    expect(lines.slice(1)).toEqual(regions.map((r) => expect.stringMatching(new RegExp(`^${r.id} +${r.name} +${r.country} +${time(r.created_at)}$`))));
    expect(wide.stdout).not.toMatch(/[│─┌└]/);
    // The columns line up: each starts where its header does.
    const at = lines[0]!.indexOf('COUNTRY');
    for (const [i, line] of lines.slice(1).entries()) expect(line.slice(at, at + 2)).toBe(regions[i]!.country);

    const narrow = await platform(['regions', '--limit', '100'], {}, { columns: 40 });
    const cut = narrow.stdout.trimEnd().split('\n');
    expect(Math.max(...cut.map((line) => line.length))).toBeLessThanOrEqual(40);
    expect(narrow.stdout).toContain('…');
    for (const [i, line] of cut.slice(1).entries()) expect(line.startsWith(`${regions[i]!.id} `)).toBe(true);
    expect(lines.length).toBe(cut.length);
  });

  it('login on a terminal offers to open the sign-in page in the browser ($BROWSER), and opens it on Enter', async () => {
    const opened = join(home, 'opened.txt');
    const browser = join(home, 'browser.sh');
    writeFileSync(browser, `#!/bin/sh\necho "$1" > ${opened}\n`, { mode: 0o755 });
    // Standard input and output are a terminal, as in a person's shell.
    const login = startCli(['login'], {
      env: { XDG_CONFIG_HOME: mkdtempSync(join(home, 'login-')), PLATFORM_API_URL: app.baseUrl, BROWSER: browser },
      stdinTerminal: true,
      columns: 120,
    });
    await vi.waitFor(() => expect(login.stdout()).toContain('Press Enter to open'), { timeout: 20_000 });
    expect(existsSync(opened)).toBe(false);
    login.type('\n');
    await vi.waitFor(() => expect(readFileSync(opened, 'utf8').trim()).toBe(`${app.baseUrl}/device`), { timeout: 20_000 });
    // Approved, the login ends.
    const code = /enter the code: ([A-Z]{4}-[A-Z]{4})/.exec(login.stdout())![1]!;
    await createPlatformClient({ baseUrl: app.baseUrl, token: user.token }).POST('/v1/auth/device/approve', { body: { user_code: code, action: 'approve' } });
    expect((await login.done).code).toBe(0);
  });

  it('webhooks create with an http:// URL points to webhooks listen and the loopback setting', async () => {
    const { code, stderr } = await platform(['webhooks', 'create', '--url', 'http://localhost:3000/hook']);
    expect(code).toBe(1);
    expect(stderr).toContain('platform webhooks listen --forward-to http://localhost:3000/hook');
    expect(stderr).toContain('WEBHOOK_ALLOW_HTTP_LOOPBACK=true');
  });
});
