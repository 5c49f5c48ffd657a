// Outbound webhooks: the Standard Webhooks secret and signature, the rule an endpoint's URL must follow, and the
// POST itself, sent over kept-alive connections each made to an address the SSRF check approved (https://www.standardwebhooks.com, spec v1).
import { createHmac, createSecretKey, type KeyObject, randomBytes } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { urlToHttpOptions } from 'node:url';
import { isBlockedAddress, isLoopbackAddress, type Resolver, resolveChecked } from './ssrf.ts';

type AllCallback = (error: null, addresses: { address: string; family: number }[]) => void;

const SECRET_PREFIX = 'whsec_';

/** `whsec_` and the base64 of 32 random bytes, the Standard Webhooks form. */
export const newWebhookSecret = (): string => `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;

/**
 * The HMAC key of a secret: its bytes as a key object, made once and kept by the sender. An HMAC keyed with the
 * bytes themselves imports them into a key object on every call, which took ten times the HMAC's own time
 * (43 µs against 4 µs a signature, Node 24).
 */
export const webhookSigningKey = (secret: string): KeyObject => createSecretKey(Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64'));

/** `v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` keyed with the secret's bytes. */
export function webhookSignature(key: KeyObject, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

export interface WebhookUrlRules {
  resolve: Resolver;
  /** Development only (WEBHOOK_ALLOW_HTTP_LOOPBACK): http:// to loopback addresses, and loopback addresses at all. */
  allowHttpLoopback: boolean;
}

type Target = { url: URL; addresses: string[] } | { refused: string };

/**
 * Where a delivery to `url` may connect: https with a public host (every address it resolves to now is
 * checked), or, with the development setting, http or https to loopback only.
 */
export async function webhookTarget(url: string, rules: WebhookUrlRules): Promise<Target> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { refused: 'is not a URL' };
  }
  const http = parsed.protocol === 'http:';
  if (parsed.protocol !== 'https:' && !(http && rules.allowHttpLoopback)) return { refused: 'must be an https:// URL' };
  if (parsed.username || parsed.password) return { refused: 'carries credentials; put a token in the path or query instead' };
  const checked = await resolveChecked(parsed.hostname, rules.resolve, { allowLoopback: rules.allowHttpLoopback });
  if ('refused' in checked) return checked;
  if (http && !checked.addresses.every(isLoopbackAddress)) return { refused: 'must be an https:// URL (http:// is allowed to loopback addresses only)' };
  return { url: parsed, addresses: checked.addresses };
}

/** Why an endpoint must not have this URL, or undefined: as webhookTarget, but a host that resolves to nothing yet passes. */
export async function forbiddenWebhookUrl(url: string, rules: WebhookUrlRules): Promise<string | undefined> {
  const target = await webhookTarget(url, rules);
  return 'refused' in target ? target.refused : undefined;
}

export interface AttemptOutcome {
  /** The HTTP status answered, when one came in time. */
  status?: number;
  durationMs: number;
  /** Why the attempt failed; undefined after a 2xx. */
  error?: string;
}

/** A connection the SSRF rules refused: nothing was sent. */
class NotSent extends Error {}

/** Where a request goes: the URL as node:http's request options. */
type RequestTarget = ReturnType<typeof urlToHttpOptions>;

/**
 * The rules a delivery's URL must follow that need no DNS: the scheme, no credentials, and a host that is not an
 * internal name or a refused address literal (a connection to a literal address resolves nothing, so no lookup
 * would check it). A name is checked on every new connection (WebhookSender's lookup).
 */
function deliveryUrl(url: string, allowHttpLoopback: boolean): RequestTarget | NotSent {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return new NotSent('the URL is not a URL');
  }
  const http = parsed.protocol === 'http:';
  if (parsed.protocol !== 'https:' && !(http && allowHttpLoopback)) return new NotSent('the URL must be an https:// URL');
  if (parsed.username || parsed.password) return new NotSent('the URL carries credentials; put a token in the path or query instead');
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) === 0) return urlToHttpOptions(parsed);
  const refused = checkedAddresses(parsed.protocol, host, [host], allowHttpLoopback);
  return refused instanceof NotSent ? refused : urlToHttpOptions(parsed);
}

/** URLs whose rules were checked and whose request options were made, kept at most this many (then forgotten together). */
const CHECKED_URLS = 10_000;

/** The addresses a connection may use (every one allowed), or why none may be used. */
function checkedAddresses(protocol: string, host: string, addresses: string[], allowHttpLoopback: boolean): string[] | NotSent {
  const refused = addresses.find((address) => isBlockedAddress(address) && !(allowHttpLoopback && isLoopbackAddress(address)));
  if (refused) return new NotSent(`the URL ${host} is or resolves to ${refused}, a loopback, private, link-local or metadata address`);
  if (protocol === 'http:' && !addresses.every(isLoopbackAddress)) {
    return new NotSent('the URL must be an https:// URL (http:// is allowed to loopback addresses only)');
  }
  if (addresses.length === 0) return new NotSent(`${host} does not resolve`);
  return addresses;
}

/**
 * Sends deliveries over kept-alive connections: one pooled agent per scheme, which keeps connections per origin.
 * Every new connection resolves the host and checks every address it resolves to against the SSRF rules, then
 * connects to an address it checked (the lookup hands the connection the checked addresses): a name that
 * resolves elsewhere later is checked again on the next connection, and there is no window between a check and
 * its connection. A connection already open stays with the address it was checked for.
 */
export class WebhookSender {
  private readonly agents: Record<'http:' | 'https:', http.Agent>;
  private readonly allowHttpLoopback: boolean;
  /**
   * Each URL's outcome of deliveryUrl, which depends on nothing else: parsing it and turning it into request options
   * took 5–15 µs of the 90 or so an attempt's sending costs. The SSRF check of what a name resolves to is not kept
   * here: it is made on every new connection.
   */
  private readonly targets = new Map<string, RequestTarget | NotSent>();

  constructor(rules: WebhookUrlRules) {
    this.allowHttpLoopback = rules.allowHttpLoopback;
    const lookupFor =
      (protocol: string): LookupFunction =>
      (hostname, options, callback) => {
        resolveChecked(hostname, rules.resolve, { allowLoopback: rules.allowHttpLoopback }).then(
          (checked) => {
            const addresses =
              'refused' in checked
                ? new NotSent(`the URL ${checked.refused}`)
                : checkedAddresses(protocol, hostname, checked.addresses, this.allowHttpLoopback);
            if (addresses instanceof NotSent) callback(addresses, '', 0);
            else if (options.all)
              (callback as AllCallback)(
                null,
                addresses.map((address) => ({ address, family: isIP(address) })),
              );
            else callback(null, addresses[0]!, isIP(addresses[0]!));
          },
          (error: Error) => callback(error, '', 0),
        );
      };
    this.agents = {
      'http:': new http.Agent({ keepAlive: true, lookup: lookupFor('http:') }),
      'https:': new https.Agent({ keepAlive: true, lookup: lookupFor('https:') }),
    };
  }

  /**
   * POSTs `body` to the URL. A 2xx answer within `timeoutMs` succeeds; redirects are not followed (a 3xx fails,
   * so an endpoint cannot redirect deliveries inward). The answer's body is never read, only drained: the
   * connection goes back to the pool when it ends, and is closed at the deadline when it does not.
   */
  send(url: string, headers: Record<string, string>, body: string, timeoutMs: number): Promise<AttemptOutcome> {
    let target = this.targets.get(url);
    if (target === undefined) {
      if (this.targets.size >= CHECKED_URLS) this.targets.clear();
      target = deliveryUrl(url, this.allowHttpLoopback);
      this.targets.set(url, target);
    }
    if (target instanceof NotSent) return Promise.resolve({ durationMs: 0, error: `Not sent: ${target.message}.` });
    const protocol = target.protocol as 'http:' | 'https:';
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    return new Promise((resolve) => {
      const request = (protocol === 'https:' ? https : http).request({
        ...target,
        method: 'POST',
        agent: this.agents[protocol],
        headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
      });
      // Also bounds an answer whose body never ends: the connection closes at the deadline either way.
      const timer = setTimeout(() => request.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      request.on('close', () => clearTimeout(timer));
      let settled = false;
      const settle = (outcome: AttemptOutcome) => {
        if (settled) return;
        settled = true;
        resolve(outcome);
      };
      request.on('response', (response) => {
        const status = response.statusCode ?? 0;
        response.resume();
        const ok = status >= 200 && status < 300;
        settle({ status, durationMs: elapsed(), error: ok ? undefined : `The endpoint answered HTTP ${status}.` });
      });
      request.on('error', (error) =>
        settle(
          error instanceof NotSent ? { durationMs: 0, error: `Not sent: ${error.message}.` } : { durationMs: elapsed(), error: `No answer: ${error.message}.` },
        ),
      );
      request.end(body);
    });
  }

  /** Closes the kept-alive connections. */
  close(): void {
    for (const agent of Object.values(this.agents)) agent.destroy();
  }
}
