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

// The tests that move about one loaded page (its sidebar, its sections by their anchors, its search) share it, in the
// file's order, each leaving it usable for the next: a load costs 3.5–5 s of CPU (Redoc hydrates the page and builds
// its search index), and a load per test was a sixth of the file's. The sidebar's test comes first, as its clicks open
// each tag's entries and a click on the tag the page is at would close them. The tests about a load itself (another
// origin, an anchor on arrival) open their own.
let loadedPage: Page | undefined;
async function loadedDocs(): Promise<Page> {
  loadedPage ??= await openDocs();
  return loadedPage;
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

async function goTo(page: Page, hash: string) {
  await page.evaluate((target) => {
    window.location.hash = target;
  }, hash);
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^$(){}|[\]\\]/g, '\\$&');

/** A pattern the first sample of a section must match, and what a miss says. */
interface SampleRule {
  pattern: string;
  problem: string;
}

/**
 * Waits until a section is there, with its heading visible and reading `heading` (when given) within 15 s, and its
 * first sample matching every rule within 5 s after that (a section fills in after it appears); gives what was still
 * wrong then (undefined when nothing) and the sample as last read. It looks from inside the page at each frame:
 * looking through locators costs a round trip and a locator resolution per look, which over a walk of every operation
 * added a quarter to the browser's CPU (Redoc's rendering is the rest).
 */
async function sectionShows(
  page: Page,
  expected: { sectionId: string; heading?: string; sample: SampleRule[] },
): Promise<{ problem?: string; sample: string }> {
  return page.evaluate(async ({ sectionId, heading, sample }) => {
    // Visible as Playwright means it: a box, and not hidden by display, visibility or content-visibility.
    const visible = (element: Element) => {
      const box = element.getBoundingClientRect();
      return box.width > 0 && box.height > 0 && element.checkVisibility({ visibilityProperty: true });
    };
    const look = () => {
      const section = document.querySelector(`[data-section-id="${sectionId}"]`);
      if (!section) return { problem: 'no section', sample: '', headingShown: false };
      const shownHeading = section.querySelector('h2');
      const text = (section.querySelector<HTMLElement>('[data-testid="source-code"]')?.innerText ?? '').trim();
      if (heading !== undefined) {
        if (!shownHeading || !visible(shownHeading)) return { problem: 'its heading is not shown', sample: text, headingShown: false };
        if (shownHeading.innerText !== heading) return { problem: `its heading reads "${shownHeading.innerText}"`, sample: text, headingShown: false };
      }
      const missed = sample.find((rule) => !new RegExp(rule.pattern).test(text));
      return { problem: missed && `${missed.problem}: ${text.split('\n')[0]}`, sample: text, headingShown: true };
    };
    const start = performance.now();
    let headingShownAt: number | undefined;
    for (let seen = look(); ; seen = look()) {
      const now = performance.now();
      if (seen.headingShown || heading === undefined) headingShownAt ??= now;
      const waited = headingShownAt === undefined ? now - start > 15_000 : now - headingShownAt > 5000;
      if (!seen.problem || waited) return { problem: seen.problem, sample: seen.sample };
      await new Promise((resolve) => requestAnimationFrame(resolve));
    }
  }, expected);
}

/**
 * Chooses `to` in the samples' language menu of a section, now showing `from`, by clicking the menu and its item from
 * inside the page. A mouse click through Playwright first waits for its target to hold still and be the one hit: a
 * quarter of a second per click while Redoc renders, so the two clicks took longer than the operation's hash change.
 */
async function chooseInPage(page: Page, sectionId: string, from: string, to: string) {
  await page.evaluate(
    async ({ sectionId, from, to }) => {
      const section = document.querySelector(`[data-section-id="${sectionId}"]`);
      const menus = section?.querySelectorAll<HTMLElement>('[data-testid="right-panel"] button[aria-haspopup="menu"]') ?? [];
      const menu = [...menus].find((button) => button.textContent?.trim() === from);
      if (!menu) throw new Error(`no samples' menu showing ${from}`);
      menu.click();
      // The menu's items are rendered once it is open.
      for (const deadline = performance.now() + 10_000; performance.now() < deadline; await new Promise((resolve) => requestAnimationFrame(resolve))) {
        const items = document.querySelectorAll<HTMLElement>('[role="menuitem"]');
        const item = [...items].find((candidate) => candidate.innerText.trim() === to && candidate.checkVisibility({ visibilityProperty: true }));
        if (item) return item.click();
      }
      throw new Error(`no ${to} in the open samples' menu`);
    },
    { sectionId, from, to },
  );
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
    const page = await loadedDocs();
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
      // The first tag is clicked as a person clicks it, with the mouse. The others are clicked from inside the page: the
      // mouse waits for its target to hold still, and the tags below an opening one move for up to a second.
      if (tag === tags[0])
        await sidebar
          .filter({ hasText: new RegExp(`^${tag}$`) })
          .first()
          .click();
      const wanted = operations.filter((operation) => firstTag(operation) === tag).map((operation) => String(operation.object.summary));
      // Redoc renders a tag's entries after the click; a busy machine (2 cores shared by the whole suite) takes seconds.
      // The labels are read from inside the page at each frame until they are all there (a round trip per look costs).
      const shown = await page.evaluate(
        async ({ tag, clicked, wanted, timeout }) => {
          const labels = () => [...document.querySelectorAll<HTMLElement>('[data-testid="menu-item-label"]')];
          if (!clicked)
            labels()
              .find((label) => label.innerText.trim() === tag)
              ?.click();
          const read = () => labels().map((label) => label.innerText.replace(/\s+(GET|POST|PATCH|PUT|DELETE)$/i, '').trim());
          const deadline = performance.now() + timeout;
          for (let listed = read(); ; listed = read()) {
            if (wanted.every((summary) => listed.includes(summary)) || performance.now() > deadline) return listed;
            await new Promise((resolve) => requestAnimationFrame(resolve));
          }
        },
        { tag, clicked: tag === tags[0], wanted, timeout: 15_000 },
      );
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
  });

  it('opens every operation by its deep link, with its curl and TypeScript samples', async () => {
    const page = await loadedDocs();
    // A path with any value in place of each {parameter}.
    const pathPattern = (path: string) =>
      path
        .split(/\{[^}]+\}/)
        .map(escapeRegExp)
        .join("[^/?']+");
    // The samples' languages, each named as in the samples' language menu, with what an operation's sample shows in it
    // and the operations found wanting.
    const curl = {
      name: 'curl',
      rules: (operation: (typeof operations)[number]): SampleRule[] => [
        { pattern: `^curl .*'${escapeRegExp(app.baseUrl)}${pathPattern(operation.path)}[?']`, problem: `its curl sample does not call ${operation.path}` },
      ],
      problems: [] as string[],
    };
    const typescript = {
      name: 'TypeScript client',
      rules: (operation: (typeof operations)[number]): SampleRule[] => [
        { pattern: `^${escapeRegExp("import { createPlatformClient } from '@platform/client';")}`, problem: 'its sample is not the TypeScript client' },
        { pattern: escapeRegExp(`baseUrl: '${app.baseUrl}'`), problem: `its TypeScript sample does not call ${app.baseUrl}` },
        {
          pattern: `api\\.(${operation.method.toUpperCase()}\\('${pathPattern(operation.path)}'|${operation.operationId}\\()`,
          problem: `its TypeScript sample does not call ${operation.method.toUpperCase()} ${operation.path}`,
        },
      ],
      problems: [] as string[],
    };
    // Every operation is opened once by its anchor and shows its sample in the language the one before it left chosen
    // (the choice holds across sections); the samples' language menu then switches it to the other language, the one
    // the next operation opens with. So each operation shows both its samples with one hash change, not one per
    // language: Redoc renders the page anew at each (0.4 s of CPU here), and a language switch costs half that.
    let [chosen, other] = [curl, typescript];
    for (const operation of operations) {
      const summary = String(operation.object.summary);
      const sectionId = anchorOf(operation).slice(1);
      const where = `${operation.operationId} ("${summary}" at ${anchorOf(operation)})`;
      await goTo(page, anchorOf(operation));
      const opened = await sectionShows(page, { sectionId, heading: summary, sample: chosen.rules(operation) });
      if (opened.problem) chosen.problems.push(`${where}: ${opened.problem}`);
      try {
        if (operation === operations[0]) {
          // The first choice is made as a person makes it, with the mouse (which waits until the menu can take it).
          await section(page, operation.operationId).getByTestId('right-panel').getByText(chosen.name, { exact: true }).first().click({ timeout: 10_000 });
          await page.getByRole('menuitem', { name: other.name, exact: true }).filter({ visible: true }).first().click({ timeout: 10_000 });
        } else await chooseInPage(page, sectionId, chosen.name, other.name);
      } catch (error) {
        // The language now chosen is unknown, so the walk stops here.
        other.problems.push(`${where}: no switch to it in the samples' language menu: ${(error as Error).message.split('\n')[0]}`);
        break;
      }
      [chosen, other] = [other, chosen];
      const switched = await sectionShows(page, { sectionId, heading: summary, sample: chosen.rules(operation) });
      if (switched.problem) chosen.problems.push(`${where}: ${switched.problem}`);
    }
    expect(curl.problems, 'operations without their curl sample').toEqual([]);
    expect(typescript.problems, 'operations without their TypeScript sample').toEqual([]);
    // 31–50 s at a load average of 2–4.5 on two cores; a visit per operation and language took 48–77 s at 2–3, and
    // 150–176 s at 13–17.
  }, 400_000);

  it("keeps the contract's servers in the page as built, published elsewhere", async () => {
    const page = await openDocs('', published);
    const servers = await page.getByTestId('panel-servers').first().innerText();
    // The concrete public server first (the one generators pick), the template for one's own, the local one last.
    const publicServer = servers.indexOf('An example production deployment of the platform');
    expect(publicServer).toBeGreaterThanOrEqual(0);
    expect(servers.indexOf('A production or staging deployment')).toBeGreaterThan(publicServer);
    expect(servers.indexOf('http://localhost:8080')).toBeGreaterThan(servers.indexOf('A production or staging deployment'));
    expect(servers).not.toContain(published);
    await page.evaluate(() => {
      window.location.hash = '#operation/listClusters';
    });
    const sample = section(page, 'listClusters').getByTestId('source-code').first();
    await expect.poll(() => sample.innerText().catch(() => ''), { timeout: 10_000 }).toMatch(/^curl 'https:\/\/api\.platform\.example\/v1\/clusters\?/);
    await page.close();
  });

  it('shows every webhook with its example body, no placeholder values', async () => {
    const page = await loadedDocs();
    const problems: string[] = [];
    for (const name of webhooks) {
      await goTo(page, `#/webhooks/paths/${name}/post`);
      const shown = await sectionShows(page, {
        sectionId: `/webhooks/paths/${name}/post`,
        sample: [{ pattern: escapeRegExp(`"type": "${name}"`), problem: 'no example body of its type' }],
      });
      if (shown.problem) problems.push(`${name}: ${shown.problem}`);
      else if (shown.sample.includes('"string"')) problems.push(`${name}: a placeholder value in ${shown.sample}`);
    }
    expect(problems).toEqual([]);
  });

  it('lists every schema under Schemas, each opening its own section', async () => {
    const page = await loadedDocs();
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
    const page = await loadedDocs();
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
