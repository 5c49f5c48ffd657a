// Outbound webhooks: the Standard Webhooks secret and signature, the rule an endpoint's URL must follow, and the
// POST itself, made to an address the SSRF check approved (https://www.standardwebhooks.com, spec v1).
import { createHmac, randomBytes } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { isLoopbackAddress, type Resolver, resolveChecked } from './ssrf.ts';

const SECRET_PREFIX = 'whsec_';

/** `whsec_` and the base64 of 32 random bytes, the Standard Webhooks form. */
export const newWebhookSecret = (): string => `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;

/** `v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` keyed with the secret's bytes. */
export function webhookSignature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
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

/**
 * POSTs `body` to the URL, connecting to `address` (checked by webhookTarget) with the URL's host as Host and
 * TLS server name: the name is not resolved again. A 2xx answer within `timeoutMs` succeeds; redirects are not
 * followed (a 3xx fails, so an endpoint cannot redirect deliveries inward).
 */
export function postWebhook(url: URL, address: string, headers: Record<string, string>, body: string, timeoutMs: number): Promise<AttemptOutcome> {
  const started = performance.now();
  const family = isIP(address);
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    const request = (url.protocol === 'https:' ? https : http).request(url, {
      method: 'POST',
      agent: false,
      headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
      // The checked address, whatever the name resolves to now.
      lookup: (_host, options, callback) =>
        (options as { all?: boolean }).all
          ? (callback as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address, family }])
          : callback(null, address, family),
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
      // The answer's body is not read: drain it, and close the connection after it.
      response.resume();
      response.on('end', () => request.destroy());
      const ok = status >= 200 && status < 300;
      settle({ status, durationMs: elapsed(), error: ok ? undefined : `The endpoint answered HTTP ${status}.` });
    });
    request.on('error', (error) => settle({ durationMs: elapsed(), error: `No answer: ${error.message}.` }));
    request.end(body);
  });
}
