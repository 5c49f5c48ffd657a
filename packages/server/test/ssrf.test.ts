// SSRF: registry_url (registry credentials) and a helm source's repo_url (products) may not point the service
// at loopback, link-local (cloud metadata), private, carrier-grade NAT, multicast or unspecified addresses, nor
// any other block IANA's special-purpose registries call not globally reachable (checked entry by entry against
// the table in special-purpose-addresses.ts), nor at host names resolving to them; repo_url also only speaks http(s) and oci. The resolver is injected:
// this machine has no public DNS, and the tests decide what each name resolves to.
import { beforeAll, describe, expect, it } from 'vitest';
import { BEYOND_THE_REGISTRIES, IPV4_SPECIAL_PURPOSE, IPV6_SPECIAL_PURPOSE } from '../src/services/special-purpose-addresses.ts';
import { blockRange, forbiddenSourceUrl, isBlockedAddress, isForbiddenHost } from '../src/services/ssrf.ts';
import { buildWorld, type World } from './fixtures.ts';
import { call, useTestServer } from './support.ts';

const DNS: Record<string, string[]> = {
  'charts.example.com': ['93.184.215.14'],
  'registry.example.com': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
  'private.example.com': ['10.0.0.1'],
  'metadata.example.com': ['169.254.169.254'],
  'mixed.example.com': ['93.184.215.14', '192.168.0.10'],
  'v6-loopback.example.com': ['::1'],
};
const resolver = async (host: string): Promise<string[]> => {
  const addresses = DNS[host];
  if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return addresses;
};

const BLOCKED: Record<string, string[]> = {
  loopback: ['127.0.0.1', '127.255.255.254', '::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::127.0.0.1'],
  'link-local (metadata)': ['169.254.169.254', '169.254.0.1', 'fe80::1', '::ffff:169.254.169.254', '::ffff:a9fe:a9fe'],
  private: ['10.0.0.1', '10.255.255.255', '172.16.0.1', '172.31.255.255', '192.168.0.1', 'fc00::1', 'fd12:3456::1'],
  'carrier-grade NAT': ['100.64.0.1', '100.127.255.255'],
  multicast: ['224.0.0.1', '239.255.255.250', 'ff02::1'],
  unspecified: ['0.0.0.0', '0.1.2.3', '::'],
};
const PUBLIC = [
  '8.8.8.8',
  '93.184.215.14',
  '1.1.1.1',
  '11.0.0.1',
  '100.63.255.255',
  '100.128.0.1',
  '172.15.255.255',
  '172.32.0.1',
  '169.255.0.1',
  '2606:4700:4700::1111',
  '::ffff:8.8.8.8',
];

describe('the address rules', () => {
  for (const [kind, addresses] of Object.entries(BLOCKED)) {
    it(`blocks ${kind}: ${addresses.join(', ')}`, () => {
      for (const address of addresses) expect(isBlockedAddress(address), address).toBe(true);
    });
  }
  it(`lets public addresses through, next to the blocked ranges: ${PUBLIC.join(', ')}`, () => {
    for (const address of PUBLIC) expect(isBlockedAddress(address), address).toBe(false);
  });
  it('reads numeric IPv4 forms as the address they are', async () => {
    for (const host of ['2130706433', '0x7f000001', '0x7f.1', '127.1', '0177.0.0.1', '017700000001'])
      expect(await isForbiddenHost(host, resolver), host).toBe(true);
  });
  it('refuses names that are local by definition, without asking DNS', async () => {
    const never = async (): Promise<string[]> => {
      throw new Error('must not resolve');
    };
    for (const host of ['localhost', 'LOCALHOST', 'localhost.', 'api.localhost', 'metadata.google.internal', 'metadata', 'db.internal', 'printer.local']) {
      expect(await isForbiddenHost(host, never), host).toBe(true);
    }
  });
  it('refuses a name when any address it resolves to is blocked, and lets public names through', async () => {
    for (const host of ['private.example.com', 'metadata.example.com', 'mixed.example.com', 'v6-loopback.example.com'])
      expect(await isForbiddenHost(host, resolver), host).toBe(true);
    for (const host of ['charts.example.com', 'registry.example.com']) expect(await isForbiddenHost(host, resolver), host).toBe(false);
  });
  it('localhost resolves on this machine, and the default resolver refuses it too', async () => {
    expect(await isForbiddenHost('localhost')).toBe(true);
  });
  it('repo_url: only http, https and oci; no credentials; the host rules apply', async () => {
    for (const url of [
      'file:///etc/passwd',
      'gopher://charts.example.com/_x',
      'ftp://charts.example.com/',
      'ssh://git@charts.example.com/x',
      'dict://charts.example.com:11211/',
      'data:text/plain,x',
      'javascript:alert(1)',
      'ldap://charts.example.com/',
    ]) {
      expect(await forbiddenSourceUrl(url, resolver), url).toMatch(/scheme/);
    }
    expect(await forbiddenSourceUrl('https://user:pass@charts.example.com/', resolver)).toMatch(/credentials/);
    for (const url of [
      'http://169.254.169.254/latest/meta-data/',
      'https://[::1]/',
      'http://[::ffff:169.254.169.254]/',
      'oci://10.0.0.1/charts',
      'oci://2130706433/charts',
      'https://0x7f.1/',
      'https://private.example.com/charts',
      'http://localhost:8080/',
    ]) {
      expect(await forbiddenSourceUrl(url, resolver), url).toMatch(/loopback, private/);
    }
    for (const url of [
      'https://charts.example.com/stable',
      'http://charts.example.com/',
      'oci://registry.example.com/charts/app',
      'https://93.184.215.14/charts',
    ]) {
      expect(await forbiddenSourceUrl(url, resolver), url).toBeUndefined();
    }
  });
});

/** An address number back to text: dotted quad, or eight hex groups. */
const format = (family: 4 | 6, value: bigint) =>
  family === 4
    ? [24n, 16n, 8n, 0n].map((shift) => (value >> shift) & 255n).join('.')
    : [112n, 96n, 80n, 64n, 48n, 32n, 16n, 0n].map((shift) => ((value >> shift) & 0xffffn).toString(16)).join(':');

describe("IANA's special-purpose registries, entry by entry", () => {
  const entries = [...IPV4_SPECIAL_PURPOSE, ...IPV6_SPECIAL_PURPOSE, ...BEYOND_THE_REGISTRIES];
  const refusedEntries = entries.filter((entry) => entry.globallyReachable !== true && !entry.carriesIpv4);
  // Computed from the table, not from the code under test: the blocks an address must be outside of to be allowed.
  const covered = entries.filter((entry) => entry.globallyReachable !== true || entry.carriesIpv4).map((entry) => blockRange(entry.prefix));
  const coveredBy = (family: 4 | 6, value: bigint) => covered.find((range) => range.family === family && range.first <= value && value <= range.last);
  /** The nearest address above the block (below it at the top of the space) that no refused or carrier block holds. */
  const neighbour = (prefix: string) => {
    const { family, first, last } = blockRange(prefix);
    const top = family === 4 ? 0xffffffffn : (1n << 128n) - 1n;
    let candidate = last + 1n;
    for (let range = coveredBy(family, candidate); candidate <= top && range; range = coveredBy(family, candidate)) candidate = range.last + 1n;
    if (candidate > top) {
      candidate = first - 1n;
      for (let range = coveredBy(family, candidate); range; range = coveredBy(family, candidate)) candidate = range.first - 1n;
    }
    return format(family, candidate);
  };

  it.each(refusedEntries.map((entry) => [entry.prefix, entry.name, entry.rfc] as const))('%s (%s, %s): refused inside, a neighbour allowed', (prefix) => {
    const { family, first, last } = blockRange(prefix);
    for (const inside of [first, first + (last - first) / 2n, last]) expect(isBlockedAddress(format(family, inside)), format(family, inside)).toBe(true);
    expect(isBlockedAddress(neighbour(prefix)), neighbour(prefix)).toBe(false);
  });

  it.each(entries.filter((entry) => entry.carriesIpv4).map((entry) => [entry.prefix, entry.name] as const))(
    '%s (%s) is judged by the IPv4 address it carries',
    (prefix) => {
      const { first } = blockRange(prefix);
      expect(isBlockedAddress(format(6, first + 0xa9fea9fen)), 'carrying 169.254.169.254').toBe(true);
      expect(isBlockedAddress(format(6, first + 0x7f000001n)), 'carrying 127.0.0.1').toBe(true);
      expect(isBlockedAddress(format(6, first + 0x08080808n)), 'carrying 8.8.8.8').toBe(false);
    },
  );

  it.each(entries.filter((entry) => entry.globallyReachable === true && !entry.carriesIpv4).map((entry) => [entry.prefix, entry.name] as const))(
    'globally reachable %s (%s) is allowed, unless a refused block holds it',
    (prefix) => {
      const { family, first } = blockRange(prefix);
      const enclosing = refusedEntries
        .map((entry) => blockRange(entry.prefix))
        .some((range) => range.family === family && range.first <= first && first <= range.last);
      expect(isBlockedAddress(format(family, first))).toBe(enclosing);
    },
  );

  it('the rarely routed IPv6 forms, in the notations a resolver or URL gives them', async () => {
    for (const address of [
      'fec0::1', // site-local
      'feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
      '100::1', // discard-only
      '64:ff9b:1::a9fe:a9fe', // local-use NAT64 carrying 169.254.169.254
      '64:ff9b:1::169.254.169.254',
      '64:ff9b::169.254.169.254', // the well-known NAT64 prefix carrying it
      '::ffff:0:a9fe:a9fe', // IPv4-translated
      '::ffff:0:169.254.169.254',
      '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo
      'fe80::1%eth0',
    ])
      expect(isBlockedAddress(address), address).toBe(true);
    for (const url of ['https://[fec0::1]/', 'https://[100::1]/', 'https://[64:ff9b:1::a9fe:a9fe]/', 'https://[::ffff:0:a9fe:a9fe]/', 'oci://[2001::1]/charts'])
      expect(await forbiddenSourceUrl(url, resolver), url).toMatch(/loopback, private, link-local or metadata/);
    expect(isBlockedAddress('64:ff9b::808:808'), 'NAT64 carrying 8.8.8.8').toBe(false);
  });
});

describe('through the API', () => {
  const app = useTestServer({ resolveHost: resolver });
  let world: World;
  beforeAll(async () => {
    world = await buildWorld(app.db, app.clock);
  });

  const registry = (registryUrl: string) =>
    call(app.baseUrl, 'POST', '/v1/registry/credentials', {
      token: world.alice.token,
      body: { name: 'r', registry_url: registryUrl, username: 'u', password: 'p' },
    });
  const sources = (...urls: string[]) => urls.map((url) => ({ chart: { repo_url: url, chart: 'app', target_revision: '1.0.0' } }));

  it('registry_url: each class of address, and names resolving to one, is 422 with param and a suggestion', async () => {
    const hosts = [
      '127.0.0.1',
      '169.254.169.254',
      '10.0.0.1',
      '172.20.1.1',
      '192.168.1.1',
      '100.64.0.1',
      '224.0.0.1',
      '0.0.0.0',
      '2130706433',
      'localhost',
      'localhost:5000',
      'metadata.google.internal',
      'private.example.com',
      'metadata.example.com:443',
    ];
    for (const host of hosts) {
      const reply = await registry(host);
      expect(reply.status, host).toBe(422);
      expect(reply.body.error).toMatchObject({ code: 'validation_error', param: 'registry_url' });
      expect(reply.body.error.suggestion).toMatch(/public host name/);
    }
    const rows = await app.db.selectFrom('registry_credentials').select('registry_url').where('workspace_id', '=', world.alice.workspaceId).execute();
    expect(rows.map((r) => r.registry_url)).toEqual(['ghcr.io']); // only the fixture's
  });

  it('registry_url: public names and addresses are accepted', async () => {
    for (const host of ['registry.example.com', 'charts.example.com:5000', '93.184.215.14', '8.8.8.8:443']) {
      const reply = await registry(host);
      expect(reply.status, host).toBe(201);
    }
  });

  it('repo_url on create: the offending source is named, e.g. sources[1].chart.repo_url', async () => {
    const cases: [string, RegExp][] = [
      ['http://169.254.169.254/latest/meta-data/', /loopback, private, link-local or metadata/],
      ['https://private.example.com/charts', /loopback, private, link-local or metadata/],
      ['https://[fd00::1]/charts', /loopback, private, link-local or metadata/],
      ['http://100.100.100.100/', /loopback, private, link-local or metadata/],
      ['file:///var/run/secrets/token', /scheme file/],
      ['gopher://charts.example.com/', /scheme gopher/],
    ];
    for (const [url, message] of cases) {
      const reply = await call(app.baseUrl, 'POST', '/v1/products', {
        token: world.alice.token,
        body: { name: 'p', sources: sources('https://charts.example.com/ok', url), cluster_ids: [world.ids.cluster] },
      });
      expect(reply.status, url).toBe(422);
      expect(reply.body.error).toMatchObject({ code: 'validation_error', param: 'sources[1].chart.repo_url' });
      expect(reply.body.error.message).toMatch(message);
      expect(reply.body.error.suggestion).toMatch(/public https:\/\//);
    }
    const created = await call(app.baseUrl, 'POST', '/v1/products', {
      token: world.alice.token,
      body: { name: 'p', sources: sources('https://charts.example.com/ok', 'oci://registry.example.com/app'), cluster_ids: [world.ids.cluster] },
    });
    expect(created.status).toBe(201);
  });

  it('repo_url on update (a full replacement) is checked the same way, and the product is left as it was', async () => {
    const before = await call(app.baseUrl, 'GET', `/v1/products/${world.ids.product}`, { token: world.alice.token });
    const reply = await call(app.baseUrl, 'PATCH', `/v1/products/${world.ids.product}`, {
      token: world.alice.token,
      body: { name: 'p2', sources: sources('http://127.0.0.1:6443/'), cluster_ids: [world.ids.cluster] },
    });
    expect(reply.status).toBe(422);
    expect(reply.body.error).toMatchObject({ code: 'validation_error', param: 'sources[0].chart.repo_url' });
    const after = await call(app.baseUrl, 'GET', `/v1/products/${world.ids.product}`, { token: world.alice.token });
    expect(after.body).toEqual(before.body);
    const ok = await call(app.baseUrl, 'PATCH', `/v1/products/${world.ids.product}`, {
      token: world.alice.token,
      body: { name: 'p2', sources: sources('https://charts.example.com/stable'), cluster_ids: [world.ids.cluster] },
    });
    expect(ok.status).toBe(200);
  });

  it("another user's product is 404 before its sources are looked at", async () => {
    const reply = await call(app.baseUrl, 'PATCH', `/v1/products/${world.ids.product}`, {
      token: world.bob.token,
      body: { name: 'x', sources: sources('http://127.0.0.1/'), cluster_ids: [world.ids.cluster] },
    });
    expect(reply.status).toBe(404);
  });
});
