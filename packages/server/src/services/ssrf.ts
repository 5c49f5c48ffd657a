// Addresses the service must never be pointed at: loopback, private, link-local (cloud metadata lives there),
// carrier-grade NAT, unspecified and multicast ranges, for IPv4 and IPv6.
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

// Two lists: Node's BlockList checks an IPv4 address against IPv6 rules too (as ::ffff:a.b.c.d), so one list
// holding ::ffff:0:0/96 refused every IPv4 address. IPv4-mapped IPv6 addresses are checked as the IPv4 they carry.
const blocked = new BlockList();
const blocked6 = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 3],
] as const) {
  blocked.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  // Unspecified, loopback, and the deprecated IPv4-compatible ::a.b.c.d (::7f00:1 is 127.0.0.1 by another name).
  ['::', 96],
  ['64:ff9b::', 96],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  blocked6.addSubnet(network, prefix, 'ipv6');
}

const BLOCKED_NAMES = /(^|\.)(localhost|internal|local)$|^metadata(\.google\.internal)?$/i;

export function isBlockedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family !== 6) return false;
  // ::ffff:a.b.c.d and ::ffff:7f00:1 (the form URL parsers write) carry an IPv4 address.
  const dotted = /^(?:0{0,4}:){0,5}:?ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (dotted) return blocked.check(dotted, 'ipv4');
  const hex = /^(?:0{0,4}:){0,5}:?ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (hex) {
    const high = parseInt(hex[1]!, 16);
    const low = parseInt(hex[2]!, 16);
    return blocked.check(`${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`, 'ipv4');
  }
  return blocked6.check(address, 'ipv6');
}

/** Resolves a host name to its addresses; injectable (AppOptions.resolveHost) so tests need no DNS. */
export type Resolver = (host: string) => Promise<string[]>;

/**
 * The host as a URL parser reads it: numeric IPv4 forms (`2130706433`, `0x7f.1`, `127.1`) become dotted
 * quads, which a resolver would otherwise turn into loopback behind the block list's back.
 */
function canonicalHost(host: string): string {
  const bare = host.replace(/^\[|\]$/g, '');
  if (isIP(bare) === 6) return bare;
  try {
    return new URL(`http://${bare}/`).hostname.replace(/\.$/, '');
  } catch {
    return bare;
  }
}

/**
 * Whether a host (name or IP literal, without port) is one the service must not connect to. A name is
 * resolved and refused when any address it resolves to is blocked; a name that does not resolve now is
 * accepted (whatever later connects to it re-checks the address it connects to).
 */
export async function isForbiddenHost(host: string, resolve: Resolver = defaultResolve): Promise<boolean> {
  const bare = canonicalHost(host);
  if (isIP(bare)) return isBlockedAddress(bare);
  if (BLOCKED_NAMES.test(bare)) return true;
  const addresses = await resolve(bare).catch(() => []);
  return addresses.some(isBlockedAddress);
}

/** Schemes a helm source may name: chart repositories and Git over HTTP(S), OCI registries. */
const SOURCE_SCHEMES = new Set(['https:', 'http:', 'oci:']);

/**
 * Why the service must not fetch from `url` (a helm source's repo_url), or undefined when it may: another
 * scheme (file:, gopher:, ssh:, …), credentials in the URL, or a host that is or resolves to a blocked address.
 */
export async function forbiddenSourceUrl(url: string, resolve: Resolver = defaultResolve): Promise<string | undefined> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'is not a URL';
  }
  if (!SOURCE_SCHEMES.has(parsed.protocol)) return `uses the scheme ${parsed.protocol.slice(0, -1)}; only https, http and oci are allowed`;
  if (parsed.username || parsed.password) return 'carries credentials; use a registry credential instead';
  if (!parsed.hostname) return 'has no host';
  if (await isForbiddenHost(parsed.hostname, resolve)) return 'points at a loopback, private, link-local or metadata address';
  return undefined;
}

export async function defaultResolve(host: string): Promise<string[]> {
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), 2000).unref());
  const records = await Promise.race([lookup(host, { all: true }), timeout]);
  return records.map((r) => r.address);
}
