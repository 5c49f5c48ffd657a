// verifyWebhook() and signWebhook() against the Standard Webhooks reference library (`standardwebhooks`): each
// verifies what the other signs; tampering, a wrong secret, stale timestamps, rotation and header forms.
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import {
  generateWebhookSecret,
  PlatformError,
  signWebhook,
  verifyWebhook,
  type WebhookEvent,
  WebhookVerificationError,
  type WebhookVerificationFailure,
} from '../src/index.ts';

const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const otherSecret = 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD';

const event: WebhookEvent = {
  id: 'evt_01jd2xd7h9k1n3q5s7v9x1z3b5',
  type: 'cluster.running',
  workspace_id: 'ws_01jd2x8k4q3m7n5p9r6s2t8v0w',
  object_type: 'cluster',
  object_id: 'cl_01jd2x8m5r7t9v1w3y5a7c9e1g',
  object: {
    id: 'cl_01jd2x8m5r7t9v1w3y5a7c9e1g',
    name: 'prod-eu – Zürich',
    workspace_id: 'ws_01jd2x8k4q3m7n5p9r6s2t8v0w',
    region_id: 'fsn1',
    kaas: { version: 'v1.31', status: 'RUNNING', status_message: null },
    created_at: 1732268800,
  },
  created_at: 1732269100,
};
const body = JSON.stringify(event);
const now = () => Math.floor(Date.now() / 1000);

/** Headers signed by the reference library, `secondsAgo` in the past. */
function referenceHeaders(payload: string, key = secret, secondsAgo = 0) {
  const timestamp = new Date((now() - secondsAgo) * 1000);
  return {
    'webhook-id': event.id,
    'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
    'webhook-signature': new Webhook(key).sign(event.id, timestamp, payload),
  };
}

async function failure(promise: Promise<unknown>): Promise<WebhookVerificationFailure> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(WebhookVerificationError);
  expect(error).toBeInstanceOf(PlatformError);
  return (error as WebhookVerificationError).reason;
}

describe('verifyWebhook', () => {
  it('accepts what the reference library signs, from a string, a Buffer, a Uint8Array or an ArrayBuffer, and returns the event', async () => {
    const headers = referenceHeaders(body);
    expect(await verifyWebhook(body, headers, secret)).toEqual(event);
    const bytes = new TextEncoder().encode(body);
    expect(await verifyWebhook(Buffer.from(body), headers, secret)).toEqual(event);
    expect(await verifyWebhook(bytes, headers, secret)).toEqual(event);
    expect(await verifyWebhook(bytes.buffer, headers, secret)).toEqual(event);
  });

  it('types the event by its type', async () => {
    const verified = await verifyWebhook(body, referenceHeaders(body), secret);
    if (verified.type !== 'cluster.running') throw new Error(`unexpected ${verified.type}`);
    // Narrowed to a cluster: a field only Cluster has.
    expect(verified.object.kaas.status).toBe('RUNNING');
  });

  it('refuses a tampered body, even one that parses to the same JSON', async () => {
    const headers = referenceHeaders(body);
    expect(await failure(verifyWebhook(body.replace('RUNNING', 'FAILED'), headers, secret))).toBe('no_matching_signature');
    expect(await failure(verifyWebhook(JSON.stringify(event, null, 2), headers, secret))).toBe('no_matching_signature');
    expect(await failure(verifyWebhook(`${body}\n`, headers, secret))).toBe('no_matching_signature');
  });

  it('refuses a signature made with another secret, or over another id or timestamp', async () => {
    const headers = referenceHeaders(body);
    expect(await failure(verifyWebhook(body, headers, otherSecret))).toBe('no_matching_signature');
    expect(await failure(verifyWebhook(body, { ...headers, 'webhook-id': 'evt_other' }, secret))).toBe('no_matching_signature');
    const moved = String(Number(headers['webhook-timestamp']) - 1);
    expect(await failure(verifyWebhook(body, { ...headers, 'webhook-timestamp': moved }, secret))).toBe('no_matching_signature');
  });

  it('refuses a timestamp more than five minutes away, either way; the tolerance is configurable', async () => {
    const old = referenceHeaders(body, secret, 6 * 60);
    expect(await failure(verifyWebhook(body, old, secret))).toBe('timestamp_out_of_tolerance');
    await expect(verifyWebhook(body, old, secret)).rejects.toThrow(/36\d s old, beyond the tolerance of 300 s/);
    expect(await verifyWebhook(body, old, secret, { toleranceSeconds: 10 * 60 })).toEqual(event);
    const recent = referenceHeaders(body, secret, 60);
    expect(await failure(verifyWebhook(body, recent, secret, { toleranceSeconds: 30 }))).toBe('timestamp_out_of_tolerance');

    const future = await signWebhook(body, { id: event.id, secret, timestamp: now() + 6 * 60 });
    expect(await failure(verifyWebhook(body, future, secret))).toBe('timestamp_out_of_tolerance');
    expect(await verifyWebhook(body, await signWebhook(body, { id: event.id, secret, timestamp: now() + 60 }), secret)).toEqual(event);
  });

  it('accepts any one matching signature of several (a secret rotation), ignoring other versions and garbage', async () => {
    const previous = referenceHeaders(body, otherSecret)['webhook-signature'];
    const current = referenceHeaders(body, secret)['webhook-signature'];
    const headers = { ...referenceHeaders(body), 'webhook-signature': `v1a,abc ${previous} v1,!!notbase64 ${current}` };
    expect(await verifyWebhook(body, headers, secret)).toEqual(event);
    expect(await verifyWebhook(body, headers, otherSecret)).toEqual(event);
    expect(await failure(verifyWebhook(body, { ...headers, 'webhook-signature': previous }, secret))).toBe('no_matching_signature');
    // The same bytes under another version tag do not count.
    expect(await failure(verifyWebhook(body, { ...headers, 'webhook-signature': current.replace('v1,', 'v2,') }, secret))).toBe('no_matching_signature');
  });

  it('reads a fetch Headers instance, and plain objects in any letter case or with list values', async () => {
    const signed = referenceHeaders(body);
    expect(await verifyWebhook(body, new Headers(signed), secret)).toEqual(event);
    const shouted = Object.fromEntries(Object.entries(signed).map(([name, value]) => [name.toUpperCase(), value]));
    expect(await verifyWebhook(body, shouted, secret)).toEqual(event);
    const rotated = { ...signed, 'webhook-signature': ['v1,bm90IHRoaXMgb25l', signed['webhook-signature']] };
    expect(await verifyWebhook(body, rotated, secret)).toEqual(event);
  });

  it('names the missing header, and refuses a timestamp that is not Unix seconds', async () => {
    const signed = referenceHeaders(body);
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const) {
      const { [name]: _, ...rest } = signed;
      const promise = verifyWebhook(body, rest, secret);
      expect(await failure(promise)).toBe('missing_header');
      await expect(verifyWebhook(body, new Headers({ ...rest, [name]: ' ' }), secret)).rejects.toThrow(`The ${name} header is missing`);
    }
    for (const timestamp of ['2024-11-22T10:51:00Z', '1732269100.5', '-1', 'soon']) {
      expect(await failure(verifyWebhook(body, { ...signed, 'webhook-timestamp': timestamp }, secret))).toBe('invalid_timestamp');
    }
  });

  it('refuses a correctly signed body that is not JSON', async () => {
    const text = 'not json';
    expect(await failure(verifyWebhook(text, referenceHeaders(text), secret))).toBe('invalid_payload');
  });

  it('throws a plain PlatformError for a bad secret or an already parsed body: a mistake of the receiver, not a bad webhook', async () => {
    const headers = referenceHeaders(body);
    for (const bad of ['', 'whsec_', 'whsec_%%%']) {
      const error = await verifyWebhook(body, headers, bad).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(PlatformError);
      expect(error).not.toBeInstanceOf(WebhookVerificationError);
      expect((error as Error).message).toMatch(/whsec_ followed by base64/);
    }
    const parsed = JSON.parse(body) as unknown as string;
    const error = await verifyWebhook(parsed, headers, secret).catch((caught: unknown) => caught);
    expect(error).not.toBeInstanceOf(WebhookVerificationError);
    expect((error as Error).message).toMatch(/raw body/);
  });

  it('takes a secret with or without the whsec_ prefix, as the reference does', async () => {
    expect(await verifyWebhook(body, referenceHeaders(body), secret.slice('whsec_'.length))).toEqual(event);
  });
});

describe('signWebhook', () => {
  it('makes headers the reference library verifies, over the exact bytes', async () => {
    const headers = await signWebhook(body, { id: event.id, secret });
    expect(headers['webhook-id']).toBe(event.id);
    expect(Math.abs(Number(headers['webhook-timestamp']) - now())).toBeLessThanOrEqual(1);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(new Webhook(secret).verify(body, { ...headers })).toEqual(event);
    expect(() => new Webhook(otherSecret).verify(body, { ...headers })).toThrow('No matching signature found');
    expect(() => new Webhook(secret).verify(body.replace('RUNNING', 'FAILED'), { ...headers })).toThrow('No matching signature found');
    // Bytes sign the same as their text.
    expect(await signWebhook(new TextEncoder().encode(body), { id: event.id, secret, timestamp: 1732269100 })).toEqual(
      await signWebhook(body, { id: event.id, secret, timestamp: 1732269100 }),
    );
  });

  it('signs the same as the reference for a given id and timestamp', async () => {
    const timestamp = 1732269100;
    const headers = await signWebhook(body, { id: event.id, secret, timestamp });
    expect(headers['webhook-signature']).toBe(new Webhook(secret).sign(event.id, new Date(timestamp * 1000), body));
  });

  it('signs with each secret of a rotation; the reference verifies with either', async () => {
    const headers = await signWebhook(body, { id: event.id, secret: [otherSecret, secret] });
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(new Webhook(secret).verify(body, { ...headers })).toEqual(event);
    expect(new Webhook(otherSecret).verify(body, { ...headers })).toEqual(event);
  });
});

describe('generateWebhookSecret', () => {
  it('makes a new whsec_ secret of 32 random bytes each time, which both libraries use', async () => {
    const made = generateWebhookSecret();
    expect(made).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(generateWebhookSecret()).not.toBe(made);
    const headers = await signWebhook(body, { id: event.id, secret: made });
    expect(new Webhook(made).verify(body, { ...headers })).toEqual(event);
    expect(await verifyWebhook(body, referenceHeaders(body, made), made)).toEqual(event);
  });
});
