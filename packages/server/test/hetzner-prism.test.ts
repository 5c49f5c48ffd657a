// Every request the Hetzner driver sends must pass Prism's validation against the committed extract of
// Hetzner's published description (Prism's --errors: an invalid request is refused with a 4xx).
// Prism answers with data generated from the schemas, so these tests prove that the requests are valid and
// the answers parse, not that the driver keeps state right (the stateful fake does, hetzner-driver.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PrismServer, startPrism } from '../../../test/support/prism.ts';
import { HetznerCompute, HetznerError } from '../src/providers/hetzner/compute.ts';
import type { TokenRateLimit } from '../src/providers/hetzner/rate-limit.ts';
import type { ProviderCredential } from '../src/providers/types.ts';
import { extractPath, type HetznerFake, startHetznerFake } from './support/hetzner-fake.ts';

const PLATFORM = 'platform-token-prism';
const BYOM: ProviderCredential = { id: 'ccr_prism', token: 'byom-token-prism' };
const unlimited: TokenRateLimit = { take: async () => {}, defer: async () => {} };

let prism: PrismServer;
let fake: HetznerFake;

interface Checked {
  call: string;
  status: number;
  body: string;
}

/**
 * A fetch that sends each request to Prism first and records its verdict. `upstream` true: the driver then
 * gets the stateful fake's answer (so stateful flows run while Prism checks every request); false: Prism's.
 */
function prismChecked(checked: Checked[], upstream: boolean): typeof fetch {
  return async (input, init) => {
    const request = input as Request;
    const url = new URL(request.url);
    const path = `${url.pathname.replace(/^\/v1/, '')}${url.search}`;
    const body = request.body ? await request.clone().text() : undefined;
    const answer = await fetch(`${prism.url}${path}`, { method: request.method, headers: request.headers, body });
    const text = await answer.text();
    checked.push({ call: `${request.method} ${path}`, status: answer.status, body: text });
    if (upstream) return fetch(request, init);
    return new Response(answer.status === 204 ? null : text, { status: answer.status, headers: answer.headers });
  };
}

const refused = (checked: Checked[]) => checked.filter((c) => c.status >= 400).map((c) => `${c.call} → ${c.status} ${c.body.slice(0, 400)}`);

beforeAll(async () => {
  [prism, fake] = await Promise.all([
    startPrism({ mode: 'mock', document: extractPath, errors: true, verbose: 'warn' }),
    startHetznerFake({ tokens: [PLATFORM, BYOM.token], requestsPerHour: 3_600_000, actionMs: 30, startingMs: 30 }),
  ]);
});

afterAll(async () => {
  await Promise.all([prism?.stop(), fake?.close()]);
});

describe('requests Prism accepts', () => {
  it('the whole stateful journey (catalog, create with user_data, adopt, Actions, shutdown, power-off and power-on, snapshot, resume, delete, BYOM) sends only valid requests', async () => {
    const checked: Checked[] = [];
    const hetzner = new HetznerCompute({
      endpoint: fake.url,
      token: PLATFORM,
      managedBy: 'platform-prism',
      rateLimit: unlimited,
      actionPollMs: 10,
      shutdownTimeoutMs: 200,
      fetch: prismChecked(checked, true),
    });
    expect((await hetzner.offerings()).length).toBeGreaterThan(0);
    const base = { server_type: 'cx22', location: 'nbg1', image: 'ubuntu-24.04' };
    const server = await hetzner.createServer({
      ...base,
      name: 'prism-node-1',
      labels: { workflow: 'wf_prism1', machine: 'm_prism1' },
      user_data: '#cloud-config\n',
    });
    expect((await hetzner.createServer({ ...base, name: 'prism-node-1', labels: { workflow: 'wf_prism1', machine: 'm_prism1' } })).id).toBe(server.id);
    fake.honourShutdown = false;
    try {
      await hetzner.shutdownServer(server.id);
    } finally {
      fake.honourShutdown = true;
    }
    await hetzner.powerOnServer(server.id);
    await expect.poll(async () => (await hetzner.getServer(server.id))?.status, { interval: 20, timeout: 2000 }).toBe('running');
    await hetzner.shutdownServer(server.id);
    const snapshot = await hetzner.createSnapshot(server.id, { workflow: 'wf_prism_suspend', machine: 'm_prism1' });
    await expect.poll(async () => (await hetzner.getSnapshot(snapshot.id))?.status, { interval: 20, timeout: 2000 }).toBe('available');
    await hetzner.deleteServer(server.id);
    const restored = await hetzner.createServer({
      ...base,
      image: snapshot.id,
      name: 'prism-node-1',
      labels: { workflow: 'wf_prism_resume', machine: 'm_prism1' },
    });
    expect(restored.from_snapshot).toBe(true);
    await hetzner.deleteSnapshot(snapshot.id);
    await hetzner.deleteServer(restored.id);
    await hetzner.createServer({ ...base, name: 'prism-byom-1', labels: { workflow: 'wf_prism_byom', machine: 'm_prism2' }, credential: BYOM });

    expect(refused(checked)).toEqual([]);
    expect(fake.violations).toEqual([]);
    // Prism saw every request the fake answered, and every operation of the extract was exercised.
    expect(checked.length).toBe(fake.requests.length);
    const operations = new Set(checked.map((c) => c.call.replace(/\?.*$/, '').replace(/\/-?[0-9]+/g, '/{id}')));
    expect([...operations].sort()).toEqual([
      'DELETE /images/{id}',
      'DELETE /servers/{id}',
      'GET /actions/{id}',
      'GET /images',
      'GET /images/{id}',
      'GET /locations',
      'GET /server_types',
      'GET /servers',
      'GET /servers/{id}',
      'POST /servers',
      'POST /servers/{id}/actions/create_image',
      'POST /servers/{id}/actions/poweroff',
      'POST /servers/{id}/actions/poweron',
      'POST /servers/{id}/actions/shutdown',
    ]);
  });

  it('parses what Prism generates from the schemas for every call', async () => {
    const checked: Checked[] = [];
    const hetzner = new HetznerCompute({
      endpoint: prism.url,
      token: PLATFORM,
      managedBy: 'platform-prism',
      rateLimit: unlimited,
      actionPollMs: 10,
      fetch: prismChecked(checked, false),
    });
    const offerings = await hetzner.offerings();
    expect(Array.isArray(offerings)).toBe(true);
    expect(await hetzner.locations()).toEqual(expect.arrayContaining([expect.any(String)]));
    const server = await hetzner.getServer('42');
    expect(server).toMatchObject({
      id: expect.stringMatching(/^-?[0-9]+$/),
      name: expect.any(String),
      server_type: expect.any(String),
      location: expect.any(String),
    });
    expect(['initializing', 'starting', 'running', 'stopping', 'off', 'deleting', 'migrating', 'rebuilding', 'unknown']).toContain(server?.status);
    // Prism's list holds one server, `deleting` (the first of the enum): a re-run does not adopt a server being
    // deleted but deletes it first, and Prism's generated Actions end in status "error" (the first of the enum),
    // parsed into a HetznerError.
    expect(server?.status).toBe('deleting');
    const create = hetzner.createServer({ name: 'n', server_type: 'cx22', location: 'fsn1', image: 'ubuntu-24.04', labels: { workflow: 'wf_x' } });
    await expect(create).rejects.toBeInstanceOf(HetznerError);
    expect(checked.some((c) => c.call.startsWith('DELETE /servers/'))).toBe(true);
    await expect(hetzner.deleteServer('42')).rejects.toBeInstanceOf(HetznerError);
    const snapshot = await hetzner.createSnapshot('42', { workflow: 'wf_y' });
    expect(snapshot.id).toMatch(/^-?[0-9]+$/);
    await hetzner.getSnapshot('42');
    await hetzner.deleteSnapshot('42');
    expect(checked.length).toBeGreaterThanOrEqual(8);
    expect(refused(checked)).toEqual([]);
  });

  it('Prism does refuse an invalid request, so the checks above can fail', async () => {
    const checked: Checked[] = [];
    const send = prismChecked(checked, false);
    await send(
      new Request(`${prism.url}/servers`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${PLATFORM}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: 'x' }),
      }),
    );
    await send(new Request(`${prism.url}/servers/42`));
    expect(checked.map((c) => c.status)).toEqual([422, 401]);
  });
});
