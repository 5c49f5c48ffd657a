// `pnpm mock` as a front-end developer starts it: one listen line and no error at start (Prism's own log only
// with --verbose), and what Prism itself refuses (an unknown path or method, a forced status the operation does not
// document) answered in the API's error body, as every other error.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { freePort, repoRoot } from '../support/prism.ts';

const auth = { Authorization: 'Bearer svc_pat_mock' };

describe('pnpm mock', () => {
  test('prints one line and answers what Prism refuses with the error body', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, [join(repoRoot, 'scripts', 'mock.ts')], {
      cwd: repoRoot,
      env: { ...process.env, PORT: String(port), NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = once(child, 'exit');
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no address printed:\n${output}`)), 30_000);
        child.stdout.on('data', () => {
          if (!output.includes('listening on')) return;
          clearTimeout(timer);
          resolve();
        });
        void exited.then(() => reject(new Error(`exited before listening:\n${output}`)));
      });
      const base = `http://127.0.0.1:${port}`;
      const call = async (path: string, init: RequestInit = {}) => {
        const response = await fetch(`${base}${path}`, { ...init, headers: { ...auth, ...init.headers } });
        return { status: response.status, type: response.headers.get('content-type'), body: await response.json() };
      };
      expect(await call('/v1/bogus')).toEqual({
        status: 404,
        type: 'application/json',
        body: { error: { code: 'not_found', message: 'No operation of the API has the path /v1/bogus.', suggestion: expect.any(String) } },
      });
      expect(await call('/v1/clusters', { method: 'PUT' })).toMatchObject({ status: 405, body: { error: { code: 'method_not_allowed' } } });
      expect(await call('/v1/clusters', { headers: { Prefer: 'code=418' } })).toMatchObject({
        status: 400,
        body: { error: { code: 'bad_request', param: 'Prefer', message: expect.stringContaining('418') } },
      });
      expect(output.trim().split('\n')).toEqual([expect.stringMatching(new RegExp(`^Mock API \\(Prism\\) listening on ${base} `))]);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });
});
