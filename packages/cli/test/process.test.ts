// The real `platform` process (Node running src/main.ts), for what only it shows: main.ts wires the process's
// streams and exit code to the program. Every other CLI test drives the program in-process (cli-runner.ts).
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';

const run = promisify(execFile);
const main = join(import.meta.dirname, '..', 'src', 'main.ts');
const home = mkdtempSync(join(tmpdir(), 'platform-cli-process-'));
afterAll(() => rmSync(home, { recursive: true, force: true }));

/** `platform …` with nothing of the test's environment but PATH; resolves with the exit code whatever it is. */
function platform(args: string[], env: Record<string, string> = {}) {
  return run(process.execPath, [main, ...args], { env: { PATH: process.env.PATH ?? '', XDG_CONFIG_HOME: home, ...env } }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );
}

/** A port nothing listens on: taken, then freed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

it('--version prints the version and exits 0', async () => {
  expect(await platform(['--version'])).toEqual({ code: 0, stdout: '1.0.0\n', stderr: '' });
});

it('an API that is not there: the URL and the refusal on stderr, exit 1', async () => {
  const port = await closedPort();
  const failure = await platform(['regions', '--api-url', `http://127.0.0.1:${port}`], { PLATFORM_TOKEN: 'svc_pat_x' });
  expect(failure.code).toBe(1);
  expect(failure.stdout).toBe('');
  expect(failure.stderr).toContain(`Error: GET http://127.0.0.1:${port}/v1/regions failed: connect ECONNREFUSED 127.0.0.1:${port}\n`);
  expect(failure.stderr).toContain('Suggestion: check that the API is reachable');
});

it('a reader that goes away (`| head`): exit 141 as for SIGPIPE, no stack trace', async () => {
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, [main, '--version'], {
    env: { PATH: process.env.PATH ?? '', XDG_CONFIG_HOME: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Our end of its output closed before it writes: its write fails with EPIPE.
  child.stdout.destroy();
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  expect({ code, stderr }).toEqual({ code: 141, stderr: '' });
});
