// The reference docs (packages/docs/dist/index.html, built by `pnpm gen`) render every operation of the
// contract in a real browser: Debian's Chromium, driven by playwright-core. A full-page screenshot is kept in
// test-results/docs.png for a human look.
//
// The page is opened from disk with the network cut off. Redocly's build-docs (without --inlineBundle) makes a
// page that imports Redoc from cdn.redocly.com at view time; that one script is served from the installed
// @redocly/cli, which ships the same file (the page pins it with a sha384 integrity hash, checked here).
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type BrowserContext, chromium } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { isObject, listOperations, loadDocument } from '../support/openapi.ts';
import { repoRoot } from '../support/prism.ts';

const chromiumPath = '/usr/bin/chromium';
const docsPage = join(repoRoot, 'packages', 'docs', 'dist', 'index.html');
const redocBundle = join(repoRoot, 'node_modules', '@redocly', 'cli', 'lib', 'chunks', 'redoc.standalone.js');
const screenshot = join(repoRoot, 'test-results', 'docs.png');

const operations = listOperations(loadDocument());

let context: BrowserContext | undefined;
let userDataDir: string | undefined;

const missingChromium =
  `${chromiumPath} is missing: the docs test needs Debian's Chromium. Install it with ` +
  '`apt-get update && apt-get install -y chromium` (the tests never download a browser).';

beforeAll(async () => {
  // Without Chromium the test itself fails (not skipped), with the install command.
  if (!existsSync(chromiumPath)) return;
  userDataDir = await mkdtemp(join(tmpdir(), 'platform-docs-chromium-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: chromiumPath,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1280, height: 900 },
  });
});

afterAll(async () => {
  await context?.close();
  if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
});

test('the reference docs render every operation', { timeout: 60_000 }, async () => {
  if (!existsSync(chromiumPath)) throw new Error(missingChromium);
  if (!context) throw new Error('the browser did not start');
  const html = await readFile(docsPage, 'utf8');

  // The only script the page may fetch is Redoc's bundle, and it must be the installed one, byte for byte.
  const cdnScript = /<link rel="modulepreload" href="(https:\/\/cdn\.redocly\.com\/[^"]+)" integrity="([^"]+)"/.exec(html);
  const bundle = cdnScript ? await readFile(redocBundle) : undefined;
  if (cdnScript && bundle) {
    const digest = `sha384-${createHash('sha384').update(bundle).digest('base64')}`;
    expect(digest, `${cdnScript[1]} differs from the installed @redocly/cli's bundle: run \`pnpm gen\``).toBe(cdnScript[2]);
  }
  // Everything else is cut off; a script or stylesheet among it would mean the page does not render offline.
  const blocked: string[] = [];
  await context.route(/^(https?|wss?):/, async (route) => {
    const url = route.request().url();
    if (cdnScript && bundle && url === cdnScript[1]) {
      await route.fulfill({ body: bundle, contentType: 'text/javascript', headers: { 'access-control-allow-origin': '*' } });
    } else {
      blocked.push(`${route.request().resourceType()} ${url}`);
      await route.abort();
    }
  });

  const page = context.pages()[0] ?? (await context.newPage());
  const pageErrors: string[] = [];
  page.on('pageerror', (error) => pageErrors.push(error.message));
  const url = pathToFileURL(docsPage).href;
  await page.goto(url);
  const doc = loadDocument();
  const title = isObject(doc.info) ? String(doc.info.title) : '';
  await expect.poll(() => page.getByRole('heading', { level: 1 }).first().textContent()).toContain(title);

  // Redoc renders lazily, only the sections around the one shown: go to each operation's anchor
  // (#/<tag>/<operationid>) and expect its section, headed by its summary, showing its path.
  const anchorOf = (operation: (typeof operations)[number]) => {
    const tags = operation.object.tags;
    const tag = Array.isArray(tags) && typeof tags[0] === 'string' ? tags[0] : '';
    return `#/${tag.toLowerCase().replace(/[^a-z0-9]+/g, '-')}/${operation.operationId.toLowerCase()}`;
  };
  const show = async (anchor: string) => {
    await page.evaluate((hash) => {
      window.location.hash = hash;
    }, anchor);
    const section = page.locator(`[data-section-id="${anchor.slice(1)}"]`).first();
    const heading = section.locator('h2').first();
    await heading.waitFor({ state: 'visible', timeout: 5000 });
    return { section, heading };
  };
  const settle = async (read: () => Promise<string>, done: (value: string) => boolean): Promise<string> => {
    const deadline = Date.now() + 5000;
    let value = await read();
    while (!done(value) && Date.now() < deadline) {
      await page.waitForTimeout(50);
      value = await read();
    }
    return value;
  };
  const missing: string[] = [];
  for (const operation of operations) {
    const anchor = anchorOf(operation);
    const summary = String(operation.object.summary);
    try {
      const { section, heading } = await show(anchor);
      // A section fills in after it appears: give it a moment before judging.
      const text = await settle(async () => (await heading.innerText()).trim(), (value) => value === summary);
      if (text !== summary) throw new Error(`its heading says "${text}"`);
      const body = await settle(() => section.innerText(), (value) => value.includes(operation.path));
      if (!body.includes(operation.path)) throw new Error(`${operation.path} is not shown`);
    } catch (error) {
      missing.push(`${operation.operationId} ("${summary}" at ${anchor}): ${(error as Error).message.split('\n')[0]}`);
    }
  }
  expect(missing, 'operations the docs do not render').toEqual([]);
  expect(pageErrors, 'errors in the page').toEqual([]);
  expect(blocked.filter((request) => /^(script|stylesheet) /.test(request)), 'scripts or styles from the network').toEqual([]);

  // The screenshot, on a fresh load: the introduction and the first operation (Redoc unmounts what is far
  // from the section shown, so no single page holds every operation).
  await page.goto(url);
  const first = operations[0];
  if (first) await show(anchorOf(first));
  await mkdir(join(repoRoot, 'test-results'), { recursive: true });
  await page.screenshot({ path: screenshot, fullPage: true });
  expect(existsSync(screenshot)).toBe(true);
});
