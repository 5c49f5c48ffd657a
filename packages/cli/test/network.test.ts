// The CLI when no API answers: one error naming the URL it called and why (refused, unknown host), exit 1.
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const run = promisify(execFile);
const main = join(import.meta.dirname, '..', 'src', 'main.ts');

/** A port nothing listens on: taken, then freed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

it('names the URL and the refusal when the API is not there', async () => {
  const port = await closedPort();
  const env = { ...process.env, XDG_CONFIG_HOME: mkdtempSync(join(tmpdir(), 'platform-cli-network-')), PLATFORM_TOKEN: 'svc_pat_x' };
  const failure = await run(process.execPath, [main, 'regions', '--api-url', `http://127.0.0.1:${port}`], { env }).catch(
    (error: { code: number; stderr: string }) => error,
  );
  expect(failure).toMatchObject({ code: 1 });
  const stderr = (failure as { stderr: string }).stderr;
  expect(stderr).toContain(`Error: GET http://127.0.0.1:${port}/v1/regions failed: connect ECONNREFUSED 127.0.0.1:${port}\n`);
  expect(stderr).toContain('Suggestion: check that the API is reachable');
});
