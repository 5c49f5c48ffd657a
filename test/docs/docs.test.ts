// The reference docs as the server serves them at /docs (built by `pnpm gen` into packages/docs/dist), in a real
// browser with the network cut off: Debian's Chromium, driven by playwright-core, against a server started
// in-process. Every request that does not go to that server is aborted and fails the test, as does any error in the
// console or any request that fails. Checked: every tag and operation is in the sidebar, once; every operation's deep
// link opens it, with its request samples calling the server that serves the page (the file as built, published
// elsewhere, keeps the contract's servers); every webhook shows its example body; every schema has its entry under
// Schemas; the older Redoc anchors (#operation/<operationId>) still land on the operation; search finds an operation.
// A screenshot is kept in test-results/docs.png for a human look.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { useTestServer } from '@platform/server/testing';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isObject, listOperations, loadDocument } from '../support/openapi.ts';
import { repoRoot } from '../support/prism.ts';

const chromiumPath = '/usr/bin/chromium';
const dist = join(repoRoot, 'packages', 'docs', 'dist');
const screenshot = join(repoRoot, 'test-results', 'docs.png');

const doc = loadDocument();
const webhooks = Object.keys(isObject(doc.webhooks) ? doc.webhooks : {});
const schemaNames = Object.keys(isObject(doc.components) && isObject(doc.components.schemas) ? doc.components.schemas : {});
// The built page as a docs site would publish it (any origin but the API's): the page and Redoc's script, from disk.
const published = 'https://docs.platform.example';
const operations = listOperations(doc);
const tags = (Array.isArray(doc.tags) ? doc.tags : []).map((tag) => (isObject(tag) ? String(tag.name) : ''));
const firstTag = (operation: (typeof operations)[number]) => {
  const list = operation.object.tags;
  return Array.isArray(list) && typeof list[0] === 'string' ? list[0] : '';
};
// Redoc's anchor of an operation: #/<tag slug>/<operationid>.
const anchorOf = (operation: (typeof operations)[number]) =>
  `#/${firstTag(operation)
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')}/${operation.operationId.toLowerCase()}`;

const app = useTestServer();
let context: BrowserContext | undefined;
let userDataDir: string | undefined;
const offsite: string[] = [];
const pageErrors: string[] = [];
const policyViolations: string[] = [];
const consoleErrors: string[] = [];
const failedRequests: string[] = [];

beforeAll(async () => {
  // Without Chromium the browser tests fail (not skipped), with the install command.
  if (!existsSync(chromiumPath)) return;
  userDataDir = await mkdtemp(join(tmpdir(), 'platform-docs-chromium-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: chromiumPath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1400, height: 900 },
  });
  // The network is cut off: only the server under test answers.
  await context.route(/.*/, async (route) => {
    const url = route.request().url();
    if (url.startsWith(`${app.baseUrl}/`)) return route.continue();
    if (url === `${published}/docs/`) return route.fulfill({ path: join(dist, 'index.html'), contentType: 'text/html; charset=utf-8' });
    if (url === `${published}/docs/redoc.standalone.js`) return route.fulfill({ path: join(dist, 'redoc.standalone.js'), contentType: 'text/javascript' });
    offsite.push(`${route.request().resourceType()} ${url}`);
    return route.abort();
  });
  // What the page's Content-Security-Policy refused (such a load never reaches the network, so it is seen here).
  await context.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (event) => {
      console.warn(`csp-violation ${event.effectiveDirective} ${event.blockedURI}`);
    });
  });
  context.on('console', (message) => {
    const text = message.text();
    if (text.startsWith('csp-violation ')) policyViolations.push(text.slice('csp-violation '.length));
    else if (message.type() === 'error') consoleErrors.push(`${message.location().url}: ${text}`);
  });
  context.on('requestfailed', (request) => failedRequests.push(`${request.url()}: ${request.failure()?.errorText}`));
  context.on('response', (response) => {
    if (response.status() >= 400) failedRequests.push(`${response.url()}: ${response.status()}`);
  });
});

afterAll(async () => {
  await context?.close();
  if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
});

async function openDocs(hash = '', origin = app.baseUrl): Promise<Page> {
  if (!existsSync(chromiumPath)) {
    throw new Error(
      `${chromiumPath} is missing: the docs test needs Debian's Chromium. Install it with \`apt-get update && apt-get install -y chromium\` (the tests never download a browser).`,
    );
  }
  if (!context) throw new Error('the browser did not start');
  const page = await context.newPage();
  page.on('pageerror', (error) => pageErrors.push(error.message));
  await page.goto(`${origin}/docs${origin === app.baseUrl ? '' : '/'}${hash}`);
  // Hydrated: the search box is Redoc's live trigger, not the server-rendered placeholder.
  await page.getByTestId('search-trigger').waitFor({ state: 'visible', timeout: 20_000 });
  return page;
}

function section(page: Page, operationId: string) {
  const operation = operations.find((candidate) => candidate.operationId === operationId);
  if (!operation) throw new Error(`the contract has no ${operationId}`);
  return page.locator(`[data-section-id="${anchorOf(operation).slice(1)}"]`).first();
}

async function showOperation(page: Page, operation: (typeof operations)[number]) {
  const shown = section(page, operation.operationId);
  await shown.locator('h2').first().waitFor({ state: 'visible', timeout: 10_000 });
  return shown;
}

describe('/docs over HTTP', () => {
  it('serves the built page and the Redoc script it imports; HEAD answers like GET without a body', async () => {
    const page = await fetch(`${app.baseUrl}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await page.text();
    // The file as built, marked as served by the API (its script then uses the page's origin for the API).
    const marker = '<meta name="platform-api" content="same-origin" />';
    expect(html).toBe((await readFile(join(dist, 'index.html'), 'utf8')).replace('<head>', `<head>\n  ${marker}`));
    // The page names no other origin for a script, a style sheet or a preload.
    expect(html.match(/<(script|link)[^>]*(src|href)="https?:[^"]*"/g) ?? []).toEqual([]);
    expect(html).toContain('import { hydrate } from "/docs/redoc.standalone.js"');
    // Its links stay on the page (#/<section>), even before Redoc runs: the one root-relative link is the script.
    expect(html.match(/ href="\/[^"]*"/g)).toEqual([' href="/docs/redoc.standalone.js"']);
    expect(html).toContain(' href="#/clusters"');
    expect(html).toMatch(/<meta http-equiv="Content-Security-Policy" content="default-src 'self'; script-src 'self' 'sha256-/);

    const head = await fetch(`${app.baseUrl}/docs`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toBe(page.headers.get('content-type'));
    expect(head.headers.get('content-length')).toBe(String(Buffer.byteLength(html)));
    expect(await head.text()).toBe('');

    const script = await fetch(`${app.baseUrl}/docs/redoc.standalone.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(Buffer.from(await script.arrayBuffer()).equals(await readFile(join(dist, 'redoc.standalone.js')))).toBe(true);

    // Anything else under /docs is the API's 404, not the page.
    const other = await fetch(`${app.baseUrl}/docs/clusters`);
    expect(other.status).toBe(404);
    expect(((await other.json()) as { error: { code: string } }).error.code).toBe('not_found');
  });

  it('serves /openapi.json as the bundled contract, byte for byte', async () => {
    const answer = await fetch(`${app.baseUrl}/openapi.json`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const bundled = await readFile(join(repoRoot, 'packages', 'api-types', 'generated', 'openapi.json'));
    expect(Buffer.from(await answer.arrayBuffer()).equals(bundled)).toBe(true);
  });

  it('leaves no file open after answers that are never read: HEAD, and a GET whose client goes away', async () => {
    // The files are streamed from disk (static-files.ts); the server runs in this process, so its open files are ours.
    const openDocsFiles = async () => {
      const links = await Promise.all((await readdir('/proc/self/fd')).map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => '')));
      return links.filter((target) => target.startsWith(dist)).length;
    };
    for (let i = 0; i < 20; i++) expect((await fetch(`${app.baseUrl}/docs/redoc.standalone.js`, { method: 'HEAD' })).status).toBe(200);
    for (let i = 0; i < 20; i++) {
      const abandoned = new AbortController();
      const answer = await fetch(`${app.baseUrl}/docs/redoc.standalone.js`, { signal: abandoned.signal });
      abandoned.abort();
      await answer.body?.cancel().catch(() => {});
    }
    await expect.poll(openDocsFiles, { timeout: 5000 }).toBe(0);
  });
});

describe('/docs in Chromium with the network cut off', { timeout: 180_000 }, () => {
  it('lists every tag once and every operation under its tag in the sidebar; server descriptions read plainly', async () => {
    const page = await openDocs();
    // Server descriptions are shown as plain text: markdown in them would show as is.
    const servers = await page.getByTestId('panel-servers').first().innerText();
    // The server that serves the page first, the local one after it; the contract's placeholder is not shown.
    const here = servers.indexOf(app.baseUrl);
    expect(here, servers).toBeGreaterThanOrEqual(0);
    expect(servers.indexOf('http://localhost:8080')).toBeGreaterThan(here);
    expect(servers).not.toContain('{base_url}');
    expect(servers).not.toMatch(/[`*]/);
    const sidebar = page.getByTestId('menu-item-label');
    const labels = (await sidebar.allInnerTexts()).map((text) => text.trim());
    for (const tag of tags)
      expect(
        labels.filter((label) => label === tag),
        `sidebar entries named ${tag}`,
      ).toHaveLength(1);
    expect(new Set(labels).size, `sidebar labels: ${labels.join(', ')}`).toBe(labels.length);

    const missing: string[] = [];
    for (const tag of tags) {
      await sidebar
        .filter({ hasText: new RegExp(`^${tag}$`) })
        .first()
        .click();
      const wanted = operations.filter((operation) => firstTag(operation) === tag).map((operation) => String(operation.object.summary));
      // Redoc renders a tag's entries after the click; a busy machine (2 cores shared by the whole suite) takes seconds.
      const deadline = Date.now() + 15_000;
      let shown: string[] = [];
      while (Date.now() < deadline) {
        shown = (await sidebar.allInnerTexts()).map((text) => text.replace(/\s+(GET|POST|PATCH|PUT|DELETE)$/i, '').trim());
        if (wanted.every((summary) => shown.includes(summary))) break;
        await page.waitForTimeout(100);
      }
      missing.push(...wanted.filter((summary) => !shown.includes(summary)).map((summary) => `${tag}: ${summary}`));
    }
    expect(missing, 'operations missing from the sidebar').toEqual([]);
    // A sidebar link stays on the page and shows its section.
    await sidebar
      .filter({ hasText: /^Errors$/ })
      .first()
      .click();
    await expect.poll(() => page.url(), { timeout: 5000 }).toBe(`${app.baseUrl}/docs#/section/errors`);
    await expect.poll(() => page.getByRole('heading', { name: 'Errors' }).first().isVisible(), { timeout: 5000 }).toBe(true);
    await page.close();
  });

  it('opens every operation by its deep link, with its curl and TypeScript samples', async () => {
    const page = await openDocs();
    // Visits every operation by its anchor and checks the sample shown beside it.
    const visitAll = async (checkSample: (sample: string, operation: (typeof operations)[number]) => string | undefined) => {
      const problems: string[] = [];
      for (const operation of operations) {
        const summary = String(operation.object.summary);
        try {
          await page.evaluate((hash) => {
            window.location.hash = hash;
          }, anchorOf(operation));
          const section = await showOperation(page, operation);
          await expect.poll(() => section.locator('h2').first().innerText(), { timeout: 5000 }).toBe(summary);
          const sample = section.getByTestId('source-code').first();
          let text = '';
          let problem: string | undefined = 'no sample';
          // A section fills in after it appears: give it a moment before judging.
          for (const deadline = Date.now() + 5000; problem && Date.now() < deadline; ) {
            text = (await sample.innerText().catch(() => '')).trim();
            problem = checkSample(text, operation);
            if (problem) await page.waitForTimeout(100);
          }
          if (problem) throw new Error(`${problem}: ${text.split('\n')[0]}`);
        } catch (error) {
          problems.push(`${operation.operationId} ("${summary}" at ${anchorOf(operation)}): ${(error as Error).message.split('\n')[0]}`);
        }
      }
      return problems;
    };
    const escapeRegExp = (text: string) => text.replace(/[.*+?^$()|[\]\\]/g, '\\$&');
    const pathPattern = (path: string) => escapeRegExp(path).replace(/\{[^}]+\}/g, "[^/?']+");

    const curlProblems = await visitAll((sample, operation) =>
      new RegExp(`^curl .*'${escapeRegExp(app.baseUrl)}${pathPattern(operation.path)}[?']`).test(sample)
        ? undefined
        : `its curl sample does not call ${operation.path}`,
    );
    expect(curlProblems, 'operations without their curl sample').toEqual([]);

    // The samples' language menu switches every sample to the TypeScript client.
    await page.evaluate(() => {
      window.location.hash = '#operation/listClusters';
    });
    await section(page, 'listClusters').getByTestId('right-panel').getByText('curl', { exact: true }).first().click();
    await page.getByRole('menuitem', { name: 'TypeScript client' }).filter({ visible: true }).first().click();
    const typescriptProblems = await visitAll((sample, operation) => {
      if (!sample.startsWith("import { createPlatformClient } from '@platform/client';")) return 'its sample is not the TypeScript client';
      if (!sample.includes(`baseUrl: '${app.baseUrl}'`)) return `its TypeScript sample does not call ${app.baseUrl}`;
      const call = new RegExp(`api\\.(${operation.method.toUpperCase()}\\('${pathPattern(operation.path)}'|${operation.operationId}\\()`);
      return call.test(sample) ? undefined : `its TypeScript sample does not call ${operation.method.toUpperCase()} ${operation.path}`;
    });
    expect(typescriptProblems, 'operations without their TypeScript sample').toEqual([]);
    await page.close();
    // Two visits of every operation: 150–176 s at a load average of 13–17 on two cores, more than the group's 180 s allow.
  }, 400_000);

  it("keeps the contract's servers in the page as built, published elsewhere", async () => {
    const page = await openDocs('', published);
    const servers = await page.getByTestId('panel-servers').first().innerText();
    // The public server first (the one generators pick), the local one after it.
    const publicServer = servers.indexOf('A production or staging deployment');
    expect(publicServer).toBeGreaterThanOrEqual(0);
    expect(servers.indexOf('http://localhost:8080')).toBeGreaterThan(publicServer);
    expect(servers).not.toContain(published);
    await page.evaluate(() => {
      window.location.hash = '#operation/listClusters';
    });
    const sample = section(page, 'listClusters').getByTestId('source-code').first();
    await expect.poll(() => sample.innerText().catch(() => ''), { timeout: 10_000 }).toMatch(/^curl 'https:\/\/api\.platform\.example\/v1\/clusters\?/);
    await page.close();
  });

  it('shows every webhook with its example body, no placeholder values', async () => {
    const page = await openDocs();
    const problems: string[] = [];
    for (const name of webhooks) {
      await page.evaluate((hash) => {
        window.location.hash = hash;
      }, `#/webhooks/paths/${name}/post`);
      const shown = page.locator(`[data-section-id="/webhooks/paths/${name}/post"]`).first();
      const sample = shown.getByTestId('source-code').first();
      let text = '';
      for (const deadline = Date.now() + 5000; Date.now() < deadline; await page.waitForTimeout(100)) {
        text = await sample.innerText().catch(() => '');
        if (text.includes(`"type": "${name}"`)) break;
      }
      if (!text.includes(`"type": "${name}"`)) problems.push(`${name}: no example body of its type: ${text.slice(0, 80)}`);
      else if (text.includes('"string"')) problems.push(`${name}: a placeholder value in ${text}`);
    }
    expect(problems).toEqual([]);
    await page.close();
  });

  it('lists every schema under Schemas, each opening its own section', async () => {
    const page = await openDocs();
    const sidebar = page.getByTestId('menu-item-label');
    await sidebar
      .filter({ hasText: /^Schemas$/ })
      .first()
      .click();
    // A schema's entry reads "<name> SCHEMA".
    const schemaLabel = /\s*schema$/i;
    let listed: string[] = [];
    await expect
      .poll(
        async () => {
          const labels = await sidebar.allInnerTexts();
          listed = labels.filter((label) => schemaLabel.test(label)).map((label) => label.replace(schemaLabel, '').trim());
          return schemaNames.filter((name) => !listed.includes(name));
        },
        { timeout: 10_000 },
      )
      .toEqual([]);
    expect(listed.length).toBe(schemaNames.length);
    await sidebar
      .filter({ hasText: /^ClusterCreatedEvent\s*schema$/i })
      .first()
      .click();
    await expect.poll(() => new URL(page.url()).hash, { timeout: 5000 }).toBe('#/schemas/clustercreatedevent');
    const shown = page.locator('[data-section-id="/schemas/clustercreatedevent"]').first();
    // Rendered once scrolled to, which takes a while on a busy machine.
    await shown.waitFor({ state: 'visible', timeout: 20_000 });
    await expect.poll(() => shown.innerText({ timeout: 2000 }).catch(() => ''), { timeout: 20_000 }).toMatch(/^ClusterCreatedEvent\n[\s\S]*\nobject_type\n/);
    await page.close();
  });

  it("lands on the operation from Redoc's older anchors", async () => {
    const page = await openDocs('#operation/getCluster');
    const getCluster = operations.find((operation) => operation.operationId === 'getCluster');
    if (!getCluster) throw new Error('the contract has no getCluster');
    await expect.poll(() => new URL(page.url()).hash, { timeout: 10_000 }).toBe(anchorOf(getCluster));
    const section = await showOperation(page, getCluster);
    await expect.poll(() => section.locator('h2').first().isVisible()).toBe(true);
    // The section is scrolled into view, not merely rendered somewhere below.
    const top = await section
      .locator('h2')
      .first()
      .evaluate((heading) => heading.getBoundingClientRect().top);
    expect(top).toBeGreaterThanOrEqual(0);
    expect(top).toBeLessThan(900);
    await page.close();
  });

  it('finds an operation by search and opens it', async () => {
    const page = await openDocs();
    await page.getByTestId('search-trigger').click();
    await page.keyboard.type('compute status');
    const dialog = page.getByTestId('search-dialog');
    const result = dialog.getByText('/compute_status').first();
    await result.waitFor({ state: 'visible', timeout: 10_000 });
    await result.click();
    const target = operations.find((operation) => operation.operationId === 'getClusterComputeStatus');
    if (!target) throw new Error('the contract has no getClusterComputeStatus');
    await expect.poll(() => new URL(page.url()).hash, { timeout: 10_000 }).toBe(anchorOf(target));
    await showOperation(page, target);

    await mkdir(join(repoRoot, 'test-results'), { recursive: true });
    await page.screenshot({ path: screenshot });
    await page.close();
  });

  it('asked for nothing outside the server and raised no error', () => {
    expect(offsite, 'requests that left the server').toEqual([]);
    expect(failedRequests, 'requests that failed').toEqual([]);
    expect(consoleErrors, 'errors in the console').toEqual([]);
    expect(pageErrors, 'errors in the page').toEqual([]);
    // The one load the page's policy refuses, without an error: the search library's probe for eval (search then
    // runs without a worker).
    expect(
      policyViolations.filter((violation) => violation !== 'script-src eval'),
      'loads the page policy refused',
    ).toEqual([]);
  });
});
