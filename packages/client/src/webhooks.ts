// Webhooks as the Standard Webhooks specification signs them (https://www.standardwebhooks.com): headers
// `webhook-id`, `webhook-timestamp` (Unix seconds) and `webhook-signature` (`v1,<base64 HMAC-SHA256>`, several
// separated by spaces while a secret rotates), over `${id}.${timestamp}.${body}`, with a `whsec_` + base64 secret.
// Web Crypto only (Node ≥ 20 and browsers), hence async.
import type { Schema, webhooks } from '@platform/api-types';
import { PlatformError } from './errors.ts';

type Event = Schema<'Event'>;

/** What happened, as `<object>.<change>` (`cluster.running`, `install.failed`, …). */
export type WebhookEventType = Schema<'EventType'>;

/** The body the contract's `webhooks` section declares for an event of type `T`. */
type Payload<T extends WebhookEventType> = webhooks[T]['post']['requestBody']['content']['application/json'];

/**
 * A webhook's payload: the contract's Event, one member per event type, so that checking `type` (or
 * `object_type`) narrows `object` to the record it is (`cluster.running` → Cluster). The object type and object of
 * each type are those its entry in the contract's `webhooks` section names.
 */
export type WebhookEvent = {
  [T in WebhookEventType]: Omit<Event, 'type' | 'object_type' | 'object'> & {
    type: T;
    object_type: Extract<Event['object_type'], Payload<T>['object_type']>;
    object: Extract<Event['object'], NonNullable<Payload<T>['object']>>;
  };
}[WebhookEventType];

/** The body as it arrived, before any JSON parsing: a string, or its bytes (a Node Buffer is a Uint8Array). */
export type WebhookPayload = string | Uint8Array | ArrayBuffer;

/** The request's headers: a fetch `Headers`, or a plain object (Node's `req.headers`; any letter case). */
export type WebhookHeaders = Headers | Record<string, string | readonly string[] | undefined>;

/** The three headers a signed webhook carries (a type, not an interface, so that it is a WebhookHeaders too). */
export type WebhookSignatureHeaders = {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
};

export interface VerifyWebhookOptions {
  /** How far `webhook-timestamp` may be from now, either way, in seconds. Default 300. */
  toleranceSeconds?: number;
}

export type WebhookVerificationFailure = 'missing_header' | 'invalid_timestamp' | 'timestamp_out_of_tolerance' | 'no_matching_signature' | 'invalid_payload';

/** The webhook is not one to trust (or not one at all): answer it 400 and do not act on it. */
export class WebhookVerificationError extends PlatformError {
  override name = 'WebhookVerificationError';
  readonly reason: WebhookVerificationFailure;

  constructor(reason: WebhookVerificationFailure, message: string) {
    super(message);
    this.reason = reason;
  }
}

const DEFAULT_TOLERANCE_SECONDS = 5 * 60;
const SECRET_PREFIX = 'whsec_';
const encoder = new TextEncoder();

/**
 * Checks a webhook's signature and timestamp against `secret` (`whsec_…`) and returns its event. `payload` must be
 * the raw body (JSON parsed and serialized again is not the same bytes). Throws `WebhookVerificationError` when the
 * webhook is not to be trusted.
 */
export async function verifyWebhook(
  payload: WebhookPayload,
  headers: WebhookHeaders,
  secret: string,
  options: VerifyWebhookOptions = {},
): Promise<WebhookEvent> {
  const body = payloadBytes(payload);
  const key = await hmacKey(secret);
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');

  if (!/^\d{1,12}$/.test(timestamp)) {
    throw new WebhookVerificationError(
      'invalid_timestamp',
      `The webhook-timestamp header is not a Unix time in seconds: ${JSON.stringify(timestamp.slice(0, 40))}`,
    );
  }
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const skew = Math.floor(Date.now() / 1000) - Number(timestamp);
  if (Math.abs(skew) > tolerance) {
    const when = skew > 0 ? `${skew} s old` : `${-skew} s in the future`;
    throw new WebhookVerificationError('timestamp_out_of_tolerance', `The webhook-timestamp is ${when}, beyond the tolerance of ${tolerance} s`);
  }

  const expected = await sign(key, id, timestamp, body);
  const matched = signatures
    .split(' ')
    .filter((entry) => entry.startsWith('v1,'))
    .some((entry) => {
      const candidate = fromBase64(entry.slice(3));
      return candidate !== undefined && constantTimeEqual(candidate, expected);
    });
  if (!matched) throw new WebhookVerificationError('no_matching_signature', 'No signature in webhook-signature matches the payload with this secret');

  // The signature vouches for the content: it is the platform's Event, as the API's own bodies are trusted.
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body)) as WebhookEvent;
  } catch (error) {
    throw new WebhookVerificationError('invalid_payload', `The signed payload is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
}

export interface SignWebhookOptions {
  /** The message id: the event's id. */
  id: string;
  /** One secret, or several while a secret rotates (one signature each). */
  secret: string | readonly string[];
  /** Unix seconds. Default: now. */
  timestamp?: number;
}

/** The Standard Webhooks headers for sending `payload` (the exact body to be sent). */
export async function signWebhook(payload: WebhookPayload, options: SignWebhookOptions): Promise<WebhookSignatureHeaders> {
  const body = payloadBytes(payload);
  const timestamp = String(options.timestamp ?? Math.floor(Date.now() / 1000));
  const secrets = typeof options.secret === 'string' ? [options.secret] : options.secret;
  const signatures = await Promise.all(secrets.map(async (secret) => `v1,${toBase64(await sign(await hmacKey(secret), options.id, timestamp, body))}`));
  return { 'webhook-id': options.id, 'webhook-timestamp': timestamp, 'webhook-signature': signatures.join(' ') };
}

/** A new random secret, `whsec_` + base64 of 32 bytes. */
export function generateWebhookSecret(): string {
  return SECRET_PREFIX + toBase64(crypto.getRandomValues(new Uint8Array(32)));
}

async function sign(key: CryptoKey, id: string, timestamp: string, body: Uint8Array): Promise<Uint8Array> {
  const prefix = encoder.encode(`${id}.${timestamp}.`);
  const content = new Uint8Array(prefix.length + body.length);
  content.set(prefix);
  content.set(body, prefix.length);
  return new Uint8Array(await crypto.subtle.sign('HMAC', key, content));
}

async function hmacKey(secret: string): Promise<CryptoKey> {
  const bytes = typeof secret === 'string' ? fromBase64(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret) : undefined;
  // A misconfigured receiver, not a bad webhook: not a WebhookVerificationError, so it is not answered as one.
  if (bytes === undefined || bytes.length === 0) throw new PlatformError('The webhook secret must be whsec_ followed by base64 (as the platform shows it)');
  return crypto.subtle.importKey('raw', bytes, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
}

function payloadBytes(payload: WebhookPayload): Uint8Array<ArrayBuffer> {
  if (typeof payload === 'string') return encoder.encode(payload);
  if (payload instanceof ArrayBuffer) return new Uint8Array(payload.slice(0));
  if (payload instanceof Uint8Array) return new Uint8Array(payload);
  // The usual mistake: a body parser ran first, and the bytes that were signed are gone.
  throw new PlatformError('The webhook payload must be the raw body (a string or bytes), not parsed JSON: read it with express.raw() or request.text()');
}

function header(headers: WebhookHeaders, name: keyof WebhookSignatureHeaders): string {
  let value: string | readonly string[] | null | undefined;
  if (typeof headers.get === 'function') value = (headers as Headers).get(name);
  else {
    const entries = Object.entries(headers as Record<string, string | readonly string[] | undefined>);
    value = entries.find(([key]) => key.toLowerCase() === name)?.[1];
  }
  const text = typeof value === 'string' ? value : (value?.join(' ') ?? '');
  if (text.trim() === '') throw new WebhookVerificationError('missing_header', `The ${name} header is missing`);
  return text.trim();
}

/** Compares in time that depends on the length only (which is public: a SHA-256 HMAC has 32 bytes). */
function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= (a[i] ?? 0) ^ (b[i] ?? 0);
  return difference === 0;
}

function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

function fromBase64(text: string): Uint8Array<ArrayBuffer> | undefined {
  try {
    return Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
  } catch {
    return undefined;
  }
}
