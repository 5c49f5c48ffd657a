// `pnpm mock` (scripts/mock.ts) and the `startPrism` helper behind it: they answer from the contract, report
// what breaks it when proxying, and leave nothing running when stopped.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { freePort, repoRoot, startPrism } from '../support/prism.ts';

const token = 'svc_pat_8fKq2LmN4pR7sT1vW3xY5zA9bC0dE2gH6jK1';
const auth = { authorization: `Bearer ${token}` };

async function refused(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(1000) });
    await response.body?.cancel();
    return false;
  } catch {
    return true;
  }
}

describe('pnpm mock', () => {
  test('listens on $PORT, prints its address, answers from the examples, and exits 0 on SIGTERM', async () => {
    const port = await freePort();
    // process.execPath: the Node running the tests, so the signal reaches the script (not a shell shim).
    const child = spawn(process.execPath, [join(repoRoot, 'scripts', 'mock.ts')], {
      cwd: repoRoot,
      env: { ...process.env, PORT: String(port), NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = once(child, 'exit') as Promise<[number | null, string | null]>;
    try {
      let output = '';
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no address printed:\n${output}`)), 30_000);
        child.stdout.on('data', (chunk: Buffer) => {
          output += chunk.toString();
          // The script's own line (Prism prints a similar one earlier, before the script is ready).
          if (output.includes(`Mock API (Prism) listening on http://127.0.0.1:${port}`)) {
            clearTimeout(timer);
            resolve();
          }
        });
        void exited.then(() => reject(new Error(`exited before listening:\n${output}`)));
      });

      const response = await fetch(`http://127.0.0.1:${port}/v1/regions`, { headers: auth });
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ data: [{ id: 'fsn1' }, { id: 'ash' }] });

      child.kill('SIGTERM');
      const [code, signal] = await exited;
      expect({ code, signal }).toEqual({ code: 0, signal: null });
      expect(await refused(`http://127.0.0.1:${port}/`), 'Prism stopped with the script').toBe(true);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});

describe('startPrism', () => {
  let upstream: Server | undefined;
  afterAll(async () => {
    if (upstream) await new Promise((resolve) => upstream?.close(resolve));
  });

  test('proxies to an upstream and flags a response that breaks the contract; stop() frees the port', async () => {
    // An upstream whose region list lacks the required `pagination`.
    upstream = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'req_1' });
      response.end(JSON.stringify({ data: [] }));
    });
    upstream.listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    const { port } = upstream.address() as { port: number };

    const prism = await startPrism({ mode: 'proxy', upstream: `http://127.0.0.1:${port}`, verbose: 'warn' });
    try {
      const response = await fetch(`${prism.url}/v1/regions`, { headers: auth });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ data: [] });
      expect(response.headers.get('sl-violations') ?? '').toMatch(/pagination/);
    } finally {
      await prism.stop();
    }
    expect(await refused(`${prism.url}/`)).toBe(true);
  });

  test('refuses a port that is taken, with a clear message', async () => {
    const prism = await startPrism({ mode: 'mock', verbose: 'warn' });
    try {
      await expect(startPrism({ mode: 'mock', port: prism.port })).rejects.toThrow(/EADDRINUSE/);
    } finally {
      await prism.stop();
    }
  });
});
