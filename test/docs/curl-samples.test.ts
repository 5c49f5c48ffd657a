// Every curl sample of the docs, run as printed (only the address, token and workspace swapped for the test
// server's, a fresh user for each) against a server: each is a request the server understands. The examples'
// ids name nothing in this database, so "not found" (404, a 422 naming the unknown id, OAuth's invalid_grant for
// an unknown device code) is a fine answer; a malformed request, a rejected token, an unknown path or method, or
// a body the contract refuses is not.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { newUser, TestClock, type TestUser, useTestServer } from '@platform/server/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { codeSamples, sampleInput } from '../../scripts/code-samples.ts';
import { listOperations, loadDocument } from '../support/openapi.ts';

const run = promisify(execFile);
const doc = loadDocument();
const operations = listOperations(doc);

// The examples' time: their expiry dates are in its future.
const app = useTestServer({ clock: new TestClock(1_732_268_800) });
const { clock } = app;
let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'platform-curl-samples-'));
});
afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

it('every curl sample is a request the server understands', { timeout: 120_000 }, async () => {
  const misunderstood: string[] = [];
  for (const operation of operations) {
    // Its own user: one sample (logout) revokes the token it is given.
    const user: TestUser = await newUser(app.db, clock, 'free');
    const pathItem = doc.paths[operation.path];
    if (!pathItem) throw new Error(`no path item ${operation.path}`);
    const input = sampleInput(doc, operation.path, operation.method, pathItem, operation.object);
    const curl = codeSamples(input).find((sample) => sample.label === 'curl')?.source ?? '';
    let command = curl.replace(`'${input.baseUrl}`, `'${app.baseUrl}`);
    if (input.workspaceId) command = command.replace(`X-Workspace-Id: ${input.workspaceId}`, `X-Workspace-Id: ${user.workspaceId}`);
    const bodyFile = join(scratch, `${operation.operationId}.json`);
    // A followed stream does not end: curl stopping it after a while (exit code 28) is its expected end.
    const limit = input.eventStream
      ? `--max-time 2 --output '${bodyFile}' --write-out '%{http_code}' || [ $? -eq 28 ]`
      : `--max-time 10 --output '${bodyFile}' --write-out '%{http_code}'`;
    const { stdout } = await run('bash', ['-c', `${command} --silent ${limit}`], {
      env: { ...process.env, PLATFORM_TOKEN: user.token },
    });
    const status = Number(stdout);
    const body = await readFile(bodyFile, 'utf8').catch(() => '');
    const error = status >= 400 ? (JSON.parse(body) as { error: string | { code: string; message: string } }).error : undefined;
    const understood =
      status >= 200 && status < 300
        ? true
        : typeof error === 'string'
          ? status === 400 && error === 'invalid_grant'
          : (status === 404 && error?.code === 'not_found' && !error.message.startsWith('No endpoint')) ||
            (status === 422 && error?.code === 'validation_error' && / was not found( in [^.]+)?\.$/.test(error.message));
    if (!understood) misunderstood.push(`${operation.operationId}: ${status} ${body}`);
  }
  expect(misunderstood).toEqual([]);
});
