// Addresses the service must never be pointed at: every block of IANA's special-purpose address registries that
// is not globally reachable (loopback, private, link-local where cloud metadata lives, carrier-grade NAT,
// documentation, NAT64 local-use, Teredo, …) and the multicast and deprecated blocks beyond them; the table with
// its sources is special-purpose-addresses.ts.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { type AddressBlock, BEYOND_THE_REGISTRIES, IPV4_SPECIAL_PURPOSE, IPV6_SPECIAL_PURPOSE } from './special-purpose-addresses.ts';

/** An address as a number: IPv4 in 32 bits, IPv6 in 128 (a trailing dotted quad read as its last 32 bits). */
export function addressValue(address: string): { family: 4 | 6; value: bigint } | undefined {
  const bare = address.replace(/%.*$/, ''); // an IPv6 zone (fe80::1%eth0) names an interface, not an address
  const family = isIP(bare);
  if (family === 4) return { family, value: bare.split('.').reduce((sum, part) => (sum << 8n) | BigInt(part), 0n) };
  if (family !== 6) return undefined;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(bare);
  const hex = dotted
    ? `${bare.slice(0, dotted.index) + ((Number(dotted[1]) << 8) | Number(dotted[2])).toString(16)}:${((Number(dotted[3]) << 8) | Number(dotted[4])).toString(16)}`
    : bare;
  const [head = '', tail] = hex.split('::');
  const groups = (text: string) => (text === '' ? [] : text.split(':'));
  const missing = 8 - groups(head).length - (tail === undefined ? 0 : groups(tail).length);
  const all = [...groups(head), ...Array<string>(tail === undefined ? 0 : missing).fill('0'), ...groups(tail ?? '')];
  return { family, value: all.reduce((sum, group) => (sum << 16n) | BigInt(parseInt(group, 16)), 0n) };
}

/** The first and last address of a block written `network/length`. */
export function blockRange(prefix: string): { family: 4 | 6; first: bigint; last: bigint } {
  const [network = '', length = ''] = prefix.split('/');
  const { family, value } = addressValue(network)!;
  const hostBits = BigInt((family === 4 ? 32 : 128) - Number(length));
  const first = (value >> hostBits) << hostBits;
  return { family, first, last: first + (1n << hostBits) - 1n };
}

const refused = [...IPV4_SPECIAL_PURPOSE, ...IPV6_SPECIAL_PURPOSE, ...BEYOND_THE_REGISTRIES]
  .filter((block) => block.globallyReachable !== true && !block.carriesIpv4)
  .map((block) => blockRange(block.prefix));
const carriers = [...IPV4_SPECIAL_PURPOSE, ...IPV6_SPECIAL_PURPOSE].filter((block: AddressBlock) => block.carriesIpv4).map((block) => blockRange(block.prefix));
const within = (family: 4 | 6, value: bigint) => (range: ReturnType<typeof blockRange>) =>
  range.family === family && range.first <= value && value <= range.last;

const BLOCKED_NAMES = /(^|\.)(localhost|internal|local)$|^metadata(\.google\.internal)?$/i;

export function isBlockedAddress(address: string): boolean {
  const parsed = addressValue(address);
  if (!parsed) return false;
  // ::ffff:a.b.c.d and 64:ff9b::a.b.c.d reach the IPv4 address they carry: judged as that address.
  if (parsed.family === 6 && carriers.some(within(6, parsed.value))) return refused.some(within(4, parsed.value & 0xffffffffn));
  return refused.some(within(parsed.family, parsed.value));
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

const LOOPBACK = ['127.0.0.0/8', '::1/128'].map(blockRange);

/** 127.0.0.0/8 and ::1, also when an IPv6 address carries a loopback IPv4 address. */
export function isLoopbackAddress(address: string): boolean {
  const parsed = addressValue(address);
  if (!parsed) return false;
  if (parsed.family === 6 && carriers.some(within(6, parsed.value))) return LOOPBACK.some(within(4, parsed.value & 0xffffffffn));
  return LOOPBACK.some(within(parsed.family, parsed.value));
}

/**
 * The addresses a connection to `host` may use, every one checked, or why it must not be made. A client that
 * connects to one of these addresses (never resolving the name again) leaves no window for a DNS answer to
 * change between the check and the connection. A name that resolves to nothing gives no addresses.
 * `allowLoopback` lets loopback addresses and the name localhost through (local development only).
 */
export async function resolveChecked(
  host: string,
  resolve: Resolver,
  { allowLoopback = false }: { allowLoopback?: boolean } = {},
): Promise<{ addresses: string[] } | { refused: string }> {
  const bare = canonicalHost(host);
  let addresses: string[];
  if (isIP(bare)) addresses = [bare];
  else if (BLOCKED_NAMES.test(bare) && !(allowLoopback && /^localhost$/i.test(bare))) return { refused: `${bare} is an internal name` };
  else addresses = await resolve(bare).catch(() => []);
  const refused = addresses.find((address) => isBlockedAddress(address) && !(allowLoopback && isLoopbackAddress(address)));
  if (refused) return { refused: `${bare} is or resolves to ${refused}, a loopback, private, link-local or metadata address` };
  return { addresses };
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
