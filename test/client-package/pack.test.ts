// The client as another project gets it: `pnpm pack` (which builds dist/), the tarball installed with npm into a
// scratch project outside the workspace, then a consumer script type-checked with plain tsc and run with the
// system's Node 20 against a real server, and a browser script type-checked and bundled with esbuild.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { newUser, type TestUser, useTestServer } from '@platform/server/testing';
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

// The Standard Webhooks reference library, at the version the client's own tests pin, installed into the scratch
// project beside the tarball (the test signs and checks with it; the consumers never import it).
const clientManifest = JSON.parse(await readFile(join(repoRoot, 'packages', 'client', 'package.json'), 'utf8'));
const standardWebhooks = `standardwebhooks@${clientManifest.devDependencies.standardwebhooks}`;
interface ReferenceWebhook {
  sign(id: string, timestamp: Date, payload: string): string;
  verify(payload: string, headers: Record<string, string>): unknown;
}
type ReferenceWebhookClass = new (secret: string) => ReferenceWebhook;

let scratch: string;
let Webhook: ReferenceWebhookClass;
const app = useTestServer();
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
const nodeConsumer = `import {
  createPlatformClient,
  PlatformApiError,
  type PlatformClient,
  signWebhook,
  verifyWebhook,
  WebhookVerificationError,
} from '@platform/client';

const [baseUrl = '', token = '', webhookJson = '{}'] = process.argv.slice(2);
const api: PlatformClient = createPlatformClient({ baseUrl, token });
// As the README writes it, from the environment (string | undefined), under exactOptionalPropertyTypes.
void createPlatformClient({ baseUrl, token: process.env.PLATFORM_TOKEN, workspaceId: process.env.PLATFORM_WORKSPACE });

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

// A webhook signed by the test (the raw body as bytes, as a Node server reads it), then the same body tampered with.
const webhook = JSON.parse(webhookJson) as { payload: string; headers: Record<string, string>; secret: string };
const event = await verifyWebhook(Buffer.from(webhook.payload), webhook.headers, webhook.secret);
const tampered = await verifyWebhook(webhook.payload.replace('RUNNING', 'FAILED'), webhook.headers, webhook.secret).catch((error: unknown) =>
  error instanceof WebhookVerificationError ? error.reason : String(error),
);
const signed = await signWebhook(webhook.payload, { id: 'evt_from_consumer', secret: webhook.secret });

console.log(
  JSON.stringify({ firstPage: regions.data.length, regionIds, tokens: Array.isArray(tokens.data), missing, webhook: { type: event.type, tampered, signed } }),
);
`;

/** The README's sample of the client ("Using the client from another project"), as a reader copies it. */
async function readmeSample(): Promise<string> {
  const readme = await readFile(join(repoRoot, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Using the client from another project'));
  const sample = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  if (!sample?.includes('createPlatformClient')) throw new Error('README.md: no TypeScript sample of the client under "Using the client from another project"');
  return sample;
}

// A consumer for browsers: the DOM lib only, no Node types.
const browserConsumer = `import { createPlatformClient, PlatformApiError, signWebhook, verifyWebhook, WebhookVerificationError } from '@platform/client';

export async function checkWebhook(payload: string, headers: Record<string, string>, secret: string) {
  const event = await verifyWebhook(payload, new Headers(headers), secret);
  const tampered = await verifyWebhook(payload.replace('RUNNING', 'FAILED'), headers, secret).catch((error: unknown) =>
    error instanceof WebhookVerificationError ? error.reason : String(error),
  );
  const signed = await signWebhook(new TextEncoder().encode(payload), { id: 'evt_from_browser', secret });
  return { type: event.type, object: event.type === 'cluster.running' ? event.object.kaas.status : undefined, tampered, signed };
}

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
  await exec('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', `./${tarball}`, '@types/node@20.19.43', standardWebhooks], scratch);
  ({ Webhook } = createRequire(join(scratch, 'package.json'))('standardwebhooks') as { Webhook: ReferenceWebhookClass });

  await writeFile(join(scratch, 'node-consumer.ts'), nodeConsumer);
  await writeFile(join(scratch, 'browser-consumer.ts'), browserConsumer);
  await writeFile(join(scratch, 'readme-sample.ts'), await readmeSample());
  // The strictest settings a consumer may have (exactOptionalPropertyTypes and noUncheckedIndexedAccess are outside
  // `strict`).
  const common = { target: 'ES2022', strict: true, exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true, skipLibCheck: false };
  await writeFile(
    join(scratch, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { ...common, module: 'NodeNext', moduleResolution: 'NodeNext', types: ['node'], outDir: 'out' },
      files: ['node-consumer.ts', 'readme-sample.ts'],
    }),
  );
  await writeFile(
    join(scratch, 'tsconfig.browser.json'),
    JSON.stringify({
      compilerOptions: { ...common, module: 'ESNext', moduleResolution: 'bundler', lib: ['ES2022', 'DOM', 'DOM.Iterable'], types: [], noEmit: true },
      files: ['browser-consumer.ts'],
    }),
  );

  user = await newUser(app.db, app.clock);
}, 300_000);

/** A webhook as the platform sends it, signed by the reference library. */
function referenceWebhook() {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const id = 'evt_01jd2xd7h9k1n3q5s7v9x1z3b5';
  const payload = JSON.stringify({
    id,
    type: 'cluster.running',
    workspace_id: 'ws_01jd2x8k4q3m7n5p9r6s2t8v0w',
    object_type: 'cluster',
    object_id: 'cl_01jd2x8m5r7t9v1w3y5a7c9e1g',
    object: {
      id: 'cl_01jd2x8m5r7t9v1w3y5a7c9e1g',
      name: 'prod-eu',
      workspace_id: 'ws_01jd2x8k4q3m7n5p9r6s2t8v0w',
      region_id: 'fsn1',
      kaas: { version: 'v1.31', status: 'RUNNING', status_message: null },
      created_at: 1732268800,
    },
    created_at: 1732269100,
  });
  const timestamp = new Date();
  const headers = {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, timestamp, payload),
  };
  return { payload, headers, secret };
}

afterAll(async () => {
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

  test("has a license and nothing of the workspace's own: no scripts (their files are not packed), no devDependencies", async () => {
    const folder = join(scratch, 'node_modules', '@platform', 'client');
    const manifest = JSON.parse(await readFile(join(folder, 'package.json'), 'utf8'));
    expect(manifest.license).toBe('MIT');
    expect(existsSync(join(folder, 'LICENSE'))).toBe(true);
    expect(manifest).not.toHaveProperty('scripts');
    expect(manifest).not.toHaveProperty('devDependencies');
    expect(JSON.stringify(manifest)).not.toContain('workspace:');
  });

  test('type-checks with plain tsc (NodeNext), the README’s sample too, and runs on the system Node 20 against the server', async () => {
    await exec(tsc, ['-p', 'tsconfig.json'], scratch);
    const { stdout: version } = await exec(systemNode, ['--version'], scratch);
    expect(version).toMatch(/^v20\./);
    const webhook = referenceWebhook();
    const { stdout } = await exec(systemNode, ['out/node-consumer.js', app.baseUrl, user.token, JSON.stringify(webhook)], scratch);
    const result = JSON.parse(stdout);
    expect(result.firstPage).toBe(1);
    expect(result.regionIds.length).toBeGreaterThan(1);
    expect(result.regionIds).toContain('fsn1');
    expect(result.tokens).toBe(true);
    expect(result.missing).toEqual({ status: 404, code: 'not_found' });
    // Web Crypto on Node 20: verifies the reference's signature, refuses a tampered body, signs as the reference.
    expect(result.webhook).toMatchObject({ type: 'cluster.running', tampered: 'no_matching_signature' });
    expect(new Webhook(webhook.secret).verify(webhook.payload, result.webhook.signed)).toMatchObject({ type: 'cluster.running' });
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
      await page.route(`${app.baseUrl}/consumer.html`, (route) =>
        route.fulfill({ contentType: 'text/html', body: `<!doctype html><script>${bundle}</script>` }),
      );
      await page.goto(`${app.baseUrl}/consumer.html`);
      const call = (token: string) =>
        page.evaluate((t) => (globalThis as unknown as { consumer: { regionNames(t: string): Promise<string[]> } }).consumer.regionNames(t), token);
      const names = await call(user.token);
      expect(names.length).toBeGreaterThan(2);
      expect(names).toContain('Falkenstein');
      expect(await call('svc_pat_not_a_real_token')).toEqual(['error: unauthorized']);

      // Web Crypto in the browser: the reference's signature verified, a tampered body refused, its own accepted.
      const webhook = referenceWebhook();
      const checked = await page.evaluate(
        ({ payload, headers, secret }) =>
          (
            globalThis as unknown as {
              consumer: { checkWebhook(p: string, h: Record<string, string>, s: string): Promise<{ signed: Record<string, string> }> };
            }
          ).consumer.checkWebhook(payload, headers, secret),
        webhook,
      );
      expect(checked).toMatchObject({ type: 'cluster.running', object: 'RUNNING', tampered: 'no_matching_signature' });
      expect(new Webhook(webhook.secret).verify(webhook.payload, checked.signed)).toMatchObject({ type: 'cluster.running' });
    } finally {
      await browser.close();
    }
  }, 120_000);
});
