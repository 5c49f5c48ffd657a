// The conventions people bring from gh and stripe, through the real `platform` process: --version, `config`
// (each setting and where it comes from), `completion`, `--all` on lists, one line for a mistyped command, and a
// pointer to `webhooks listen` when an http:// receiver is refused.
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createPlatformClient } from '@platform/client';
import { newUser, systemClock, type TestUser, useTestServer } from '@platform/server/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

const run = promisify(execFile);
const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts');
const app = useTestServer({ clock: systemClock });
let user: TestUser;
let home: string;

beforeAll(async () => {
  user = await newUser(app.db, systemClock, 'pro');
  home = mkdtempSync(join(tmpdir(), 'platform-cli-conventions-'));
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

/** `platform …` with nothing of the test's environment but PATH; resolves with the exit code whatever it is. */
async function platform(args: string[], env: Record<string, string> = {}) {
  const result = await run(process.execPath, [MAIN, ...args], {
    env: { PATH: process.env.PATH ?? '', XDG_CONFIG_HOME: home, PLATFORM_API_URL: app.baseUrl, PLATFORM_TOKEN: user.token, ...env },
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );
  return result;
}

describe('the CLI', () => {
  it('--version prints the version', async () => {
    expect(await platform(['--version'])).toEqual({ code: 0, stdout: '1.0.0\n', stderr: '' });
  });

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
    expect((await platform(['completion', 'tcsh'])).code).toBe(2);
    expect((await platform(['completion', 'fish'])).stdout).toContain("complete -c platform -n '__fish_seen_subcommand_from clusters' -a list");
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

  it('login on a terminal offers to open the sign-in page in the browser ($BROWSER), and opens it on Enter', async () => {
    const opened = join(home, 'opened.txt');
    const browser = join(home, 'browser.sh');
    writeFileSync(browser, `#!/bin/sh\necho "$1" > ${opened}\n`, { mode: 0o755 });
    // script(1) gives the CLI a terminal, as a person's shell does.
    const child = spawn('script', ['-qfec', `${process.execPath} ${MAIN} login`, '/dev/null'], {
      env: { PATH: process.env.PATH ?? '', XDG_CONFIG_HOME: home, PLATFORM_API_URL: app.baseUrl, BROWSER: browser },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      await vi.waitFor(() => expect(output).toContain('Press Enter to open'), { timeout: 20_000 });
      expect(existsSync(opened)).toBe(false);
      child.stdin.write('\n');
      await vi.waitFor(() => expect(readFileSync(opened, 'utf8').trim()).toBe(`${app.baseUrl}/device`), { timeout: 20_000 });
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('webhooks create with an http:// URL points to webhooks listen and the loopback setting', async () => {
    const { code, stderr } = await platform(['webhooks', 'create', '--url', 'http://localhost:3000/hook']);
    expect(code).toBe(1);
    expect(stderr).toContain('platform webhooks listen --forward-to http://localhost:3000/hook');
    expect(stderr).toContain('WEBHOOK_ALLOW_HTTP_LOOPBACK=true');
  });
});
