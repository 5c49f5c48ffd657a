// The client as another project gets it: `pnpm pack` (which builds dist/), the tarball installed with npm into a
// scratch project outside the workspace, then a consumer script type-checked with plain tsc and run with the
// system's Node 20 against a real server, and a browser script type-checked and bundled with esbuild.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { createTestDatabase, newUser, startTestServer, TestClock, type TestDatabase, type TestServer, type TestUser } from '@platform/server/testing';
import { build } from 'esbuild';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

const run = promisify(execFile);
const repoRoot = join(import.meta.dirname, '..', '..');
const tsc = join(repoRoot, 'node_modules', '.bin', 'tsc');
// The system's Node 20 (the oldest line the client supports), not the workspace's Node 24, which would also run
// `.ts` sources. CLIENT_CONSUMER_NODE points elsewhere on machines that keep their Node 20 in another place.
const systemNode = process.env.CLIENT_CONSUMER_NODE ?? '/usr/bin/node';
// Debian's Chromium, as the docs test uses it (the tests never download a browser).
const chromiumPath = '/usr/bin/chromium';

let scratch: string;
let database: TestDatabase;
let server: TestServer;
let user: TestUser;

async function exec(file: string, args: string[], cwd: string) {
  try {
    return await run(file, args, { cwd, env: { ...process.env, NO_COLOR: '1' }, maxBuffer: 16 * 1024 * 1024 });
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`${file} ${args.join(' ')} failed:\n${stdout}${stderr}`);
  }
}

// A consumer for Node: every call style, pagination, the typed error, and a type error the compiler must catch.
const nodeConsumer = `import { createPlatformClient, PlatformApiError, type PlatformClient } from '@platform/client';

const [baseUrl = '', token = ''] = process.argv.slice(2);
const api: PlatformClient = createPlatformClient({ baseUrl, token });

const regions = await api.listRegions({ limit: 1 });
const regionIds: string[] = [];
for await (const region of api.paginate('listRegions', { limit: 1 })) regionIds.push(region.id);
const tokens = await api.GET('/v1/user/tokens', { params: { query: { limit: 5 } } });

let missing: { status: number; code: string } | undefined;
try {
  await api.getCluster({ clusterId: 'cl_01jd2x8m5r7t9v1w3y5a7c9e1g' });
} catch (error) {
  if (error instanceof PlatformApiError) missing = { status: error.status, code: error.code };
}

export function neverCalled(): void {
  // @ts-expect-error limit is a number: the installed declarations carry the contract's types
  void api.listClusters({ limit: 'ten' });
}

console.log(JSON.stringify({ firstPage: regions.data.length, regionIds, tokens: Array.isArray(tokens.data), missing }));
`;

// A consumer for browsers: the DOM lib only, no Node types.
const browserConsumer = `import { createPlatformClient, PlatformApiError } from '@platform/client';

export async function regionNames(token: string): Promise<string[]> {
  const api = createPlatformClient({ baseUrl: location.origin, token });
  const names: string[] = [];
  try {
    for await (const region of api.paginate('listRegions', { limit: 2 })) names.push(region.name);
  } catch (error) {
    if (error instanceof PlatformApiError) return [\`error: \${error.code}\`];
    throw error;
  }
  return names;
}
`;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'platform-client-consumer-'));
  await exec('pnpm', ['pack', '--pack-destination', scratch], join(repoRoot, 'packages', 'client'));
  const tarball = (await readdir(scratch)).find((name) => name.endsWith('.tgz'));
  if (!tarball) throw new Error('pnpm pack wrote no tarball');
  await writeFile(join(scratch, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  // npm, not pnpm: the project is a stranger to the workspace. Public dependencies come from the registry.
  await exec('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', `./${tarball}`, '@types/node@20.19.43'], scratch);

  await writeFile(join(scratch, 'node-consumer.ts'), nodeConsumer);
  await writeFile(join(scratch, 'browser-consumer.ts'), browserConsumer);
  const common = { target: 'ES2022', strict: true, skipLibCheck: false };
  await writeFile(
    join(scratch, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { ...common, module: 'NodeNext', moduleResolution: 'NodeNext', types: ['node'], outDir: 'out' },
      files: ['node-consumer.ts'],
    }),
  );
  await writeFile(
    join(scratch, 'tsconfig.browser.json'),
    JSON.stringify({
      compilerOptions: { ...common, module: 'ESNext', moduleResolution: 'bundler', lib: ['ES2022', 'DOM', 'DOM.Iterable'], types: [], noEmit: true },
      files: ['browser-consumer.ts'],
    }),
  );

  database = await createTestDatabase();
  const clock = new TestClock();
  server = await startTestServer(database.db, clock);
  user = await newUser(database.db, clock);
}, 300_000);

afterAll(async () => {
  await server?.close();
  await database?.drop();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe('the packed client in a project outside the workspace', () => {
  test('depends on public packages only and ships JavaScript and declarations', async () => {
    const manifest = JSON.parse(await readFile(join(scratch, 'node_modules', '@platform', 'client', 'package.json'), 'utf8'));
    expect(Object.keys(manifest.dependencies).sort()).toEqual(['eventsource-parser', 'openapi-fetch']);
    expect(manifest.exports).toEqual({ '.': { types: './dist/index.d.ts', default: './dist/index.js' } });
    const installed = await readdir(join(scratch, 'node_modules'));
    expect(installed).not.toContain('@platform/api-types');
  });

  test('type-checks with plain tsc (NodeNext) and runs on the system Node 20 against the server', async () => {
    await exec(tsc, ['-p', 'tsconfig.json'], scratch);
    const { stdout: version } = await exec(systemNode, ['--version'], scratch);
    expect(version).toMatch(/^v20\./);
    const { stdout } = await exec(systemNode, ['out/node-consumer.js', server.baseUrl, user.token], scratch);
    const result = JSON.parse(stdout);
    expect(result.firstPage).toBe(1);
    expect(result.regionIds.length).toBeGreaterThan(1);
    expect(result.regionIds).toContain('fsn1');
    expect(result.tokens).toBe(true);
    expect(result.missing).toEqual({ status: 404, code: 'not_found' });
  }, 120_000);

  test('a type error in the consumer fails tsc', async () => {
    await writeFile(join(scratch, 'wrong.ts'), `${nodeConsumer.replace('// @ts-expect-error', '//')}`);
    await writeFile(
      join(scratch, 'tsconfig.wrong.json'),
      JSON.stringify({ extends: './tsconfig.json', compilerOptions: { noEmit: true }, files: ['wrong.ts'] }),
    );
    await expect(exec(tsc, ['-p', 'tsconfig.wrong.json'], scratch)).rejects.toThrow(/wrong\.ts.*TS2322/s);
  }, 120_000);

  test('type-checks with the DOM lib, bundles for the browser with esbuild without Node-only imports, and runs in Chromium', async () => {
    await exec(tsc, ['-p', 'tsconfig.browser.json'], scratch);
    const result = await build({
      absWorkingDir: scratch,
      entryPoints: ['browser-consumer.ts'],
      bundle: true,
      platform: 'browser',
      format: 'iife',
      globalName: 'consumer',
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    const inputs = Object.keys(result.metafile.inputs).map((path) => relative(scratch, join(scratch, path)));
    const packages = new Set(inputs.flatMap((path) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path)?.[1] ?? []));
    expect([...packages].sort()).toEqual(['@platform/client', 'eventsource-parser', 'openapi-fetch']);
    const bundle = result.outputFiles[0]?.text ?? '';
    expect(bundle).not.toMatch(/\bfrom\s*["']node:|\brequire\(|\bimport\(["']node:|process\.env/);

    // The bundle on a page of the server's own origin (so no CORS is involved), calling the real server.
    if (!existsSync(chromiumPath)) throw new Error(`${chromiumPath} is missing: apt-get install -y chromium`);
    const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox', '--disable-gpu'] });
    try {
      const page = await browser.newPage();
      await page.route(`${server.baseUrl}/consumer.html`, (route) =>
        route.fulfill({ contentType: 'text/html', body: `<!doctype html><script>${bundle}</script>` }),
      );
      await page.goto(`${server.baseUrl}/consumer.html`);
      const call = (token: string) =>
        page.evaluate((t) => (globalThis as unknown as { consumer: { regionNames(t: string): Promise<string[]> } }).consumer.regionNames(t), token);
      const names = await call(user.token);
      expect(names.length).toBeGreaterThan(2);
      expect(names).toContain('Falkenstein');
      expect(await call('svc_pat_not_a_real_token')).toEqual(['error: unauthorized']);
    } finally {
      await browser.close();
    }
  }, 120_000);
});
