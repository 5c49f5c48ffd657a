// Addresses the service must never be pointed at: loopback, private, link-local (cloud metadata lives there),
// carrier-grade NAT, unspecified and multicast ranges, for IPv4 and IPv6.
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

const blocked = new BlockList();
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
  ['::', 128],
  ['::1', 128],
  ['::ffff:0:0', 96],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  blocked.addSubnet(network, prefix, 'ipv6');
}

const BLOCKED_NAMES = /(^|\.)(localhost|internal|local)$|^metadata(\.google\.internal)?$/i;

export function isBlockedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return blocked.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * Whether a host (name or IP literal, without port) is one the service must not connect to. A name is
 * resolved and refused when any address it resolves to is blocked; a name that does not resolve now is
 * accepted (whatever later connects to it re-checks the address it connects to).
 */
export async function isForbiddenHost(host: string, resolve: (host: string) => Promise<string[]> = defaultResolve): Promise<boolean> {
  const bare = host.replace(/^\[|\]$/g, '');
  if (isIP(bare)) return isBlockedAddress(bare);
  if (BLOCKED_NAMES.test(bare)) return true;
  const addresses = await resolve(bare).catch(() => []);
  return addresses.some(isBlockedAddress);
}

async function defaultResolve(host: string): Promise<string[]> {
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), 2000).unref());
  const records = await Promise.race([lookup(host, { all: true }), timeout]);
  return records.map((r) => r.address);
}
