// The device approval page (GET /device) in a real browser: Debian's Chromium driven by playwright-core, as the
// docs test does, against a server started in-process. A user pastes a token and continues with the prefilled
// code; the page shows the request (the code, the client that asked and when) and approves only once the user has
// ticked that the code matches their terminal (the device's poll then receives a token); a remembered token never
// approves by itself; another request is denied (its poll gets access_denied). The page loads nothing but itself:
// its Content-Security-Policy allows only its own inline script and style, and every request is checked to go to
// the server.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, newUser, type TestUser, useTestServer } from './support.ts';

const chromiumPath = '/usr/bin/chromium';
const GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

const app = useTestServer();
const { clock } = app;
let alice: TestUser;
let context: BrowserContext | undefined;
let userDataDir: string | undefined;
const requests: string[] = [];
const pageErrors: string[] = [];
const consoleErrors: string[] = [];

beforeAll(async () => {
  alice = await newUser(app.db, clock, 'free');
  // Without Chromium the tests fail (not skipped), naming the install command.
  if (!existsSync(chromiumPath)) return;
  userDataDir = await mkdtemp(join(tmpdir(), 'platform-device-chromium-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: chromiumPath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  context.on('request', (request) => requests.push(`${request.method()} ${request.url()}`));
  context.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text());
  });
});
afterAll(async () => {
  await context?.close();
  if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
});

async function openPage(): Promise<Page> {
  if (!existsSync(chromiumPath)) {
    throw new Error(`${chromiumPath} is missing: install it with \`apt-get update && apt-get install -y chromium\`.`);
  }
  if (!context) throw new Error('the browser did not start');
  const page = await context.newPage();
  page.on('pageerror', (error) => pageErrors.push(error.message));
  return page;
}

async function startDevice(): Promise<{ device_code: string; user_code: string; verification_uri_complete: string }> {
  const reply = await call(app.baseUrl, 'POST', '/v1/auth/device/code', { body: { client_id: 'platform-cli' } });
  expect(reply.status).toBe(200);
  return reply.body;
}

const poll = (deviceCode: string) =>
  call(app.baseUrl, 'POST', '/v1/auth/device/token', {
    body: new URLSearchParams({ grant_type: GRANT, device_code: deviceCode }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });

describe('GET /device', () => {
  it('is served with a strict Content-Security-Policy and cannot be framed', async () => {
    const reply = await fetch(`${app.baseUrl}/device`);
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = reply.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toMatch(/script-src 'sha256-[A-Za-z0-9+/=]+'(;|$)/);
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(reply.headers.get('x-frame-options')).toBe('DENY');
    const html = await reply.text();
    expect(html).not.toMatch(/(src|href)="https?:/);
  });

  it('shows the request from ?user_code= with a pasted token, and approves once the code is confirmed; the device then receives a session token', {
    timeout: 60_000,
  }, async () => {
    const asked = clock.now();
    const device = await startDevice();
    clock.advance(30);
    const page = await openPage();
    await page.goto(device.verification_uri_complete);
    await expect.poll(() => page.locator('#user_code').inputValue()).toBe(device.user_code);
    // Nothing is shown, nor can anything be approved, before the code is looked up.
    expect(await page.locator('#request').isVisible()).toBe(false);
    await page.locator('#token').fill(alice.token);
    // Remembering the token is opt-in: a shared browser keeps nothing unless asked to.
    expect(await page.locator('#remember').isChecked()).toBe(false);
    await page.locator('#remember').check();
    await page.getByRole('button', { name: 'Continue' }).click();
    const status = page.locator('#status');
    await expect.poll(() => status.getAttribute('data-result'), { timeout: 10_000 }).toBe('shown');
    // The code, the client that asked and when it asked.
    expect(await page.locator('#request-code').textContent()).toBe(device.user_code);
    expect(await page.locator('#request-client').textContent()).toBe('platform-cli');
    expect(await page.locator('#request-time').getAttribute('datetime')).toBe(new Date(asked * 1000).toISOString());
    expect(await page.locator('#request-time').textContent()).not.toBe('');
    expect(await page.locator('#confirm-code').textContent()).toBe(device.user_code);
    expect(await page.getByRole('button', { name: 'Approve' }).isDisabled()).toBe(true);

    await page.getByLabel(`The code ${device.user_code} matches the one my terminal shows`).check();
    await page.getByRole('button', { name: 'Approve' }).click();
    await expect.poll(() => status.getAttribute('data-result'), { timeout: 10_000 }).toBe('approved');
    expect(await status.textContent()).toContain(`Approved ${device.user_code}`);
    expect(await page.locator('#request').isVisible()).toBe(false);

    clock.advance(5);
    const issued = await poll(device.device_code);
    expect(issued.status).toBe(200);
    expect(issued.body).toMatchObject({ token_type: 'Bearer', access_token: expect.stringMatching(/^[A-Za-z0-9]{32}$/) });
    expect((await call(app.baseUrl, 'GET', '/v1/workspaces', { token: issued.body.access_token })).status).toBe(200);
    // The token was remembered in this browser, as asked.
    expect(await page.evaluate(() => localStorage.getItem('platform.device.token'))).toBe(alice.token);
    await page.close();
  });

  it('opened from a link with the token remembered, shows the request but does not approve until the code is confirmed', { timeout: 60_000 }, async () => {
    const device = await startDevice();
    const page = await openPage();
    await page.goto(`${app.baseUrl}/device`);
    await page.evaluate((token) => localStorage.setItem('platform.device.token', token), alice.token);
    // A phished user follows someone else's link: the code is filled in and the token is remembered.
    await page.goto(device.verification_uri_complete);
    const status = page.locator('#status');
    await expect.poll(() => status.getAttribute('data-result'), { timeout: 10_000 }).toBe('shown');
    expect(await page.locator('#request-code').textContent()).toBe(device.user_code);
    expect(await page.locator('#request-client').textContent()).toBe('platform-cli');
    // Approve stays disabled until the user ticks that the code matches; a click does nothing.
    const approve = page.getByRole('button', { name: 'Approve' });
    expect(await approve.isDisabled()).toBe(true);
    await approve.click({ force: true });
    // Enter in the code field looks the code up again; it never approves.
    await page.locator('#user_code').press('Enter');
    await expect.poll(() => status.getAttribute('data-result'), { timeout: 10_000 }).toBe('shown');
    clock.advance(5);
    expect((await poll(device.device_code)).body).toMatchObject({ error: 'authorization_pending' });
    const grant = await app.db
      .selectFrom('device_grants')
      .select(['status', 'user_id'])
      .where('user_code', '=', device.user_code.replace('-', ''))
      .executeTakeFirstOrThrow();
    expect(grant).toEqual({ status: 'pending', user_id: null });

    // Ticking, then editing the code, hides the request again: what is confirmed is what is decided.
    await page.locator('#confirm').check();
    expect(await approve.isDisabled()).toBe(false);
    await page.locator('#user_code').fill('BCDF-GHJK');
    expect(await page.locator('#request').isVisible()).toBe(false);
    expect(await page.locator('#approve').isDisabled()).toBe(true);
    await page.evaluate(() => localStorage.removeItem('platform.device.token'));
    await page.close();
  });

  it('denies a code typed by hand, with the token remembered from before; the device gets access_denied', { timeout: 60_000 }, async () => {
    const device = await startDevice();
    const page = await openPage();
    await page.goto(`${app.baseUrl}/device`);
    await page.evaluate((token) => localStorage.setItem('platform.device.token', token), alice.token);
    await page.reload();
    // The saved token is filled in; the code is typed in lower case, without the dash.
    await expect.poll(() => page.locator('#token').inputValue()).toBe(alice.token);
    expect(await page.locator('#user_code').inputValue()).toBe('');
    await page.locator('#user_code').fill(device.user_code.replace('-', '').toLowerCase());
    await page.getByRole('button', { name: 'Continue' }).click();
    const status = page.locator('#status');
    await expect.poll(() => status.getAttribute('data-result'), { timeout: 10_000 }).toBe('shown');
    expect(await page.locator('#request-code').textContent()).toBe(device.user_code);
    // Denying needs no confirmation.
    await page.getByRole('button', { name: 'Deny' }).click();
    await expect.poll(() => status.getAttribute('data-result'), { timeout: 10_000 }).toBe('denied');
    expect(await status.textContent()).toContain(`Denied ${device.user_code}`);

    clock.advance(5);
    const denied = await poll(device.device_code);
    expect(denied.status).toBe(400);
    expect(denied.body).toMatchObject({ error: 'access_denied' });

    // Looking the decided code up again is answered as an unknown code is (404): nobody learns which codes exist.
    await page.getByRole('button', { name: 'Continue' }).click();
    await expect.poll(() => status.getAttribute('data-result'), { timeout: 10_000 }).toBe('not_found');
    expect(await status.textContent()).toContain(`Device code ${device.user_code} not found.`);
    expect(await page.locator('#request').isVisible()).toBe(false);
    await page.evaluate(() => localStorage.removeItem('platform.device.token'));
    await page.close();
  });

  it('after ten links to unknown codes spent the look-ups, still approves the code of the user’s own terminal once confirmed', {
    timeout: 60_000,
  }, async () => {
    const bob = await newUser(app.db, clock, 'free');
    const page = await openPage();
    await page.goto(`${app.baseUrl}/device`);
    await page.evaluate((token) => localStorage.setItem('platform.device.token', token), bob.token);
    const status = page.locator('#status');
    // Someone sends ten links to codes that wait for nothing; each is looked up as it opens.
    for (const letter of 'BCDFGHJKLM') {
      await page.goto(`${app.baseUrl}/device?user_code=BCDF-GH${letter}K`);
      await expect.poll(() => status.getAttribute('data-result'), { timeout: 10_000 }).toBe('not_found');
    }
    // The user's own sign-in: the look-up is refused, and the page offers the code as typed to confirm.
    const device = await startDevice();
    await page.goto(device.verification_uri_complete);
    await expect.poll(() => status.getAttribute('data-result'), { timeout: 10_000 }).toBe('rate_limited');
    expect(await page.locator('#request').isVisible()).toBe(true);
    expect(await page.locator('#request-code').textContent()).toBe(device.user_code);
    expect(await page.locator('#request-client').textContent()).toBe('not looked up');
    await page.locator('#confirm').check();
    await page.getByRole('button', { name: 'Approve' }).click();
    await expect.poll(() => status.getAttribute('data-result'), { timeout: 10_000 }).toBe('approved');
    clock.advance(5);
    expect((await poll(device.device_code)).body).toMatchObject({ token_type: 'Bearer' });
    await page.evaluate(() => localStorage.removeItem('platform.device.token'));
    await page.close();
  });

  it('says so when the token is not accepted, and forgets it', { timeout: 60_000 }, async () => {
    const device = await startDevice();
    const page = await openPage();
    await page.goto(device.verification_uri_complete);
    await page.locator('#token').fill('q7Xk2mP9vR4tL8wN3zB6cY1hJ5dF0sGa');
    await page.getByRole('button', { name: 'Continue' }).click();
    await expect.poll(() => page.locator('#status').getAttribute('data-result'), { timeout: 10_000 }).toBe('unauthorized');
    expect(await page.evaluate(() => localStorage.getItem('platform.device.token'))).toBeNull();
    clock.advance(5);
    expect((await poll(device.device_code)).body).toMatchObject({ error: 'authorization_pending' });
    await page.close();
  });

  it('loaded nothing but the server, with no errors in the page', () => {
    expect(requests.length).toBeGreaterThan(0);
    expect(requests.filter((request) => !request.split(' ')[1]!.startsWith(`${app.baseUrl}/`))).toEqual([]);
    expect(pageErrors).toEqual([]);
    // Chromium logs each non-2xx fetch (the refused token's 401, the unknown codes' 404s, the spent look-ups' 429);
    // anything else, such as a Content-Security-Policy violation, fails the test.
    expect(consoleErrors.filter((message) => !/the server responded with a status of (401|404|429)/.test(message))).toEqual([]);
  });
});
