// The Hetzner driver against a stateful fake of Hetzner Cloud's API whose every answer is validated against the
// committed extract of Hetzner's published description (test/support/hetzner-fake.ts). Rate-limit buckets are
// the real PostgreSQL limiter.
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { firewallRules, HetznerCompute, HetznerError } from '../src/providers/hetzner/compute.ts';
import { tokenRateLimit } from '../src/providers/hetzner/rate-limit.ts';
import { ProviderAuthError, type ProviderCredential } from '../src/providers/types.ts';
import { ACTION_MS, type HetznerFake, STARTING_MS, startHetznerFake } from './support/hetzner-fake.ts';
import { useTestDatabase } from './support.ts';

const PLATFORM = 'platform-token-7f3a9c';
const BYOM: ProviderCredential = { id: 'ccr_byom1', token: 'byom-token-1d44e0' };
const FAST = 3_600_000; // requests an hour: 1 ms apart, so the tests are not slowed by spacing
const MANAGED_BY = 'platform-driver-test';

const database = useTestDatabase();
let fake: HetznerFake;
const logLines: string[] = [];
const logger = pino(
  { level: 'debug' },
  new Writable({
    write(chunk, _encoding, done) {
      logLines.push(String(chunk));
      done();
    },
  }),
);

function driver(options: { perHour?: number; token?: string | undefined; sshKeys?: string[] } = {}): HetznerCompute {
  return new HetznerCompute({
    endpoint: fake.url,
    token: 'token' in options ? options.token : PLATFORM,
    sshKeys: options.sshKeys ?? [],
    managedBy: MANAGED_BY,
    rateLimit: tokenRateLimit(database.db, options.perHour ?? FAST),
    logger,
    actionPollMs: 10,
    shutdownTimeoutMs: 300,
  });
}

const request = (workflow: string, overrides: Partial<Parameters<HetznerCompute['createServer']>[0]> = {}) => ({
  name: `node-${workflow.replaceAll('_', '-')}`,
  server_type: 'cx22',
  location: 'fsn1',
  image: 'ubuntu-24.04',
  labels: { workflow, machine: `m_${workflow}` },
  ...overrides,
});

beforeAll(async () => {
  // Actions of 30 ms, so the tests are quick; one test below keeps Hetzner's seconds.
  fake = await startHetznerFake({ tokens: [PLATFORM, BYOM.token], requestsPerHour: FAST, actionMs: 30, startingMs: 30 });
});

afterEach(() => {
  expect(fake.violations).toEqual([]);
});

afterAll(async () => {
  await fake?.close();
  // No token ever reached a log line.
  const all = logLines.join('');
  expect(all).not.toContain(PLATFORM);
  expect(all).not.toContain(BYOM.token);
});

describe('catalog', () => {
  it('reads server types (every page, deprecated ones left out) and locations from the API, and caches them', async () => {
    const hetzner = driver();
    const before = fake.requests.length;
    const offerings = await hetzner.offerings();
    expect(offerings).toHaveLength(59); // 60 types over two pages, one deprecated
    expect(offerings.map((o) => o.name)).not.toContain('cx11');
    expect(offerings[0]).toEqual({ name: 'cx22', cpu: 2, memory_bytes: 4 * 1024 ** 3, locations: ['fsn1', 'nbg1', 'hel1'] });
    expect(await hetzner.locations()).toEqual(['fsn1', 'nbg1', 'hel1']);
    const calls = fake.requests.slice(before).map((r) => `${r.path}${r.query}`);
    expect(calls).toEqual(['/server_types?page=1&per_page=50', '/server_types?page=2&per_page=50', '/locations?page=1&per_page=50']);
    await hetzner.offerings();
    expect(fake.requests.length - before).toBe(3);
  });
});

describe('server types per location', () => {
  it('offers each type only where it is available and not deprecated', async () => {
    const offerings = await driver().offerings();
    const where = (name: string) => offerings.find((o) => o.name === name)?.locations;
    // cpx31 is deprecated in nbg1; cax41 is not sold in nbg1 and sold out in hel1.
    expect(where('cpx31')).toEqual(['fsn1', 'hel1']);
    expect(where('cax41')).toEqual(['fsn1']);
  });

  it('refuses a type a location does not sell, or has none of now, without sending the create; a fresh catalog confirms it', async () => {
    const hetzner = driver();
    await hetzner.offerings();
    const posts = () => fake.requests.filter((r) => r.method === 'POST' && r.path === '/servers').length;
    const catalogReads = () => fake.requests.filter((r) => r.path === '/server_types').length;
    const count = posts();
    const reads = catalogReads();
    const notSold = (await hetzner.createServer(request('wf_type_nbg1', { server_type: 'cax41', location: 'nbg1' })).catch((e: unknown) => e)) as HetznerError;
    expect(notSold).toMatchObject({ kind: 'refused', code: 'invalid_input', final: true });
    expect(notSold.message).toBe('Hetzner Cloud does not sell server type cax41 in nbg1 (it is on sale in fsn1).');
    const soldOut = (await hetzner.createServer(request('wf_type_hel1', { server_type: 'cax41', location: 'hel1' })).catch((e: unknown) => e)) as HetznerError;
    expect(soldOut).toMatchObject({ kind: 'refused', code: 'resource_unavailable', final: true });
    expect(soldOut.message).toBe('Server type cax41 is not available in hel1 now (it is on sale in fsn1).');
    expect(posts()).toBe(count);
    // Each refusal read the catalog afresh (two pages), not only the cached one.
    expect(catalogReads() - reads).toBe(4);
  });

  it('still creates a type deprecated in the location before its unavailable_after (a resumed machine keeps its type)', async () => {
    const server = await driver().createServer(request('wf_type_deprecated', { server_type: 'cpx31', location: 'nbg1' }));
    expect(server).toMatchObject({ server_type: 'cpx31', location: 'nbg1' });
  });

  it('the double refuses, as Hetzner does, a type not sold in the location (invalid_input) or not available there (resource_unavailable)', async () => {
    const create = (server_type: string, location: string) =>
      fetch(`${fake.url}/servers`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${PLATFORM}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: `raw-${server_type}-${location}`, server_type, location, image: 'ubuntu-24.04' }),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as { error?: { code: string; message: string } } }));
    expect(await create('cax41', 'nbg1')).toEqual({ status: 400, body: { error: { code: 'invalid_input', message: 'unsupported location for server type' } } });
    expect((await create('cax41', 'hel1')).body.error?.code).toBe('resource_unavailable');
    expect((await create('cx11', 'fsn1')).body.error?.code).toBe('invalid_server_type');
    const listed = (await (await fetch(`${fake.url}/server_types?per_page=50`, { headers: { Authorization: `Bearer ${PLATFORM}` } })).json()) as {
      server_types: { name: string; locations: { name: string; available: boolean; recommended: boolean }[] }[];
    };
    expect(listed.server_types.find((t) => t.name === 'cax41')?.locations.map((l) => [l.name, l.available])).toEqual([
      ['fsn1', true],
      ['hel1', false],
    ]);
  });
});

describe('servers', () => {
  it('reads a server’s location from `location`: Hetzner’s server has no `datacenter` any more', async () => {
    const hetzner = driver();
    const created = await hetzner.createServer(request('wf_no_dc', { location: 'hel1' }));
    const raw = (await (await fetch(`${fake.url}/servers/${created.id}`, { headers: { Authorization: `Bearer ${PLATFORM}` } })).json()) as {
      server: Record<string, unknown> & { location: { name: string } };
    };
    expect(raw.server).not.toHaveProperty('datacenter');
    expect(raw.server.location.name).toBe('hel1');
    expect((await hetzner.getServer(created.id))?.location).toBe('hel1');
    expect(created.location).toBe('hel1');
  });

  it('creates a labelled server, polls its Action to success, and adopts it on a re-run with the same workflow', async () => {
    const hetzner = driver();
    const server = await hetzner.createServer(request('wf_create1', { user_data: '#cloud-config\nruncmd: [kubeadm join]\n' }));
    expect(server).toMatchObject({
      name: 'node-wf-create1',
      // Its create_server Action has ended: Hetzner shows it starting, or running already.
      status: expect.stringMatching(/^(starting|running)$/),
      server_type: 'cx22',
      image: 'ubuntu-24.04',
      location: 'fsn1',
      from_snapshot: false,
    });
    expect(server.id).toMatch(/^[0-9]+$/);
    // Ours: this installation's managed-by label beside the workflow's.
    expect(server.labels).toEqual({ workflow: 'wf_create1', machine: 'm_wf_create1', 'managed-by': MANAGED_BY });
    const post = fake.requests.find((r) => r.method === 'POST' && r.path === '/servers' && (r.body as { name: string }).name === 'node-wf-create1');
    expect(post?.body).toMatchObject({ user_data: '#cloud-config\nruncmd: [kubeadm join]\n', labels: { workflow: 'wf_create1' }, location: 'fsn1' });
    expect(fake.requests.some((r) => r.path.startsWith('/actions/'))).toBe(true);

    const posts = () => fake.requests.filter((r) => r.method === 'POST' && r.path === '/servers').length;
    const count = posts();
    const again = await hetzner.createServer(request('wf_create1'));
    expect(again.id).toBe(server.id);
    expect(posts()).toBe(count);
    expect(fake.servers(PLATFORM).filter((s) => s.labels.workflow === 'wf_create1')).toHaveLength(1);
  });

  it('writes label values in the characters Hetzner allows, and still adopts by them', async () => {
    const hetzner = driver();
    const labels = { workflow: 'wf_labels1', machine: 'compute://mch_01hx' };
    const server = await hetzner.createServer(request('wf_labels1', { labels }));
    expect(server.labels).toEqual({ workflow: 'wf_labels1', machine: 'compute.mch_01hx', 'managed-by': MANAGED_BY });
    expect((await hetzner.createServer(request('wf_labels1', { labels }))).id).toBe(server.id);
    const snapshot = await hetzner.createSnapshot(server.id, { workflow: 'wf_labels_snap', machine: 'compute://mch_01hx' });
    expect(snapshot.labels.machine).toBe('compute.mch_01hx');
  });

  it('with Hetzner’s own timing, waits seconds for the Action while the server passes initializing, starting, running', async () => {
    // A double with its defaults (Actions of seconds, as at Hetzner) and the driver's (one poll a second).
    const hetznerLike = await startHetznerFake({ tokens: [PLATFORM], requestsPerHour: FAST });
    const seen: string[] = [];
    const watch = setInterval(() => {
      const status = hetznerLike.servers(PLATFORM).find((s) => s.name === 'node-wf-timing')?.status;
      if (status && seen.at(-1) !== status) seen.push(status);
    }, 50);
    try {
      const hetzner = new HetznerCompute({ endpoint: hetznerLike.url, token: PLATFORM, managedBy: MANAGED_BY, rateLimit: tokenRateLimit(database.db, FAST) });
      const started = Date.now();
      const server = await hetzner.createServer(request('wf_timing'));
      const took = Date.now() - started;
      expect(took).toBeGreaterThanOrEqual(ACTION_MS);
      expect(server.status).toBe('starting');
      // Polled about once a second, not in a tight loop.
      const polls = hetznerLike.requests.filter((r) => r.path.startsWith('/actions/')).length;
      expect(polls).toBeGreaterThanOrEqual(2);
      expect(polls).toBeLessThanOrEqual(Math.ceil(took / 1000) + 1);
      await expect.poll(async () => (await hetzner.getServer(server.id))?.status, { interval: 200, timeout: STARTING_MS + 3000 }).toBe('running');
      await new Promise((resolve) => setTimeout(resolve, 100)); // the watch's next look
      expect(seen).toEqual(['initializing', 'starting', 'running']);
      expect(hetznerLike.violations).toEqual([]);
    } finally {
      clearInterval(watch);
      await hetznerLike.close();
    }
  }, 30_000);

  it('an Action still running at the deadline fails the call (busy Hetzner, not a hang)', async () => {
    fake.actionMs = 60_000;
    try {
      const hetzner = new HetznerCompute({
        endpoint: fake.url,
        token: PLATFORM,
        managedBy: MANAGED_BY,
        rateLimit: tokenRateLimit(database.db, FAST),
        actionPollMs: 50,
        actionTimeoutMs: 400,
      });
      const started = Date.now();
      const error = await hetzner.createServer(request('wf_action_deadline')).catch((e: unknown) => e);
      expect(error).toMatchObject({ kind: 'unavailable', code: 'timeout', message: expect.stringContaining('create_server') });
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      fake.actionMs = 30;
    }
  });

  it('reports an Action that ends in error as a HetznerError', async () => {
    fake.failNextAction('create_server', 'resource_unavailable');
    const error = await driver()
      .createServer(request('wf_fails'))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HetznerError);
    expect((error as HetznerError).code).toBe('resource_unavailable');
    // The failed server is deleted, so a retry creates a new one instead of adopting it.
    expect(fake.servers(PLATFORM).filter((s) => s.labels.workflow === 'wf_fails')).toEqual([]);
    const retried = await driver().createServer(request('wf_fails'));
    expect(retried.status).toMatch(/^(starting|running)$/);
  });

  it('refuses a location or server type the catalog does not have, without sending the create', async () => {
    const hetzner = driver();
    const count = fake.requests.filter((r) => r.method === 'POST').length;
    await expect(hetzner.createServer(request('wf_badloc', { location: 'mars1' }))).rejects.toThrow(/no location mars1 \(it has fsn1, nbg1, hel1\)/);
    await expect(hetzner.createServer(request('wf_badtype', { server_type: 'cx99' }))).rejects.toThrow(/no server type cx99/);
    await expect(hetzner.createServer(request('wf_retired', { server_type: 'cx11' }))).rejects.toThrow(/Server type cx11 is no longer sold in fsn1 since/);
    expect(fake.requests.filter((r) => r.method === 'POST').length).toBe(count);
  });

  it('shuts a server down gracefully, and powers off one that ignores ACPI', async () => {
    const hetzner = driver();
    const server = await hetzner.createServer(request('wf_shutdown'));
    await hetzner.shutdownServer(server.id);
    expect((await hetzner.getServer(server.id))?.status).toBe('off');

    const stubborn = await hetzner.createServer(request('wf_stubborn'));
    fake.honourShutdown = false;
    try {
      await hetzner.shutdownServer(stubborn.id);
    } finally {
      fake.honourShutdown = true;
    }
    expect((await hetzner.getServer(stubborn.id))?.status).toBe('off');
    expect(fake.requests.some((r) => r.path === `/servers/${stubborn.id}/actions/poweroff`)).toBe(true);
  });

  it('maps every Hetzner server status and reads the live server (drift from the compute config shows)', async () => {
    const hetzner = driver();
    const server = await hetzner.createServer(request('wf_drift'));
    const cpx31 = (await import('./support/hetzner-fake.ts')).SERVER_TYPES.find((t) => t.name === 'cpx31')!;
    for (const status of ['initializing', 'starting', 'running', 'stopping', 'off', 'deleting', 'migrating', 'rebuilding', 'unknown'] as const) {
      fake.mutateServer(PLATFORM, Number(server.id), (s) => {
        s.status = status;
      });
      expect((await hetzner.getServer(server.id))?.status).toBe(status);
    }
    // Someone rescaled the server in Hetzner's console: the driver reports what runs, not what was asked.
    fake.mutateServer(PLATFORM, Number(server.id), (s) => {
      s.server_type = cpx31;
    });
    expect((await hetzner.getServer(server.id))?.server_type).toBe('cpx31');
  });

  it('deletes a server (polling the Action), and deleting or reading a server that is gone succeeds', async () => {
    const hetzner = driver();
    const server = await hetzner.createServer(request('wf_delete'));
    await hetzner.deleteServer(server.id);
    expect(await hetzner.getServer(server.id)).toBeUndefined();
    await hetzner.deleteServer(server.id);
    expect(await hetzner.getServer('srv-not-hetzner')).toBeUndefined();
  });
});

describe('snapshots', () => {
  it('snapshots with create_image (type snapshot), adopts it on a re-run, and resumes a server from it in the location', async () => {
    const hetzner = driver();
    const server = await hetzner.createServer(request('wf_snapsrc', { location: 'hel1' }));
    await hetzner.shutdownServer(server.id);
    const snapshot = await hetzner.createSnapshot(server.id, { workflow: 'wf_suspend1', machine: 'm1' });
    expect(snapshot).toMatchObject({ server_id: server.id, status: 'creating', labels: { workflow: 'wf_suspend1', machine: 'm1' } });
    const create = fake.requests.find((r) => r.path === `/servers/${server.id}/actions/create_image`);
    expect(create?.body).toMatchObject({ type: 'snapshot' });
    expect((await hetzner.createSnapshot(server.id, { workflow: 'wf_suspend1', machine: 'm1' })).id).toBe(snapshot.id);
    expect(fake.images(PLATFORM).filter((i) => i.labels.workflow === 'wf_suspend1')).toHaveLength(1);

    await expect.poll(async () => (await hetzner.getSnapshot(snapshot.id))?.status, { interval: 20, timeout: 2000 }).toBe('available');
    await hetzner.deleteServer(server.id);

    const restored = await hetzner.createServer(request('wf_resume1', { name: 'node-wf-snapsrc', image: snapshot.id, location: 'hel1' }));
    expect(restored).toMatchObject({ status: expect.stringMatching(/^(starting|running)$/), image: snapshot.id, location: 'hel1', from_snapshot: true });
    expect(restored.id).not.toBe(server.id);

    await hetzner.deleteSnapshot(snapshot.id);
    expect(await hetzner.getSnapshot(snapshot.id)).toBeUndefined();
    await hetzner.deleteSnapshot(snapshot.id);
  });
});

describe('credentials', () => {
  it('a BYOM call uses the credential’s token, in the credential’s own project', async () => {
    const hetzner = driver();
    const before = fake.requests.length;
    const server = await hetzner.createServer(request('wf_byom1', { credential: BYOM }));
    const sent = fake.requests.slice(before);
    expect(sent.length).toBeGreaterThan(0);
    expect(new Set(sent.map((r) => r.authorization))).toEqual(new Set([`Bearer ${BYOM.token}`]));
    expect(fake.servers(BYOM.token).map((s) => String(s.id))).toContain(server.id);
    expect(fake.servers(PLATFORM).map((s) => String(s.id))).not.toContain(server.id);
    await expect.poll(async () => (await hetzner.getServer(server.id, BYOM))?.status, { interval: 10, timeout: 2000 }).toBe('running');
    expect(await hetzner.getServer(server.id)).toBeUndefined(); // not in the platform's project
  });

  it('a refused token fails at once with ProviderAuthError naming the credential, never the token', async () => {
    const revoked: ProviderCredential = { id: 'ccr_revoked', token: 'revoked-token-99c1' };
    fake.addToken(revoked.token);
    fake.revoke(revoked.token);
    const before = fake.requests.length;
    const error = await driver()
      .createServer(request('wf_revoked', { credential: revoked }))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderAuthError);
    expect((error as ProviderAuthError).credential).toBe('cloud credential ccr_revoked');
    expect((error as Error).message).toContain('ccr_revoked');
    expect((error as Error).message).not.toContain(revoked.token);
    expect(JSON.stringify(error)).not.toContain(revoked.token);
    expect(fake.requests.length - before).toBe(1); // no retry

    const platform = await driver({ token: 'not-a-known-token' })
      .getServer('1')
      .catch((e: unknown) => e);
    expect(platform).toBeInstanceOf(ProviderAuthError);
    expect((platform as ProviderAuthError).credential).toBe('the platform token (HCLOUD_TOKEN)');
  });
});

describe('errors by Hetzner’s code', () => {
  const refused = (code: string, message?: string) => {
    fake.refuseNext('post /servers', code, message);
    return driver()
      .createServer(request(`wf_refused_${code}`))
      .catch((e: unknown) => e);
  };

  it('a quota 403 (resource_limit_exceeded) names the project’s own limit, not the token, and is final', async () => {
    const error = (await refused('resource_limit_exceeded', 'server limit exceeded')) as HetznerError;
    expect(fake.requests.at(-1)?.status).toBe(403);
    expect(error).toBeInstanceOf(HetznerError);
    expect(error).not.toBeInstanceOf(ProviderAuthError);
    expect(error).toMatchObject({ kind: 'project_limit', code: 'resource_limit_exceeded', final: true });
    expect(error.message).toContain('Hetzner Cloud project of the platform token (HCLOUD_TOKEN) has reached one of its own resource limits');
    expect(error.message).toContain('not a problem with the token');
    expect(error.message).toContain('server limit exceeded');
  });

  it('a 403 forbidden is a missing permission of the named credential; token_readonly refuses the credential', async () => {
    const forbidden = (await refused('forbidden', 'insufficient permissions')) as HetznerError;
    expect(forbidden).toMatchObject({ kind: 'permission_missing', final: true });
    expect(forbidden.message).toMatch(/did not let the platform token \(HCLOUD_TOKEN\) create server .*Read & Write/);
    const readonly = await refused('token_readonly');
    expect(readonly).toBeInstanceOf(ProviderAuthError);
    expect(readonly).toMatchObject({ kind: 'credential_refused', credential: 'the platform token (HCLOUD_TOKEN)' });
  });

  it('invalid_input, resource_unavailable (412), placement_error and uniqueness_error are final, with Hetzner’s message', async () => {
    for (const code of ['invalid_input', 'resource_unavailable', 'placement_error', 'uniqueness_error']) {
      const error = (await refused(code, `hetzner says ${code}`)) as HetznerError;
      expect(error).toMatchObject({ kind: 'refused', code, final: true });
      expect(error.message).toContain(`hetzner says ${code}`);
    }
    expect(fake.requests.filter((r) => r.path === '/servers' && r.method === 'POST').map((r) => r.status)).toContain(412);
  });

  it('codes a retry cannot fix fail at once with Hetzner’s code and words, not retried with backoff', async () => {
    for (const [code, message] of [
      ['invalid_server_type', 'server type cx11 is deprecated'],
      ['protected', 'server is delete protected'],
      ['json_error', 'invalid JSON in request body'],
      ['unsupported_error', 'server does not support this'],
      ['deprecated_api_endpoint', 'this endpoint was removed'],
      ['resource_locked', 'resource is locked, please contact support'],
    ] as const) {
      const error = (await refused(code, message)) as HetznerError;
      expect(error).toBeInstanceOf(HetznerError);
      expect(error).toMatchObject({ kind: 'refused', code, final: true });
      expect(error.message).toContain(`${code}: ${message}`);
    }
  });

  it('an Action that fails with a code a retry cannot fix is final too, with Hetzner’s words', async () => {
    fake.failNextAction('create_server', 'invalid_server_type');
    const error = (await driver()
      .createServer(request('wf_action_type'))
      .catch((e: unknown) => e)) as HetznerError;
    expect(error).toMatchObject({ kind: 'refused', code: 'invalid_server_type', final: true });
    expect(error.message).toContain('invalid_server_type (create_server failed)');
  });

  it('resource_locked without a word of support is busy, like locked', async () => {
    expect(await refused('resource_locked', 'resource is locked')).toMatchObject({ kind: 'busy', code: 'resource_locked', final: false });
  });

  it('locked and conflict are busy, outages unavailable: neither is final', async () => {
    for (const [code, kind] of [
      ['locked', 'busy'],
      ['conflict', 'busy'],
      ['server_error', 'unavailable'],
      ['maintenance', 'unavailable'],
      ['timeout', 'unavailable'],
      ['unavailable', 'unavailable'],
    ] as const) {
      expect(await refused(code)).toMatchObject({ kind, code, final: false });
    }
  });

  it('a server locked by another Action refuses deletion with 423 locked until that Action ends', async () => {
    const hetzner = driver();
    const server = await hetzner.createServer(request('wf_locked'));
    fake.occupy(PLATFORM, Number(server.id), 300);
    const error = await hetzner.deleteServer(server.id).catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: 'busy', code: 'locked', status: 423 });
    await new Promise((resolve) => setTimeout(resolve, 350));
    await hetzner.deleteServer(server.id);
    expect(await hetzner.getServer(server.id)).toBeUndefined();
  });

  it('an earlier run’s server that is off is not adopted: it is deleted and a new one made', async () => {
    const hetzner = driver();
    const first = await hetzner.createServer(request('wf_adopt_off'));
    await hetzner.shutdownServer(first.id);
    const second = await hetzner.createServer(request('wf_adopt_off'));
    expect(second.id).not.toBe(first.id);
    expect(await hetzner.getServer(first.id)).toBeUndefined();
    expect(
      fake
        .servers(PLATFORM)
        .filter((s) => s.labels.workflow === 'wf_adopt_off')
        .map((s) => String(s.id)),
    ).toEqual([second.id]);
  });
});

describe('SSH keys and the cluster’s firewall', () => {
  const posted = (name: string) =>
    fake.requests.find((r) => r.method === 'POST' && r.path === '/servers' && (r.body as { name: string }).name === name)?.body as Record<string, unknown>;

  it('creates servers with the configured SSH keys and the cluster’s one firewall, which admits the cluster’s nodes and SSH', async () => {
    const keyId = fake.addSshKey(PLATFORM, 'ops-laptop');
    const hetzner = driver({ sshKeys: ['ops-laptop', String(keyId)] });
    const first = await hetzner.createServer(request('wf_fw1', { cluster_id: 'cl_fw1' }));
    const firewalls = fake.firewalls(PLATFORM).filter((f) => f.labels?.cluster === 'cl_fw1');
    expect(firewalls).toHaveLength(1);
    const firewall = firewalls[0]!;
    expect(posted('node-wf-fw1')).toMatchObject({
      ssh_keys: ['ops-laptop', String(keyId)],
      firewalls: [{ firewall: firewall.id }],
      labels: { cluster: 'cl_fw1' },
    });
    const second = await hetzner.createServer(request('wf_fw2', { cluster_id: 'cl_fw1' }));
    expect(posted('node-wf-fw2')).toMatchObject({ firewalls: [{ firewall: firewall.id }] });
    expect(fake.firewalls(PLATFORM).filter((f) => f.labels?.cluster === 'cl_fw1')).toHaveLength(1);
    const ipOf = (id: string) => `${fake.servers(PLATFORM).find((s) => String(s.id) === id)!.public_net.ipv4!.ip}/32`;
    const nodes = [ipOf(first.id), ipOf(second.id)].sort();
    const sent = (rules: { protocol: string; port?: string | null; source_ips?: string[] }[] | undefined) =>
      rules?.map((r) => `${r.protocol}:${r.port ?? ''} from ${r.source_ips?.join(' ')}`);
    await expect
      .poll(() => sent(fake.firewalls(PLATFORM).find((f) => f.id === firewall.id)?.rules), { interval: 10, timeout: 2000 })
      .toEqual(sent(firewallRules(nodes, true)));
    const rules = firewallRules(nodes, true);
    expect(rules.filter((r) => r.port === '22')).toEqual([expect.objectContaining({ protocol: 'tcp', source_ips: ['0.0.0.0/0', '::/0'] })]);
    // No kubelet port, nor anything else, open to the internet but ICMP, the NodePorts (which the cloud controller
    // manager's load balancers reach at the nodes' public addresses) and SSH.
    expect(rules.filter((r) => r.source_ips?.includes('0.0.0.0/0')).map((r) => `${r.protocol}:${r.port ?? ''}`)).toEqual([
      'icmp:',
      'tcp:30000-32767',
      'tcp:22',
    ]);
    expect(rules.filter((r) => r.source_ips?.join() === nodes.join()).map((r) => r.protocol)).toEqual(['tcp', 'udp', 'esp', 'gre']);
  });

  it('without SSH keys sends none and keeps SSH closed; an SSH key the project lacks is refused as sent', async () => {
    const hetzner = driver();
    await hetzner.createServer(request('wf_fw_nokeys', { cluster_id: 'cl_fw2' }));
    expect(posted('node-wf-fw-nokeys')).not.toHaveProperty('ssh_keys');
    const firewall = fake.firewalls(PLATFORM).find((f) => f.labels?.cluster === 'cl_fw2')!;
    await expect.poll(() => fake.firewalls(PLATFORM).find((f) => f.id === firewall.id)?.rules?.length, { interval: 10, timeout: 2000 }).toBe(6);
    expect(firewall.rules?.some((r) => r.port === '22')).toBe(false);

    const error = await driver({ sshKeys: ['nobody'] })
      .createServer(request('wf_fw_badkey', { cluster_id: 'cl_fw2' }))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: 'refused', code: 'invalid_input' });
  });
});

describe('the cluster firewall’s lifecycle', () => {
  const rulesOf = (id: number) =>
    fake
      .firewalls(PLATFORM)
      .find((f) => f.id === id)
      ?.rules?.map((r) => `${r.protocol}:${r.port ?? ''} from ${[...(r.source_ips ?? [])].sort().join(' ')}`)
      .sort();
  const expected = (addresses: string[]) =>
    firewallRules(addresses.sort(), false)
      .map((r) => `${r.protocol}:${r.port ?? ''} from ${[...(r.source_ips ?? [])].sort().join(' ')}`)
      .sort();
  const ipOf = (id: string) => `${fake.servers(PLATFORM).find((s) => String(s.id) === id)!.public_net.ipv4!.ip}/32`;

  it('follows the cluster’s servers: a deleted node’s address leaves it, a rule changed by hand is set back, unchanged rules are not rewritten', async () => {
    const hetzner = driver();
    const a = await hetzner.createServer(request('wf_fwl1', { cluster_id: 'cl_fwl1' }));
    const b = await hetzner.createServer(request('wf_fwl2', { cluster_id: 'cl_fwl1' }));
    const firewall = fake.firewalls(PLATFORM).find((f) => f.labels?.cluster === 'cl_fwl1')!;
    expect(firewall.labels).toEqual({ cluster: 'cl_fwl1', 'managed-by': MANAGED_BY });
    const [ipA, ipB] = [ipOf(a.id), ipOf(b.id)];
    expect(rulesOf(firewall.id)).toEqual(expected([ipA, ipB]));

    await hetzner.deleteServer(b.id);
    // Whoever gets b's address next is not let into the cluster.
    expect(rulesOf(firewall.id)).toEqual(expected([ipA]));

    fake.firewalls(PLATFORM).find((f) => f.id === firewall.id)!.rules = [];
    await hetzner.refreshFirewall('cl_fwl1');
    expect(rulesOf(firewall.id)).toEqual(expected([ipA]));
    const writes = () => fake.requests.filter((r) => r.path === `/firewalls/${firewall.id}/actions/set_rules`).length;
    const before = writes();
    await hetzner.refreshFirewall('cl_fwl1');
    expect(writes()).toBe(before);
    await hetzner.deleteServer(a.id);
  });

  it('cannot be deleted while a server has it (Hetzner’s 422 resource_in_use, busy); once its servers are gone it is', async () => {
    const hetzner = driver();
    const node = await hetzner.createServer(request('wf_fwl3', { cluster_id: 'cl_fwl2' }));
    const firewall = fake.firewalls(PLATFORM).find((f) => f.labels?.cluster === 'cl_fwl2')!;
    const refused = await hetzner.deleteFirewall(String(firewall.id)).catch((e: unknown) => e);
    expect(refused).toMatchObject({ kind: 'busy', code: 'resource_in_use', status: 422 });
    expect(fake.firewalls(PLATFORM).map((f) => f.id)).toContain(firewall.id);
    await hetzner.deleteServer(node.id);
    await hetzner.deleteFirewall(String(firewall.id));
    expect(fake.firewalls(PLATFORM).map((f) => f.id)).not.toContain(firewall.id);
    await hetzner.deleteFirewall(String(firewall.id)); // gone already: fine
  });

  it('lists as ours only what carries this installation’s managed-by label, not a user’s server labelled workflow and machine, nor another installation’s', async () => {
    const hetzner = driver();
    const ours = await hetzner.createServer(request('wf_mine1', { cluster_id: 'cl_mine1' }));
    const snapshot = await hetzner.createSnapshot(ours.id, { workflow: 'wf_mine_snap', machine: 'm_wf_mine1' });
    const other = await new HetznerCompute({
      endpoint: fake.url,
      token: PLATFORM,
      managedBy: 'platform-elsewhere',
      rateLimit: tokenRateLimit(database.db, FAST),
      actionPollMs: 10,
    }).createServer(request('wf_theirs1'));
    const users = await hetzner.createServer(request('wf_users1'));
    fake.mutateServer(PLATFORM, Number(users.id), (server) => {
      delete server.labels['managed-by'];
      server.status = 'running';
    });
    const listed = await hetzner.listLabelled();
    const ids = listed.map((r) => `${r.kind}:${r.id}`);
    const firewall = fake.firewalls(PLATFORM).find((f) => f.labels?.cluster === 'cl_mine1')!;
    expect(ids).toEqual(expect.arrayContaining([`server:${ours.id}`, `snapshot:${snapshot.id}`, `firewall:${firewall.id}`]));
    expect(ids).not.toContain(`server:${other.id}`);
    expect(ids).not.toContain(`server:${users.id}`);
    expect(listed.every((r) => r.labels['managed-by'] === MANAGED_BY)).toBe(true);
    // Nor is the user's server adopted by a run with its workflow label.
    expect((await hetzner.createServer(request('wf_users1', { name: 'node-wf-users1-again' }))).id).not.toBe(users.id);
  });
});

describe('power on', () => {
  it('powers a server that is off on again; one that runs, or is gone, is left as it is', async () => {
    const hetzner = driver();
    const server = await hetzner.createServer(request('wf_poweron1'));
    await hetzner.shutdownServer(server.id);
    expect((await hetzner.getServer(server.id))?.status).toBe('off');
    await hetzner.powerOnServer(server.id);
    await expect.poll(async () => (await hetzner.getServer(server.id))?.status, { interval: 20, timeout: 2000 }).toBe('running');
    const posts = () => fake.requests.filter((r) => r.path === `/servers/${server.id}/actions/poweron`).length;
    expect(posts()).toBe(1);
    await hetzner.powerOnServer(server.id);
    expect(posts()).toBe(1);
    await hetzner.deleteServer(server.id);
    await hetzner.powerOnServer(server.id);
    expect(posts()).toBe(1);
  });
});

describe('rate limits', () => {
  it('a 429 waits until Hetzner refills the bucket, then succeeds (not a failure)', async () => {
    const token = 'slow-token-5e21';
    fake.addToken(token, 3600); // Hetzner's default: 3600 an hour, one more a second
    const hetzner = driver({ token });
    const server = await hetzner.createServer(request('wf_ratelimit'));
    fake.exhaust(token);
    const before = fake.requests.length;
    const started = Date.now();
    const read = await hetzner.getServer(server.id);
    const waited = Date.now() - started;
    expect(read?.id).toBe(server.id);
    expect(waited).toBeGreaterThanOrEqual(900);
    const statuses = fake.requests.slice(before).map((r) => r.status);
    expect(statuses[0]).toBe(429);
    expect(statuses.at(-1)).toBe(200);
    // The headers' reset time was honoured: no storm of retries while waiting.
    expect(statuses.filter((s) => s === 429).length).toBeLessThanOrEqual(2);
    expect(logLines.some((l) => l.includes('Hetzner rate limit reached') && l.includes('HCLOUD_TOKEN'))).toBe(true);
  });

  it('keeps one bucket per token in PostgreSQL, keyed by a digest, spacing each token’s calls at its hourly rate', async () => {
    const server = await driver().createServer(request('wf_buckets'));
    const byomServer = await driver().createServer(request('wf_buckets_byom', { credential: BYOM }));
    // 250 ms apart per token: wide enough that a loaded machine's jitter (tens of ms) cannot blur the spacing.
    const hetzner = driver({ perHour: 14_400 });
    const before = fake.requests.length;
    await Promise.all([
      ...Array.from({ length: 4 }, () => hetzner.getServer(server.id)),
      ...Array.from({ length: 4 }, () => hetzner.getServer(byomServer.id, BYOM)),
    ]);
    const arrivals = (token: string) =>
      fake.requests
        .slice(before)
        .filter((r) => r.authorization === `Bearer ${token}`)
        .map((r) => r.at);
    const platform = arrivals(PLATFORM);
    const byom = arrivals(BYOM.token);
    expect(platform).toHaveLength(4);
    expect(byom).toHaveLength(4);
    // Each token's four calls are spaced over three gaps of 250 ms (less the jitter of a loaded machine) …
    for (const times of [platform, byom]) expect(Math.max(...times) - Math.min(...times)).toBeGreaterThanOrEqual(650);
    // … but not behind the other token's: one shared bucket would put every call 250 ms from every other.
    const closest = Math.min(...platform.flatMap((p) => byom.map((b) => Math.abs(p - b))));
    expect(closest).toBeLessThan(125);
    const keys = (await sql<{ key: string }>`SELECT key FROM rate_limit_slots WHERE key LIKE 'hetzner:%'`.execute(database.db)).rows.map((r) => r.key);
    expect(keys.length).toBeGreaterThanOrEqual(2);
    for (const key of keys) {
      expect(key).toMatch(/^hetzner:[0-9a-f]{32}$/);
      expect(key).not.toContain(PLATFORM);
      expect(key).not.toContain(BYOM.token);
    }
  });
});
