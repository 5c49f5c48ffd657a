// The client's address. Behind a load balancer every connection comes from the balancer, so per-address limits
// would put every client in one bucket: from peers listed in TRUST_PROXY (and only from them, since anyone can
// send the header) the client is the right-most X-Forwarded-For entry that is not itself a trusted proxy.
import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';

export type ClientAddress = (req: IncomingMessage) => string;

/** `::ffff:10.0.0.1` (an IPv4 peer on a dual-stack socket) is 10.0.0.1. */
const plain = (address: string) => (address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address);

export function clientAddress(trustProxy: string[]): ClientAddress {
  if (trustProxy.length === 0) return (req) => plain(req.socket.remoteAddress ?? '');
  const trusted = new BlockList();
  for (const entry of trustProxy) {
    const [address = '', prefix] = entry.split('/');
    const type = isIP(address) === 4 ? 'ipv4' : 'ipv6';
    if (prefix === undefined) trusted.addAddress(address, type);
    else trusted.addSubnet(address, Number(prefix), type);
  }
  const isTrusted = (address: string) => {
    const family = isIP(address);
    return family !== 0 && trusted.check(address, family === 4 ? 'ipv4' : 'ipv6');
  };
  return (req) => {
    let client = plain(req.socket.remoteAddress ?? '');
    if (!isTrusted(client)) return client;
    const header = req.headers['x-forwarded-for'];
    const hops = (Array.isArray(header) ? header.join(',') : (header ?? '')).split(',').map((hop) => plain(hop.trim()));
    // From the right: each trusted hop vouches for the one before it; the first untrusted hop is the client.
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i]!;
      if (isIP(hop) === 0) break; // not an address: trust stops here
      client = hop;
      if (!isTrusted(hop)) break;
    }
    return client;
  };
}
