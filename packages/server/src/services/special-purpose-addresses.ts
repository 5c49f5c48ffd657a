// IANA's special-purpose address registries, as data: the SSRF check (services/ssrf.ts) refuses every block
// whose "Globally Reachable" is False or N/A, and the test checks an address inside and a neighbour outside
// each entry. Sources (RFC 6890 defines the columns; an entry's own RFC may narrow a block it sits in):
//   https://www.iana.org/assignments/iana-ipv4-special-registry/ (entries through RFC 8880, 2020)
//   https://www.iana.org/assignments/iana-ipv6-special-registry/ (entries through RFC 9637 and RFC 9602, 2024)
// A more specific entry that is globally reachable inside a refused block (an anycast address in 192.0.0.0/24
// or 2001::/23) stays refused: the service has no reason to fetch from a protocol's anycast address.

export interface AddressBlock {
  /** Network address and prefix length, as the registry writes it. */
  readonly prefix: string;
  readonly name: string;
  readonly rfc: string;
  /** The registry's "Globally Reachable" column; N/A for deprecated blocks. */
  readonly globallyReachable: boolean | 'N/A';
  /**
   * The block's last 32 bits are an IPv4 address that a connection actually reaches (IPv4-mapped, the NAT64
   * well-known prefix): such an address is judged by the IPv4 address it carries.
   */
  readonly carriesIpv4?: true;
}

export const IPV4_SPECIAL_PURPOSE: readonly AddressBlock[] = [
  { prefix: '0.0.0.0/8', name: '"This network"', rfc: 'RFC 791 §3.2', globallyReachable: false },
  { prefix: '0.0.0.0/32', name: '"This host on this network"', rfc: 'RFC 1122 §3.2.1.3', globallyReachable: false },
  { prefix: '10.0.0.0/8', name: 'Private-Use', rfc: 'RFC 1918', globallyReachable: false },
  { prefix: '100.64.0.0/10', name: 'Shared Address Space', rfc: 'RFC 6598', globallyReachable: false },
  { prefix: '127.0.0.0/8', name: 'Loopback', rfc: 'RFC 1122 §3.2.1.3', globallyReachable: false },
  { prefix: '169.254.0.0/16', name: 'Link Local', rfc: 'RFC 3927', globallyReachable: false },
  { prefix: '172.16.0.0/12', name: 'Private-Use', rfc: 'RFC 1918', globallyReachable: false },
  { prefix: '192.0.0.0/24', name: 'IETF Protocol Assignments', rfc: 'RFC 6890 §2.1', globallyReachable: false },
  { prefix: '192.0.0.0/29', name: 'IPv4 Service Continuity Prefix', rfc: 'RFC 7335', globallyReachable: false },
  { prefix: '192.0.0.8/32', name: 'IPv4 dummy address', rfc: 'RFC 7600', globallyReachable: false },
  { prefix: '192.0.0.9/32', name: 'Port Control Protocol Anycast', rfc: 'RFC 7723', globallyReachable: true },
  { prefix: '192.0.0.10/32', name: 'Traversal Using Relays around NAT Anycast', rfc: 'RFC 8155', globallyReachable: true },
  { prefix: '192.0.0.170/32', name: 'NAT64/DNS64 Discovery', rfc: 'RFC 8880, RFC 7050 §2.2', globallyReachable: false },
  { prefix: '192.0.0.171/32', name: 'NAT64/DNS64 Discovery', rfc: 'RFC 8880, RFC 7050 §2.2', globallyReachable: false },
  { prefix: '192.0.2.0/24', name: 'Documentation (TEST-NET-1)', rfc: 'RFC 5737', globallyReachable: false },
  { prefix: '192.31.196.0/24', name: 'AS112-v4', rfc: 'RFC 7535', globallyReachable: true },
  { prefix: '192.52.193.0/24', name: 'AMT', rfc: 'RFC 7450', globallyReachable: true },
  { prefix: '192.88.99.0/24', name: 'Deprecated (6to4 Relay Anycast)', rfc: 'RFC 7526', globallyReachable: 'N/A' },
  { prefix: '192.168.0.0/16', name: 'Private-Use', rfc: 'RFC 1918', globallyReachable: false },
  { prefix: '192.175.48.0/24', name: 'Direct Delegation AS112 Service', rfc: 'RFC 7534', globallyReachable: true },
  { prefix: '198.18.0.0/15', name: 'Benchmarking', rfc: 'RFC 2544', globallyReachable: false },
  { prefix: '198.51.100.0/24', name: 'Documentation (TEST-NET-2)', rfc: 'RFC 5737', globallyReachable: false },
  { prefix: '203.0.113.0/24', name: 'Documentation (TEST-NET-3)', rfc: 'RFC 5737', globallyReachable: false },
  { prefix: '240.0.0.0/4', name: 'Reserved', rfc: 'RFC 1112 §4', globallyReachable: false },
  { prefix: '255.255.255.255/32', name: 'Limited Broadcast', rfc: 'RFC 8190, RFC 919 §7', globallyReachable: false },
];

export const IPV6_SPECIAL_PURPOSE: readonly AddressBlock[] = [
  { prefix: '::1/128', name: 'Loopback Address', rfc: 'RFC 4291', globallyReachable: false },
  { prefix: '::/128', name: 'Unspecified Address', rfc: 'RFC 4291', globallyReachable: false },
  { prefix: '::ffff:0:0/96', name: 'IPv4-mapped Address', rfc: 'RFC 4291', globallyReachable: false, carriesIpv4: true },
  { prefix: '64:ff9b::/96', name: 'IPv4-IPv6 Translat.', rfc: 'RFC 6052', globallyReachable: true, carriesIpv4: true },
  { prefix: '64:ff9b:1::/48', name: 'IPv4-IPv6 Translat. (local-use)', rfc: 'RFC 8215', globallyReachable: false },
  { prefix: '100::/64', name: 'Discard-Only Address Block', rfc: 'RFC 6666', globallyReachable: false },
  { prefix: '2001::/23', name: 'IETF Protocol Assignments', rfc: 'RFC 2928', globallyReachable: false },
  { prefix: '2001::/32', name: 'TEREDO', rfc: 'RFC 4380, RFC 8190', globallyReachable: 'N/A' },
  { prefix: '2001:1::1/128', name: 'Port Control Protocol Anycast', rfc: 'RFC 7723', globallyReachable: true },
  { prefix: '2001:1::2/128', name: 'Traversal Using Relays around NAT Anycast', rfc: 'RFC 8155', globallyReachable: true },
  { prefix: '2001:1::3/128', name: 'DNS-SD Service Registration Protocol Anycast', rfc: 'RFC 9665', globallyReachable: true },
  { prefix: '2001:2::/48', name: 'Benchmarking', rfc: 'RFC 5180, RFC Errata 1752', globallyReachable: false },
  { prefix: '2001:3::/32', name: 'AMT', rfc: 'RFC 7450', globallyReachable: true },
  { prefix: '2001:4:112::/48', name: 'AS112-v6', rfc: 'RFC 7535', globallyReachable: true },
  { prefix: '2001:10::/28', name: 'Deprecated (previously ORCHID)', rfc: 'RFC 4843', globallyReachable: 'N/A' },
  { prefix: '2001:20::/28', name: 'ORCHIDv2', rfc: 'RFC 7343', globallyReachable: true },
  { prefix: '2001:30::/28', name: 'Drone Remote ID Protocol Entity Tags (DETs) Prefix', rfc: 'RFC 9374', globallyReachable: true },
  { prefix: '2001:db8::/32', name: 'Documentation', rfc: 'RFC 3849', globallyReachable: false },
  { prefix: '2002::/16', name: '6to4', rfc: 'RFC 3056', globallyReachable: 'N/A' },
  { prefix: '2620:4f:8000::/48', name: 'Direct Delegation AS112 Service', rfc: 'RFC 7534', globallyReachable: true },
  { prefix: '3fff::/20', name: 'Documentation', rfc: 'RFC 9637', globallyReachable: false },
  { prefix: '5f00::/16', name: 'Segment Routing (SRv6) SIDs', rfc: 'RFC 9602', globallyReachable: false },
  { prefix: 'fc00::/7', name: 'Unique-Local', rfc: 'RFC 4193, RFC 8190', globallyReachable: false },
  { prefix: 'fe80::/10', name: 'Link-Local Unicast', rfc: 'RFC 4291', globallyReachable: false },
];

/**
 * Blocks the special-purpose registries leave out because other registries hold them (multicast, the IPv6
 * address space's reserved and deprecated parts), refused all the same.
 */
export const BEYOND_THE_REGISTRIES: readonly AddressBlock[] = [
  { prefix: '224.0.0.0/4', name: 'Multicast (IPv4 Multicast Address Space Registry)', rfc: 'RFC 5771', globallyReachable: false },
  {
    prefix: '::/96',
    name: 'IPv4-compatible IPv6 address (deprecated; ::7f00:1 is loopback by another name)',
    rfc: 'RFC 4291 §2.5.5.1',
    globallyReachable: false,
  },
  { prefix: '::ffff:0:0:0/96', name: 'IPv4-translated address (SIIT)', rfc: 'RFC 2765 §2.1', globallyReachable: false },
  { prefix: 'fec0::/10', name: 'Site-local unicast (deprecated; IPv6 Address Space registry)', rfc: 'RFC 3879', globallyReachable: false },
  { prefix: 'ff00::/8', name: 'Multicast (IPv6 Address Space registry)', rfc: 'RFC 4291 §2.7', globallyReachable: false },
];
